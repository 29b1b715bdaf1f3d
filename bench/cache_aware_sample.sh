#!/usr/bin/env bash
# cache_aware's routing quality by sample size (`--cache-aware-sample`): the real strategy in a
# simulated fleet, in simulated time (bench/cache_aware_sample.cpp says what it simulates).
# Deterministic for a seed; no sockets, so the machine's load does not move the figures.
#
#   bench/cache_aware_sample.sh [BUILD_DIR] [CLIENTS_PER_WORKER] [REQUESTS]
set -euo pipefail
build=${1:-build}
per_worker=${2:-2}
requests=${3:-100000}
cmake --build "$build" --target troupe-cache-aware-sample -j2 >/dev/null
bin="$build/bench/troupe-cache-aware-sample"
for workers in 16 64 256 4000; do
  # The sizes below the group's, then the whole group.
  for sample in 4 8 16 32; do
    if ((sample < workers)); then
      "$bin" "$workers" "$sample" $((per_worker * workers)) "$requests"
    fi
  done
  "$bin" "$workers" "$workers" $((per_worker * workers)) "$requests"
done
