#!/usr/bin/env bash
# Checks that every C++ source follows .clang-format (clang-format from
# Debian's clang-format package). Lists the files that differ and exits 1;
# `clang-format -i FILE` fixes one. Usage: check-format.sh [REPO_ROOT]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
if ! command -v clang-format >/dev/null; then
  echo "check-format.sh: clang-format not found (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cc' '*.h')
else
  mapfile -t files < <(find . -path ./build -prune -o \( -name '*.cc' -o -name '*.h' \) -print | sort)
fi
# All files in a few clang-format calls (one a file spent 30 s starting
# processes); each file that differs is named in its warnings.
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
rc=0
out=$(printf '%s\0' "${existing[@]}" | xargs -0 -P"$(nproc)" -n40 clang-format --dry-run --Werror 2>&1) || rc=$?
mapfile -t bad < <(sed -n 's/^\(.*\):[0-9]*:[0-9]*: error: code should be clang-formatted.*/\1/p' <<<"$out" | sort -u)
if [ "$rc" -ne 0 ] && [ ${#bad[@]} -eq 0 ]; then
  echo "check-format.sh: clang-format failed: $(head -1 <<<"$out")" >&2
  exit 1
fi
if [ ${#bad[@]} -ne 0 ]; then
  echo "check-format.sh: ${#bad[@]} of ${#files[@]} files differ from .clang-format (fix: clang-format -i FILE):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format.sh: ${#files[@]} files follow .clang-format ($(clang-format --version))"
