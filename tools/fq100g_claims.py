#!/usr/bin/env python3
"""Seed 001's claims against the model: the claim table of docs/fq-100g.md.

    cargo build --release
    python3 tools/fq100g_claims.py [--runs 20] [--from SWEEP.json] [--set KEY=VALUE ...]

Runs `darkbuf sweep scenarios/fq-100g.toml --runs N --format json` (or reads a sweep
saved with that command, `--from`) and prints, as markdown:
- one row per claim of the post (docs/reference/seeds/001_*): the post's figure, the
  model's, and whether they agree by the stated test;
- the per-point table behind it: the throughput distribution over the runs, fq's
  counters per sent packet, cwnd, queue flips and each core's load.

The post's figures are quoted, never inputs to the model. Where issue 52 gives a
tolerance the test is that one; otherwise the test is written in the row.
DARKBUF (environment) is the darkbuf binary (default ./target/release/darkbuf).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

DARKBUF = os.environ.get("DARKBUF", "./target/release/darkbuf")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCENARIO = os.path.join(ROOT, "scenarios", "fq-100g.toml")
# The MSS at MTU 9000 with timestamps (9000 - 20 - 20 - 12), for cwnd in bytes.
MSS = 8948
# The sender's core (iperf3 -A 6), its IRQ core, and the receiver's core (-A 6,6 pins
# the server to core 6 on the far host).
SENDER, IRQ, RECEIVER = "6", "11", "6"


def sweep(args):
    if args.from_file:
        with open(args.from_file) as f:
            return json.load(f)
    cmd = [DARKBUF, "sweep", SCENARIO, "--runs", str(args.runs), "--format", "json"]
    for s in args.set:
        cmd += ["--set", s]
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)


def point_stats(point):
    """Per-run figures of one sweep point."""
    runs = point["results"]["runs"]
    rows = []
    for r in runs:
        m = r["metrics"]
        sent = m.get("qdisc.sent_pkts") or 0.0
        flips = sum(v for k, v in m.items() if k.startswith("tcp.flow.") and k.endswith(".tx_queue_changes") and v)
        # The TX queue that sent the most: where the flow spent the window.
        txq = {k.split(".")[2]: v for k, v in m.items() if k.startswith("qdisc.txq.") and k.endswith(".sent_pkts") and v}
        queue = max(txq, key=txq.get) if txq else "?"
        rows.append({
            "gbps": m["tcp.goodput_mbps"] / 1000.0,
            "sent": sent,
            "throttled": m.get("qdisc.throttled"),
            "plimit": m.get("qdisc.flows_plimit"),
            "cwnd_mb": m["tcp.cwnd_avg_pkts"] * MSS / 1e6,
            "flips": flips,
            "queue": queue,
            "snd": m.get(f"cpu.{SENDER}.busy_pct", 0.0),
            "irq": m.get(f"cpu.{IRQ}.busy_pct", 0.0),
            "rcv": m.get(f"peer.cpu.{RECEIVER}.busy_pct", 0.0),
        })
    return rows


def per_pkt(rows, key):
    """Events per sent packet over all runs (None when the qdisc has no such counter)."""
    if any(r[key] is None for r in rows):
        return None
    sent = sum(r["sent"] for r in rows)
    return sum(r[key] for r in rows) / sent if sent else None


def one_in(x):
    if x is None:
        return "—"
    if x == 0:
        return "0"
    return f"1 in {1 / x:,.0f}"


def mean(rows, key):
    return statistics.fmean(r[key] for r in rows)


def queues(rows):
    """Which TX queue the runs ended on most: "tx-11" or "tx-6 x3, tx-11 x2"."""
    seen = {}
    for r in rows:
        seen[r["queue"]] = seen.get(r["queue"], 0) + 1
    if len(seen) == 1:
        return f"tx-{next(iter(seen))}"
    return ", ".join(f"tx-{q} x{n}" for q, n in sorted(seen.items(), key=lambda kv: -kv[1]))


def claims(points):
    fq = points.get("fq traffic.0.cc=cubic")
    pf = points.get("pfifo_fast traffic.0.cc=cubic")
    if fq is None or pf is None:
        sys.exit("the sweep has no 'fq traffic.0.cc=cubic' or 'pfifo_fast traffic.0.cc=cubic' point")
    n = len(fq)
    pf_full = sum(1 for r in pf if r["gbps"] >= 98.95)
    slow = sum(1 for r in fq if r["gbps"] < 90.0)
    fast = sum(1 for r in fq if r["gbps"] >= 97.0)
    thr = per_pkt(fq, "throttled")
    pl = per_pkt(fq, "plimit")
    cw = mean(fq, "cwnd_mb")
    rcv = mean(fq, "rcv")
    snd = mean(fq, "snd")
    flips = mean(fq, "flips")
    on11 = sum(1 for r in fq if r["queue"] == "11")

    def within(x, ref, k):
        return x is not None and x > 0 and ref / k <= x <= ref * k

    yes = lambda b: "yes" if b else "**no**"
    return [
        ("pfifo_fast always reaches 99.0 Gbit/s", "every run", f"{pf_full} of {len(pf)} runs at 99.0", yes(pf_full == len(pf)),
         "all runs >= 98.95"),
        ("fq: about 20% of runs stuck at ~81 Gbit/s", "~20%", f"{slow} of {n} runs below 90 ({fast} at 97 or more)", yes(slow > 0 and fast > 0),
         "both modes appear"),
        ("fq's flow on the IRQ core's queue", "tx-11 (fast runs)", f"tx-11 in {on11} of {n} runs", yes(2 * on11 > n), "most runs"),
        ("fq `throttled` per sent packet (the flow's queue)", "1 in 20", one_in(thr), yes(within(thr, 1 / 20, 3)), "within 3x"),
        ("fq `flows_plimit` per sent packet (the flow's queue)", "1 in 394,000", one_in(pl), yes(within(pl, 1 / 394e3, 5)), "within 5x"),
        ("cwnd (iperf3 `Cwnd`)", "5.3-8.9 MiB", f"{cw:.2f} MB", yes(4.0 <= cw <= 10.0), "4-10 MB"),
        ("receiving core (iperf3 server, core 6)", "\"much closer to 100%\"", f"{rcv:.1f}%", yes(rcv >= 85.0), ">= 85%"),
        ("sending core (iperf3 client, core 6)", "\"never ... exceed 50%\"", f"{snd:.1f}%", yes(snd <= 60.0), "<= 60%"),
        ("TX queue changes per run (`sk_tx_queue_set()`)", "fast runs ~11, slow 45-52", f"{flips:.1f}", yes(3.0 <= flips <= 60.0), "3 to 60"),
    ]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--from", dest="from_file")
    ap.add_argument("--set", action="append", default=[])
    args = ap.parse_args()
    s = sweep(args)
    points = {p["label"]: point_stats(p) for p in s["points"]}

    print("| claim | the post | darkbuf | agrees? | test |")
    print("|---|---|---|---|---|")
    for c in claims(points):
        print("| " + " | ".join(c) + " |")
    print()
    print("| point | runs | Gbit/s mean (min-max) | runs < 90 | throttled | flows_plimit | cwnd MB | queue changes | queue | core 6 (sender) % | core 11 (IRQ) % | peer core 6 % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for label, rows in points.items():
        g = [r["gbps"] for r in rows]
        print(f"| {label} | {len(rows)} | {statistics.fmean(g):.2f} ({min(g):.2f}-{max(g):.2f}) | "
              f"{sum(1 for x in g if x < 90)} | {one_in(per_pkt(rows, 'throttled'))} | {one_in(per_pkt(rows, 'plimit'))} | "
              f"{mean(rows, 'cwnd_mb'):.2f} | {mean(rows, 'flips'):.1f} | {queues(rows)} | {mean(rows, 'snd'):.1f} | "
              f"{mean(rows, 'irq'):.1f} | {mean(rows, 'rcv'):.1f} |")


if __name__ == "__main__":
    main()
