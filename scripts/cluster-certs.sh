#!/usr/bin/env bash
# Makes a cluster CA and one certificate per node with the openssl CLI, for mutual TLS between
# troupe nodes (--cluster-tls-cert/-key/-ca; docs/cluster.md "Securing a cluster").
#
# Usage: scripts/cluster-certs.sh [--ca-dir DIR] [--days N] [--force] OUT_DIR NODE...
#   OUT_DIR        gets ca.pem (the CA certificate, for every node), NODE.pem and NODE.key
#   NODE           a node's name; its certificate carries it as a DNS name (or an IP address)
#   --ca-dir DIR   where the CA's private key lives (default: OUT_DIR/ca). An existing CA is
#                  reused, so running the script again adds nodes to the same cluster. Keep
#                  this directory off the nodes: whoever holds the CA key can mint members.
#   --days N       validity of new certificates (default 365)
#   --force        replace existing node certificates
#
# Any certificate the CA signed is a member, whatever its name (CAF checks no host name): one
# CA per cluster. Keys are EC P-256, written mode 0600.
set -euo pipefail

ca_dir=""
days=365
force=0
while (($#)); do
  case "$1" in
    --ca-dir) ca_dir=$2; shift 2 ;;
    --days) days=$2; shift 2 ;;
    --force) force=1; shift ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) break ;;
  esac
done
if (($# < 2)); then
  echo "usage: $0 [--ca-dir DIR] [--days N] [--force] OUT_DIR NODE..." >&2
  exit 2
fi
out=$1
shift
ca_dir=${ca_dir:-$out/ca}
command -v openssl >/dev/null || { echo "cluster-certs: the openssl CLI is missing" >&2; exit 1; }
umask 077
mkdir -p "$out" "$ca_dir"

if [[ ! -s "$ca_dir/ca.key" || ! -s "$ca_dir/ca.pem" ]]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$ca_dir/ca.key" -out "$ca_dir/ca.pem" -days "$days" \
    -subj "/CN=troupe cluster CA $(date -u +%Y%m%dT%H%M%SZ)" \
    -addext "basicConstraints=critical,CA:TRUE,pathlen:0" \
    -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  echo "cluster-certs: new CA in $ca_dir"
fi
install -m 0644 "$ca_dir/ca.pem" "$out/ca.pem"

for node in "$@"; do
  if [[ ! "$node" =~ ^[A-Za-z0-9._:-]+$ ]]; then
    echo "cluster-certs: '$node' is not a node name (letters, digits, . _ : -)" >&2
    exit 2
  fi
  if [[ -s "$out/$node.pem" && -s "$out/$node.key" && $force -eq 0 ]]; then
    echo "cluster-certs: $node has a certificate already (--force replaces it)"
    continue
  fi
  if [[ "$node" =~ ^[0-9.]+$ || "$node" == *:* ]]; then san="IP:$node"; else san="DNS:$node"; fi
  tmp=$(mktemp -d)
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
    -keyout "$tmp/key.pem" -out "$tmp/req.csr" -subj "/CN=$node" 2>/dev/null
  cat >"$tmp/ext.cnf" <<EXT
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth,clientAuth
subjectAltName=$san
EXT
  openssl x509 -req -in "$tmp/req.csr" -CA "$ca_dir/ca.pem" -CAkey "$ca_dir/ca.key" \
    -CAcreateserial -CAserial "$ca_dir/ca.srl" -out "$tmp/cert.pem" -days "$days" \
    -extfile "$tmp/ext.cnf" 2>/dev/null
  install -m 0600 "$tmp/key.pem" "$out/$node.key"
  install -m 0644 "$tmp/cert.pem" "$out/$node.pem"
  rm -rf "$tmp"
  echo "cluster-certs: $out/$node.pem ($san), key $out/$node.key"
done
