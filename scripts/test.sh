#!/usr/bin/env bash
# README command 2: install, build and run the whole test suite (unit tests
# and the simulated-fabric integration tests). .ci/run calls exactly this.
# Its last line says where the time went: install, build, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$(date +%s)
phases="" current=install
# Ends a phase and names the next ("" after the last).
phase() {
  phases="$phases, $current $(($(date +%s) - start)) s"
  current="$1" start=$(date +%s)
}
trap 'rc=$?; echo "test.sh: ${phases#, }${current:+${phases:+, }$current $(($(date +%s) - start)) s (failed, exit $rc)}"' EXIT
bash scripts/install-deps.sh
phase build
# The fuzz targets too (clang, instrumented): building is the build's work,
# so that the test phase only runs them (ctest's fuzz.targets). Their
# objects compile beside the CMake build (the cores are shared; the build's
# serial links leave one idle), their links after it.
mkdir -p build/fuzz
bash scripts/fuzz.sh --compile-only 0 "$PWD/build/fuzz" "$PWD/build" > build/fuzz/compile.log 2>&1 &
fuzz_compile=$!
bash scripts/build.sh
wait "$fuzz_compile" || { cat build/fuzz/compile.log; exit 1; }
bash scripts/fuzz.sh --build-only 0 "$PWD/build/fuzz" "$PWD/build"
phase tests
cd build
# Four at a time: the simulator suites run in three lanes, one suite of each
# at a time (tests/CMakeLists.txt, integration_suite), the unit tests,
# checks and the niced fuzz targets beside them.
ctest --output-on-failure --timeout 900 -j4
phase ""
