#!/usr/bin/env bash
# README command 2: install, build and run the whole test suite (unit tests
# and the simulated-fabric integration tests). .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
# Three at a time: the simulator suites run in two lanes, one suite of each
# at a time (tests/CMakeLists.txt, integration_suite), the unit tests,
# checks and the niced fuzz targets beside them.
ctest --output-on-failure --timeout 900 -j3
