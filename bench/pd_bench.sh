#!/usr/bin/env bash
# PD join benchmark: the same chat request (1 KB prompt, 8 output tokens, zero-latency
# simulators) sent with wrk through troupe in three set-ups, interleaved in rounds:
#
#   regular   troupe --worker-urls            -> sim A (regular)
#   pd-join   troupe --pd-disaggregation      -> sim A as prefill + sim B as decode (both
#             regular-role simulators: no KV rendezvous, so the difference to `regular` is the
#             gateway's own cost of dual dispatch: body parse/inject/dump, two leg actors, the
#             second exchange, the join)
#   pd-sim    troupe --pd-disaggregation      -> sim P (role prefill) + sim D (role decode): the
#             full PD path, including the simulators' rendezvous (decode long-polls the prefill's
#             bootstrap server before it answers)
#
# Usage: bench/pd_bench.sh [-b BUILD_DIR] [-r ROUNDS] [-d SECONDS] [-c "1 32"]
# Needs wrk (scripts/install-deps.sh). Prints per-round results and the medians, with the
# gateway's own CPU time per request (user + system, from /proc) next to the latencies.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="$ROOT/build"
ROUNDS=3
DURATION=5
CONCURRENCY="1 32"
while getopts "b:r:d:c:h" opt; do
  case "$opt" in
    b) BUILD="$OPTARG" ;;
    r) ROUNDS="$OPTARG" ;;
    d) DURATION="$OPTARG" ;;
    c) CONCURRENCY="$OPTARG" ;;
    *) sed -n '2,18p' "$0"; exit 2 ;;
  esac
done
SIM="$BUILD/apps/troupe-sim/troupe-sim"
TROUPE="$BUILD/apps/troupe/troupe"
command -v wrk >/dev/null || { echo "wrk is missing: run scripts/install-deps.sh" >&2; exit 1; }
[[ -x "$SIM" && -x "$TROUPE" ]] || { echo "build troupe and troupe-sim in $BUILD first" >&2; exit 1; }

TMP="$(mktemp -d /tmp/troupe-pd-bench.XXXXXX)"
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$TMP"
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

wait_ok() { # URL
  for _ in $(seq 200); do
    if [[ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" == 200 ]]; then return 0; fi
    sleep 0.05
  done
  echo "$1 did not come up" >&2
  exit 1
}

MODEL=bench-model
ZERO=(--model-id "$MODEL" --ttft-base-ms 0 --prefill-us-per-token 0 --itl-ms 0
      --output-tokens 8 --request-log-size 0 --log-level warn)

sim() { # PORT [FLAGS...]
  local port=$1; shift
  "$SIM" --port "$port" "${ZERO[@]}" "$@" >"$TMP/sim-$port.log" 2>&1 &
  PIDS+=($!)
  wait_ok "http://127.0.0.1:$port/health"
}

declare -A GW_PID
gateway() { # PORT FLAGS...
  local port=$1; shift
  "$TROUPE" --port "$port" --log-level warn --prometheus-port 0 "$@" \
    >"$TMP/troupe-$port.log" 2>&1 &
  PIDS+=($!)
  GW_PID[$port]=$!
  for _ in $(seq 200); do
    if curl -s "http://127.0.0.1:$port/v1/models" | grep -q "$MODEL"; then return 0; fi
    sleep 0.05
  done
  echo "gateway on $port did not come up" >&2
  exit 1
}

A=$(free_port); B=$(free_port); P=$(free_port); PB=$(free_port); D=$(free_port)
sim "$A"
sim "$B"
sim "$P" --role prefill --bootstrap-port "$PB"
sim "$D" --role decode
G_REG=$(free_port); G_JOIN=$(free_port); G_SIM=$(free_port)
gateway "$G_REG" --worker-urls "http://127.0.0.1:$A"
gateway "$G_JOIN" --pd-disaggregation --prefill "http://127.0.0.1:$A" none \
  --decode "http://127.0.0.1:$B"
gateway "$G_SIM" --pd-disaggregation --prefill "http://127.0.0.1:$P" "$PB" \
  --decode "http://127.0.0.1:$D"

PROMPT=$(python3 -c 'print(("The quick brown fox jumps over the lazy dog. " * 23)[:1000])')
cat >"$TMP/post.lua" <<EOF
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = [[{"model":"$MODEL","max_tokens":8,"messages":[{"role":"user","content":"$PROMPT"}]}]]
EOF

declare -A TARGET=([regular]=$G_REG [pd-join]=$G_JOIN [pd-sim]=$G_SIM)
ORDER=(regular pd-join pd-sim)
RESULTS="$TMP/results.txt" # name conc rps p50_ms p99_ms non2xx gateway_cpu_us_per_request
TICK=$(getconf CLK_TCK)

cpu_ticks() { # PID: user + system time of a process, in clock ticks
  awk '{print $14 + $15}' "/proc/$1/stat"
}

to_ms() { # wrk latency like 812.00us / 1.20ms / 1.01s
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) { sub(/us$/, "", v); print v / 1000 }
    else if (v ~ /ms$/) { sub(/ms$/, "", v); print v + 0 }
    else if (v ~ /s$/) { sub(/s$/, "", v); print v * 1000 } }'
}

run() { # NAME CONC SECONDS
  local port=${TARGET[$1]} threads=1
  [[ $2 -gt 1 ]] && threads=2
  local out t0 t1
  t0=$(cpu_ticks "${GW_PID[$port]}")
  out=$(wrk -t "$threads" -c "$2" -d "${3}s" --latency -s "$TMP/post.lua" \
    "http://127.0.0.1:$port/v1/chat/completions")
  t1=$(cpu_ticks "${GW_PID[$port]}")
  local rps p50 p99 bad n cpu
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(to_ms "$(awk '$1 == "50%" || $1 == "50.000%" {print $2; exit}' <<<"$out")")
  p99=$(to_ms "$(awk '$1 == "99%" || $1 == "99.000%" {print $2; exit}' <<<"$out")")
  bad=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  n=$(awk '/requests in/ {print $1}' <<<"$out")
  cpu=$(awk -v d=$((t1 - t0)) -v t="$TICK" -v n="$n" 'BEGIN {printf "%.1f", d / t * 1e6 / n}')
  echo "$1 $2 $rps $p50 $p99 ${bad:-0} $cpu"
}

for name in "${ORDER[@]}"; do run "$name" 8 1 >/dev/null; done # warm-up
for r in $(seq "$ROUNDS"); do
  for c in $CONCURRENCY; do
    for name in "${ORDER[@]}"; do
      line=$(run "$name" "$c" "$DURATION")
      echo "$line" >>"$RESULTS"
      read -r n cc rps p50 p99 bad cpu <<<"$line"
      printf 'round %d c=%-3s %-8s %9.0f req/s  p50 %7.3f ms  p99 %7.3f ms  gateway %6.1f us cpu/req%s\n' \
        "$r" "$cc" "$n" "$rps" "$p50" "$p99" "$cpu" "$([[ $bad != 0 ]] && echo "  NON-2XX $bad")"
    done
  done
done

echo
echo "medians over $ROUNDS rounds:"
printf '%4s %-8s %9s %8s %8s %13s %14s\n' c setup req/s "p50 ms" "p99 ms" "p50 vs reg" "cpu us/req"
for c in $CONCURRENCY; do
  reg_p50=""
  for name in "${ORDER[@]}"; do
    med() { awk -v n="$name" -v c="$c" -v k="$1" '$1 == n && $2 == c {print $k}' "$RESULTS" |
      sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }
    rps=$(med 3); p50=$(med 4); p99=$(med 5); cpu=$(med 7)
    [[ $name == regular ]] && reg_p50=$p50
    added=$(awk -v a="$p50" -v b="$reg_p50" 'BEGIN {printf "%+.0f us", (a - b) * 1000}')
    printf '%4s %-8s %9.0f %8.3f %8.3f %13s %14.1f\n' "$c" "$name" "$rps" "$p50" "$p99" "$added" "$cpu"
  done
done
