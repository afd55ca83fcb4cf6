#!/usr/bin/env bash
# Builds the parser fuzz targets with clang's libFuzzer (plus ASan and
# UBSan) and runs each for SECONDS (default 20) from its seed corpus. Exits
# non-zero on any crash, leak or sanitizer report. Run by ctest.
#   scripts/fuzz.sh [SECONDS] [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
out="${2:-build/fuzz}"
mkdir -p "$out"
cxx=$(command -v clang++ || command -v clang++-14)
common=(-std=c++20 -O1 -g -fno-sanitize-recover=undefined -I.)
sources=(topology/plan.cc topology/plan_diff.cc topology/partition_plan.cc config/config_file.cc config/yaml.cc topology/analysis.cc topology/link_rate.cc topology/fabric.cc topology/hosts.cc topology/node_name_map.cc)
# The parsers are compiled once (instrumented for the fuzzer, not linked
# with its main) and linked into each target: a fresh build compiles each
# source once, not once per target.
mkdir -p "$out/obj"
objects=()
pids=()
for src in "${sources[@]}"; do
  obj="$out/obj/$(echo "$src" | tr / _).o"
  if [ ! -f "$obj" ] || [ -n "$(find "$src" topology/*.h config/*.h -newer "$obj" 2>/dev/null)" ]; then
    rm -f "$obj"
    "$cxx" "${common[@]}" -fsanitize=fuzzer-no-link,address,undefined -c "$src" -o "$obj" &
    pids+=($!)
  fi
  objects+=("$obj")
done
for pid in "${pids[@]}"; do wait "$pid" || { echo "fuzz: compiling the parsers failed"; exit 1; }; done
for target in plan_net plan_json plan_yaml partition_plan node_name_map; do
  bin="$out/${target}_fuzz"
  if [ ! -x "$bin" ] || [ -n "$(find tests/fuzz/${target}_fuzz.cc "${objects[@]}" -newer "$bin" 2>/dev/null)" ]; then
    "$cxx" "${common[@]}" -fsanitize=fuzzer,address,undefined "tests/fuzz/${target}_fuzz.cc" "${objects[@]}" \
      -lyaml-cpp -o "$bin"
  fi
  work="$out/corpus-$target"
  mkdir -p "$work"
  echo "fuzz: $target for ${seconds}s"
  "$bin" -max_total_time="$seconds" -max_len=4096 -print_final_stats=0 -artifact_prefix="$out/" \
    "$work" "tests/fuzz/corpus/$target" \
    > "$out/$target.log" 2>&1 || { tail -40 "$out/$target.log"; echo "fuzz: $target FAILED"; exit 1; }
  grep -E "^#[0-9]+.*DONE" "$out/$target.log" | tail -1 || true
done
echo "fuzz: all targets ran without a crash"
