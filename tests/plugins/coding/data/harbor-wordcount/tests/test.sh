#!/bin/bash
# Harbor's verifier: run in the task's container after the agent; the reward goes to /logs/verifier/reward.txt.
mkdir -p /logs/verifier
cd /app
if python -m pytest /tests/test_outputs.py -q -p no:cacheprovider; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
