#!/usr/bin/env bash
# Configures and builds Troupe into ./build (or $BUILD_DIR). Usage: scripts/build.sh [targets...]
# SANITIZE=1 builds with AddressSanitizer and UndefinedBehaviorSanitizer (TROUPE_SANITIZE; use a
# build directory of its own: BUILD_DIR=build-asan, as scripts/test.sh does).
# UNITY=0 turns the unity build off (TROUPE_UNITY_BUILD): each file compiled on its own, slower
# from scratch, faster to rebuild after a change to one file; UNITY=1 turns it back on.
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
sanitize=-DTROUPE_SANITIZE=OFF
if [[ "${SANITIZE:-0}" == 1 ]]; then
  sanitize=-DTROUPE_SANITIZE=ON
fi
unity=()
case "${UNITY:-}" in
0) unity=(-DTROUPE_UNITY_BUILD=OFF) ;;
1) unity=(-DTROUPE_UNITY_BUILD=ON) ;;
esac
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "$sanitize" \
  "${launcher[@]}" "${unity[@]}" >/dev/null
if (($#)); then
  cmake --build "$build_dir" -j"$jobs" --target "$@"
else
  cmake --build "$build_dir" -j"$jobs"
fi
