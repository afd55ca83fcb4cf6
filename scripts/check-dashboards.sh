#!/usr/bin/env bash
# Checks the dashboards as Grafana imports them (dashboards/import-check/
# check.js): Grafana's Dashboard schema from its @grafana/schema package (npm,
# pinned in dashboards/import-check/), made a JSON schema in WORKDIR so the
# source tree stays clean.
# usage: scripts/check-dashboards.sh WORKDIR
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="${1:?usage: scripts/check-dashboards.sh WORKDIR}"
if [ -n "$(bash "$root/scripts/npm-ci.sh" "$root/dashboards/import-check" "$work")" ]; then
  rm -f "$work/dashboard.schema.json"  # made again from the packages just installed
fi
if [ ! -s "$work/dashboard.schema.json" ]; then
  (cd "$work" && node_modules/.bin/ts-json-schema-generator --no-type-check --type Dashboard \
    --path node_modules/@grafana/schema/dist/esm/raw/dashboard/x/dashboard_types.gen.d.ts \
    -o dashboard.schema.json)
fi
node "$work/check.js" "$work/dashboard.schema.json" "$root"/dashboards/*.json
