#!/usr/bin/env bash
# What mutual TLS costs a cluster link: the time from a CAF client's connect to a linked peer
# (TCP, TLS handshake with both certificates verified, BASP handshake), against a node with TLS
# and one without, side by side in one run. tests/cluster/cluster_probe is the client; each
# connect is a fresh process, so the figure includes the client's own TLS set-up (CAF builds an
# SSL_CTX per connection on both sides). Median of N runs per mode; the ratio is what to quote.
#
#   bench/cluster_link_cost.sh [BUILD_DIR] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
runs=${2:-21}
cmake --build "$build" --target troupe cluster_probe -j2 >/dev/null
troupe=$build/apps/troupe/troupe
probe=$build/tests/cluster/cluster_probe
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
scripts/cluster-certs.sh "$tmp/certs" node-tls client >/dev/null
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tls_port=$(port)
plain_port=$(port)
"$troupe" --port "$(port)" --prometheus-port 0 --node-name node-tls --cluster-port "$tls_port" \
  --cluster-tls-cert "$tmp/certs/node-tls.pem" --cluster-tls-key "$tmp/certs/node-tls.key" \
  --cluster-tls-ca "$tmp/certs/ca.pem" --log-level warn >"$tmp/tls.log" 2>&1 &
pids+=($!)
"$troupe" --port "$(port)" --prometheus-port 0 --node-name node-plain --cluster-port "$plain_port" \
  --log-level warn >"$tmp/plain.log" 2>&1 &
pids+=($!)
sleep 1
measure() { # mode -> medians (ms) of connect-to-linked
  local mode=$1 i out
  for ((i = 0; i < runs; i++)); do
    if [[ $mode == tls ]]; then
      out=$("$probe" --connect "127.0.0.1:$tls_port" --tls-cert "$tmp/certs/client.pem" \
        --tls-key "$tmp/certs/client.key" --tls-ca "$tmp/certs/ca.pem" --listen 0)
    else
      out=$("$probe" --connect "127.0.0.1:$plain_port" --listen 0)
    fi
    sed -n 's/.*"event":"connected","ms":\([0-9.e+-]*\).*/\1/p' <<<"$out"
  done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}
# Interleaved halves, so that a change in machine load hits both modes alike.
t1=$(measure tls); p1=$(measure plain); t2=$(measure tls); p2=$(measure plain)
awk -v t1="$t1" -v t2="$t2" -v p1="$p1" -v p2="$p2" -v n="$runs" 'BEGIN {
  t = (t1 + t2) / 2; p = (p1 + p2) / 2
  printf "link set-up, connect to linked (median of %d, two rounds): TLS %.1f ms, plain %.1f ms, TLS/plain %.1fx\n", n, t, p, t / p
}'
