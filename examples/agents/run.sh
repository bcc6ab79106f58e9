#!/usr/bin/env bash
# Runs the scripted attempt numbered $BESTOFN_ATTEMPT (the demo's agent).
set -euo pipefail
exec bash "$(dirname "$0")/attempt-${BESTOFN_ATTEMPT}.sh"
