#!/usr/bin/env bash
# README command 2: install, build and run the whole test suite (unit tests
# and the simulated-fabric integration tests). .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/build.sh
cd build
ctest --output-on-failure --timeout 900
