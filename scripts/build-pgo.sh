#!/usr/bin/env bash
# Builds troupe, troupe-sim and troupe-bench with profile-guided optimization (GCC's
# -fprofile-generate / -fprofile-use) into ./build-pgo (or $BUILD_DIR): an instrumented build,
# a training run in front of simulated workers (scripts/pgo_train.py), then the optimized build
# in the same directory. What it gains is measured in docs/performance.md ("Profile-guided
# build"). Code the training run does not reach is optimized as in a regular build
# (-fprofile-partial-training). Tests are not built here: scripts/test.sh tests the regular build.
# Usage: scripts/build-pgo.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=$(realpath -m "${BUILD_DIR:-build-pgo}")
profile_dir="$build_dir/profile"
jobs=${JOBS:-$(nproc)}
targets=(troupe troupe-sim troupe-bench)

configure() {
  cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTROUPE_BUILD_TESTS=OFF \
    -DTROUPE_SANITIZE=OFF -DCMAKE_CXX_FLAGS="$1" -DCMAKE_EXE_LINKER_FLAGS="$2" >/dev/null
}

echo "build-pgo: 1/3 the instrumented build in $build_dir"
rm -rf "$profile_dir"
configure "-fprofile-generate=$profile_dir -fprofile-update=atomic" "-fprofile-generate"
cmake --build "$build_dir" -j"$jobs" --target "${targets[@]}"

echo "build-pgo: 2/3 the training run"
python3 scripts/pgo_train.py "$build_dir"

echo "build-pgo: 3/3 the optimized build"
configure "-fprofile-use=$profile_dir -fprofile-partial-training -Wno-missing-profile" ""
cmake --build "$build_dir" -j"$jobs" --target "${targets[@]}"
echo "build-pgo: done: $build_dir/apps/troupe/troupe"
