#!/usr/bin/env python3
"""Checks that includes between the libraries point one way (docs/architecture.md, "Layout").

Each top-level folder is one static library; a file may include headers of its own folder and
of the folders listed for it below, nothing else. Prints every include that breaks the order
and exits 1 if there is one. Usage: scripts/check-layers.py
"""
import pathlib
import re
import sys

# Folder -> the folders its files may include (besides its own). Lowest first.
ALLOWED = {
    "protocol": set(),
    "transport": {"protocol"},
    "services": {"transport", "protocol"},
    "actors": {"services", "transport", "protocol"},
    "gateway": {"actors", "services", "transport", "protocol"},
    "cluster": {"actors", "services", "transport", "protocol"},
}

root = pathlib.Path(__file__).resolve().parent.parent
include = re.compile(r'^\s*#\s*include\s+"([^"/]+)/')
bad = []
for folder, allowed in ALLOWED.items():
    for path in sorted((root / folder).rglob("*")):
        if path.suffix not in (".hpp", ".cpp"):
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = include.match(line)
            if m and m.group(1) != folder and m.group(1) not in allowed:
                bad.append(f"{path.relative_to(root)}:{n}: {folder} must not include {m.group(1)}/")
for b in bad:
    print(b, file=sys.stderr)
if bad:
    sys.exit(1)
print("check-layers: includes point one way (apps -> gateway, cluster -> actors -> services -> "
      "transport -> protocol)")
