#!/bin/sh
# The task's set-up, run when its container starts (Harbor keeps the image's ENTRYPOINT).
echo ready > /etc/entrypoint-ran
exec "$@"
