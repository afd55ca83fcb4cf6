#!/usr/bin/env bash
# Installs everything the project needs to build, run on a simulated fabric
# and test, from Debian's packages. Idempotent: packages already present are
# not fetched again, and apt's lists are refreshed only when something is missing.
set -euo pipefail

packages=(
  # build
  build-essential cmake pkg-config
  # rdma-core: the MAD libraries and their headers
  libibmad-dev libibumad-dev libibnetdisc-dev
  # HTTP, metrics, JSON and YAML
  prometheus-cpp-dev libcpp-httplib-dev nlohmann-json3-dev libyaml-cpp-dev
  # gzip of the exposition
  zlib1g-dev
  # the kubelet's pod-resources API (gRPC on its unix socket): job attribution
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  # TLS and bcrypt (basic auth) for the web config; openssl makes test certificates
  libssl-dev libcrypt-dev openssl
  # tests and benchmarks; clang's libFuzzer and sanitizers for the fuzz targets;
  # clang-format checks the style (.clang-format); Universal Ctags finds each
  # function's lines for the house rules (scripts/check-house.py)
  libgtest-dev libgmock-dev libbenchmark-dev clang libclang-rt-14-dev clang-format universal-ctags
  # the simulated fabric and the tools we cross-check against
  ibsim-utils opensm infiniband-diags
  # promtool lints the exposition format; the server scrapes in end-to-end tests;
  # Alertmanager routes the rules' alerts in the on-call test (amtool checks its config)
  prometheus prometheus-alertmanager
  # the status page is tested in headless Chromium over WebDriver
  chromium chromium-driver
  # systemd-analyze checks the unit file
  systemd
  # a real Slurm controller (and its munge) takes the exporter's topology.conf
  slurmctld slurm-client munge
  # scripts used by the test bed and the demo
  python3 curl procps
)

# Node.js and npm run the Kubernetes schema validation (npm packages). Many
# machines carry a newer Node.js than Debian's (NodeSource): keep it then.
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  packages+=(nodejs npm)
fi

# --packaging: what the packaging check needs instead (scripts/test-packaging.sh;
# the package's own build dependencies come from debian/control, apt-get
# build-dep): the Debian build (dpkg-dev, debhelper, help2man, lintian), the
# throwaway root file systems (mmdebstrap), the image (podman with its
# network backend netavark, which it only recommends, and runc: crun refuses
# a host whose cgroups are a v1/v2 hybrid), the simulated
# fabric it runs on and the tools that read it.
if [ "${1:-}" = --packaging ]; then
  shift
  packages=(dpkg-dev debhelper help2man lintian mmdebstrap podman runc netavark uidmap
            ibsim-utils opensm git curl systemd)
fi

# --list: the packages, one a line (scripts/repeat-tests.sh --purge).
if [ "${1:-}" = --list ]; then
  printf '%s\n' "${packages[@]}"
  exit 0
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps.sh: all ${#packages[@]} packages present"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "install-deps.sh: missing packages (${missing[*]}); run as root to install them" >&2
  exit 1
fi
echo "install-deps.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
