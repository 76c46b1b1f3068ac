#!/usr/bin/env bash
# The real kernel's answer to "does a FIFO fill behind a router, and in front of a local
# sender?" (docs/router.md). Three network namespaces, client -> router -> server, joined
# by veth pairs with TSO, GSO and GRO off; the router forwards and shapes its egress
# with htb at 100 Mbit over a 1000-packet pfifo. One cubic TCP flow runs for 15 s with a
# UDP echo probe every 100 ms (after 3 s): first from the client (forwarded), then from
# the router itself (local). Needs root, iproute2, ethtool and python3.
#
#   sudo tools/router_kernel.sh
#
# Everything it creates is removed on exit, error or Ctrl-C.
set -euo pipefail
ns=(dbrA dbrR dbrB)
here=$(cd "$(dirname "$0")" && pwd)
cleanup() {
  for n in "${ns[@]}"; do ip netns del "$n" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM
for n in "${ns[@]}"; do
  if ip netns list | grep -qw "$n"; then echo "namespace $n exists: remove it first" >&2; trap - EXIT; exit 2; fi
done
for n in "${ns[@]}"; do ip netns add "$n"; ip -n "$n" link set lo up; done
ip -n dbrA link add a0 type veth peer name r0 netns dbrR
ip -n dbrR link add r1 type veth peer name b0 netns dbrB
ip -n dbrA addr add 10.1.0.1/24 dev a0
ip -n dbrR addr add 10.1.0.2/24 dev r0
ip -n dbrR addr add 10.2.0.1/24 dev r1
ip -n dbrB addr add 10.2.0.2/24 dev b0
for d in "dbrA a0" "dbrR r0" "dbrR r1" "dbrB b0"; do
  set -- $d
  ip -n "$1" link set "$2" up
  ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null
done
ip -n dbrA route add default via 10.1.0.2
ip -n dbrB route add default via 10.2.0.1
ip netns exec dbrR sh -c 'echo 1 > /proc/sys/net/ipv4/ip_forward'
ip netns exec dbrR tc qdisc add dev r1 root handle 1: htb default 1 r2q 100
ip netns exec dbrR tc class add dev r1 parent 1: classid 1:1 htb rate 100mbit
ip netns exec dbrR tc qdisc add dev r1 parent 1:1 handle 10: pfifo limit 1000

for sender in dbrA dbrR; do
  # A fresh pfifo per run: its counters are this run's.
  ip netns exec dbrR tc qdisc del dev r1 parent 1:1 handle 10:
  ip netns exec dbrR tc qdisc add dev r1 parent 1:1 handle 10: pfifo limit 1000
  ip netns exec dbrB timeout 40 python3 "$here/router_kernel.py" server &
  server=$!
  sleep 1
  label=$([ "$sender" = dbrA ] && echo "forwarded (client)" || echo "local (router)")
  echo "== $label"
  ip netns exec "$sender" timeout 40 python3 "$here/router_kernel.py" client 10.2.0.2 15
  wait "$server"
  ip netns exec dbrR tc -s qdisc show dev r1 | sed -n '/pfifo/,+1p'
done
