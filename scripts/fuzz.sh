#!/usr/bin/env bash
# Builds the fuzz targets with clang's libFuzzer (plus ASan and UBSan) and
# runs each for SECONDS (default 20) from its seed corpus, as many at once as
# there are cores (each target runs on one). Exits non-zero on
# any crash, leak or sanitizer report. Run by ctest. scripts/test.sh builds
# them in its build phase: --compile-only (the objects, as many at once as
# there are cores, beside the CMake build: they need nothing of it), then
# --build-only (the links too, after it), so that the test phase only runs
# them.
#   scripts/fuzz.sh [--compile-only|--build-only] [SECONDS] [OUT_DIR] [BUILD_DIR]
# The parser targets need nothing built. The HTTP target (tests/fuzz/
# http_fuzz.cc) is built when BUILD_DIR, a CMake build of the project, is
# given: the HTTP layer and the JSON API are compiled instrumented, the rest
# is linked from that build's libraries (compiled by g++, uninstrumented).
# A crash input (OUT_DIR/crash-*) that was fixed is kept in the target's
# corpus (tests/fuzz/corpus/TARGET/regression-*), so every run replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0 compile_only=0
case "${1:-}" in
  --build-only) build_only=1; shift ;;
  --compile-only) build_only=1 compile_only=1; shift ;;
esac
seconds="${1:-20}"
out="${2:-build/fuzz}"
build="${3:-}"
mkdir -p "$out"
cxx=$(command -v clang++ || command -v clang++-14)
common=(-std=c++20 -O1 -g1 -fno-sanitize-recover=undefined -I.)
# Compiles each source once into $out/obj (instrumented for the fuzzer, not
# linked with its main), again only when it, a file it stands for or a
# header changed; in the background, as many at once as there are cores,
# collected by wait_objects. objects_of names the objects. The parsers and
# the HTTP layer compile as one unit each (unity SRC...: half the time of
# one a source, the headers read once).
pids=()
compile() {  # compile SRC [extra flags...]
  local src="$1"
  shift
  local obj
  obj="$out/obj/$(echo "$src" | tr / _).o"
  local sources=("$src")
  [[ "$src" != "$out"/unity-* ]] || mapfile -t -O 1 sources < <(sed -n 's/^#include "\(.*\)"$/\1/p' "$src")
  if [ ! -f "$obj" ] || [ -n "$(find "${sources[@]}" topology/*.h config/*.h collectors/*.h collectors/*/*.h exporter/*.h transport/*.h -newer "$obj" 2>/dev/null)" ]; then
    rm -f "$obj"
    if [ ${#pids[@]} -ge "$(nproc)" ]; then
      wait "${pids[0]}" || { echo "fuzz: compiling failed"; exit 1; }
      pids=("${pids[@]:1}")
    fi
    "$cxx" "${common[@]}" "$@" -fsanitize=fuzzer-no-link,address,undefined -c "$src" -o "$obj" &
    pids+=($!)
  fi
}
# unity NAME SRC...: prints $out/unity-NAME.cc, a unit that includes each
# SRC, written again only when the list changed (its time stands for theirs).
unity() {
  local file="$out/unity-$1.cc"
  shift
  local text
  text=$(printf '#include "%s"\n' "$@")
  [ -f "$file" ] && [ "$(cat "$file")" = "$text" ] || echo "$text" > "$file"
  echo "$file"
}
objects_of() { for src in "$@"; do echo "$out/obj/$(echo "$src" | tr / _).o"; done; }
wait_objects() {
  for pid in "${pids[@]}"; do wait "$pid" || { echo "fuzz: compiling failed"; exit 1; }; done
  pids=()
}
# Links target $1 from tests/fuzz/$1_fuzz.cc and the objects and libraries after it.
link() {
  local target="$1"
  shift
  local bin="$out/${target}_fuzz"
  local inputs=()
  for a in "$@"; do [ -f "$a" ] && inputs+=("$a"); done
  if [ ! -x "$bin" ] || [ -n "$(find "${inputs[@]}" -newer "$bin")" ]; then
    "$cxx" "${common[@]}" -fsanitize=fuzzer,address,undefined "$@" -o "$bin"
  fi
}
run() {  # run TARGET [libFuzzer flags...]
  local target="$1"
  shift
  local work="$out/corpus-$target"
  mkdir -p "$work"
  echo "fuzz: $target for ${seconds}s"
  "$out/${target}_fuzz" -max_total_time="$seconds" -print_final_stats=0 -artifact_prefix="$out/" "$@" \
    "$work" "tests/fuzz/corpus/$target" \
    > "$out/$target.log" 2>&1 || { tail -40 "$out/$target.log"; echo "fuzz: $target FAILED"; exit 1; }
  grep -E "^#[0-9]+.*DONE" "$out/$target.log" | tail -1 || true
}

mkdir -p "$out/obj"
parsers=(topology/plan.cc topology/plan_diff.cc topology/partition_plan.cc config/config_file.cc config/yaml.cc
  config/text.cc topology/analysis.cc topology/link_rate.cc topology/fabric.cc topology/hosts.cc
  topology/node_name_map.cc topology/detail/group_names.cc topology/ibnetdiscover.cc topology/findings.cc)
targets=(plan_net plan_json plan_yaml partition_plan node_name_map)
parser_unit=$(unity parsers "${parsers[@]}")
compile "$parser_unit"
for target in "${targets[@]}"; do compile "tests/fuzz/${target}_fuzz.cc"; done
http=()
if [ -n "$build" ]; then
  # The HTTP layer and what it writes back, instrumented; httplib's
  # compile definitions as its pkg-config gives them (the class layout
  # depends on them).
  read -r -a httplib_flags <<< "$(pkg-config --cflags cpp-httplib)"
  # Every body of the API (one file an endpoint, and what they share).
  http=(tests/fuzz/http_fuzz.cc tests/testbed/http_reply.cc exporter/http_routes.cc collectors/api/*.cc
    collectors/api/detail/*.cc)
  http_unit=$(unity http "${http[@]}")
  compile "$http_unit" "${httplib_flags[@]}"
  compile config/text.cc
fi
wait_objects
if [ "$compile_only" = 1 ]; then
  echo "fuzz: objects compiled in $out/obj"
  exit 0
fi

# Runs in the background, at most one a core; wait_runs fails if any did.
runs=()
start() {
  [ "$build_only" = 0 ] || return 0
  run "$@" &
  runs+=($!)
  if [ ${#runs[@]} -ge "$(nproc)" ]; then wait_runs; fi
}
wait_runs() {
  local failed=0
  for pid in "${runs[@]}"; do wait "$pid" || failed=1; done
  runs=()
  [ "$failed" = 0 ] || exit 1
}

mapfile -t parser_objects < <(objects_of "$parser_unit")
for target in "${targets[@]}"; do
  mapfile -t target_object < <(objects_of "tests/fuzz/${target}_fuzz.cc")
  link "$target" "${target_object[@]}" "${parser_objects[@]}" -lyaml-cpp
  start "$target" -max_len=4096
done
if [ -n "$build" ]; then
  mapfile -t http_objects < <(objects_of "$http_unit" config/text.cc)
  # Static libraries last, those that use others first.
  link http "${http_objects[@]}" "$build/exporter/libibfabric_exporter_lib.a" \
    "$build/tests/libibfabric_fake_fabric.a" "$build/collectors/libibfabric_collectors.a" \
    "$build/collectors/libibfabric_parts.a" "$build/collectors/libibfabric_framework.a" "$build/host/libibfabric_host.a" \
    "$build/collectors/libibfabric_health.a" "$build/collectors/libibfabric_reads.a" \
    "$build/collectors/libibfabric_common.a" \
    "$build/topology/libibfabric_topology.a" "$build/config/libibfabric_config.a" \
    "$build/transport/libibfabric_transport_fake.a" "$build/transport/libibfabric_transport.a" \
    -lprometheus-cpp-core -lyaml-cpp -lcpp-httplib -lssl -lcrypto -lcrypt -lz -libmad -libumad -lpthread
  start http -max_len=16384 -dict=tests/fuzz/http.dict
fi
wait_runs
if [ "$build_only" = 1 ]; then
  echo "fuzz: targets built in $out"
else
  echo "fuzz: all targets ran without a crash"
fi
