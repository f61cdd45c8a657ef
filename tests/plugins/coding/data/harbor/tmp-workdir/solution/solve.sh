#!/bin/bash
echo done > /tmp/status.txt
