#!/usr/bin/env bash
# Looks for data races between io threads: builds troupe, troupe-sim and troupe-bench with
# ThreadSanitizer (into ./build-tsan or $TSAN_BUILD_DIR; ~30 min on 2 cores the first time),
# runs a simulator and `troupe --io-threads 2` in front of it, drives it with troupe-bench
# (c=64, streamed and not), stops the gateway, and sorts the reports TSan wrote.
#
# CAF comes from Debian without TSan's instrumentation: a message or an actor handed from one
# io thread to another through CAF's mailbox shows as a race on the message's or the actor
# state's memory (the synchronisation happens inside libcaf_core, which TSan cannot see).
# Those reports are counted as "CAF hand-offs" and listed apart; any other report fails the
# script (exit 1). docs/architecture.md ("Scheduling") tells the race this found on 12-05.
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
  -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
  *) echo "tsan.sh: unknown option $1" >&2; exit 2 ;;
  esac
done

cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTROUPE_JEMALLOC=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=thread -O1 -g1" -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=thread" >/dev/null
cmake --build "$build_dir" -j "$(nproc)" --target troupe troupe-sim troupe-bench
((build_only)) && exit 0

run_dir=$build_dir/tsan-run
rm -rf "$run_dir"
mkdir -p "$run_dir"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
sim_port=$(free_port)
gw_port=$(free_port)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

# The simulator is not under test: its reports go elsewhere.
TSAN_OPTIONS="log_path=$run_dir/sim-tsan" "$build_dir/apps/troupe-sim/troupe-sim" \
  --port "$sim_port" --request-log-size 0 --log-level warn >"$run_dir/sim.log" 2>&1 &
pids+=($!)
TSAN_OPTIONS="halt_on_error=0 history_size=4 log_path=$run_dir/troupe-tsan" \
  "$build_dir/apps/troupe/troupe" --port "$gw_port" --io-threads 2 --prometheus-port 0 \
  --worker-urls "http://127.0.0.1:$sim_port" --log-level warn >"$run_dir/troupe.log" 2>&1 &
gw=$!
pids+=("$gw")
for _ in $(seq 150); do
  curl -sf "http://127.0.0.1:$gw_port/v1/models" | grep -q '"id"' && break
  sleep 0.3
done

failed=0
for mode in --no-stream --stream; do
  if ! "$build_dir/apps/troupe-bench/troupe-bench" --url "http://127.0.0.1:$gw_port" \
    --concurrency 64 --duration "$duration" --timeout 60 "$mode" --progress off \
    >"$run_dir/bench$mode.log" 2>&1; then
    echo "tsan.sh: troupe-bench $mode failed (see $run_dir/bench$mode.log)" >&2
    failed=1
  fi
  grep -h "requests in" "$run_dir/bench$mode.log" || true
done
kill -TERM "$gw"
for _ in $(seq 100); do kill -0 "$gw" 2>/dev/null || break; sleep 0.2; done
if kill -0 "$gw" 2>/dev/null; then
  echo "tsan.sh: troupe did not stop within 20 s of SIGTERM" >&2
  failed=1
fi

python3 - "$run_dir" <<'EOF' || failed=1
import glob, re, sys
run_dir = sys.argv[1]
text = "".join(open(f, errors="replace").read() for f in glob.glob(run_dir + "/troupe-tsan*"))
reports = [r for r in text.split("==================") if "WARNING: ThreadSanitizer" in r]
# A message built on one thread and read on another, or an actor's state first touched where
# CAF started it: the hand-off happened in libcaf_core.
handoff = re.compile(r"mailbox_element|make_mailbox_element|init_fun_factory|"
                     r"scheduled_actor::activate|stateful_actor|type_erased_tuple|tuple_vals")
caf = [r for r in reports if handoff.search(r)]
other = [r for r in reports if not handoff.search(r)]
print(f"tsan.sh: {len(reports)} reports: {len(caf)} CAF hand-offs, {len(other)} others")
for r in other[:5]:
    frames = [l.strip() for l in r.splitlines() if re.match(r"\s+#[0-3] ", l)]
    print("----\n" + "\n".join(f[:200] for f in frames[:8]))
sys.exit(1 if other else 0)
EOF
echo "tsan.sh: reports and logs in $run_dir"
exit "$failed"
