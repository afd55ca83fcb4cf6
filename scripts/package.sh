#!/usr/bin/env bash
# Builds the Debian package the Debian way (debian/: dpkg-buildpackage -b,
# debhelper, CMake) from a copy of this checkout's files (tracked, and new
# ones not ignored), so that the checkout gets no build litter, and checks it
# with lintian: any tag lintian prints (every level, overrides shown) fails.
#   scripts/package.sh [--out DIR]   (default: build/debian)
# Prints the .deb's path on its last line. Needs debian/control's build
# dependencies and dpkg-dev, debhelper, help2man and lintian
# (scripts/install-deps.sh --packaging).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
out="$repo/build/debian"
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="${2:?--out needs a folder}"; shift 2 ;;
    *) echo "package.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out="$(cd "$out" && pwd)"
version=$(dpkg-parsechangelog -l "$repo/debian/changelog" -S Version)
src="$out/src/ibfabric-exporter-$version"
rm -rf "$out/src" "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes
mkdir -p "$src"
(cd "$repo" && git ls-files -z --cached --others --exclude-standard | xargs -0 cp -a --parents -t "$src")

start=$(date +%s)
(cd "$src" && dpkg-buildpackage -b -uc -us -j"$(nproc)") > "$out/build.log" 2>&1 ||
  { tail -40 "$out/build.log"; echo "package.sh: dpkg-buildpackage failed (all of it: $out/build.log)" >&2; exit 1; }
mv "$out/src"/*.deb "$out/src"/*.buildinfo "$out/src"/*.changes "$out/"
echo "package.sh: built in $(($(date +%s) - start)) s"

deb=$(ls "$out"/ibfabric-exporter_"$version"_*.deb)
# Every tag at every level, and the overrides (debian/*.lintian-overrides,
# each explained there) as they apply.
tags=$(lintian --pedantic --display-experimental --show-overrides --tag-display-limit 0 "$deb" 2>&1 |
  grep -v '^running with root privileges is not recommended' || true)
if [ -n "$tags" ]; then
  echo "$tags"
  if echo "$tags" | grep -qv '^O: '; then echo "package.sh: lintian is not clean" >&2; exit 1; fi
fi
echo "package.sh: lintian clean"
echo "$deb"
