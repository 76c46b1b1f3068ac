#!/bin/sh
# Boots the Debian 6.1 kernel (or KERNEL) under QEMU's TCG with virtme-ng and runs
# guest.sh in it; the guest's log lands in OUT/log.txt (default /tmp/darkbuf-hwsim).
# Needs: qemu-system-x86, linux-image-amd64, virtme-ng (vng), hostapd, wpasupplicant,
# iw, python3 (the guest runs the host's root filesystem read-only).
#   tools/hwsim/run.sh [OUT]
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-/tmp/darkbuf-hwsim}
KERNEL=${KERNEL:-$(ls /boot/vmlinuz-* | sort -V | tail -1)}
mkdir -p "$OUT"
timeout 600 vng --run "$KERNEL" --disable-kvm --force-9p --cpus 2 --memory 2048M \
    --rwdir="$OUT" --user root --exec "sh $HERE/guest.sh $OUT" > "$OUT/vng.log" 2>&1
echo "$OUT/log.txt"
