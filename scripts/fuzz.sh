#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz (clang, ASan + UBSan, into ./build-fuzz or
# $FUZZ_BUILD_DIR) and runs them long, at the lowest CPU priority: each until it has run
# --runs inputs (default 10 million) or for --time seconds, over its committed seeds plus what
# earlier runs found (build-fuzz/tests/fuzz/work/<name>/corpus). Prints one line per harness:
# executions, seconds, coverage (edges), features, corpus, and the verdict. A crash, leak,
# timeout or sanitizer report stops that harness; its input is in .../work/<name>/artifacts/.
# Logs: build-fuzz/fuzz-logs/<name>.log. docs/fuzzing.md records runs of this script.
#
# Usage: scripts/fuzz.sh [--runs N] [--time SECONDS] [--jobs N] [--nice N] [--build-only] [harness...]
#   --jobs N     harnesses run N at a time (default 1: the machines have 2 shared cores)
#   --nice N     CPU priority of the runs (default 19: only what nobody else wants)
#   harness...   names as in tests/fuzz/CMakeLists.txt (default: all)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${FUZZ_BUILD_DIR:-build-fuzz}
runs=10000000
time_limit=0
jobs=1
niceness=19
build_only=0
names=()
while (($#)); do
  case "$1" in
  --runs) runs=$2; shift 2 ;;
  --time) time_limit=$2; runs=0; shift 2 ;;
  --jobs) jobs=$2; shift 2 ;;
  --nice) niceness=$2; shift 2 ;;
  --build-only) build_only=1; shift ;;
  -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
  -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
  *) names+=("$1"); shift ;;
  esac
done

cxx=${FUZZ_CXX:-clang++-14}
command -v "$cxx" >/dev/null || { echo "fuzz.sh: $cxx not found (scripts/install-deps.sh)" >&2; exit 1; }
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build_dir" -DTROUPE_FUZZ=ON -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" >/dev/null
nice -n 19 cmake --build "$build_dir" -j"${JOBS:-$(nproc)}"
((build_only)) && exit 0

fuzz_dir=$build_dir/tests/fuzz
if ((${#names[@]} == 0)); then
  while read -r n; do names+=("$n"); done < <(
    sed -n 's/^troupe_fuzzer(\([a-z_]*\) .*/\1/p' tests/fuzz/CMakeLists.txt)
fi
logs=$build_dir/fuzz-logs
mkdir -p "$logs"

run_one() {
  local name=$1 work=$fuzz_dir/work/$1 log=$logs/$1.log
  mkdir -p "$work/corpus" "$work/artifacts"
  local limits=(-runs="$runs")
  ((time_limit > 0)) && limits=(-max_total_time="$time_limit")
  echo "$ nice -n $niceness $fuzz_dir/$name ${limits[*]} -timeout=30 -rss_limit_mb=2048" \
    "-print_final_stats=1 -artifact_prefix=$work/artifacts/ $work/corpus tests/fuzz/corpus/$name" >"$log"
  local rc=0
  UBSAN_OPTIONS=print_stacktrace=1 nice -n "$niceness" "$fuzz_dir/$name" "${limits[@]}" -timeout=30 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/artifacts/" \
    "$work/corpus" "tests/fuzz/corpus/$name" >>"$log" 2>&1 || rc=$?
  local execs secs cov ft corp verdict
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  corp=$(grep -o 'corp: [0-9]*' "$log" | tail -1 | cut -d' ' -f2)
  if ((rc == 0)); then verdict=clean; else verdict="FINDING (exit $rc, see $log)"; fi
  printf '%-24s execs %-10s secs %-6s cov %-6s ft %-6s corp %-6s %s\n' \
    "$name" "${execs:-?}" "${secs:-?}" "${cov:-?}" "${ft:-?}" "${corp:-?}" "$verdict"
  return $rc
}

# Up to `jobs` harnesses at once; the next one starts as soon as any of them ends.
status=0
running=0
for name in "${names[@]}"; do
  if ((running >= jobs)); then
    wait -n || status=1
    running=$((running - 1))
  fi
  run_one "$name" &
  running=$((running + 1))
done
while ((running > 0)); do
  wait -n || status=1
  running=$((running - 1))
done
exit $status
