"""darkbuf.sweep: the CLI's sweep JSON, frames with the swept keys as columns, and the
same results on Ray as on local threads."""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import pandas as pd
import pytest

import darkbuf
from darkbuf import engines
from conftest import REPO, cli

SCENARIO = "scenarios/veth-bql.toml"
NRULES = [0, 3500, 15000]
LIMITS = [0, 4, 8, 16]
AXES = {"consumer.nrules": NRULES, "device.bql.limit_min": LIMITS}  # 12 points
SHORT = {"duration": "300ms", "warmup": "100ms"}


@pytest.fixture(scope="module")
def local():
    return darkbuf.sweep(SCENARIO, AXES, **SHORT)


def cli_sweep_json() -> str:
    return cli("sweep", SCENARIO, "--format", "json", "--set", "duration=300ms", "--set", "warmup=100ms",
               "--set", "consumer.nrules=0,3500,15000", "--set", "device.bql.limit_min=0,4,8,16").stdout


def test_to_json_is_the_cli_sweep_output_byte_for_byte(local):
    assert local.kind == "sweep"
    assert local.to_json() == cli_sweep_json()


def test_one_row_per_point_and_run_with_the_swept_keys_as_columns(local):
    runs = local.runs
    assert len(runs) == 12
    assert local.keys == ["consumer.nrules", "device.bql.limit_min"]
    # The first key varies slowest, as on the command line.
    assert list(zip(runs["consumer.nrules"], runs["device.bql.limit_min"])) == list(itertools.product(NRULES, LIMITS))
    assert runs["consumer.nrules"].dtype == "int64"
    assert list(runs["label"])[:2] == ["consumer.nrules=0 device.bql.limit_min=0", "consumer.nrules=0 device.bql.limit_min=4"]
    data = json.loads(local.to_json())
    for i, p in enumerate(data["points"]):
        for metric, v in p["results"]["runs"][0]["metrics"].items():
            assert runs.iloc[i][metric] == v or (v is None and pd.isna(runs.iloc[i][metric])), (i, metric)
    means = local.summary[local.summary.stat == "mean"]
    assert len(means) == 12
    assert list(means["ping.rtt_avg_ms"]) == [p["results"]["summary"]["ping.rtt_avg_ms"]["mean"] for p in data["points"]]


def test_variants_label_the_points_and_unset_keys_are_empty():
    r = darkbuf.sweep("scenarios/seed-nrules15000.toml", duration="200ms", warmup="100ms")
    runs = r.runs
    assert list(runs["label"]) == ["No BQL", "Per-pkt", "limit=4", "limit=8", "limit=16", "Batched"]
    assert r.keys == ["device.bql.limit_min", "device.bql.completion"]
    assert runs["device.bql.limit_min"].iloc[2] == 4
    assert pd.isna(runs["device.bql.limit_min"].iloc[1])
    assert runs["device.bql.completion"].iloc[5] == "per-poll"


def test_ray_gives_the_local_results(local, ray_local):
    seen = []
    on_ray = darkbuf.sweep(SCENARIO, AXES, engine="ray", progress=lambda done, total: seen.append((done, total)), **SHORT)
    assert on_ray.to_json() == local.to_json()
    pd.testing.assert_frame_equal(on_ray.runs, local.runs)
    pd.testing.assert_frame_equal(on_ray.summary, local.summary)
    pd.testing.assert_frame_equal(on_ray.timeseries, local.timeseries)
    assert seen == [(i, 12) for i in range(1, 13)]


def test_an_invalid_point_raises_its_diagnostic_on_ray(ray_local):
    text = (REPO / SCENARIO).read_text() + '\n[sweep]\n"consumer.nrules" = [0, -5]\n'
    line = text.count("\n") - 1 + 1  # the [sweep] entry is the last line
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.sweep(text, engine="ray")
    err = e.value
    assert isinstance(err, ValueError)
    assert err.file == "<string>" and err.line == line and err.column is not None
    assert err.key == "consumer.nrules"
    assert str(err).startswith(f"<string>:{line}:{err.column}: ")


def test_an_invalid_swept_value_names_the_override(ray_local):
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.sweep(SCENARIO, {"device.bql.limit_min": [0, "lots"]}, engine="ray")
    assert e.value.key == "device.bql.limit_min"
    assert e.value.file == "--set device.bql.limit_min=0,lots"
    # The CLI says the same about the same sweep.
    r = cli("sweep", SCENARIO, "--set", "device.bql.limit_min=0,lots", check=False)
    assert r.returncode == 2
    assert r.stderr.strip() == f"darkbuf: {e.value}"


def _by_value(ray):
    """Ray workers cannot import this test module: send its functions by value."""
    import sys

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def raise_scenario_error(job: str) -> str:
    raise darkbuf.ScenarioError("x.toml:3:7: bad", "x.toml", 3, 7, "consumer.nrules", "valid: 0..", "value")


def test_a_task_exception_arrives_as_itself_not_as_a_ray_error(ray_local):
    _by_value(ray_local)
    with pytest.raises(darkbuf.ScenarioError) as e:
        engines.ray_map(raise_scenario_error, ["a", "b"], retries=0)
    assert (e.value.file, e.value.line, e.value.column, e.value.key) == ("x.toml", 3, 7, "consumer.nrules")
    assert type(e.value) is darkbuf.ScenarioError


def crash_first_attempt(job: str, marker_dir: str) -> str:
    """Kills its worker process the first time it runs a job; the retry succeeds."""
    marker = Path(marker_dir) / job
    if not marker.exists():
        marker.write_text("crashed once")
        os._exit(1)
    return job.upper()


def test_tasks_whose_worker_died_are_retried(ray_local, tmp_path):
    _by_value(ray_local)
    assert engines.ray_map(crash_first_attempt, ["a", "b", "c"], str(tmp_path), retries=2) == ["A", "B", "C"]


def test_without_retries_a_dead_worker_fails_the_sweep(ray_local, tmp_path):
    _by_value(ray_local)
    with pytest.raises(Exception) as e:
        engines.ray_map(crash_first_attempt, ["a"], str(tmp_path), retries=0)
    assert "WorkerCrashedError" in type(e.value).__name__ or "died" in str(e.value).lower()


def test_python_m_darkbuf_sweep_prints_the_cli_json():
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "darkbuf", "sweep", SCENARIO, "--format", "json", "--set", "duration=300ms",
         "--set", "warmup=100ms", "--set", "consumer.nrules=0,3500,15000", "--set", "device.bql.limit_min=0,4,8,16"],
        cwd=REPO, capture_output=True, text=True, check=True,
    ).stdout
    assert out == cli_sweep_json()


def test_python_m_darkbuf_bad_input_is_exit_2_with_the_cli_message():
    import subprocess
    import sys

    args = ["run", SCENARIO, "--set", "device.bql.limit_mn=8"]
    py = subprocess.run([sys.executable, "-m", "darkbuf", *args], cwd=REPO, capture_output=True, text=True)
    rs = cli(*args, check=False)
    assert (py.returncode, rs.returncode) == (2, 2)
    assert py.stderr == rs.stderr


@pytest.mark.parametrize("scenario, axis, values, cli_set", [
    # A string with a comma: override_text quotes it, so it is one value.
    (SCENARIO, "name", ["a,b", "c"], 'name="a,b",c'),
    # A list: its commas are inside brackets.
    ("scenarios/fq-100g.toml", "device.irq_cpus", [[10, 11], [11]], "device.irq_cpus=[10, 11],[11]"),
])
def test_a_swept_value_with_a_comma_is_one_point_as_on_the_cli(scenario, axis, values, cli_set):
    tiny = {"duration": "20ms", "warmup": "5ms"}
    r = darkbuf.sweep(scenario, {axis: values}, **tiny)
    out = cli("sweep", scenario, "--format", "json", "--set", "duration=20ms", "--set", "warmup=5ms",
              "--set", cli_set).stdout
    assert r.to_json() == out
    labels = [p["label"] for p in json.loads(out)["points"]]
    assert list(dict.fromkeys(r.runs["label"])) == labels
    assert len(r.points) == len(labels) and len(labels) % len(values) == 0
    assert [v for _, v in darkbuf._darkbuf.set_values([s for s in r.points[0]["set"] if s.startswith(axis + "=")])] == [values[0]]


def test_a_swept_value_that_would_still_split_is_refused():
    # A string with a newline and a comma is written as a TOML multi-line string, which
    # `--set K=V1,V2` splits: refused with the key, not swept as pieces.
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.sweep(SCENARIO, {"name": ["a\nb,c", "d"]}, duration="20ms", warmup="5ms")
    assert e.value.key == "name" and "split" in str(e.value)


def test_a_fixed_value_of_a_variants_key_warns_as_the_cli_does():
    # seed-nrules0's variants set device.bql.limit_min: a fixed 8 runs every column at 8
    # under the labels "No BQL" .. "limit=16", which darkbuf sweep warns about on stderr.
    scn = str(REPO / "scenarios/seed-nrules0.toml")
    short = {"duration": "100ms", "warmup": "20ms", "runs": 1}
    with pytest.warns(darkbuf.DarkbufWarning, match="replaces `device.bql.limit_min` where the file's variants `No BQL`"):
        s = darkbuf.sweep(scn, set={"device.bql.limit_min": 8}, **short)
    assert len(s.summary[s.summary.stat == "mean"]) == 5
