#!/usr/bin/env bash
# Instructions per worker selection, by policy (callgrind counts only the measured picks of
# bench/policy_pick.cpp; warm-up and prompt generation are excluded). Deterministic: the same
# build gives the same counts on any machine, busy or not.
#
#   bench/policy_cost.sh [BUILD_DIR] [PROMPT_BYTES] [PICKS] [WORKERS] [MAX_TREE_SIZE]
set -euo pipefail
build=${1:-build}
bytes=${2:-4096}
picks=${3:-10000}
workers=${4:-8}
max_tree=${5:-67108864}
cmake --build "$build" --target troupe-policy-pick -j2 >/dev/null
bin="$build/bench/troupe-policy-pick"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
printf '%-16s %14s %12s\n' policy "instr/pick" "wall ns/pick"
for policy in round_robin power_of_two consistent_hash cache_aware; do
  wall=$("$bin" "$policy" "$bytes" "$picks" "$workers" "$max_tree" | sed -n 's/.*: \([0-9]*\) ns\/pick.*/\1/p')
  valgrind --tool=callgrind --callgrind-out-file="$out/$policy.cg" \
    --toggle-collect='*measured_picks*' "$bin" "$policy" "$bytes" "$picks" "$workers" "$max_tree" \
    >/dev/null 2>&1
  ir=$(callgrind_annotate "$out/$policy.cg" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,)
  printf '%-16s %14d %12s\n' "$policy" $((ir / picks)) "$wall"
done
