#!/bin/bash
# The verifier as Harbor runs it, in the task's container (Horizon runs test_outputs.py itself).
pip install --quiet pytest==8.4.1
mkdir -p /logs/verifier
cd /app
if python -m pytest /tests/test_outputs.py -rA; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
