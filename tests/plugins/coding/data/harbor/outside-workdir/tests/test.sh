#!/bin/bash
answer=0; notes=0
[ "$(cat /tmp/solution/answer.txt 2>/dev/null)" = "forty-two" ] && answer=1
[ -f /root/notes.md ] && [ -f /root/README.txt ] && notes=1
printf '{"answer": %s, "notes": %s}\n' "$answer" "$notes" > /logs/verifier/reward.json
