#!/usr/bin/env bash
# Checks the Containerfile against a built exporter: every shared library
# the binary loads comes from a package the runtime stage installs or from
# one debian:bookworm-slim already has, and the two lists in the
# Containerfile agree. No container engine is needed.
# usage: deploy/container/check.sh EXPORTER_BINARY
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="$1"
file="$here/Containerfile"
declared=$(sed -n 's/^# runtime-packages: //p' "$file")
[ -n "$declared" ] || { echo "check.sh: no '# runtime-packages:' line in $file" >&2; exit 1; }
for p in $declared; do
  sed -n '/^FROM debian:bookworm-slim$/,$p' "$file" | grep -v '^#' | grep -Fqw -- "$p" \
    || { echo "check.sh: $p is declared but not installed by the runtime stage" >&2; exit 1; }
  apt-cache show "$p" >/dev/null 2>&1 || { echo "check.sh: no Debian package $p" >&2; exit 1; }
done
# In debian:bookworm-slim as dependencies of its essential packages (dpkg,
# login, libc-bin): never installed by the Containerfile.
base="libc6 libgcc-s1 libcrypt1 zlib1g"
missing=0
while read -r lib; do
  pkg=""
  for candidate in "$lib" "$(readlink -f "$lib")" "/usr${lib}" "${lib#/usr}"; do
    pkg=$(dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$pkg" ] && break
  done
  if [ -z "$pkg" ]; then echo "check.sh: no package owns $lib" >&2; missing=1; continue; fi
  if [[ " $declared " == *" $pkg "* ]]; then continue; fi
  if [[ " $base " == *" $pkg "* ]]; then continue; fi
  echo "check.sh: $(basename "$lib") comes from $pkg, which the runtime stage does not install" >&2
  missing=1
done < <(ldd "$bin" | awk '/=>/ {print $3}')
[ "$missing" = 0 ] || exit 1
echo "ok: the runtime stage provides every library of $(basename "$bin")"
