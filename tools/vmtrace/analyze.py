#!/usr/bin/env python3
"""What tools/vmtrace/run.sh recorded in the guest, summarised.

    analyze.py OUT [--from S] [--to S]

OUT holds trace.txt (tracefs: net:net_dev_queue, qdisc:qdisc_dequeue, tcp:tcp_probe,
tcp:tcp_retransmit_skb) and bt.txt (trace.bt's X and M lines). The window is seconds
after the connection's first data skb (default 1 to 4: the suite's TCP scenarios warm up
for 1 s and run for 4). The veth pair is the kernel backend's: the sender's end is the
device whose name ends in "s", the receiver's in "r".
"""
import argparse
import collections
import re
import sys

EVENT = re.compile(r"\s*(\S.*?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+): (\w+): (.*)")
MSS = 1448
TCP_HDR = 32  # with timestamps
FRAME_HDR = 66  # Ethernet + IP + TCP with timestamps


def events(path):
    for line in open(path, errors="replace"):
        m = EVENT.match(line)
        if m:
            comm, _pid, _cpu, ts, name, rest = m.groups()
            yield float(ts), comm, name, rest


def field(rest, key):
    m = re.search(key + r"=(\S+)", rest)
    return m.group(1) if m else None


def segs_of_frame(length):
    return max(1, (length - FRAME_HDR) // MSS) if length > 1514 else 1


def dist(counter):
    return ", ".join(f"{k}: {v}" for k, v in sorted(counter.items()))


def tracefs_summary(path, lo, hi):
    ev = list(events(path))
    data = [e for e in ev if e[2] == "net_dev_queue" and re.search(r"dev=\w+s ", e[3]) and int(field(e[3], "len")) > 200]
    if not data:
        print("trace.txt: no data skbs on the sender's veth")
        return
    t0 = data[0][0]
    win = lambda ts: t0 + lo <= ts < t0 + hi
    segs = collections.Counter(segs_of_frame(int(field(r, "len"))) for ts, _, _, r in data if win(ts))
    n = sum(segs.values())
    total = sum(k * v for k, v in segs.items())
    print(f"data skbs on the sender's veth (net_dev_queue), {lo}-{hi} s: {n}, {total / max(n, 1):.2f} segments each")
    print(f"  segments per skb: {dist(segs)}")
    # The sending task: darkbuf-tcp-rx (the receiving thread's reads), napi, kworker...
    acks = collections.Counter(c.split("/")[0] for ts, c, name, r in ev
                               if name == "net_dev_queue" and re.search(r"dev=\w+r ", r) and int(field(r, "len")) <= 200 and win(ts))
    print(f"  ACKs on the receiver's veth: {sum(acks.values())}, sent from: {dist(acks)}")
    # The flow's skbs left in the qdisc after each dequeue (fq_codel's per-flow backlog
    # that codel_should_drop() compares with the MTU is what they hold).
    inq, left = {}, collections.Counter()
    for ts, comm, name, rest in ev:
        if name == "net_dev_queue" and re.search(r"dev=\w+s ", rest) and int(field(rest, "len")) > 200:
            inq[field(rest, "skbaddr")] = ts
        elif name == "qdisc_dequeue" and "packets=1" in rest:
            if inq.pop(field(rest, "skbaddr"), None) is not None:
                # An skb CoDel dropped never dequeues: forget what waited over 30 ms.
                for k in [k for k, t in inq.items() if ts - t > 0.03]:
                    inq.pop(k)
                if win(ts):
                    left[min(len(inq), 4)] += 1
    if left:
        print(f"  the flow's skbs still in the qdisc after a dequeue (4 = 4 or more): {dist(left)}")
    cw = [(ts, int(field(r, "snd_cwnd"))) for ts, c, name, r in ev
          if name == "tcp_probe" and field(r, "data_len") == "0" and field(r, "src") and field(r, "src").startswith("10.200.0.1:")]
    if cw:
        lows, highs = [], []
        for k in range(int(lo * 5), int(hi * 5)):
            vals = [c for ts, c in cw if t0 + k / 5 <= ts < t0 + (k + 1) / 5]
            if vals:
                lows.append(min(vals))
                highs.append(max(vals))
        print(f"  snd_cwnd per 200 ms (tcp_probe at the sender): lows {lows}, highs {highs}")


def bpftrace_summary(path, lo, hi):
    xs, ms = [], []
    for line in open(path, errors="replace"):
        p = line.split()
        if len(p) >= 11 and p[0] == "X":
            xs.append(p)
        elif len(p) >= 7 and p[0] == "M":
            ms.append(p)
    if xs:
        t0 = int(xs[0][1])
        overhead = collections.Counter()
        maxseq = None
        new, over, single, rtx = collections.Counter(), collections.Counter(), collections.Counter(), collections.Counter()
        for p in xs:
            t, length, truesize, wmem, seq = int(p[1]), int(p[2]), int(p[3]), int(p[4]), int(p[5])
            packets_out = int(p[8])
            payload = length - TCP_HDR
            is_new = maxseq is None or (seq - maxseq) % 2**32 < 2**31
            if is_new:
                maxseq = (seq + payload) % 2**32
            if not (lo * 1e9 <= t - t0 < hi * 1e9):
                continue
            segs = max(1, payload // MSS)
            b = min(segs, 8)
            overhead[truesize - payload] += 1
            if not is_new:
                rtx[b] += 1
                continue
            new[b] += 1
            before = wmem - truesize
            # tcp_small_queue_check(): over twice this skb's truesize (and the pacing
            # rate's 1 ms), TSQ holds it back unless the retransmit queue is empty or
            # holds one skb: before it, the socket's bytes in the host were then one
            # skb of packets_out segments (its payload plus the same overhead) and the 1.
            limit = max(2 * truesize, int(p[6]) >> int(p[7]))
            if before - 1 > limit:
                over[b] += 1
                if before - 1 == packets_out * MSS + (truesize - payload):
                    single[b] += 1
        print(f"TCP skbs into IP (__ip_queue_xmit), {lo}-{hi} s after the first:")
        print(f"  truesize - payload: {dist(overhead)}")
        print("  segments | new-data skbs | sent over TSQ's limit | of those, one skb in flight | retransmissions")
        for b in sorted(set(new) | set(rtx)):
            label = f"{b}+" if b == 8 else str(b)
            print(f"  {label:>8} | {new[b]:13} | {over[b]:21} | {single[b]:27} | {rtx[b]}")
    if ms:
        # The sender's socket: the one with packets out.
        socks = collections.Counter(p[2] for p in ms if int(p[5]) > 0)
        if socks:
            sk = socks.most_common(1)[0][0]
            mine = [p for p in ms if p[2] == sk]
            t0 = int(mine[0][1])
            print("tcp_min_rtt() of the sender's socket as it changed (ms after its first sample: min RTT us, cwnd, packets_out, srtt us):")
            for p in mine:
                print(f"  {(int(p[1]) - t0) / 1e6:9.3f} ms: {p[3]} us, cwnd {p[4]}, packets_out {p[5]}, srtt {p[6]} us")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--from", dest="lo", type=float, default=1.0)
    ap.add_argument("--to", dest="hi", type=float, default=4.0)
    a = ap.parse_args()
    try:
        tracefs_summary(f"{a.out}/trace.txt", a.lo, a.hi)
        bpftrace_summary(f"{a.out}/bt.txt", a.lo, a.hi)
    except OSError as e:
        print(f"analyze.py: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
