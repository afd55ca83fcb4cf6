#!/usr/bin/env bash
# Validates deploy/kubernetes/ against the Kubernetes and Prometheus
# Operator schemas (npm packages pinned in deploy/kubernetes/validate/),
# installed into WORKDIR so the source tree stays clean.
# usage: scripts/validate-k8s.sh EXPORTER_BINARY WORKDIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
exporter="$1"
work="$2"
mkdir -p "$work"
cp "$root/deploy/kubernetes/validate/package.json" "$root/deploy/kubernetes/validate/package-lock.json" \
   "$root/deploy/kubernetes/validate/validate.js" "$work/"
if ! cmp -s "$work/package-lock.json" "$work/node_modules/.installed-lock" 2>/dev/null; then
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$work/package-lock.json" "$work/node_modules/.installed-lock"
fi
node "$work/validate.js" "$root/deploy/kubernetes" "$exporter"
