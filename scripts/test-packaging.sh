#!/usr/bin/env bash
# The packaging check: the Debian package and the container image as an
# operator gets them, proven on a simulated fabric. A bounded test of its
# own beside the suite (scripts/test.sh, whose 20 minutes it would not fit:
# it compiles the exporter again, the Debian way); its time is in
# docs/testing.md. As root, on Debian 12; installs what it needs.
#   scripts/test-packaging.sh [--full-image] [--deb FILE] [--out DIR]
#   --full-image  the image's build stage compiles the package too (another
#                 build of the exporter); by default the image installs the
#                 .deb this run built (the Containerfile's DEBS=prebuilt)
#   --deb FILE    check this package instead of building one (step 1 is
#                 then lintian alone)
#   --out DIR     where the root and the logs go (build/packaging)
# Each step says what it checked; the last line is the time of each.
#  1. scripts/package.sh: the .deb (dpkg-buildpackage -b), lintian clean.
#  2. A throwaway root made by mmdebstrap from Debian's packages with the
#     .deb installed by apt (its dependencies resolved, its postinst run):
#     the unit verified there (systemd-analyze verify --root), the system
#     user, the udev rule, the default flags file, /usr/share's files.
#  3. The installed binary, run in that root: --version, and --check against
#     a simulated fabric (ibsim, opensm; the host's umad2sim preloaded).
#  4. The image: that root's base (minbase) imported into podman, the
#     Containerfile built on it, run as its non-root user with every
#     capability dropped against the same fabric until /metrics serves the
#     fabric's HCAs; its size.
#  5. The unit started by systemd: the root of step 2 booted in podman,
#     the unit pointed at the fabric by a drop-in: without its M_Key
#     credential file it does not start, with it it runs as user ibfabric
#     without capabilities and serves its host's port.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$repo/build/packaging" full=0 deb=""
while [ $# -gt 0 ]; do
  case "$1" in
    --full-image) full=1; shift ;;
    --deb) deb="$(readlink -f "${2:?--deb needs a file}")"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    *) echo "test-packaging.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[ "$(id -u)" = 0 ] || { echo "test-packaging.sh: run as root (mmdebstrap, chroot, podman)" >&2; exit 2; }
mkdir -p "$out"
out="$(cd "$out" && pwd)"
start=$(date +%s) phases="" current=install
phase() { phases="$phases, $current $(($(date +%s) - start)) s"; current="$1" start=$(date +%s); }
pids=()
cleanup() {
  rc=$?
  for (( i=${#pids[@]}-1; i>=0; i-- )); do kill -9 "${pids[i]}" 2>/dev/null || true; done
  podman rm -f -i -t 0 ibfabric-packaging ibfabric-systemd >/dev/null 2>&1 || true
  umount "$out/root/umad2sim" 2>/dev/null || true
  echo "test-packaging.sh: ${phases#, }${current:+${phases:+, }$current $(($(date +%s) - start)) s}$([ $rc = 0 ] || echo " (failed, exit $rc)")"
}
trap cleanup EXIT
fail() { echo "test-packaging.sh: $*" >&2; exit 1; }

bash "$repo/scripts/install-deps.sh" --packaging
# The build dependencies debian/control names (apt-get build-dep on the
# source tree: the package's own list, not this script's).
(cd "$repo" && DEBIAN_FRONTEND=noninteractive apt-get build-dep -y -qq ./ > "$out/build-dep.log" 2>&1) ||
  { tail "$out/build-dep.log"; fail "apt-get build-dep failed"; }

phase package
if [ -z "$deb" ]; then
  deb=$(bash "$repo/scripts/package.sh" --out "$repo/build/debian" | tee "$out/package.log" | tail -1)
  [ -f "$deb" ] || { cat "$out/package.log"; fail "no package built"; }
  grep -q "lintian clean" "$out/package.log" || { cat "$out/package.log"; fail "lintian"; }
else
  [ -f "$deb" ] || fail "no file $deb"
  tags=$(lintian --pedantic --display-experimental --show-overrides "$deb" 2>&1 | grep -v '^running with root' || true)
  [ -z "$tags" ] || { echo "$tags"; fail "lintian is not clean"; }
fi
echo "test-packaging.sh: $(basename "$deb"), lintian clean ($(du -k "$deb" | cut -f1) kB)"

phase root
# A minimal Debian 12 with the package (and systemd, which runs its unit and
# creates its user) installed by apt, as an operator's host would have it.
rm -rf "$out/root" "$out/base.tar"
mmdebstrap --variant=minbase --include=systemd \
  --customize-hook="copy-in '$deb' /tmp" \
  --customize-hook="chroot \"\$1\" apt-get install -y --no-install-recommends /tmp/$(basename "$deb")" \
  --customize-hook="rm -f \"\$1/tmp/$(basename "$deb")\"" \
  bookworm "$out/root" > "$out/mmdebstrap.log" 2>&1 ||
  { tail -20 "$out/mmdebstrap.log"; fail "mmdebstrap with the package failed"; }
r="$out/root"
[ -x "$r/usr/bin/ibfabric_exporter" ] || fail "no /usr/bin/ibfabric_exporter in the root"
unit="$r/lib/systemd/system/ibfabric_exporter.service"
[ -f "$unit" ] || fail "no unit at /lib/systemd/system/ibfabric_exporter.service"
verify=$(systemd-analyze verify --root="$r" ibfabric_exporter.service 2>&1) || { echo "$verify"; fail "the unit does not verify"; }
[ -z "$verify" ] || { echo "$verify"; fail "systemd-analyze verify said something"; }
grep -q '^ibfabric:' "$r/etc/passwd" || fail "no user ibfabric (sysusers at install)"
grep -q '^ibfabric:' "$r/etc/group" || fail "no group ibfabric"
grep -q 'GROUP="ibfabric"' "$r/lib/udev/rules.d/60-ibfabric-exporter.rules" || fail "no udev rule for umad"
[ -f "$r/etc/default/ibfabric_exporter" ] || fail "no /etc/default/ibfabric_exporter"
for f in prometheus/infiniband-rules.yml alertmanager/alertmanager.yml dashboards/fabric-overview.json grafana/dashboards.yaml; do
  [ -f "$r/usr/share/ibfabric-exporter/$f" ] || fail "no /usr/share/ibfabric-exporter/$f"
done
[ -f "$r/usr/share/man/man1/ibfabric_exporter.1.gz" ] || fail "no manual page"
echo "test-packaging.sh: installed in a throwaway root: unit verifies, user and group ibfabric, udev rule, defaults, rules, dashboards, manual"

phase fabric
# A small fabric: two leaves, a spine, two hosts on each leaf.
fab="$out/fabric"
rm -rf "$fab"; mkdir -p "$fab/osm-cache"
{
  # ibsim's net format (ibnetdiscover's): each port, its far end, a comment
  # with the far end's name, LID and rate.
  for l in 1 2; do
    printf 'Switch 8 "ib-leaf0%d"\n' $l
    for h in 1 2; do
      n=$(( (l - 1) * 2 + h ))
      printf '[%d] "cn000%d mlx5_0"[1]  # "cn000%d mlx5_0" lid 0 4xQDR\n' $h $n $n
    done
    printf '[3] "ib-spine01"[%d]  # "ib-spine01" lid 0 4xQDR\n\n' $l
  done
  printf 'Switch 8 "ib-spine01"\n'
  for l in 1 2; do printf '[%d] "ib-leaf0%d"[3]  # "ib-leaf0%d" lid 0 4xQDR\n' $l $l $l; done
  for n in 1 2 3 4; do
    l=$(( (n - 1) / 2 + 1 )) p=$(( (n - 1) % 2 + 1 ))
    printf '\nHca 1 "cn000%d mlx5_0"\n[1] "ib-leaf0%d"[%d]  # lid 0 lmc 0 "ib-leaf0%d" lid 0 4xQDR\n' $n $l $p $l
  done
} > "$fab/fabric.net"
export IBSIM_SOCKNAME=ibpkg
umad2sim=/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so
mkfifo "$fab/console"
exec 3<>"$fab/console"
ibsim -s "$fab/fabric.net" <&3 > "$fab/ibsim.log" 2>&1 &
pids+=($!)
disown "${pids[-1]}"  # killed at the end, and not reported so
for _ in $(seq 100); do grep -q "Network simulator ready" "$fab/ibsim.log" && break; sleep 0.1; done
grep -q "Network simulator ready" "$fab/ibsim.log" || { tail "$fab/ibsim.log"; fail "ibsim did not start"; }
(cd "$fab" && LD_PRELOAD=$umad2sim SIM_HOST="cn0004 mlx5_0" OSM_CACHE_DIR="$fab/osm-cache" \
  timeout 120 opensm -o -f "$fab/opensm.log" > /dev/null 2>&1) || true
grep -q "SUBNET UP" "$fab/opensm.log" || { tail "$fab/opensm.log"; fail "opensm did not bring the subnet up"; }

phase installed
# The installed binary in its root (its own libraries, from Debian), the
# host's umad2sim bound in; ibsim's sockets are abstract: the root reaches
# them.
mkdir -p "$r/umad2sim"
mount --bind "$(dirname "$umad2sim")" "$r/umad2sim"
in_root() { chroot "$r" env LD_PRELOAD=/umad2sim/libumad2sim.so SIM_HOST="cn0001 mlx5_0" IBSIM_SOCKNAME=ibpkg "$@"; }
version=$(chroot "$r" /usr/bin/ibfabric_exporter --version)
want=$(dpkg-deb -f "$deb" Version)
[ "$version" = "ibfabric_exporter, version $want" ] || fail "--version says '$version', the package is $want"
check=$(cd "$r/tmp" && in_root /usr/bin/ibfabric_exporter --check 2>&1) || { echo "$check"; fail "--check failed"; }
echo "test-packaging.sh: installed binary: '$version'; --check: $check"
umount "$r/umad2sim"

phase image
# The base: Debian 12 minbase from Debian's packages (no registry), then the
# Containerfile on it; podman with runc (crun refuses hybrid cgroups) and
# rlimits no higher than this machine's (no CAP_SYS_RESOURCE here).
run_opts=(--runtime runc --ulimit "nofile=$(ulimit -n):$(ulimit -n)" --ulimit "nproc=4096:4096")
# Slim as Debian's -slim images are: no documentation, manual pages or
# translations (the dpkg settings stay in the image, for what the
# Containerfile installs), no apt lists or caches.
slim=()
for p in '/usr/share/doc/*' '/usr/share/man/*' '/usr/share/info/*' '/usr/share/locale/*' '/usr/share/lintian/*'; do
  slim+=(--dpkgopt="path-exclude=$p")
done
slim+=(--dpkgopt="path-include=/usr/share/doc/*/copyright")
mmdebstrap --variant=minbase "${slim[@]}" \
  --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*.bin' \
  bookworm "$out/base.tar" > "$out/base.log" 2>&1 ||
  { tail -20 "$out/base.log"; fail "mmdebstrap of the base failed"; }
podman import -q "$out/base.tar" localhost/ibfabric-base:bookworm > /dev/null
tag=$(dpkg-deb -f "$deb" Version)
debs=prebuilt; [ "$full" = 1 ] && debs=build
podman build --runtime runc --network host --ulimit "nofile=$(ulimit -n):$(ulimit -n)" --ulimit nproc=4096:4096 \
  --build-arg BASE=localhost/ibfabric-base:bookworm --build-arg DEBS=$debs \
  -f "$repo/deploy/container/Containerfile" -t "localhost/ibfabric-exporter:$tag" "$repo" > "$out/image.log" 2>&1 ||
  { tail -30 "$out/image.log"; fail "podman build failed"; }
size=$(podman image inspect --format '{{.Size}}' "localhost/ibfabric-exporter:$tag")
user=$(podman image inspect --format '{{.Config.User}}' "localhost/ibfabric-exporter:$tag")
[ "$user" = "65532:65532" ] || fail "the image runs as '$user', not 65532:65532"
port=19315
podman rm -f -i -t 0 ibfabric-packaging > /dev/null 2>&1 || true  # an interrupted run's
podman run -d --name ibfabric-packaging "${run_opts[@]}" --network host --cap-drop ALL --read-only \
  --security-opt no-new-privileges \
  -v "$(dirname "$umad2sim"):/umad2sim:ro" \
  -e LD_PRELOAD=/umad2sim/libumad2sim.so -e SIM_HOST="cn0002 mlx5_0" -e IBSIM_SOCKNAME=ibpkg \
  --tmpfs /tmp -w /tmp \
  "localhost/ibfabric-exporter:$tag" --web.listen-address=127.0.0.1:$port --sweep.interval=1s > /dev/null
metrics=""
for _ in $(seq 120); do
  metrics=$(curl -sf "http://127.0.0.1:$port/metrics" || true)
  [ "$(grep -c '^infiniband_hca_info{' <<< "$metrics")" = 4 ] && break
  sleep 0.5
done
[ "$(grep -c '^infiniband_hca_info{' <<< "$metrics")" = 4 ] ||
  { podman logs ibfabric-packaging | tail -20; fail "the container did not serve the fabric's 4 HCAs on /metrics"; }
grep -q '^infiniband_switch_info{' <<< "$metrics" || fail "no switch in the container's /metrics"
uid=$(podman exec ibfabric-packaging cat /proc/1/status | awk '/^Uid:/ {print $2}')
caps=$(podman exec ibfabric-packaging cat /proc/1/status | awk '/^CapEff:/ {print $2}')
[ "$uid" = 65532 ] && [ "$caps" = 0000000000000000 ] || fail "the exporter runs as uid $uid with capabilities $caps"
echo "test-packaging.sh: image localhost/ibfabric-exporter:$tag ($((size / 1000000)) MB) serves /metrics: 4 HCAs and the switches, as uid $uid with no capability"
podman rm -f ibfabric-packaging > /dev/null

phase unit
# The unit started by a real systemd: the throwaway root (systemd and the
# package installed) booted in a container, a drop-in that points the unit
# at the simulated fabric (umad2sim, the test's only change to it).
tar -C "$r" -c . | podman import -q - localhost/ibfabric-systemd:test > /dev/null
podman rm -f -i -t 0 ibfabric-systemd > /dev/null 2>&1 || true  # an interrupted run's
podman run -d --name ibfabric-systemd "${run_opts[@]}" --systemd=always --network host \
  -v "$(dirname "$umad2sim"):/umad2sim:ro" localhost/ibfabric-systemd:test /lib/systemd/systemd > /dev/null
in_box() { podman exec -i ibfabric-systemd sh -c "$1"; }
for _ in $(seq 100); do [ "$(in_box 'systemctl is-system-running' 2>/dev/null)" = running ] && break; sleep 0.2; done
printf '%s\n' '[Service]' \
  'Environment=LD_PRELOAD=/umad2sim/libumad2sim.so "SIM_HOST=cn0003 mlx5_0" IBSIM_SOCKNAME=ibpkg' \
  'WorkingDirectory=/tmp' |
  in_box 'mkdir -p /etc/systemd/system/ibfabric_exporter.service.d && cat > /etc/systemd/system/ibfabric_exporter.service.d/sim.conf'
# Its M_Key line uncommented: a missing key file stops the unit
# (243/CREDENTIALS), a present one reaches the exporter.
in_box "sed -i 's/^#LoadCredential=m_key:/LoadCredential=m_key:/' /lib/systemd/system/ibfabric_exporter.service && systemctl daemon-reload && systemctl restart ibfabric_exporter" || true
sleep 2
[ "$(in_box 'systemctl show -p ExecMainStatus --value ibfabric_exporter')" = 243 ] ||
  fail "the unit started without its credential file"
in_box 'mkdir -p /etc/ibfabric && echo 0x1234 > /etc/ibfabric/m_key && chmod 600 /etc/ibfabric/m_key && systemctl restart ibfabric_exporter'
for _ in $(seq 60); do
  curl -sf http://127.0.0.1:9315/metrics | grep -q '^infiniband_hca_info{.*cn0003' && break
  sleep 0.5
done
[ "$(in_box 'systemctl is-active ibfabric_exporter')" = active ] ||
  { in_box 'journalctl -u ibfabric_exporter --no-pager | tail'; fail "the unit is not active"; }
pid=$(in_box 'systemctl show -p MainPID --value ibfabric_exporter')
# The exporter takes $CREDENTIALS_DIRECTORY/m_key where no flag gives a key
# (exporter/main.cc KeyFromCredentials); systemd 252 sets that directory to
# /run/credentials/UNIT, holding the key for the running unit.
[ "$(in_box 'cat /run/credentials/ibfabric_exporter.service/m_key')" = 0x1234 ] ||
  { in_box 'journalctl -u ibfabric_exporter --no-pager | tail'; fail "the unit was not given its M_Key credential"; }
owner=$(in_box "awk '/^Uid:/ {print \$2}' /proc/$pid/status")
caps=$(in_box "awk '/^CapEff:/ {print \$2}' /proc/$pid/status")
[ "$owner" = "$(in_box 'id -u ibfabric')" ] && [ "$caps" = 0000000000000000 ] ||
  fail "the unit's exporter runs as uid $owner with capabilities $caps"
curl -sf http://127.0.0.1:9315/metrics | grep -q '^infiniband_hca_info{.*cn0003' || fail "the unit's exporter serves no cn0003"
echo "test-packaging.sh: the unit under systemd: without its credential file it does not start (243/CREDENTIALS); with it, given the key, active as user ibfabric (uid $owner) with no capability, serving its host's port"
podman rm -f -i -t 0 ibfabric-systemd > /dev/null
phase ""
