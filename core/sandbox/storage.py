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
* when: for the container's whole life, every ``poll_s`` seconds (longer when measuring takes
  long), and before and after each command;
* what happens: when the total is over the limit and growing (more than the least seen since the
  last stop), the running command is stopped (its processes, and only its: each command carries a
  marker variable and the killer finds the processes whose environment holds it); if it still
  grows at the next measurement (a process that dropped the marker, or one left running in the
  background by an earlier command), or it grows with no command running, every process of the
  container is killed but those its start left running (PID 1 and what keeps it alive, taken
  before the first command). A command that took the total past the limit fails with a
  line saying how much was written against which limit; the files stay, so the next command can
  delete them (a command that adds nothing, or frees space, runs as usual while the use is over).

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


def container_pids(engine: Engine, container: str) -> set[int]:
    """The ids of the processes running in ``container`` now (those of its ``/proc``)."""
    done = engine.call(["exec", container, "sh", "-c", "cd /proc && echo [0-9]*"], check=False, timeout_s=60)
    return {int(word) for word in done.stdout.decode(errors="replace").split() if word.isdigit()}


def kill_all(engine: Engine, container: str, keep: set[int]) -> None:
    """SIGKILL every process of ``container`` but those of ``keep`` (what its start left running:
    PID 1 and the command that keeps it alive, which it waits for) and the killer itself."""
    spared = " ".join(str(pid) for pid in sorted(keep))
    script = (f'for p in /proc/[0-9]*; do n="${{p#/proc/}}"; case " {spared} $$ " in *" $n "*) ;; '
              '*) kill -KILL "$n" 2>/dev/null;; esac; done; true')  # fmt: skip
    engine.call(["exec", container, "sh", "-c", script], check=False, timeout_s=60)


class StorageWatch:
    """Measures one container's use against ``limit_bytes`` for its whole life (see the module docstring).

    Args:
        engine, container: the running container.
        workspace: the host folder bind-mounted at its working folder.
        limit_bytes: the limit.
        layer: measure the writable layer too (False where the engine's quota covers it).
        poll_s: seconds between two measurements (at least).
    """

    def __init__(self, engine: Engine, container: str, workspace: Path, limit_bytes: int, *, layer: bool = True,
                 poll_s: float = POLL_S):  # fmt: skip
        self.engine, self.container, self.workspace = engine, container, workspace
        self.limit_bytes, self.layer, self.poll_s = int(limit_bytes), layer, poll_s
        self.last_bytes = 0
        self.killed: set[str] = set()  # the tokens of the commands the watcher stopped
        self.floors: dict[str, int] = {}  # token → the least use seen while that command ran
        self.low: int | None = None  # the least use seen since the watcher last stopped something
        self.current: str | None = None  # the running command's token
        self.stops_all = 0  # how many times every process was killed
        self.keep: set[int] | None = None  # the processes the container's start left (kill_all spares them)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def used(self) -> int:
        """Bytes in use now (the writable layer, when measured, plus the workspace); every floor follows it down."""
        used = (writable_layer_bytes(self.engine, self.container) if self.layer else 0) + folder_bytes(self.workspace)
        with self._lock:
            self.last_bytes = used
            for token, floor in self.floors.items():
                self.floors[token] = min(floor, used)
            self.low = used if self.low is None else min(self.low, used)
        return used

    def begin(self, token: str) -> None:
        """The command ``token`` starts: measure (its floor: the least use seen while it runs)."""
        if self.keep is None:  # before the first command: what the container's start left running
            self.keep = container_pids(self.engine, self.container)
        with self._lock:
            self.floors[token] = 1 << 62
            self.current = token
        self.used()

    def end(self, token: str) -> str | None:
        """The command ``token`` finished: the line to end its stderr with when it broke the limit
        (stopped by the watcher, or over the limit and above its floor now), else None."""
        used = self.used()
        with self._lock:
            stopped = token in self.killed
            broke = stopped or (used > self.limit_bytes and used > self.floors.get(token, used))
            self.floors.pop(token, None)
            self.killed.discard(token)
            if self.current == token:
                self.current = None
        return self.message(stopped) if broke else None

    def check(self) -> None:
        """One measurement of the watcher: stop what grows past the limit (the module docstring)."""
        low = self.low
        used = self.used()
        if used <= self.limit_bytes or low is None or used <= low:
            return
        if self.keep is None:  # no command has run: the image's ENTRYPOINT setting up; nothing of the agent's to stop
            return
        with self._lock:
            token = self.current if self.current is not None and self.current not in self.killed else None
            if token is not None:
                self.killed.add(token)
            else:
                self.stops_all += 1
                if self.current is not None:
                    self.killed.add(self.current)
            self.low = used
        if token is not None:
            kill_marked(self.engine, self.container, token)
        else:
            kill_all(self.engine, self.container, self.keep)

    def start(self) -> StorageWatch:
        """Start the watcher (a daemon thread, until ``stop``)."""

        def loop() -> None:
            wait = self.poll_s
            while not self._stop.wait(wait):
                began = time.monotonic()
                try:
                    self.check()
                except Exception:  # noqa: BLE001 - the engine went away (the container is being removed): stop watching
                    return
                wait = max(self.poll_s, 10 * (time.monotonic() - began))

        self._thread = threading.Thread(target=loop, name=f"storage-watch-{self.container[:12]}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop the watcher (waits for a measurement in progress)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def message(self, stopped: bool) -> str:
        """The line a command that broke the limit fails with (``stopped``: the watcher killed it)."""
        what = "its writable layer and the working folder" if self.layer else "the working folder"
        how = "the command was stopped" if stopped else "the command counts as failed"
        return (f"[horizon] storage limit exceeded: {self.last_bytes / 2**20:.1f} MiB written in the container ({what}), "
                f"more than the task's storage limit of {self.limit_bytes / 2**20:.0f} MiB; {how}. "
                "Delete files to get back under the limit.")  # fmt: skip
