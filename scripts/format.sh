#!/usr/bin/env bash
# Formats every tracked C++ file with the repository's .clang-format (clang-format 14).
# Usage: scripts/format.sh           rewrite files in place
#        scripts/format.sh --check   change nothing; list unformatted files and exit 1 if any
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-format >/dev/null 2>&1 || { echo "format.sh: clang-format is not installed (scripts/install-deps.sh)" >&2; exit 2; }
mapfile -t files < <(git ls-files '*.cpp' '*.hpp')
if [[ "${1:-}" == "--check" ]]; then
  bad=()
  for f in "${files[@]}"; do
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
  done
  if ((${#bad[@]})); then
    printf 'not formatted (run scripts/format.sh): %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format.sh: ${#files[@]} files formatted"
else
  clang-format -i "${files[@]}"
fi
