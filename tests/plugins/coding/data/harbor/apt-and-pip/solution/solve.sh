#!/bin/bash
jq length /app/data.json > /app/count.txt
