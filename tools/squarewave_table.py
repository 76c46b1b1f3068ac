#!/usr/bin/env python3
"""The table of docs/squarewave.md, from a sweep of scenarios/squarewave-100mbit.toml.

    darkbuf sweep scenarios/squarewave-100mbit.toml --format json > sw.json
    tools/squarewave_table.py sw.json

For each point (setup x cc x TSO), from the per-flow goodput series at flent's 0.2 s
step and the ping series:
- each delayed flow's share of a fair split, over 2 s to 4 s after it started (the
  flows active then share 94.1 Mbit/s of TCP payload on a 100 Mbit/s wire);
- Jain's fairness index over the four-flow phase (25-30 s, skipping its first 2 s);
- ping RTT median and 99th percentile while all four flows run, and the total goodput.
Flows follow flent's tcp_4up_squarewave with DELAY 5 s: starts 0, 5, 25, 15 s, each
running 30 s (entries in the preset's order: bbr 1, cubic 2, cubic 3, bbr 4).
"""
import json
import statistics
import sys

PAYLOAD_MBPS = 100.0 * 1448 / 1538  # 94.1: a 1514-byte frame plus 24 bytes of wire overhead
STARTS = [0.0, 5.0, 25.0, 15.0]
LENGTH = 30.0


def active(t, f):
    return STARTS[f] <= t < STARTS[f] + LENGTH


def window(ts, key, lo, hi):
    s = ts[key]
    return [v for t, v in zip(s["t_ms"], s["values"]) if v is not None and lo <= t / 1000.0 < hi]


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def point_row(p):
    run = p["results"]["runs"][0]
    ts = run["timeseries"]
    flows = [f"tcp.flow.{f}.goodput_mbps" for f in range(4)]
    shares = []
    for f in (1, 3, 2):  # the delayed flows, by start time
        lo, hi = STARTS[f] + 2.0, STARTS[f] + 4.0
        n = sum(active(lo, g) for g in range(4))
        shares.append(mean(window(ts, flows[f], lo, hi)) / (PAYLOAD_MBPS / n))
    four = [mean(window(ts, k, 27.0, 30.0)) for k in flows]
    jain = sum(four) ** 2 / (4 * sum(x * x for x in four))
    ping = window(ts, "ping.rtt_ms", 25.0, 30.0)
    total = run["metrics"].get("tcp.goodput_mbps")
    return shares, jain, statistics.median(ping) if ping else float("nan"), pct(ping, 0.99), total


def main():
    d = json.load(open(sys.argv[1]))
    print("| setup, cc | TSO | 2nd flow (joins at 5 s) | 4th (15 s) | 3rd (25 s) | Jain, 4 flows | ping p50 / p99 ms, 4 flows | goodput Mbit/s |")
    print("|---|---|---|---|---|---|---|---|")
    for p in d["points"]:
        label = p["label"].split(" device.tso=")[0]
        tso = "on" if "device.tso=true" in p["set"] else "off"
        shares, jain, p50, p99, total = point_row(p)
        s = " | ".join(f"{x:.2f}" for x in shares)
        print(f"| {label} | {tso} | {s} | {jain:.3f} | {p50:.1f} / {p99:.1f} | {total:.1f} |")


if __name__ == "__main__":
    main()
