#!/bin/bash
# The image's own jq and pinned six, the agent's file, the verifier's env.
ok=1
command -v jq >/dev/null || ok=0
python -c 'import six, sys; sys.exit(six.__version__ != "1.16.0")' || ok=0
[ "$(cat /app/count.txt 2>/dev/null)" = "$EXPECTED" ] || ok=0
echo "$ok" > /logs/verifier/reward.txt
