#!/usr/bin/env bash
# Sets up a fresh machine, builds everything and runs every test (unit, integration, e2e).
# Usage: scripts/test.sh [extra ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
if [[ -x scripts/install-e2e.sh ]]; then
  scripts/install-e2e.sh
fi
scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure -j"${TEST_JOBS:-2}" "$@"
