#!/usr/bin/env bash
# Whether every test suite of the integration test binary is named by the
# --gtest_filter of some ctest test in tests/CMakeLists.txt: a suite no
# filter names would silently never run in CI.
# usage: check-test-filters.sh INTEGRATION_TESTS_BINARY TESTS_CMAKELISTS
set -euo pipefail
binary=$1
cmakelists=$2
# Suite names: the unindented lines of --gtest_list_tests, "Suite." form.
mapfile -t suites < <("$binary" --gtest_list_tests | grep -E '^[A-Za-z_][A-Za-z0-9_/]*\.$' | sed 's/\.$//')
# Every filter pattern (colon-separated) of every --gtest_filter=.
mapfile -t patterns < <(grep -o -- '--gtest_filter=[^ )]*' "$cmakelists" | sed 's/--gtest_filter=//' | tr ':' '\n')
missing=()
for suite in "${suites[@]}"; do
  covered=0
  for pattern in "${patterns[@]}"; do
    # A pattern is matched against "Suite.Test"; a suite is covered when
    # "Suite.anything" matches it (patterns here end in '*').
    # shellcheck disable=SC2053
    if [[ "$suite.x" == $pattern ]]; then
      covered=1
      break
    fi
  done
  [[ $covered == 1 ]] || missing+=("$suite")
done
if ((${#missing[@]})); then
  echo "integration suites no ctest filter runs: ${missing[*]} (add them to a --gtest_filter in $cmakelists)" >&2
  exit 1
fi
echo "${#suites[@]} suites, each run by a ctest filter"
