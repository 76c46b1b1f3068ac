#!/bin/sh
# mac80211_hwsim in a VM (issue 55's kernel-backend question, docs/wifi.md "What a
# kernel can check"): an AP and two stations, each radio in its own namespace
# (hostapd, wpa_supplicant), a bounded UDP flood from the AP to each station for 3 s,
# and what the kernel shows of the queues: tc, mac80211's debugfs, iw's station dump.
# Runs inside the guest; run.sh boots it. Writes OUT/log.txt (OUT: $1).
HERE=$(dirname "$0")
OUT=${1:?output directory}
mkdir -p $OUT
exec > $OUT/log.txt 2>&1
set -x
uname -r
cat /proc/sys/net/core/default_qdisc
modprobe mac80211_hwsim radios=3 || exit 1
mountpoint -q /sys/kernel/debug || mount -t debugfs none /sys/kernel/debug
iw dev
ip netns add ap; ip netns add sta1; ip netns add sta2
iw phy phy0 set netns name ap
iw phy phy1 set netns name sta1
iw phy phy2 set netns name sta2
for n in ap sta1 sta2; do ip netns exec $n ip link set lo up; done
cat > /tmp/hostapd.conf <<EOC
interface=wlan0
driver=nl80211
ssid=darkbuf
hw_mode=g
channel=1
ieee80211n=1
wmm_enabled=1
ht_capab=[SHORT-GI-20]
EOC
ip netns exec ap hostapd -B -f /tmp/hostapd.log /tmp/hostapd.conf
sleep 3
printf 'network={\n ssid="darkbuf"\n key_mgmt=NONE\n}\n' > /tmp/wpa.conf
ip netns exec sta1 wpa_supplicant -B -i wlan1 -c /tmp/wpa.conf -f /tmp/wpa1.log
ip netns exec sta2 wpa_supplicant -B -i wlan2 -c /tmp/wpa.conf -f /tmp/wpa2.log
for i in $(seq 1 30); do
  ip netns exec sta1 iw dev wlan1 link | grep -q Connected && ip netns exec sta2 iw dev wlan2 link | grep -q Connected && break
  sleep 1
done
ip netns exec sta1 iw dev wlan1 link
ip netns exec sta2 iw dev wlan2 link
ip netns exec ap ip addr add 10.9.0.1/24 dev wlan0
ip netns exec sta1 ip addr add 10.9.0.2/24 dev wlan1
ip netns exec sta2 ip addr add 10.9.0.3/24 dev wlan2
ip netns exec sta1 ip link set wlan1 up; ip netns exec sta2 ip link set wlan2 up
ip netns exec ap ip link show wlan0
ip netns exec ap tc -s qdisc show dev wlan0
D=/sys/kernel/debug/ieee80211/phy0
ls $D
for f in aqm airtime_flags aql_enable aql_threshold aql_txq_limit aql_pending; do echo "== $f"; cat $D/$f; done
ip netns exec ap python3 $HERE/flood.py 10.9.0.2 5001 3 > $OUT/flood1.txt &
ip netns exec ap python3 $HERE/flood.py 10.9.0.3 5001 3 > $OUT/flood2.txt &
sleep 1.5
for f in aqm aql_pending; do echo "== loaded $f"; cat $D/$f; done
for s in $D/netdev:wlan0/stations/*; do echo "== loaded $s"; ls $s; for f in aqm airtime aql; do echo "-- $f"; cat $s/$f; done; done
ip netns exec ap ip link show wlan0
ip netns exec ap tc -s qdisc show dev wlan0
wait
echo "== after"
cat $D/aqm
for s in $D/netdev:wlan0/stations/*; do echo "== $s"; for f in aqm airtime aql; do echo "-- $f"; cat $s/$f; done; done
ip netns exec ap iw dev wlan0 station dump -v
echo "== iw phy phy0 info (TXQ)"
ip netns exec ap iw phy phy0 info | grep -i -A4 txq
ip netns exec ap ip link show wlan0
ip netns exec ap tc -s qdisc show dev wlan0
cat /tmp/hostapd.log | tail -20
echo done
