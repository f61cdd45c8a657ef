"""A container task's run artefact: what the agent changed in the container outside its working
folder, as a unified diff (``container.diff`` in the run's folder, next to ``patch.diff``).

``patch.diff`` holds the working folder's changes (the mounted workspace), as for any coding
run. The rest of the container is what the engine's ``diff`` lists against the image (added,
changed, deleted paths); for each added or changed regular file that is text (no NUL byte) and at
most ``MAX_FILE_BYTES``, the diff shows its contents against the image's (read from a created,
never started, container of the image); larger, binary or further files (past ``MAX_FILES``,
``MAX_TOTAL_BYTES`` or ``TIME_BUDGET_S`` of reading) are named in the header only. Paths are the container's, ``a/tmp/x`` for ``/tmp/x``.
Captured just before the verifier starts: the state the verifier was given.
"""

from __future__ import annotations

import difflib
import io
import tarfile
from pathlib import Path, PurePosixPath
from typing import Any

#: Name of the artefact in the run's folder.
CONTAINER_DIFF = "container.diff"
MAX_FILE_BYTES = 256 << 10
MAX_TOTAL_BYTES = 2 << 20
MAX_FILES = 200
#: Seconds spent reading contents (two engine calls a file); the files left are named only.
TIME_BUDGET_S = 20.0
#: Paths whose changes are the engine's or the run's own, not the agent's.
_SKIPPED = ("/proc", "/sys", "/dev", "/run", "/tests", "/logs", "/etc/hostname", "/etc/hosts", "/etc/resolv.conf", "/etc/mtab",
            "/root/.cache", "/tmp/.horizon")  # fmt: skip


def _read(engine: Any, container: str, path: str) -> bytes | None:
    """A regular file's bytes from ``container`` (running or not), or None (missing, a folder, a link, too large)."""
    done = engine.call(["cp", f"{container}:{path}", "-"], check=False, timeout_s=120)
    if done.returncode != 0:
        return None
    try:
        with tarfile.open(fileobj=io.BytesIO(done.stdout)) as tar:
            member = next(iter(tar), None)
            if member is None or not member.isfile() or member.size > MAX_FILE_BYTES:
                return None
            handle = tar.extractfile(member)
            return handle.read() if handle else None
    except tarfile.TarError:
        return None


def container_diff(sandbox: Any) -> tuple[str, list[str]]:
    """The unified diff of what changed in ``sandbox``'s container outside its workspace and scratch.

    Returns:
        ``(diff text, changed paths)``; ``("", [])`` when nothing changed there.
    """
    skipped = (*_SKIPPED, sandbox.workdir, str(sandbox.scratch))
    changes = [(kind, path) for kind, path in sandbox.changed_files()
               if not any(PurePosixPath(path).is_relative_to(s) for s in skipped)]  # fmt: skip
    if not changes:
        return "", []
    engine = sandbox.engine
    original = engine.text(["create", sandbox.image, "true"])
    parts: list[str] = []
    named: list[str] = []
    total = 0
    import time

    deadline = time.monotonic() + TIME_BUDGET_S
    try:
        for kind, path in changes:
            if len(parts) >= MAX_FILES or total >= MAX_TOTAL_BYTES or time.monotonic() > deadline:
                named.append(f"{kind} {path}")
                continue
            new = None if kind == "D" else _read(engine, sandbox.container, path)
            old = None if kind == "A" else _read(engine, original, path)
            if new is None and old is None:
                if kind == "D" or _is_file_elsewhere(engine, sandbox.container, path):
                    named.append(f"{kind} {path}")
                continue  # a folder: its files are listed themselves
            if (new and b"\0" in new) or (old and b"\0" in old):
                named.append(f"{kind} {path} (binary)")
                continue
            a = (old or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
            b = (new or b"").decode("utf-8", errors="replace").splitlines(keepends=True)
            rel = path.lstrip("/")
            head = f"diff --git a/{rel} b/{rel}\n"
            body = "".join(difflib.unified_diff(a, b, "/dev/null" if old is None else f"a/{rel}", "/dev/null" if new is None else f"b/{rel}"))
            if body and not body.endswith("\n"):
                body += "\n\\ No newline at end of file\n"
            parts.append(head + body)
            total += len(body)
    finally:
        engine.call(["rm", "-f", original], check=False)
    if not parts and not named:  # only folders changed (their files are the workspace's or skipped)
        return "", []
    header = f"# the container's changes outside {sandbox.workdir} ({sandbox.engine.name} diff against {sandbox.image})\n"
    if named:
        header += "".join(f"# not shown: {n}\n" for n in named)
    return header + "".join(parts), [p for _, p in changes]


def _is_file_elsewhere(engine: Any, container: str, path: str) -> bool:
    """Whether ``path`` is a file too large to show (not a folder)."""
    done = engine.call(["exec", container, "test", "-d", path], check=False, timeout_s=30)
    return done.returncode != 0


def save_container_diff(sandbox: Any, run_folder: Path) -> dict[str, Any]:
    """Write ``container.diff`` into ``run_folder``; returns ``{"container_diff": path, "container_files": n}``
    (``{}`` and no file when nothing changed outside the workspace)."""
    text, paths = container_diff(sandbox)
    if not text:
        return {}
    path = run_folder / CONTAINER_DIFF
    path.write_text(text, errors="surrogateescape")
    return {"container_diff": str(path), "container_files": len(paths)}
