"""What the resource attacks share: the host processes still alive after an attack."""

from __future__ import annotations

import os


def alive_with(marker: str) -> list[int]:
    """Pids of host processes (other than this one) whose command line holds ``marker``."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/cmdline", "rb") as f:
                if marker.encode() in f.read():
                    found.append(int(entry.name))
        except OSError:
            continue
    return found
