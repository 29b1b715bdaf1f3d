#!/usr/bin/env bash
# Instructions per request at the admission door (one claim and one release, the limit never
# reached), with a concurrency cap alone and with a rate limit as well (bench/admission_cost.cpp;
# callgrind counts only the measured requests). Deterministic for a given build; the wall time
# beside it is a rough guide only.
#
#   bench/admission_cost.sh [BUILD_DIR] [REQUESTS]
set -euo pipefail
build=${1:-build}
requests=${2:-200000}
cmake --build "$build" --target troupe-admission-cost -j2 >/dev/null
bin="$build/bench/troupe-admission-cost"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-6s %16s %16s\n' mode "instr/request" "wall ns/request"
for mode in cap rate; do
  wall=$("$bin" "$mode" 2000000 | sed -n 's/.*: \([0-9.]*\) ns\/request.*/\1/p')
  valgrind --tool=callgrind --callgrind-out-file="$out/$mode.cg" \
    --toggle-collect='*measured_requests*' "$bin" "$mode" "$requests" >/dev/null 2>&1
  ir=$(callgrind_annotate "$out/$mode.cg" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
  printf '%-6s %16d %16s\n' "$mode" $((ir / requests)) "$wall"
done
