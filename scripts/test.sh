#!/usr/bin/env bash
# README command 2: install, build and run the whole test suite (unit tests
# and the simulated-fabric integration tests). .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
# Two at a time: the simulator suites hold one lock (one at a time, as
# timing-sensitive as they are), the unit tests, checks and the niced fuzz
# targets run beside them.
ctest --output-on-failure --timeout 900 -j2
