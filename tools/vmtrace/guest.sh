#!/bin/sh
# In the guest: tracefs events and trace.bt around one `darkbuf run --backend kernel`.
#   guest.sh OUT DARKBUF SCENARIO BT
set -u
OUT=$1; DARKBUF=$2; SCN=$3; BT=$4
T=/sys/kernel/tracing
mountpoint -q $T || mount -t tracefs nodev $T
echo 20000 > $T/buffer_size_kb
for e in net/net_dev_queue qdisc/qdisc_dequeue tcp/tcp_probe tcp/tcp_retransmit_skb; do
    echo 1 > $T/events/$e/enable
done
echo > $T/trace
BP=
if command -v bpftrace > /dev/null; then
    bpftrace "$BT" > "$OUT/bt.txt" 2>&1 &
    BP=$!
    # bpftrace prints "Attaching" once its probes are in.
    i=0; while [ $i -lt 120 ] && ! grep -q Attaching "$OUT/bt.txt" 2>/dev/null; do sleep 0.5; i=$((i+1)); done
    sleep 1
else
    echo "bpftrace is not installed on the host: tracefs events only" > "$OUT/bt.txt"
fi
echo 1 > $T/tracing_on
cd "$(dirname "$SCN")"
set --
while IFS= read -r a; do set -- "$@" "$a"; done < "$OUT/args.txt"
"$DARKBUF" run --backend kernel "$SCN" "$@" > "$OUT/results.txt" 2>&1
echo 0 > $T/tracing_on
[ -n "$BP" ] && { kill -INT $BP; wait $BP; }
cat $T/trace > "$OUT/trace.txt"
