#!/usr/bin/env bash
# Checks the dashboards as Grafana imports them (dashboards/import-check/
# check.js): Grafana's Dashboard schema from its @grafana/schema package (npm,
# pinned in dashboards/import-check/), made a JSON schema in WORKDIR so the
# source tree stays clean.
# usage: scripts/check-dashboards.sh WORKDIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:?usage: scripts/check-dashboards.sh WORKDIR}"
mkdir -p "$work"
cp "$root/dashboards/import-check/package.json" "$root/dashboards/import-check/package-lock.json" \
   "$root/dashboards/import-check/check.js" "$work/"
if ! cmp -s "$work/package-lock.json" "$work/node_modules/.installed-lock" 2>/dev/null; then
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$work/package-lock.json" "$work/node_modules/.installed-lock"
  rm -f "$work/dashboard.schema.json"
fi
if [ ! -s "$work/dashboard.schema.json" ]; then
  (cd "$work" && node_modules/.bin/ts-json-schema-generator --no-type-check --type Dashboard \
    --path node_modules/@grafana/schema/dist/esm/raw/dashboard/x/dashboard_types.gen.d.ts \
    -o dashboard.schema.json)
fi
node "$work/check.js" "$work/dashboard.schema.json" "$root"/dashboards/*.json
