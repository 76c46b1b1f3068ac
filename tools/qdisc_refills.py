#!/usr/bin/env python3
"""Who refills a full qdisc, and how soon: reads an ftrace log of the qdisc's
`qdisc:qdisc_enqueue` and `qdisc:qdisc_dequeue` events and prints how long the qdisc
was full, the time from each dequeue of a full qdisc to the next enqueue (a freed
slot's life), and which task context made that enqueue.

    python3 tools/qdisc_refills.py TRACE [--handle 0x10000] [--limit 5] [--skip 1.0]

Record the trace as root around a kernel-backend run (docs/tcp-small-fifo.md):

    cd /sys/kernel/tracing
    echo 1 > events/qdisc/qdisc_enqueue/enable; echo 1 > events/qdisc/qdisc_dequeue/enable
    echo > trace; echo 1 > tracing_on
    darkbuf run --backend kernel SCENARIO
    echo 0 > tracing_on; cat trace > TRACE; echo 0 > events/qdisc/enable

`qdisc_enqueue` fires only for an enqueue the qdisc took (`dev_qdisc_enqueue()`), so the
queue length is rebuilt from the events, starting empty (the backend creates the qdisc).
`--handle` picks the root qdisc (htb 1: is 0x10000), `--limit` is the queue length that
counts as full, `--skip` leaves out the first seconds (the warmup).
"""
import argparse
import collections
import re
import statistics

EVENT = re.compile(r"^\s*(\S.*?)\s+\[\d+\].*?\s(\d+\.\d+): qdisc_(enqueue|dequeue): .*?handle=(0x[0-9A-Fa-f]+)")
PACKETS = re.compile(r"packets=(\d+)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--handle", default="0x10000")
    ap.add_argument("--limit", type=int, default=5)
    ap.add_argument("--skip", type=float, default=1.0)
    a = ap.parse_args()
    handle = int(a.handle, 16)
    events = []
    with open(a.trace) as f:
        for line in f:
            m = EVENT.match(line)
            if not m or int(m.group(4), 16) != handle:
                continue
            n = 1
            if m.group(3) == "dequeue":
                p = PACKETS.search(line)
                n = int(p.group(1)) if p else 1
                if n == 0:
                    continue
            # The task context: "comm-pid" (ftrace's first column).
            events.append((float(m.group(2)), m.group(3), n, m.group(1).rsplit("-", 1)[0]))
    if not events:
        raise SystemExit(f"no qdisc events of handle {a.handle} in {a.trace}")
    t0 = events[0][0] + a.skip
    qlen, last, full_s, freed = 0, None, 0.0, None
    gaps = collections.defaultdict(list)
    for t, kind, n, comm in events:
        if last is not None and t > t0 and qlen >= a.limit:
            full_s += t - last
        last = t
        if kind == "enqueue":
            if freed is not None and t > t0:
                gaps[comm].append(t - freed)
                freed = None
            qlen += 1
        else:
            if qlen >= a.limit:
                freed = t
            qlen -= n
    span = events[-1][0] - t0
    print(f"full {full_s / span:.0%} of {span:.2f} s")
    every = sorted(g for v in gaps.values() for g in v)
    if not every:
        return
    us = lambda v, q: 1e6 * v[min(len(v) - 1, int(q * len(v)))]
    print(f"refills of a freed slot: {len(every)}, median {1e6 * statistics.median(every):.0f} us, "
          f"mean {1e6 * statistics.mean(every):.0f} us, p10 {us(every, 0.1):.0f} us, p90 {us(every, 0.9):.0f} us")
    for comm, v in sorted(gaps.items(), key=lambda kv: -len(kv[1])):
        v.sort()
        print(f"  {comm:24} {len(v):6}  median {1e6 * statistics.median(v):6.0f} us  p10 {us(v, 0.1):6.0f} us  p90 {us(v, 0.9):6.0f} us")


if __name__ == "__main__":
    main()
