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
bash scripts/build.sh
# The fuzz targets too (clang, instrumented): building is the build's work,
# so that the test phase only runs them (ctest's fuzz.targets).
bash scripts/fuzz.sh --build-only 0 "$PWD/build/fuzz" "$PWD/build"
phase tests
cd build
# Three at a time: the simulator suites run in two lanes, one suite of each
# at a time (tests/CMakeLists.txt, integration_suite), the unit tests,
# checks and the niced fuzz targets beside them.
ctest --output-on-failure --timeout 900 -j3
phase ""
