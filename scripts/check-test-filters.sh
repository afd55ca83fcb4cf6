#!/usr/bin/env bash
# Whether every test suite of the integration test binary is named by the
# --gtest_filter of some ctest test of it in tests/CMakeLists.txt: a suite
# no filter names would silently never run in CI.
# usage: check-test-filters.sh INTEGRATION_TESTS_BINARY TESTS_CMAKELISTS
set -euo pipefail
binary=$1
cmakelists=$2
listing=$("$binary" --gtest_list_tests)
# Suite names: "Suite." lines (typed suites: "Suite/0.  # TypeParam = ...").
mapfile -t suites < <(grep -E '^[A-Za-z_][A-Za-z0-9_/]*\.( .*)?$' <<< "$listing" | sed -E 's/\..*$//')
if ((${#suites[@]} == 0)); then
  echo "check-test-filters.sh: $binary lists no test suites" >&2
  exit 1
fi
# The positive patterns of the filters of uncommented integration_tests
# runs: integration_suite(NAME FILTER SECONDS [LANE]) lines.
mapfile -t patterns < <(grep -E '^integration_suite\(' "$cmakelists" | awk '{print $2}' |
  sed 's/-.*$//' | tr ':' '\n' | grep -v '^$')
missing=()
for suite in "${suites[@]}"; do
  covered=0
  for pattern in "${patterns[@]}"; do
    # A pattern is matched against "Suite.Test": a suite is covered when
    # "Suite.anything" matches it (the patterns here end in '*').
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
