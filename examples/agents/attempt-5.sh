#!/usr/bin/env bash
# Scripted attempt 5: reads the code and changes nothing.
set -euo pipefail
cat stats.py >/dev/null
echo "I could not find a fix."
