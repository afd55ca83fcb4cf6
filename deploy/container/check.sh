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
done
# Each a Debian package: one apt-cache call for all (a call each took seconds).
known=$( (apt-cache show --no-all-versions $declared 2>/dev/null || true) | sed -n 's/^Package: //p')
for p in $declared; do
  grep -Fqx -- "$p" <<< "$known" || { echo "check.sh: no Debian package $p" >&2; exit 1; }
done
# In debian:bookworm-slim as dependencies of its essential packages (dpkg,
# login, libc-bin): never installed by the Containerfile.
base="libc6 libgcc-s1 libcrypt1 zlib1g"
# The package owning each library: one dpkg -S for every library's
# candidate paths (as linked, resolved, with and without /usr: merged /usr
# lists a file under one of them), where a call per path took a minute.
mapfile -t libs < <(ldd "$bin" | awk '/=>/ {print $3}')
candidates() { printf '%s\n' "$1" "$(readlink -f "$1")" "/usr$1" "${1#/usr}"; }
declare -A owner
while IFS= read -r line; do
  owner["${line#*: }"]="${line%%:*}"
done < <(for lib in "${libs[@]}"; do candidates "$lib"; done | sort -u | xargs dpkg -S 2>/dev/null)
missing=0
for lib in "${libs[@]}"; do
  pkg=""
  while IFS= read -r candidate; do
    pkg="${owner[$candidate]:-}"
    [ -n "$pkg" ] && break
  done < <(candidates "$lib")
  if [ -z "$pkg" ]; then echo "check.sh: no package owns $lib" >&2; missing=1; continue; fi
  if [[ " $declared " == *" $pkg "* ]]; then continue; fi
  if [[ " $base " == *" $pkg "* ]]; then continue; fi
  echo "check.sh: $(basename "$lib") comes from $pkg, which the runtime stage does not install" >&2
  missing=1
done
[ "$missing" = 0 ] || exit 1
echo "ok: the runtime stage provides every library of $(basename "$bin")"
