#!/usr/bin/env bash
# The golden set: simulator results that a restructuring or speed change must leave
# byte-identical. Runs every scenario in the repository (shortened) and the families the
# model covers (veth BQL per-packet / per-poll / coalesced / limit_min, tun reader and
# vhost, stock and backpressure, every qdisc, mq, softirq NAPI, multi-queue hashing),
# and keeps the `runs` and `summary` of each results JSON.
#
#   tools/golden.sh record DIR      # write DIR/<case>.json with the current build
#   tools/golden.sh check DIR       # run again and compare with DIR; exit 1 on a difference
#
# Uses ./target/release/darkbuf (build it first: cargo build --release), or $DARKBUF.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?record|check}
dir=${2:?directory}
bin=${DARKBUF:-./target/release/darkbuf}
short=(--set duration=1s --set warmup=200ms)

# name | command line after `darkbuf` (the scenario file and its --set overrides)
cases() {
  local s
  for s in scenarios/*.toml crates/darkbuf-kernel/scenarios/*.toml; do
    local n; n=$(basename "$s" .toml)
    case "$s" in crates/*) n="kernel-$n" ;; esac
    # tcp_4up_squarewave's flows start at 0..5 test_delays and stop 6 short of the end.
    local sq=""
    grep -q '^test = "tcp_4up_squarewave"' "$s" && sq="--set test_delay=150ms"
    # A file with a sweep or variants runs as a sweep (every point), others as a run.
    if grep -qE '^\[sweep\]|^\[\[variant\]\]' "$s"; then
      echo "sweep-$n|sweep $s ${short[*]} --set runs=1 $sq"
    else
      echo "run-$n|run $s ${short[*]} $sq"
    fi
  done
  echo "all-keys|run scenarios/examples/all-keys.toml ${short[*]}"
  local v=scenarios/veth-bql.toml
  # veth-bql without its XPS line: flows hash over the TX queues.
  local nx; nx=$(mktemp --suffix=.toml); grep -v '^xps_txq' "$v" > "$nx"
  for q in pfifo_fast pfifo bfifo pfifo_head_drop sfq codel fq_codel fq tbf cake pie fq_pie mq noqueue; do
    local extra=""
    [ "$q" = tbf ] && extra="--set qdisc.rate=200mbit --set qdisc.burst=32k --set qdisc.latency=20ms"
    [ "$q" = noqueue ] && extra="--set device.bql.enabled=false"
    echo "veth-$q|run $v ${short[*]} --set qdisc.kind=$q $extra"
  done
  echo "veth-htb|run $v ${short[*]} --set qdisc.kind=htb --set qdisc.default=0x10 --set traffic.0.priority=1:10"
  echo "veth-perpoll|run $v ${short[*]} --set device.bql.completion=per-poll"
  echo "veth-coalesced|run $v ${short[*]} --set device.bql.completion=coalesced --set device.bql.tx_usecs=50"
  echo "veth-coalesced0|run $v ${short[*]} --set device.bql.completion=coalesced --set device.bql.tx_usecs=0"
  echo "veth-bytes|run $v ${short[*]} --set device.bql.unit=byte --set device.bql.limit_min=0"
  echo "veth-nobql|run $v ${short[*]} --set device.bql.enabled=false"
  echo "veth-limit4|run $v ${short[*]} --set device.bql.limit_min=4"
  echo "veth-softirq|run $v ${short[*]} --set device.napi=softirq"
  echo "veth-nobp|run $v ${short[*]} --set device.backpressure=false"
  echo "veth-noxps-pfifo_fast|run $nx ${short[*]} --set traffic.0.flows=16 --set qdisc.kind=pfifo_fast"
  echo "veth-noxps-sfq|run $nx ${short[*]} --set traffic.0.flows=16"
  echo "veth-noxps-fq_codel|run $nx ${short[*]} --set traffic.0.flows=16 --set qdisc.kind=fq_codel"
  echo "veth-noxps-mq|run $nx ${short[*]} --set traffic.0.flows=16 --set qdisc.kind=mq"
  echo "veth-noxps-nobql|run $nx ${short[*]} --set traffic.0.flows=16 --set device.bql.enabled=false"
  echo "veth-rate|run $v ${short[*]} --set traffic.0.rate=50kpps"
  echo "veth-4cpu|run $nx ${short[*]} --set machine.cpus=4 --set device.tx_queues=4 --set traffic.0.flows=8"
  echo "veth-nrules0-seeds|run scenarios/seed-nrules0.toml ${short[*]} --set runs=3"
  local t=scenarios/tap-reader.toml
  echo "tap-bp|run $t ${short[*]} --set device.backpressure=true"
  echo "tap-vhost|run $t ${short[*]} --set consumer.kind=vhost --set consumer.app_cost=0us"
  echo "tap-vhost-bp|run $t ${short[*]} --set consumer.kind=vhost --set device.backpressure=true --set consumer.app_cost=1us"
  echo "tap-fq_codel-bp|run $t ${short[*]} --set device.backpressure=true --set qdisc.kind=fq_codel"
  echo "tap-2q|run $t ${short[*]} --set device.tx_queues=2 --set traffic.0.flows=4 --set device.backpressure=true"
  # The pinger listed before the floods (task order), one flood rate-limited.
  local pf; pf=$(mktemp --suffix=.toml)
  { sed '/^\[\[traffic\]\]/,$d' "$v"; printf '[[traffic]]\nkind = "ping"\ninterval = "20ms"\n[[traffic]]\nkind = "udp"\nrate = "30kpps"\n[[traffic]]\nkind = "udp"\nsize = 200\n'; } > "$pf"
  echo "veth-ping-first|run $pf ${short[*]}"
  # Three pingers (ping.N.*) on different CPUs, one of them a larger probe, with a flood.
  local pp; pp=$(mktemp --suffix=.toml)
  { cat "$v"; printf '[[traffic]]\nkind = "ping"\ninterval = "7ms"\ncpu = 1\n[[traffic]]\nkind = "ping"\ninterval = "13ms"\nsize = 500\n'; } > "$pp"
  echo "veth-three-pings|run $pp ${short[*]}"
  echo "tap-noqueue|run $t ${short[*]} --set qdisc.kind=noqueue"
}

# The parts of a results JSON that must not move: runs and summary.
extract() {
  python3 -c '
import json, sys
d = json.load(sys.stdin)
keep = lambda r: {k: r[k] for k in ("runs", "summary")}
points = [dict(label=p["label"], set=p["set"], **keep(p["results"])) for p in d.get("points", [])]
print(json.dumps(points if points else keep(d), sort_keys=True))'
}

mkdir -p "$dir"
status=0
while IFS='|' read -r name cmd; do
  # shellcheck disable=SC2086
  out=$($bin $cmd --format json 2>/dev/null | extract) || { echo "FAIL  $name: darkbuf exited non-zero ($cmd)"; status=1; continue; }
  case "$mode" in
    record) printf '%s\n' "$out" > "$dir/$name.json"; echo "rec   $name" ;;
    check)
      if [ "$out" == "$(cat "$dir/$name.json")" ]; then echo "same  $name"; else echo "DIFF  $name ($cmd)"; status=1; fi ;;
  esac
done < <(cases)
exit $status
