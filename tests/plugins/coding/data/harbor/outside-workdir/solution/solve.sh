#!/bin/bash
mkdir -p /tmp/solution
echo forty-two > /tmp/solution/answer.txt
echo "# notes" > notes.md
