#!/usr/bin/env bash
# Sets up, builds and runs a gateway on its embedded default: two simulated workers
# (troupe-sim) started alongside it. Ctrl-C stops all three.
# Usage: scripts/demo.sh [--port N] [extra troupe flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
port=30000
if [[ "${1:-}" == "--port" ]]; then
  port=$2
  shift 2
fi
scripts/install-deps.sh --no-browser
scripts/build.sh troupe troupe-sim
bin=${BUILD_DIR:-build}/apps

pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

model=troupe-sim-model
for wport in 31001 31002; do
  "$bin/troupe-sim/troupe-sim" --port "$wport" --model-id "$model" >"/tmp/troupe-sim-$wport.log" 2>&1 &
  pids+=($!)
done
"$bin/troupe/troupe" --port "$port" --worker-urls http://127.0.0.1:31001 http://127.0.0.1:31002 \
  --prometheus-port 0 "$@" &
pids+=($!)

for _ in $(seq 1 100); do
  if curl -fs "http://127.0.0.1:$port/readiness" >/dev/null 2>&1; then break; fi
  sleep 0.1
done
cat <<TXT

Troupe is up on http://127.0.0.1:$port with two simulated workers (logs: /tmp/troupe-sim-*.log).
Try:
  curl -s http://127.0.0.1:$port/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model":"$model","messages":[{"role":"user","content":"Hello!"}]}'
  curl -sN http://127.0.0.1:$port/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model":"$model","stream":true,"messages":[{"role":"user","content":"Hello!"}]}'
  curl -s http://127.0.0.1:$port/workers
Press Ctrl-C to stop.
TXT
wait
