#!/usr/bin/env bash
# Configures and builds Troupe into ./build (or $BUILD_DIR). Usage: scripts/build.sh [targets...]
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
jobs=${JOBS:-$(nproc)}
launcher=()
# A compiler cache, where one is installed (development machines): rebuilds in several
# checkouts share it. CI builds without one.
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "${launcher[@]}" >/dev/null
if (($#)); then
  cmake --build "$build_dir" -j"$jobs" --target "$@"
else
  cmake --build "$build_dir" -j"$jobs"
fi
