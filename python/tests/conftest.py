"""Shared fixtures: the repository, the `darkbuf` CLI to compare against, and a local
Ray instance."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

#: Short runs keep the tests fast; the CLI gets the same as --set.
SHORT = {"duration": "1s"}


def cli_path() -> Path:
    """The `darkbuf` binary: $DARKBUF_BIN, else target/release/darkbuf (`cargo build
    --release`). A missing binary fails the tests that compare against it: comparing
    is their point."""
    p = Path(os.environ.get("DARKBUF_BIN", REPO / "target" / "release" / "darkbuf"))
    if not p.is_file():
        pytest.fail(f"no darkbuf CLI at {p}: run `cargo build --release` or set DARKBUF_BIN")
    return p


def cli(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs the CLI from the repository root (scenario paths as the tests give them)."""
    r = subprocess.run([str(cli_path()), *args], cwd=REPO, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise AssertionError(f"darkbuf {' '.join(args)} exited {r.returncode}: {r.stderr}")
    return r


@pytest.fixture(autouse=True)
def _in_repo(monkeypatch):
    """Scenario paths are relative to the repository root, as in the README."""
    monkeypatch.chdir(REPO)


@pytest.fixture(scope="session")
def ray_local():
    """A local Ray instance on this machine's CPUs, for the whole session."""
    import ray  # a test dependency: missing, these tests error rather than skip

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no report home from tests
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()
