#!/usr/bin/env bash
# Starts the docker-compose.yml topology as plain processes on loopback, for machines without a
# Docker engine: three troupe nodes forming a cluster, two regular simulated workers and a
# prefill/decode pair (troupe-sim). Ctrl-C stops everything.
#
# Cluster links are mutual TLS, as in docker-compose.yml: scripts/cluster-certs.sh makes a
# cluster CA and a certificate per node first.
#
# Usage: scripts/cluster.sh [--no-build] [--state-dir DIR] [--certs-dir DIR] [--plain]
#                           [extra troupe flags for every node...]
#   --no-build       use the binaries already in ${BUILD_DIR:-build}
#   --state-dir DIR  each node persists its registry in DIR/<node>.msgpack (default: a temp dir)
#   --certs-dir DIR  keep the CA and node certificates in DIR (reused when present; default: a
#                    temp dir)
#   --plain          cluster links without TLS (loopback only; api keys are then not shared)
set -euo pipefail
cd "$(dirname "$0")/.."

build=1
state_dir=""
certs_dir=""
tls=1
while (($#)); do
  case "$1" in
    --no-build) build=0; shift ;;
    --state-dir) state_dir=$2; shift 2 ;;
    --certs-dir) certs_dir=$2; shift 2 ;;
    --plain) tls=0; shift ;;
    *) break ;;
  esac
done
if ((build)); then
  scripts/build.sh troupe troupe-sim
fi
bin=${BUILD_DIR:-build}/apps
troupe=$bin/troupe/troupe
sim=$bin/troupe-sim/troupe-sim
for b in "$troupe" "$sim"; do
  [[ -x "$b" ]] || { echo "cluster.sh: $b is missing (build first, or drop --no-build)" >&2; exit 1; }
done
logs=$(mktemp -d /tmp/troupe-cluster.XXXXXX)
state_dir=${state_dir:-$logs}
mkdir -p "$state_dir"
certs_dir=${certs_dir:-$logs/certs}
if ((tls)); then
  scripts/cluster-certs.sh "$certs_dir" node-1 node-2 node-3 >"$logs/cluster-certs.log"
fi

pids=()
cleanup() {
  trap - EXIT INT TERM
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "stopped; logs in $logs"
}
trap cleanup EXIT INT TERM

model=troupe-sim-model
pd_model=troupe-sim-pd-model
start() { # name, command...
  local name=$1
  shift
  "$@" >"$logs/$name.log" 2>&1 &
  pids+=($!)
}
wait_http() { # url
  for _ in $(seq 1 100); do
    curl -fs "$1" >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "cluster.sh: $1 did not come up (logs in $logs)" >&2
  exit 1
}

# Workers: sim-1, sim-2 (regular), a prefill/decode pair.
start sim-1 "$sim" --port 31001 --model-id "$model"
start sim-2 "$sim" --port 31002 --model-id "$model"
start prefill "$sim" --port 31011 --model-id "$pd_model" --role prefill --bootstrap-port 31998
start decode "$sim" --port 31012 --model-id "$pd_model" --role decode
for p in 31001 31002 31011 31012; do wait_http "http://127.0.0.1:$p/health"; done

# Nodes: API 3000N, metrics 2900N, cluster port 700N. Each names the other two as seeds.
node() { # index, extra flags...
  local i=$1
  shift
  local peers=()
  for j in 1 2 3; do ((j == i)) || peers+=("127.0.0.1:700$j"); done
  local tls_flags=()
  if ((tls)); then
    tls_flags=(--cluster-tls-cert "$certs_dir/node-$i.pem" --cluster-tls-key "$certs_dir/node-$i.key"
               --cluster-tls-ca "$certs_dir/ca.pem")
  fi
  start "troupe-$i" "$troupe" --host 127.0.0.1 --port "3000$i" --prometheus-port "2900$i" \
    --node-name "node-$i" --cluster-port "700$i" --cluster-peers "$(IFS=,; echo "${peers[*]}")" \
    --state-file "$state_dir/node-$i.msgpack" "${tls_flags[@]}" "$@"
}
node 1 --worker-urls http://127.0.0.1:31001 http://127.0.0.1:31002 "${@}"
node 2 --pd-disaggregation --prefill http://127.0.0.1:31011 31998 --decode http://127.0.0.1:31012 "${@}"
node 3 "${@}"
for i in 1 2 3; do wait_http "http://127.0.0.1:3000$i/liveness"; done
for _ in $(seq 1 100); do
  ready=0
  for i in 1 2 3; do curl -fs "http://127.0.0.1:3000$i/readiness" >/dev/null 2>&1 && ready=$((ready + 1)); done
  ((ready == 3)) && break
  sleep 0.1
done

cat <<TXT

A Troupe cluster of three nodes is up (logs: $logs, state files: $state_dir,
cluster links: $( ((tls)) && echo "mutual TLS, certificates in $certs_dir" || echo "plain TCP on loopback")):
  node-1  http://127.0.0.1:30001  (registered sim-1, sim-2)
  node-2  http://127.0.0.1:30002  (registered the prefill/decode pair)
  node-3  http://127.0.0.1:30003  (registered nothing: it learns the fleet from the others)
Send requests to any node:
  curl -s http://127.0.0.1:30003/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model":"$model","messages":[{"role":"user","content":"Hello!"}]}'
  curl -s http://127.0.0.1:30001/v1/chat/completions -H 'Content-Type: application/json' \\
    -d '{"model":"$pd_model","messages":[{"role":"user","content":"Hello!"}]}'   # prefill/decode
  curl -s http://127.0.0.1:30002/workers
  curl -s http://127.0.0.1:30001/admin/cluster      # members, states, registry versions
  curl -s http://127.0.0.1:29001/metrics | grep troupe_cluster
Press Ctrl-C to stop.
TXT
wait
