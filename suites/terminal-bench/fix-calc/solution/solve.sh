#!/bin/bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path

path = Path("/app/calc.py")
source = path.read_text()
buggy = "    return ordered[middle]\n"
fixed = (
    "    if len(ordered) % 2 == 0:\n"
    "        return (ordered[middle - 1] + ordered[middle]) / 2\n"
    "    return ordered[middle]\n"
)
assert source.count(buggy) == 1, "calc.py is not the version this fix is for"
path.write_text(source.replace(buggy, fixed))
PY
python3 /app/calc.py 4 1 3 2
