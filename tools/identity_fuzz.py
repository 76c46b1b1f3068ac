#!/usr/bin/env python3
"""Random variants of the repository's scenarios, run by two darkbuf builds: a change that
must not move results (a speed change, a restructuring) gives byte-identical `runs` and
`summary` JSON on every variant. The golden set (tools/golden.sh) covers the files as
they are; this covers the hidden scenarios of the same families.

    python3 tools/identity_fuzz.py OLD_DARKBUF NEW_DARKBUF [COUNT] [SEED]

Each variant draws one of the scenario files below and random overrides: the link rate
and delay, TSO, BQL, the congestion control, the qdisc, the duration and the seed. A
variant both builds refuse (an override the scenario does not take) counts as the same
when the two errors are equal. Exit status 1 if any variant differs.
"""
import json
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASES = [
    "scenarios/tcp-100mbit.toml",
    "scenarios/rrul-100mbit.toml",
    "scenarios/router-100mbit.toml",
    "scenarios/fq-100g.toml",
    "scenarios/tcp_4up-100mbit.toml",
    "scenarios/nic-1gbit.toml",
    "scenarios/veth-bql.toml",
    "scenarios/squarewave-100mbit.toml",
]


def variant(rng):
    base = rng.choice(BASES)
    nic = "veth" not in base and "fq-100g" not in base
    sets = [
        "duration=%dms" % rng.choice([300, 600, 1000]),
        "warmup=100ms",
        "runs=1",
        "seed=%d" % rng.randint(1, 10**6),
    ]
    if nic:
        sets.append("device.rate=" + rng.choice(["10Mbit", "100Mbit", "1Gbit", "10Gbit"]))
        sets.append("path.delay=" + rng.choice(["0s", "1ms", "5ms", "20ms", "50ms"]))
        if rng.random() < 0.3:
            sets.append("device.tso=false")
        if rng.random() < 0.5:
            sets.append("device.bql.limit_min=1073741824")
    if base in ("scenarios/tcp-100mbit.toml",) and rng.random() < 0.5:
        sets.append("traffic.0.cc=" + rng.choice(["cubic", "bbr", "reno"]))
    if "squarewave" in base:
        sets.append("test_delay=30ms")
    if "rrul" in base or "tcp_4up" in base:
        sets.append("test_delay=50ms")
    if nic and "router" not in base:
        sets.append("qdisc.kind=" + rng.choice(["pfifo_fast", "fq_codel", "fq", "cake", "sfq", "pfifo"]))
    return base, sets


def result(exe, base, sets):
    cmd = [exe, "run", base, "--format", "json"] + [a for s in sets for a in ("--set", s)]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        return "exit %d: %s" % (p.returncode, p.stderr.strip())
    j = json.loads(p.stdout)
    return json.dumps({k: j.get(k) for k in ("runs", "summary")}, sort_keys=True)


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    old, new = sys.argv[1], sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 30
    rng = random.Random(int(sys.argv[4]) if len(sys.argv) > 4 else 1)
    differ = 0
    for _ in range(count):
        base, sets = variant(rng)
        a, b = result(old, base, sets), result(new, base, sets)
        same = a == b
        differ += not same
        print(("same " if same else "DIFF ") + base + " " + " ".join(sets), flush=True)
        if not same and (a.startswith("exit") or b.startswith("exit")):
            print("  old: " + a[:300] + "\n  new: " + b[:300])
    print("%d of %d variants differ" % (differ, count))
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
