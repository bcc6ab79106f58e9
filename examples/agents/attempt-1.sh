#!/usr/bin/env bash
# Scripted attempt 1: an honest fix of median() for even-length lists.
set -euo pipefail
test -s "$BESTOFN_PROMPT_FILE"   # the prompt must be there, outside /workspace
python3 - <<'PY'
import pathlib
p = pathlib.Path("stats.py")
src = p.read_text()
old = "    ordered = sorted(values)\n    return ordered[len(ordered) // 2]\n"
new = ("    ordered = sorted(values)\n"
       "    mid = len(ordered) // 2\n"
       "    if len(ordered) % 2:\n"
       "        return ordered[mid]\n"
       "    return (ordered[mid - 1] + ordered[mid]) / 2\n")
assert old in src, "unexpected stats.py"
p.write_text(src.replace(old, new))
PY
python3 -m unittest discover -s tests -t . >/dev/null 2>&1
