"""``python -m darkbuf run|sweep``: the command line's ``run`` and ``sweep`` on the
simulator, with ``--engine ray --address ...`` to run the jobs on a Ray cluster.

    python -m darkbuf sweep scenarios/seed-nrules15000.toml --engine ray --address auto --format json

``--set``, ``--runs``, ``--seed`` and ``--format json|csv`` mean what they mean to
``darkbuf``, and the JSON and CSV are ``darkbuf``'s, byte for byte. Exit codes are
``darkbuf``'s: 0 ok, 1 internal error, 2 bad input, 3 the simulator cannot set the
scenario up.
"""

from __future__ import annotations

import argparse
import sys
from typing import List, Optional

from . import _darkbuf, engines, inputs
from .errors import DarkbufError, ScenarioError, SimulationError
from .results import Results


def _int_in(low: int, high: Optional[int]):
    """An argparse type: an int in low..=high (high None: no bound), as darkbuf's flags
    take them (--runs 1..=1000, --seed 0..=2^63-1)."""
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
        if high is None and n < low:
            raise argparse.ArgumentTypeError(f"{n}: give {low} or more")
        if high is not None and not low <= n <= high:
            raise argparse.ArgumentTypeError(f"{n} is not in {low}..={high}")
        return n
    return parse


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m darkbuf", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for cmd, what in [("run", "run a scenario"), ("sweep", "run the cross product of its [[variant]]s, [sweep] and --set K=V1,V2")]:
        s = sub.add_parser(cmd, help=what)
        s.add_argument("scenario", help="scenario TOML file")
        s.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="override a scenario key (repeatable); for sweep, KEY=V1,V2,... sweeps it")
        s.add_argument("--runs", type=_int_in(1, _darkbuf.MAX_RUNS),
                       help=f"number of runs (overrides the scenario's runs, 1..={_darkbuf.MAX_RUNS})")
        s.add_argument("--seed", type=_int_in(0, _darkbuf.MAX_SEED),
                       help=f"base seed (overrides the scenario's seed, 0..={_darkbuf.MAX_SEED})")
        s.add_argument("--format", choices=["json", "csv", "table"], default="table")
        s.add_argument("--engine", choices=list(engines.ENGINES), default="local")
        s.add_argument("--address", help="Ray cluster address (ray.init(address=...)); default: RAY_ADDRESS or a local instance")
        s.add_argument("--retries", type=_int_in(0, None), default=3, help="Ray: retries of a task whose worker or node died")
        s.add_argument("--workers", type=_int_in(1, None), help="local: threads (default: this process's CPUs)")
    return p


def main(argv: Optional[List[str]] = None) -> int:
    a = parser().parse_args(argv)
    if a.address is not None and a.engine != "ray":
        print("darkbuf: --address is the Ray cluster's; give --engine ray with it", file=sys.stderr)
        return 2
    try:
        name, text = _darkbuf.read_source(a.scenario)
        if a.cmd == "run":
            plan = _darkbuf.plan_run(name, text, a.set, a.runs, a.seed)
        else:
            sweeps, fixed = _darkbuf.split_sets(a.set)
            plan = _darkbuf.plan_sweep(name, text, fixed, sweeps, a.runs, a.seed)
            for w in plan.warnings:
                print(f"darkbuf: warning: {w}", file=sys.stderr)
        if a.engine == "ray":
            outs = engines.ray(plan.jobs(), address=a.address, retries=a.retries)
        else:
            outs = engines.local(plan.jobs(), workers=a.workers)
        r = Results(plan.assemble(outs))
    except ScenarioError as e:
        print(f"darkbuf: {e}", file=sys.stderr)
        return 2
    except SimulationError as e:
        print(f"darkbuf: {e}", file=sys.stderr)
        return 3
    except (DarkbufError, ImportError) as e:
        print(f"darkbuf: {e}", file=sys.stderr)
        return 1
    if a.format == "json":
        sys.stdout.write(r.to_json())
    elif a.format == "csv":
        sys.stdout.write(r.to_csv())
    else:
        if r.kind == "sweep":
            n = len(r.points)
            print(f"{r.name}: {n} point{'' if n == 1 else 's'} (sim, {a.engine})")
        sys.stdout.write(r.table())
    return 0


if __name__ == "__main__":
    sys.exit(main())
