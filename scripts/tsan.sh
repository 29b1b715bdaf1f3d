#!/usr/bin/env bash
# Looks for data races between io threads: builds troupe, troupe-sim and troupe-bench with
# ThreadSanitizer (into ./build-tsan or $TSAN_BUILD_DIR; ~30 min on 2 cores the first time),
# then runs scripts/tsan_run.py: a simulator and `troupe --io-threads 2` in front of it,
# troupe-bench at c=64 streamed and not, the gateway stopped, and TSan's reports sorted. Reports
# of CAF's mailbox hand-offs (libcaf_core is not instrumented) are counted apart; any other
# report fails the script (exit 1). docs/architecture.md ("Scheduling") tells the race this
# found on 12-05.
#
# Usage: scripts/tsan.sh [--duration SECONDS] [--build-only]
#   --duration  seconds of each troupe-bench stage (default 3)
#   Logs and reports: $TSAN_BUILD_DIR/tsan-run/
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${TSAN_BUILD_DIR:-build-tsan}
duration=3
build_only=0
while (($#)); do
  case "$1" in
  --duration) duration=$2; shift 2 ;;
  --build-only) build_only=1; shift ;;
  -h | --help) sed -n "2,13p" "$0"; exit 0 ;;
  *) echo "tsan.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTROUPE_JEMALLOC=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -O1 -g1" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target troupe troupe-sim troupe-bench
((build_only)) && exit 0

python3 scripts/tsan_run.py "$build_dir" --duration "$duration"
