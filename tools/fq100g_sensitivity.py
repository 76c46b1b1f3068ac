#!/usr/bin/env python3
"""Seed 001's sensitivity table: docs/fq-100g.md, "Sensitivity".

    cargo build --release
    python3 tools/fq100g_sensitivity.py [--runs 5] [--only SUBSTRING]

One row per setting: `darkbuf sweep scenarios/fq-100g.toml --runs N` (seeds 1-N) with
that one change (`--set`), through tools/fq100g_claims.py's sweep, and the cubic
points' figures: pfifo_fast's and fq's Gbit/s, fq's counters per sent packet, cwnd and
the two cores. The receive-copy rows use a copy of profiles/baremetal-100g.toml with
`tcp_recv_copy_ns_per_kb` added (written to a temporary directory, removed after).
The post's figures are not inputs; the table prints the model's.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fq100g_claims as claims  # noqa: E402

PROFILE = os.path.join(claims.ROOT, "profiles", "baremetal-100g.toml")

# (label, --set values); "COPY=N" stands for a profile with the receive copy at N ns/KiB.
ROWS = [
    ("the scenario", []),
    ("`machine.hz = 250` (Debian's CONFIG_HZ; the scenario before 2026-12-02)", ["machine.hz=250"]),
    ("`machine.hz = 300` (Arch's)", ["machine.hz=300"]),
    ("`drs = \"v6.19\"` (the model's default)", ["traffic.0.drs=v6.19"]),
    ("receive IRQs on core 11", ["peer.irq_cpus=[11]"]),
    ("TX DIM off", ["device.coalesce.adaptive_tx=false"]),
    ("RX DIM on (`device.coalesce.adaptive_rx = true`)", ["device.coalesce.adaptive_rx=true"]),
    ("default buffers (`sndbuf` 4 MiB, `rcvbuf` 6 MiB)", ["traffic.0.sndbuf=4MiB", "traffic.0.rcvbuf=6MiB"]),
    ("`rcvbuf` 6 MiB", ["traffic.0.rcvbuf=6MiB"]),
] + [(f"receive copy {n} ns/KiB", [f"COPY={n}"]) for n in (40, 60, 65, 70, 75, 80)]


def row(label, sets, runs, tmp):
    args = []
    for s in sets:
        if s.startswith("COPY="):
            n = s.split("=", 1)[1]
            path = os.path.join(tmp, f"baremetal-100g-copy{n}.toml")
            with open(PROFILE) as f, open(path, "w") as out:
                out.write(f.read() + f"\ntcp_recv_copy_ns_per_kb = {n}.0\n")
            args.append(f"machine.profile={path}")
        else:
            args.append(s)
    sweep = claims.sweep(argparse.Namespace(from_file=None, runs=runs, set=args))
    points = {p["label"]: claims.point_stats(p) for p in sweep["points"]}
    pf, fq = points["pfifo_fast traffic.0.cc=cubic"], points["fq traffic.0.cc=cubic"]
    gbps = lambda rows: statistics.fmean(r["gbps"] for r in rows)
    return (f"| {label} | {gbps(pf):.2f} | {gbps(fq):.2f} | {claims.one_in(claims.per_pkt(fq, 'throttled'))} | "
            f"{claims.one_in(claims.per_pkt(fq, 'plimit'))} | {claims.mean(fq, 'cwnd_mb'):.2f} | "
            f"{claims.mean(fq, 'rcv'):.1f} | {claims.mean(fq, 'snd'):.1f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--only", help="the rows whose label contains this")
    args = ap.parse_args()
    print("| setting | pfifo_fast Gbit/s | fq Gbit/s | fq throttled | fq flows_plimit | fq cwnd MB | peer core 6 % (fq) | sender core 6 % (fq) |")
    print("|---|---|---|---|---|---|---|---|")
    tmp = tempfile.mkdtemp(prefix="darkbuf-fq100g-")
    try:
        for label, sets in ROWS:
            if args.only and args.only not in label:
                continue
            print(row(label, sets, args.runs, tmp), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
