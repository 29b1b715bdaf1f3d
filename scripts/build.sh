#!/usr/bin/env bash
# Configures and builds Troupe into ./build (or $BUILD_DIR). Usage: scripts/build.sh [targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" >/dev/null
if (($#)); then
  cmake --build "$build_dir" -j"$jobs" --target "$@"
else
  cmake --build "$build_dir" -j"$jobs"
fi
