#!/usr/bin/env bash
# README command 1: install, build, start a simulated fat-tree fabric (ibsim
# + opensm) with living faults, and run the exporter against it: symbol
# errors that keep rising on one cable, a congested port, a flapping link,
# a cable that trained one lane where both ends allow four, a miswired
# cable, and an NDR cable whose raw (pre-FEC) bit error ratio rises step by
# step while FEC still corrects it all; each raises its alert within about
# a minute (/api/v1/alerts, the status page).
#   scripts/demo.sh [--listen ADDRESS] [--leaves N] [--spines N] [--hosts-per-leaf N]
#                   [--dir DIR] [--no-build] [--build DIR]
# Stops everything it started on Ctrl-C. --dir: where its files go (.demo);
# --no-build: use the build in --build DIR (build) as it is (the test of
# this script does).
set -euo pipefail
cd "$(dirname "$0")/.."

listen=":9315"; leaves=8; spines=4; hosts=8; dir="$PWD/.demo"; build=build; do_build=1
while [ $# -gt 0 ]; do
  case "$1" in
    --listen) listen="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --build) build="$2"; shift 2 ;;
    --no-build) do_build=0; shift ;;
    --leaves) leaves="$2"; shift 2 ;;
    --spines) spines="$2"; shift 2 ;;
    --hosts-per-leaf) hosts="$2"; shift 2 ;;
    *) echo "demo.sh: unknown argument '$1' (see the header of this script)" >&2; exit 2 ;;
  esac
done

[ "$leaves" -ge 4 ] || { echo "demo.sh: --leaves must be at least 4 (the faults use four leaves)" >&2; exit 2; }
if [ "$do_build" = 1 ]; then bash scripts/build.sh; fi
[ -x "$build/exporter/ibfabric_exporter" ] && [ -e "$build/tests/librmpp.so" ] && [ -e "$build/tests/libmad_timeouts.so" ] || { echo "demo.sh: no exporter (or test bed) in $build (build it, or leave out --no-build)" >&2; exit 2; }

if [ -n "$(ls -A "$dir" 2>/dev/null)" ] && [ ! -e "$dir/fabric.net" ] && [ ! -e "$dir/osm-cache" ]; then
  echo "demo.sh: --dir $dir holds files that are not a demo's; not removing them" >&2; exit 2
fi
rm -rf "$dir"; mkdir -p "$dir/osm-cache"
# umad2sim, and the kernel's RMPP for the SA's long answers (the tables the
# exporter asks the SA for; docs/testing.md): opensm and the exporter alike.
preload="/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so $(cd "$build" && pwd)/tests/librmpp.so"
# And for opensm the kernel's MAD timeouts, which umad2sim has not: opensm
# waits on them (tests/tools/mad_timeouts.cc).
sm_preload="$preload $(cd "$build" && pwd)/tests/libmad_timeouts.so"

# Leaf ports: hosts, then two cables to each spine, then a spare one for
# the miswired cable (leaf 1 to leaf 2).
uplink=$(( hosts + 1 ))
shape=(--leaves "$leaves" --spines "$spines" --hosts-per-leaf "$hosts" --links-per-pair 2
       --radix $(( hosts + spines * 2 + 1 > leaves * 2 ? hosts + spines * 2 + 1 : leaves * 2 )) --leaf-link 1,2)
"$build/tests/gen_fabric" "${shape[@]}" > "$dir/fabric.net"

pids=()
# Newest first: the SMs go before ibsim (an opensm can hang when ibsim dies first).
cleanup() { for (( i=${#pids[@]}-1; i>=0; i-- )); do kill -9 "${pids[i]}" 2>/dev/null || true; done; }
trap cleanup EXIT INT TERM

# ibsim reads its console from a fifo that this script holds open (fd 3).
mkfifo "$dir/console"
exec 3<>"$dir/console"
ibsim -s -N 4096 -S 512 -P 32768 "$dir/fabric.net" <&3 >"$dir/ibsim.log" 2>&1 &
pids+=($!)
for _ in $(seq 100); do grep -q "Network simulator ready" "$dir/ibsim.log" && break; sleep 0.1; done
grep -q "Network simulator ready" "$dir/ibsim.log" || { echo "demo.sh: ibsim failed:"; tail "$dir/ibsim.log"; exit 1; }

# A master SM and a standby, as a production fabric runs them (-d2 flushes
# the log after each message, so that SUBNET UP can be waited for).
echo "demo.sh: starting the subnet managers (opensm master at cn0001, standby at cn0002)"
mkdir -p "$dir/osm-cache-standby"
LD_PRELOAD=$sm_preload SIM_HOST=cn0001 OSM_CACHE_DIR="$dir/osm-cache" \
  opensm -d2 -p 10 -f "$dir/opensm.log" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 600); do grep -q "SUBNET UP" "$dir/opensm.log" 2>/dev/null && break; sleep 0.2; done
grep -q "SUBNET UP" "$dir/opensm.log" || { echo "demo.sh: opensm did not bring the subnet up"; tail "$dir/opensm.log"; exit 1; }
LD_PRELOAD=$sm_preload SIM_HOST=cn0002 OSM_CACHE_DIR="$dir/osm-cache-standby" \
  opensm -d2 -p 1 -f "$dir/opensm-standby.log" >/dev/null 2>&1 &
pids+=($!)
for _ in $(seq 300); do grep -q "STANDBY" "$dir/opensm-standby.log" 2>/dev/null && break; sleep 0.2; done

# Counters with history (no alert: they do not move), then faults that go
# on: every 5 s (the exporter's sweep) 50 more symbol errors on host port
# ib-leaf02[3] (10/s: a bad cable), 600M more XmitWait ticks on
# ib-leaf03's first uplink (about 10 % of the time at QDR: congestion),
# 300M more on cn0017's port (an HCA on ib-leaf03 waiting to send behind
# that uplink: a victim of it, so the congestion shows as a tree), and
# every 10 s one more LinkDownedCounter on ib-leaf01's first uplink (a
# flapping link). The fields are 16, 32 and 8 bits: each starts again
# below its limit, which the exporter reads as a clear.
{
  echo 'PerformanceSet "ib-spine01"[2] PortCounters.PortRcvErrors=42'
  echo 'PerformanceSet "cn0005"[1] PortCounters.LinkDownedCounter=3'
} >&3
(
  errors=0; wait_ticks=0; downs=0; step=0
  while sleep 5; do
    errors=$(( errors + 50 > 60000 ? 50 : errors + 50 ))
    wait_ticks=$(( wait_ticks + 600000000 > 4000000000 ? 600000000 : wait_ticks + 600000000 ))
    step=$(( step + 1 ))
    if [ $(( step % 2 )) -eq 0 ]; then downs=$(( downs + 1 > 200 ? 1 : downs + 1 )); fi
    echo "PerformanceSet \"ib-leaf02\"[3] PortCounters.SymbolErrorCounter=$errors"
    echo "PerformanceSet \"ib-leaf03\"[$uplink] PortCounters.PortXmitWait=$wait_ticks"
    echo "PerformanceSet \"cn0017\"[1] PortCounters.PortXmitWait=$(( wait_ticks / 2 ))"
    echo "PerformanceSet \"ib-leaf01\"[$uplink] PortCounters.LinkDownedCounter=$downs"
  done
) >&3 &
pids+=($!)

# What ibsim cannot be, the exporter reads through the hardware-personality
# preload (docs/testing.md), its state written just before the exporter
# starts (the rates below count from then): the first uplink of leaf 2
# trained one lane (1xQDR) where both its ends allow four (ibsim's net file
# would set the enabled width instead); leaf 4 a Quantum-2 and its first
# host a ConnectX-7, so their cable runs NDR with RS-FEC, and its lane 2
# corrects 20 k symbols a second (a raw bit error ratio of 4.7e-8) for
# half a minute, then 8 times as many, 64 times after 6 s more (3e-6, still
# under the bad-cable level 5e-6): cable_degrading, with no symbol error.
# The trend period is 4 minutes here (a day by default), so the alert
# holds for about four minutes and then clears: a cable that stopped
# getting worse.
fec_host="cn$(printf '%04d' $(( hosts * 3 + 1 )))"
"$build/tests/gen_fabric" "${shape[@]}" --trained "ib-leaf02[$uplink]=1x" \
  --model ib-leaf04=quantum-2 --model "$fec_host=connectx-7" \
  --plant "fec ib-leaf04 1 lanes_per_second=0,0,20000,0 step_factor=8 step_seconds=6 steps=2 step_after=30" \
  --personality "$dir" > /dev/null
printf 'cable_degrading: {period: 4m}\n' > "$dir/alerts.yaml"

port="${listen##*:}"
echo
echo "demo.sh: simulated fabric: $leaves leaves, $spines spines, $(( leaves * hosts )) hosts (files in $dir)"
echo "demo.sh: faults: symbol errors rising on ib-leaf02[3], congestion rooted at ib-leaf03[$uplink] (cn0017 waiting behind it), ib-leaf01[$uplink] flapping, ib-leaf02[$uplink] trained 1x of 4x, ib-leaf01 cabled to ib-leaf02, the raw bit error ratio of ib-leaf04[1] - $fec_host[1] rising"
echo "demo.sh: open http://localhost:${port}/ (status page), http://localhost:${port}/metrics and http://localhost:${port}/api/v1/alerts  (Ctrl-C stops everything)"
echo "demo.sh: inject more faults with: echo 'PerformanceSet \"ib-leaf01\"[2] PortCounters.PortRcvErrors=7' > $dir/console"
echo
LD_PRELOAD="$preload $build/tests/libhw_personality.so" HW_PERSONALITY="$dir/personality.json" SIM_HOST=cn0001 \
  "$build/exporter/ibfabric_exporter" --web.listen-address="$listen" --sweep.interval=5s --discovery.interval=1m \
  --phy.interval=5s --alerts.config="$dir/alerts.yaml" &
pids+=($!)
wait "${pids[-1]}"
