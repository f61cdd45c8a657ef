#!/bin/bash
if [ "$(cat /tmp/status.txt 2>/dev/null)" = "done" ] && [ -f /tmp/seed.txt ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
