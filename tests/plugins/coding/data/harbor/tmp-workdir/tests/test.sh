#!/bin/bash
if [ "$(cat /tmp/status.txt 2>/dev/null)" = "done" ] && [ -f /tmp/seed.txt ] && [ -f /etc/entrypoint-ran ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
