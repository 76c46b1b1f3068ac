"""darkbuf.run against the CLI: the same JSON bytes, and frames holding its values."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

import darkbuf
from conftest import REPO, SHORT, cli

SCENARIO = "scenarios/veth-bql.toml"


def cli_json(*args: str) -> str:
    return cli("run", SCENARIO, "--format", "json", "--set", "duration=1s", *args).stdout


def test_to_json_is_the_cli_output_byte_for_byte():
    r = darkbuf.run(SCENARIO, **SHORT)
    assert r.kind == "run"
    assert r.to_json() == cli_json()


def test_runs_and_seed_keywords_do_what_the_flags_do():
    # runs= and seed= are scenario keys; --runs/--seed set the same fields.
    r = darkbuf.run(SCENARIO, runs=2, seed=7, **SHORT)
    assert r.to_json() == cli_json("--runs", "2", "--seed", "7")
    assert list(r.runs["seed"]) == [7, 8]
    assert list(r.runs["run"]) == [0, 1]


def test_frames_hold_the_json_values():
    r = darkbuf.run(SCENARIO, runs=2, **SHORT)
    data = json.loads(cli_json("--runs", "2"))
    runs = r.runs
    assert len(runs) == 2
    for i, run in enumerate(data["runs"]):
        row = runs.iloc[i]
        assert row["seed"] == run["seed"]
        assert run["metrics"], "the scenario reports metrics"
        for metric, value in run["metrics"].items():
            if value is None:
                assert math.isnan(row[metric]), metric
            else:
                assert row[metric] == value, metric
    summary = r.summary
    assert list(summary["stat"]) == ["mean", "ci95", "min", "max", "n"]
    for metric, s in data["summary"].items():
        # Every metric has {mean, ci95, min, max, n}; one no run measured has null
        # statistics (NaN in the frame) and n 0.
        col = [None if math.isnan(x) else x for x in summary[metric]]
        assert col == [s["mean"], s["ci95"], s["min"], s["max"], s["n"]], metric


def test_metric_columns_are_floats_and_nulls_are_nan():
    r = darkbuf.run(SCENARIO, **SHORT)
    metrics = [c for c in r.runs.columns if c not in ("point", "label", "run", "seed")]
    assert all(r.runs[m].dtype == "float64" for m in metrics)


def test_time_series_in_long_form_match_the_json():
    r = darkbuf.run(SCENARIO, **SHORT)
    data = r.to_dict()
    ts = r.timeseries
    for name, series in data["runs"][0]["timeseries"].items():
        rows = ts[ts.series == name]
        assert list(rows["t_ms"]) == series["t_ms"], name
        assert [None if math.isnan(v) else v for v in rows["value"]] == series["values"], name
        assert set(rows["unit"]) == {series["unit"]}
    assert len(ts) == sum(len(s["t_ms"]) for s in data["runs"][0]["timeseries"].values())


def test_histograms_in_long_form_match_the_json():
    r = darkbuf.run(SCENARIO, **SHORT)
    hists = r.to_dict()["runs"][0]["histograms"]
    assert hists, "the scenario records histograms"
    h = r.histograms
    for name, hist in hists.items():
        rows = h[h.histogram == name]
        assert list(rows["count"]) == hist["buckets"], name
        assert list(rows["bucket"]) == list(range(len(hist["buckets"])))
    row = h[(h.bucket == 4)].iloc[0]
    assert (row["low"], row["high"]) == (8, 16)


def test_a_toml_string_and_a_dict_run_what_the_file_runs():
    tomllib = pytest.importorskip("tomllib")  # Python >= 3.11 reads TOML itself
    text = (REPO / SCENARIO).read_text()
    from_file = darkbuf.run(SCENARIO, **SHORT).to_json()
    assert darkbuf.run(text, **SHORT).to_json() == from_file
    assert darkbuf.run(tomllib.loads(text), **SHORT).to_json() == from_file


def test_override_spellings_are_the_cli_set():
    expected = cli_json("--set", "device.bql.limit_min=4", "--set", "traffic.0.rate=50kpps")
    by_dict = darkbuf.run(SCENARIO, {"device.bql.limit_min": 4, "traffic.0.rate": "50kpps"}, **SHORT)
    by_keywords = darkbuf.run(SCENARIO, device__bql__limit_min=4, traffic__0__rate="50kpps", **SHORT)
    assert by_dict.to_json() == expected
    assert by_keywords.to_json() == expected


def test_csv_is_the_cli_csv():
    r = darkbuf.run(SCENARIO, **SHORT)
    assert r.to_csv() == cli("run", SCENARIO, "--format", "csv", "--set", "duration=1s").stdout


def test_same_seed_same_frame():
    a = darkbuf.run(SCENARIO, **SHORT)
    b = darkbuf.run(SCENARIO, **SHORT)
    pd.testing.assert_frame_equal(a.runs, b.runs)
