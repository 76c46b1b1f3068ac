"""docs/examples/seed_nrules15000.py runs (shortened) and draws its figure."""

from __future__ import annotations

import importlib.util

from conftest import REPO


def load_example():
    path = REPO / "docs" / "examples" / "seed_nrules15000.py"
    spec = importlib.util.spec_from_file_location("seed_nrules15000", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_example_draws_the_seed_figure(tmp_path, capsys):
    ex = load_example()
    out = tmp_path / "fig.png"
    assert ex.main(["--duration", "1s", "--out", str(out)]) == 0
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    printed = capsys.readouterr().out
    header = printed.splitlines()[0].split()
    assert header == ["label", "No", "BQL", "Per-pkt", "limit=4", "limit=8", "limit=16", "Batched"]
    assert "ping.rtt_avg_ms" in printed
