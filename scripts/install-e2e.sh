#!/usr/bin/env bash
# Installs the official SDK clients the e2e tests use (openai 6.x, @anthropic-ai/sdk 1.x), at
# the versions tests/e2e/package-lock.json pins, with `npm ci` from the npm registry.
# Idempotent: nothing happens when tests/e2e/node_modules already matches the lockfile.
set -euo pipefail
cd "$(dirname "$0")/../tests/e2e"
if ! command -v npm >/dev/null 2>&1; then
  echo "install-e2e: npm not found (scripts/install-deps.sh installs Node.js)" >&2
  exit 1
fi
stamp=node_modules/.troupe-lock.sha256
want=$(sha256sum package-lock.json | cut -d' ' -f1)
if [[ -f $stamp && "$(cat "$stamp")" == "$want" ]]; then
  echo "install-e2e: SDK clients up to date"
  exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
echo "$want" >"$stamp"
echo "install-e2e: installed $(node -p "require('./node_modules/openai/package.json').version") (openai)," \
  "$(node -p "require('./node_modules/@anthropic-ai/sdk/package.json').version") (@anthropic-ai/sdk)"
