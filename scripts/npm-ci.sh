#!/usr/bin/env bash
# Installs a checker's pinned npm packages into a work folder, so that the
# source tree stays clean: copies SRC_DIR's package.json, package-lock.json
# and *.js into WORKDIR and runs `npm ci` there when the lock changed since
# the last install. Prints 'changed' when it installed.
# usage: scripts/npm-ci.sh SRC_DIR WORKDIR
set -euo pipefail
src="${1:?usage: scripts/npm-ci.sh SRC_DIR WORKDIR}"
work="${2:?usage: scripts/npm-ci.sh SRC_DIR WORKDIR}"
mkdir -p "$work"
cp "$src/package.json" "$src/package-lock.json" "$src"/*.js "$work/"
if ! cmp -s "$work/package-lock.json" "$work/node_modules/.installed-lock" 2>/dev/null; then
  (cd "$work" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
  cp "$work/package-lock.json" "$work/node_modules/.installed-lock"
  echo changed
fi
