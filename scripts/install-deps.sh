#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the benchmarks need. Idempotent.
# Usage: scripts/install-deps.sh [--no-browser]   (--no-browser skips Chromium for the admin page test)
set -euo pipefail

packages=(
  build-essential cmake pkg-config git curl ca-certificates clang-format
  libcaf-dev libboost-dev libmsgpack-cxx-dev nlohmann-json3-dev catch2 libcli11-dev
  libspdlog-dev libfmt-dev prometheus-cpp-dev libssl-dev openssl libcaf-openssl0.17 zlib1g-dev
  libxxhash-dev libjemalloc-dev
  wrk nginx-light haproxy prometheus docker-compose python3 procps iproute2 gnuplot-nox
  valgrind linux-perf
  clang-14 libclang-rt-14-dev llvm-14
)
if [[ "${1:-}" != "--no-browser" ]]; then
  packages+=(chromium)
fi
command -v node >/dev/null 2>&1 || packages+=(nodejs npm)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  sudo_cmd=()
  [[ $(id -u) -eq 0 ]] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# The packaged nginx, haproxy and prometheus start system services; tests and benchmarks run
# their own instances.
for svc in nginx haproxy prometheus prometheus-node-exporter; do
  if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet "$svc" 2>/dev/null; then
    systemctl stop "$svc" >/dev/null 2>&1 || true
  fi
done
echo "install-deps: all packages present"
