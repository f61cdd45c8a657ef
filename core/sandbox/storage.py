"""A container's storage limit (a Harbor task's ``[environment] storage_mb``), enforced where the
engine can and measured where it cannot.

Docker's and Podman's ``--storage-opt size=`` caps a container's writable layer, but only on
overlay over XFS mounted with project quotas (``pquota``); elsewhere (overlay2 on ext4, this
machine's engine store) the engine refuses the option. ``ContainerSandbox`` tries it first and, when
the engine refuses, falls back to measuring (``StorageWatch``):

* what counts: the container's writable layer (``ENGINE container inspect --size``: ``SizeRw``,
  apparent bytes of every file the commands added or changed outside the bind mounts) plus the
  episode's workspace (the bind-mounted working folder, on the host: allocated blocks); with the
  engine's quota only the workspace is measured (the quota covers the rest);
* when: every ``poll_s`` seconds while a command runs (longer when measuring takes long) and once
  after it ends;
* what happens: a command during or after which the total is over the limit, and more than the
  least seen since it started (it wrote past the limit), is stopped (its processes, and only its, are killed: each command carries a marker
  variable and the killer finds the processes whose environment holds it) and fails with a line
  saying how much was written against which limit; the files stay, so the next command can delete
  them (a command that adds nothing, or frees space, runs as usual while the use is over).

The measured limit is coarser than a quota: a command can write past it for up to ``poll_s``
seconds before it is stopped, and a write does not fail with ``ENOSPC`` as under a quota.
"""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.sandbox.engine import Engine

#: Seconds between two measurements while a command runs (at least; see ``StorageWatch``).
POLL_S = 2.0
#: The environment variable that marks a command's processes (its value is the command's token).
MARKER = "HORIZON_COMMAND"
#: What the engines say when ``--storage-opt size`` is not supported by their storage driver.
UNSUPPORTED = re.compile(r"storage.?opt|pquota|project quota|quota.*not supported", re.IGNORECASE)


def folder_bytes(folder: Path) -> int:
    """Bytes allocated to the files under ``folder`` (``st_blocks``; links not followed, errors skipped)."""
    total, stack = 0, [str(folder)]
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        else:
                            total += entry.stat(follow_symlinks=False).st_blocks * 512
                    except OSError:
                        continue
        except OSError:
            continue
    return total


def writable_layer_bytes(engine: Engine, container: str) -> int:
    """The container's writable layer, in bytes (``SizeRw``; 0 when the engine does not say)."""
    done = engine.call(["container", "inspect", "--size", "--format", "{{.SizeRw}}", container], check=False, timeout_s=120)
    text = done.stdout.decode(errors="replace").strip()
    return int(text) if done.returncode == 0 and text.isdigit() else 0


def kill_marked(engine: Engine, container: str, token: str) -> None:
    """SIGKILL the processes of ``container`` whose environment holds ``MARKER=token`` (one command's)."""
    script = (f'for p in /proc/[0-9]*; do tr "\\0" "\\n" < "$p/environ" 2>/dev/null | grep -qx "{MARKER}={token}" '
              '&& kill -KILL "${p#/proc/}" 2>/dev/null; done; true')  # fmt: skip
    engine.call(["exec", container, "sh", "-c", script], check=False, timeout_s=60)


class StorageWatch:
    """Measures one container's use against ``limit_bytes`` (see the module docstring).

    Args:
        engine, container: the running container.
        workspace: the host folder bind-mounted at its working folder.
        limit_bytes: the limit.
        layer: measure the writable layer too (False where the engine's quota covers it).
    """

    def __init__(self, engine: Engine, container: str, workspace: Path, limit_bytes: int, *, layer: bool = True):
        self.engine, self.container, self.workspace = engine, container, workspace
        self.limit_bytes, self.layer = int(limit_bytes), layer
        self.last_bytes = 0
        self.killed: set[str] = set()  # the tokens of the commands the watcher stopped
        self.floors: dict[str, int] = {}  # token → the least use seen while that command ran

    def used(self) -> int:
        """Bytes in use now (the writable layer, when measured, plus the workspace); kept in ``last_bytes``."""
        self.last_bytes = (writable_layer_bytes(self.engine, self.container) if self.layer else 0) + folder_bytes(self.workspace)
        return self.last_bytes

    def begin(self, token: str) -> None:
        """Measure before the command ``token`` starts (its floor: the least use seen while it runs)."""
        self.floors[token] = self.used()

    def breached(self, token: str) -> bool:
        """Whether the use now is over the limit and more than the least seen since the command
        ``token`` began (``begin``): it wrote past the limit rather than found it passed."""
        used = self.used()
        floor = self.floors[token] = min(self.floors.get(token, used), used)
        return used > self.limit_bytes and used > floor

    def end(self, token: str) -> str | None:
        """The line to end the finished command ``token``'s stderr with when it broke the limit
        (stopped by the watcher, or ``breached`` now), else None; forgets the command."""
        stopped = token in self.killed
        line = self.message(stopped) if stopped or self.breached(token) else None
        self.floors.pop(token, None)
        self.killed.discard(token)
        return line

    def watch(self, token: str, stop: threading.Event, poll_s: float = POLL_S) -> threading.Thread:
        """A started daemon thread that measures every ``poll_s`` seconds (or ten times a
        measurement's duration, if longer) until ``stop`` is set, and kills the command marked
        ``token`` (``kill_marked``) the first time ``breached(token)``; ``stop`` is set then."""

        def loop() -> None:
            wait = poll_s
            while not stop.wait(wait):
                began = time.monotonic()
                if self.breached(token):
                    self.killed.add(token)
                    kill_marked(self.engine, self.container, token)
                    stop.set()
                    return
                wait = max(poll_s, 10 * (time.monotonic() - began))

        thread = threading.Thread(target=loop, name=f"storage-watch-{token[:8]}", daemon=True)
        thread.start()
        return thread

    def message(self, stopped: bool) -> str:
        """The line a command that broke the limit fails with (``stopped``: the watcher killed it)."""
        what = "its writable layer and the working folder" if self.layer else "the working folder"
        how = "the command was stopped" if stopped else "the command counts as failed"
        return (f"[horizon] storage limit exceeded: {self.last_bytes / 2**20:.1f} MiB written in the container ({what}), "
                f"more than the task's storage limit of {self.limit_bytes / 2**20:.0f} MiB; {how}. "
                "Delete files to get back under the limit.")  # fmt: skip
