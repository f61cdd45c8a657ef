#!/bin/bash
set -euo pipefail
cd /app
sed -i 's/len(text.splitlines())/len(text.split())/' wordcount.py
python3 wordcount.py input.txt > count.txt
wc -l < input.txt > /tmp/lines.txt
rm -f old.log
echo "wordcount.py counted lines instead of words" > NOTES.md
