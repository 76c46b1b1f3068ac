"""What a fuzz of the Python API found: each input that crashed the interpreter, ran
what the CLI refuses, or raised an exception that named nothing, and what it does now
(a ScenarioError, TypeError or ValueError that says which argument)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import darkbuf
from conftest import REPO, cli

SCENARIO = "scenarios/veth-bql.toml"
TINY = {"duration": "20ms", "warmup": "5ms"}


def in_subprocess(code: str, memory_gb: int = 3, timeout: int = 120) -> subprocess.CompletedProcess:
    """Runs `code` (after `import darkbuf`) in its own interpreter with a memory bound,
    so that a crash or a runaway allocation fails the test instead of the session."""
    prelude = textwrap.dedent(f"""
        import resource, darkbuf
        resource.setrlimit(resource.RLIMIT_AS, ({memory_gb} << 30, {memory_gb} << 30))
        SCENARIO, TINY = {SCENARIO!r}, {TINY!r}
    """)
    return subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code)], cwd=REPO,
                          capture_output=True, text=True, timeout=timeout)


def scenario_error_in_subprocess(setup: str, call: str, timeout: int = 120) -> str:
    """`setup`, then `call` in :func:`in_subprocess`: the ScenarioError `call` raised, as
    the line "ScenarioError KEY MESSAGE" (the test fails on a crash or on no error)."""
    r = in_subprocess(f"{setup}\ntry:\n    {call}\nexcept darkbuf.ScenarioError as e:\n"
                      f"    print('ScenarioError', e.key, e)\n", timeout=timeout)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    assert r.stdout.startswith("ScenarioError "), r.stdout + r.stderr[-2000:]
    return r.stdout


# --- a swept string that starts with a bracket or a quote ---

def test_a_swept_string_that_starts_with_a_bracket_is_its_own_point():
    # {"name": ["[abc", "x"]} went to the planner as `name=[abc,x`, which the sweep's
    # comma rule reads as one value: one point named "[abc,x" instead of two.
    r = darkbuf.sweep(SCENARIO, {"name": ["[abc", "x"]}, **TINY)
    assert [p["results"]["scenario"]["name"] for p in r.points] == ["[abc", "x"]
    out = cli("sweep", SCENARIO, "--format", "json", "--set", "duration=20ms", "--set", "warmup=5ms",
              "--set", 'name="[abc",x').stdout
    assert r.to_json() == out


@pytest.mark.parametrize("text", ["[abc", "{x", '"q', "'q"])
def test_a_string_that_starts_with_a_bracket_or_quote_is_quoted(text):
    t = darkbuf._darkbuf.override_text(text, "name")
    assert darkbuf._darkbuf.set_values([f"name={t}"]) == [("name", text)]
    assert darkbuf._darkbuf.split_sets([f"name={t},x"])[0] == [f"name={t},x"]


# --- values that nest without end: a crash (SIGSEGV) of the interpreter ---

@pytest.mark.parametrize("make, call", [
    ("v = []; v.append(v)", "darkbuf.run(SCENARIO, {'consumer.nrules': v}, **TINY)"),
    ("v = {}; v['a'] = v", "darkbuf.run(SCENARIO, consumer__nrules=v, **TINY)"),
    ("import functools; v = functools.reduce(lambda a, _: [a], range(100000), 1)", "darkbuf.sweep(SCENARIO, {'consumer.nrules': [v, 1]}, **TINY)"),
    ("v = {}; v['traffic'] = [v]", "darkbuf.run(v)"),
    ("import functools; v = functools.reduce(lambda a, _: {'a': a}, range(100000), 1)", "darkbuf.run({'traffic': [{'kind': 'udp'}], 'x': v})"),
])
def test_a_value_that_contains_itself_is_a_scenario_error_not_a_crash(make, call):
    assert "nested more than 64 deep" in scenario_error_in_subprocess(make, call)


def test_nesting_a_scenario_uses_is_still_fine():
    assert darkbuf._darkbuf.override_text([[1, [2, {"a": [3]}]]], "k") == '[[1, [2, { a = [3] }]]]'


# --- a str with a lone surrogate: a UnicodeEncodeError that named nothing ---

@pytest.mark.parametrize("call, key", [
    (lambda: darkbuf.run(SCENARIO, {"name": "a\ud800"}, **TINY), "name"),
    (lambda: darkbuf.run(SCENARIO, name="a\ud800", **TINY), "name"),
    (lambda: darkbuf.sweep(SCENARIO, {"name": ["a", "\udfff"]}, **TINY), "name"),
    (lambda: darkbuf.run({"traffic": [{"kind": "udp", "x": "\ud800"}]}), "traffic.0.x"),
    (lambda: darkbuf.run(SCENARIO, {"name\ud800": 1}, **TINY), ""),
    (lambda: darkbuf.run(SCENARIO, **{"name\ud800": 1}, **TINY), ""),
    (lambda: darkbuf.run("scenarios/\ud800.toml"), ""),
])
def test_a_lone_surrogate_is_a_scenario_error_naming_the_key(call, key):
    with pytest.raises(darkbuf.ScenarioError) as e:
        call()
    assert "not valid Unicode" in str(e.value) and e.value.key == key


# --- more runs than a command may have ---

def test_a_sweep_over_the_runs_per_command_is_refused_as_on_the_cli():
    # 11 points of 1000 runs: the CLI refuses them (at most 10 000 runs per command);
    # darkbuf.sweep ran all 11 000.
    nrules = list(range(11))
    with pytest.raises(darkbuf.ScenarioError) as e:
        darkbuf.sweep(SCENARIO, {"consumer.nrules": nrules}, runs=1000, **TINY)
    r = cli("sweep", SCENARIO, "--set", "duration=20ms", "--set", "warmup=5ms", "--set", "runs=1000",
            "--set", "consumer.nrules=" + ",".join(map(str, nrules)), check=False)
    assert r.returncode == 2 and r.stderr.strip() == f"darkbuf: {e.value}"
    assert e.value.key == "runs"


@pytest.mark.parametrize("values", ["range(10**6)", "itertools.count()", "range(20001)"])
def test_a_sweep_with_more_points_than_runs_is_refused_before_planning(values):
    # range(10**6) took 24 GB and was killed; itertools.count() never ended; 20 001
    # values took gigabytes to plan before the runs' bound refused them.
    out = scenario_error_in_subprocess("import itertools",
                                       f'darkbuf.sweep(SCENARIO, {{"consumer.nrules": {values}}}, **TINY)', timeout=60)
    assert out.startswith("ScenarioError consumer.nrules "), out
    assert "at most 10,000 runs per command" in out


# --- workers ---

def test_bad_workers_say_so():
    with pytest.raises(ValueError, match="workers=-1: give 1 or more"):
        darkbuf.run(SCENARIO, workers=-1, **TINY)  # was "max_workers must be greater than 0"
    with pytest.raises(TypeError, match="workers='2'"):
        darkbuf.sweep(SCENARIO, {"consumer.nrules": [0, 1]}, workers="2", **TINY)  # was "'<' not supported"
    import numpy as np
    assert len(darkbuf.run(SCENARIO, workers=np.int64(1), **TINY).runs) == 1


# --- python -m darkbuf's flags ---

@pytest.mark.parametrize("flag", [["--runs", "0"], ["--runs", "4294967296"], ["--runs", "1001"], ["--seed=-1"],
                                  ["--seed", str(2**64)], ["--seed", str(2**63)], ["--workers", "-1"],
                                  ["--retries=-1"]])
def test_python_m_darkbuf_flags_out_of_range_are_usage_errors(flag):
    # --runs 4294967296 and --seed -1 were tracebacks (OverflowError, exit 1); --runs 0
    # ran one run; the CLI refuses them all with exit 2.
    py = subprocess.run([sys.executable, "-m", "darkbuf", "run", SCENARIO, *flag, "--set", "duration=20ms"],
                        cwd=REPO, capture_output=True, text=True)
    assert py.returncode == 2, py.stderr
    assert "Traceback" not in py.stderr and flag[0].split("=")[0] in py.stderr
