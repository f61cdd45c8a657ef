#!/bin/bash
# Harbor's oracle gets the whole solution/ folder at /solution.
mkdir -p /tmp/solution
cp /solution/answer.txt /tmp/solution/answer.txt
echo "# notes" > notes.md
