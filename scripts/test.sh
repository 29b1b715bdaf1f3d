#!/usr/bin/env bash
# Sets up a fresh machine, builds everything and runs every test: what CI runs (.ci/run).
#  1. the whole suite (unit, integration, cluster, e2e) in ./build;
#  2. the sanitizer build (ASan + UBSan, ./build-asan) of the unit tests of protocol, transport
#     and services, which it runs (CTest label `sanitize`; ~4 min on a fresh 2-core machine,
#     docs/fuzzing.md); any sanitizer report fails its test;
#  3. the libFuzzer harnesses (clang, ./build-fuzz), a few seconds each over their corpus.
# Usage: scripts/test.sh [extra ctest arguments for step 1]
#   SANITIZE_TESTS=0 skips step 2; SANITIZE_TESTS=all makes it the whole sanitizer run (every
#   unit test and the short integration tests, label `sanitize_all`: a build of everything,
#   too long for CI); FUZZ_TESTS=0 skips step 3.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [[ -x scripts/install-e2e.sh ]]; then
  scripts/install-e2e.sh
fi
jobs=${TEST_JOBS:-2}

scripts/build.sh
(cd "${BUILD_DIR:-build}" && ctest --output-on-failure -j"$jobs" "$@")

case "${SANITIZE_TESTS:-1}" in
1)
  SANITIZE=1 BUILD_DIR=build-asan scripts/build.sh troupe_sanitize_programs
  ctest --test-dir build-asan --output-on-failure -j"$jobs" --no-tests=error -L '^sanitize$'
  ;;
all)
  SANITIZE=1 BUILD_DIR=build-asan scripts/build.sh troupe_test_programs
  ctest --test-dir build-asan --output-on-failure -j"$jobs" --no-tests=error \
    -L '^(unit|sanitize_all)$'
  ;;
esac

if [[ "${FUZZ_TESTS:-1}" == 1 ]]; then
  scripts/fuzz.sh --build-only
  ctest --test-dir build-fuzz --output-on-failure -j"$jobs" -L fuzz
fi
