#!/usr/bin/env bash
# Runs the README's test command (scripts/test.sh) N times, each from a
# fresh clone of this checkout's HEAD, and reports each run's time split
# (install, build, tests), its ten slowest tests and every failing test:
# "green every time" measured, not hoped.
#   scripts/repeat-tests.sh [-n N] [--load] [--purge] [--rev REV] [--out DIR]
#   -n N      runs (default 3)
#   --load    one core kept busy by a CPU hog for the whole time, as a CI
#             machine or an operator's host may be
#   --purge   before the first run, remove the packages scripts/install-deps.sh
#             installs that a new machine of this kind does not have (its
#             compilers, cmake, GoogleTest, clang and the base system stay),
#             so that the first run pays for apt-get as a new machine does
#   --rev REV every run at this commit (default: HEAD when the script starts),
#             so that work may go on in the checkout meanwhile
#   --out DIR where the clones and logs go (default /tmp/repeat-tests)
# Exits non-zero if any run failed. Needs root for --purge and for the
# suite's own installs.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
runs=3 load=0 purge=0 out=/tmp/repeat-tests rev=HEAD
while [ $# -gt 0 ]; do
  case "$1" in
    -n) runs="${2:?-n needs a number}"; shift 2 ;;
    --load) load=1; shift ;;
    --purge) purge=1; shift ;;
    --rev) rev="${2:?--rev needs a commit}"; shift 2 ;;
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    *) echo "repeat-tests.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "repeat-tests.sh: -n wants a positive number, not '$runs'" >&2; exit 2; }
commit=$(git -C "$repo" rev-parse --verify --quiet "$rev^{commit}") ||
  { echo "repeat-tests.sh: '$rev' names no commit of $repo" >&2; exit 2; }
mkdir -p "$out"
echo "repeat-tests.sh: every run at $commit"

hog=""
cleanup() { [ -n "$hog" ] && kill "$hog" 2>/dev/null || true; }
trap cleanup EXIT
if [ "$load" = 1 ]; then
  sh -c 'while :; do :; done' &
  hog=$!
  echo "repeat-tests.sh: a CPU hog (pid $hog) keeps one core busy"
fi
if [ "$purge" = 1 ]; then
  # What a new machine of this kind already has (the env's machine notes):
  # the toolchain, cmake, GoogleTest and Benchmark, clang, Node.js, the
  # base system. Everything else install-deps.sh lists goes.
  keep=(build-essential cmake pkg-config libgtest-dev libgmock-dev libbenchmark-dev clang
    clang-format systemd python3 curl procps nodejs npm zlib1g-dev libssl-dev libcrypt-dev openssl)
  mapfile -t listed < <(bash "$repo/scripts/install-deps.sh" --list)
  gone=()
  for p in "${listed[@]}"; do
    [[ " ${keep[*]} " == *" $p "* ]] && continue
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' && gone+=("$p")
  done
  echo "repeat-tests.sh: removing ${gone[*]:-nothing}"
  [ ${#gone[@]} -eq 0 ] || DEBIAN_FRONTEND=noninteractive apt-get purge -y -qq "${gone[@]}" >/dev/null
  DEBIAN_FRONTEND=noninteractive apt-get autoremove -y -qq >/dev/null
  apt-get clean
fi

failed_runs=0
summary=""
for i in $(seq 1 "$runs"); do
  dir="$out/run$i"
  rm -rf "$dir"
  git clone -q "$repo" "$dir"
  git -C "$dir" checkout -q "$commit"
  log="$out/run$i.log"
  t0=$(date +%s)
  rc=0
  (cd "$dir" && CI=true bash scripts/test.sh) > "$log" 2>&1 < /dev/null || rc=$?
  total=$(($(date +%s) - t0))
  split=$(sed -n 's/^test.sh: //p' "$log" | tail -1)
  failing=$(sed -n '/The following tests FAILED:/,$p' "$log" | grep -E '^\s+[0-9]+ - ' | sed -E 's/^\s+[0-9]+ - //' || true)
  echo "== run $i: exit $rc, ${total} s (${split:-no split: see $log})"
  echo "   slowest:"
  # awk reads to the end: a `head` closing the pipe early killed sort with
  # SIGPIPE, and pipefail ended the whole script after a failed run.
  { grep -E 'Test +#[0-9]+: ' "$log" || true; } | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .* ([0-9.]+) sec$/\2 \1/' |
    sort -rn | awk 'NR <= 10 {printf "     %8.1f s  %s\n", $1, $2}'
  if [ "$rc" != 0 ]; then
    failed_runs=$((failed_runs + 1))
    echo "   failing:"
    if [ -n "$failing" ]; then echo "$failing" | sed 's/^/     /'; else echo "     (no ctest failure listed: see $log)"; fi
  fi
  summary="$summary run $i: ${total} s exit $rc;"
done
echo "repeat-tests.sh: $runs runs$([ "$load" = 1 ] && echo ' under load'),$summary $failed_runs failed"
[ "$failed_runs" = 0 ]
