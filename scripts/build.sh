#!/usr/bin/env bash
# Installs the dependencies and builds everything into build/ (warnings are
# errors). Used by both README commands.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DIBFABRIC_WERROR=ON >/dev/null
cmake --build build -j"$(nproc)"
