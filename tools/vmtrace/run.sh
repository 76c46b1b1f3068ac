#!/bin/sh
# Runs one scenario on the kernel backend inside the Debian 6.1 guest (or KERNEL) under
# QEMU's TCG with virtme-ng, with tracefs events and a bpftrace script attached, and
# prints what analyze.py makes of them (docs/validation.md, "What the 6.1 guest's TCP
# does through fq_codel").
#   tools/vmtrace/run.sh OUT SCENARIO [darkbuf run options...]
# e.g. tools/vmtrace/run.sh /tmp/vt validation/tcp-htb.toml \
#        --set traffic.0.cc=reno --set qdisc.class.0.qdisc=fq_codel
# Needs: qemu-system-x86, linux-image-amd64, virtme-ng (vng), bpftrace on this host (the
# guest runs the host's root filesystem; bpftrace needs the guest kernel's BTF and
# kprobes, which Debian's 6.1 has), and a release build of darkbuf.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=${1:?OUT}; SCN=${2:?SCENARIO}; shift 2
KERNEL=${KERNEL:-$(ls /boot/vmlinuz-* | sort -V | tail -1)}
DARKBUF=${DARKBUF:-$ROOT/target/release/darkbuf}
command -v vng > /dev/null || { echo "run.sh: vng (virtme-ng) is not on PATH" >&2; exit 2; }
[ -x "$DARKBUF" ] || { echo "run.sh: $DARKBUF is not built (cargo build --release)" >&2; exit 2; }
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
SCN=$(cd "$(dirname "$SCN")" && pwd)/$(basename "$SCN")
# The darkbuf options, one per line, for the guest script to read back.
printf '%s\n' "$@" > "$OUT/args.txt"
timeout 900 vng --run "$KERNEL" --disable-kvm --force-9p --cpus 2 --memory 2048M \
    --rwdir="$OUT" --user root \
    --exec "sh $HERE/guest.sh $OUT $DARKBUF $SCN $HERE/trace.bt" > "$OUT/vng.log" 2>&1
python3 "$HERE/analyze.py" "$OUT"
