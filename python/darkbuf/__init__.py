"""darkbuf from Python: run and sweep scenarios of the Linux transmit path on the
simulator, and get the results as pandas frames.

>>> import darkbuf
>>> r = darkbuf.run("scenarios/veth-bql.toml", duration="1s")
>>> r.summary[r.summary.stat == "mean"][["ping.rtt_avg_ms", "consumer.pps"]]
>>> s = darkbuf.sweep("scenarios/veth-bql.toml", {"consumer.nrules": [0, 3500, 15000]},
...                   duration="1s", engine="ray")

A scenario is a path to a TOML file, the TOML text, or a dict. Overrides are the
command line's ``--set`` keys, as a dict (``{"device.bql.limit_min": 8}``) or as
keywords with ``__`` for ``.`` (``device__bql__limit_min=8``); ``runs=3`` and
``seed=7`` are the scenario's own keys, so they do what ``--runs``/``--seed`` do.
Bad input raises :class:`ScenarioError` (a ``ValueError``) with the command line's
file:line:column diagnostic.
"""

from __future__ import annotations

import warnings
from typing import Any, Mapping, Optional

from . import _darkbuf, engines, inputs
from .engines import Progress
from .errors import DarkbufError, DarkbufWarning, ScenarioError, SimulationError
from .results import Results

__version__ = _darkbuf.__version__

__all__ = ["run", "sweep", "Results", "DarkbufError", "DarkbufWarning", "ScenarioError", "SimulationError", "__version__"]


def _execute(plan, engine: str, address: Optional[str], retries: int, workers: Optional[int], progress: Progress) -> Results:
    if engine == "ray":
        outs = engines.ray(plan.jobs(), address=address, retries=retries, progress=progress)
    else:
        outs = engines.local(plan.jobs(), workers=workers, progress=progress)
    return Results(plan.assemble(outs))


def _check_engine(engine: str, address: Optional[str], workers: Optional[int] = None) -> None:
    engines.check_workers(workers)
    if engine not in engines.ENGINES:
        raise ValueError(f"engine={engine!r}: valid engines are {', '.join(map(repr, engines.ENGINES))}")
    if address is not None and engine != "ray":
        raise ValueError("address= is the Ray cluster's; give engine='ray' with it")


def run(
    scenario: Any,
    set: Optional[Mapping[str, Any]] = None,
    *,
    engine: str = "local",
    address: Optional[str] = None,
    retries: int = 3,
    workers: Optional[int] = None,
    progress: Progress = None,
    **overrides: Any,
) -> Results:
    """Runs a scenario: ``darkbuf run SCENARIO --set ...`` in-process.

    Args:
        scenario: a path to a scenario TOML file, the TOML text, or a dict.
        set: overrides with the CLI's dotted keys, ``{"device.bql.limit_min": 8}``.
        engine: ``"local"`` (threads on this machine) or ``"ray"`` (one task per run).
        address: the Ray cluster to connect to (``ray.init(address=...)``).
        retries: Ray only: how often a task whose worker or node died is retried.
        workers: local only: threads (default: the CPUs this process may use).
        progress: ``True``/``False``, ``None`` (a line on stderr when it is a
            terminal), or ``progress(done, total)``.
        **overrides: more overrides, ``__`` standing for ``.``.
    """
    _check_engine(engine, address, workers)
    name, text = inputs.source(scenario)
    plan = _darkbuf.plan_run(name, text, inputs.overrides(set, overrides))
    return _execute(plan, engine, address, retries, workers, progress)


def sweep(
    scenario: Any,
    sweep: Optional[Mapping[str, Any]] = None,
    set: Optional[Mapping[str, Any]] = None,
    *,
    engine: str = "local",
    address: Optional[str] = None,
    retries: int = 3,
    workers: Optional[int] = None,
    progress: Progress = None,
    **overrides: Any,
) -> Results:
    """Runs the cross product of the scenario's ``[[variant]]``s, its ``[sweep]`` and
    ``sweep`` (``{"consumer.nrules": [0, 3500], ...}``: the first key varies
    slowest; a key here replaces the scenario's ``[sweep]`` key of the same name):
    ``darkbuf sweep SCENARIO --set KEY=V1,V2 ...`` in-process.

    Every point is loaded and checked before any runs, so a point that is not a valid
    scenario raises its :class:`ScenarioError` whatever the engine. The other
    arguments are :func:`run`'s; ``set`` and ``**overrides`` apply to every point.
    """
    _check_engine(engine, address, workers)
    name, text = inputs.source(scenario)
    plan = _darkbuf.plan_sweep(name, text, inputs.overrides(set, overrides), inputs.sweeps(sweep))
    for w in plan.warnings:
        warnings.warn(w, DarkbufWarning, stacklevel=2)
    return _execute(plan, engine, address, retries, workers, progress)
