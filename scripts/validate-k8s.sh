#!/usr/bin/env bash
# Validates deploy/kubernetes/ against the Kubernetes and Prometheus
# Operator schemas (npm packages pinned in deploy/kubernetes/validate/),
# installed into WORKDIR so the source tree stays clean.
# usage: scripts/validate-k8s.sh EXPORTER_BINARY WORKDIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
exporter="$1"
work="$2"
bash "$root/scripts/npm-ci.sh" "$root/deploy/kubernetes/validate" "$work" > /dev/null
node "$work/validate.js" "$root/deploy/kubernetes" "$exporter"
