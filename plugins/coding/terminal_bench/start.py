"""A Terminal-Bench task's starting tree: the files its Dockerfile would put in the working
folder, built once per content into Horizon's cache."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from core.api import UserError
from plugins.coding.terminal_bench.dockerfile import dockerignore_patterns, is_ignored

if TYPE_CHECKING:
    from plugins.coding.terminal_bench.task import TerminalBenchTask


def _digest(task: TerminalBenchTask) -> str:
    """A digest of everything the starting tree is made from (the Dockerfile and the copied files)."""
    digest = hashlib.sha256(task.environment.dockerfile.read_bytes())
    ignore = task.environment.context / ".dockerignore"
    digest.update(ignore.read_bytes() if ignore.is_file() else b"")
    for copy in task.environment.copies:
        paths = [copy.source] if copy.source.is_file() else sorted(p for p in copy.source.rglob("*") if p.is_file())
        for path in paths:
            digest.update(f"\0{path.relative_to(copy.source.parent)}\0{path.stat().st_mode:o}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build_start_tree(task: TerminalBenchTask, dest: Path) -> None:
    """Make the working folder's starting contents in ``dest`` (which must not exist), as the
    Dockerfile's COPY/ADD and ``RUN mkdir`` lines would in the image's working folder.

    Raises:
        UserError: a copy would put a folder where a file is (or the reverse).
    """
    dest.mkdir(parents=True)
    context = task.environment.context
    ignored = dockerignore_patterns(context)
    for copy in task.environment.copies:
        target = dest / copy.target
        if copy.source.is_dir():
            for path in sorted(copy.source.rglob("*")):
                rel = path.relative_to(copy.source)
                if ignored and is_ignored(path.relative_to(context).as_posix(), ignored):
                    continue
                out = target / rel
                if path.is_dir():
                    out.mkdir(parents=True, exist_ok=True)
                else:
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, out, follow_symlinks=False)
                    if copy.mode is not None:
                        out.chmod(copy.mode)
            target.mkdir(parents=True, exist_ok=True)
            continue
        out = target / copy.source.name if copy.into or target.is_dir() else target
        if out.is_dir():
            raise UserError(f"{task.environment.dockerfile}:{copy.line}: copies the file {copy.source.name} onto the folder {copy.target}")
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(copy.source, out, follow_symlinks=False)
        if copy.mode is not None:
            out.chmod(copy.mode)
    for folder in task.environment.folders:
        (dest / folder).mkdir(parents=True, exist_ok=True)


def start_tree(task: TerminalBenchTask, home: Path | None = None) -> Path:
    """The task's starting tree, built once per content into ``$HORIZON_HOME/cache/terminal-bench/NAME-DIGEST``.

    Args:
        task: the task, read.
        home: Horizon's home folder (default ``core.config.horizon_home()``).

    Returns:
        The folder (reused when it exists: its name holds the digest of what it is made from).

    Raises:
        UserError: see ``build_start_tree``.
    """
    from core.api import horizon_home

    cache = (home or horizon_home()) / "cache" / "terminal-bench"
    folder = cache / f"{task.name}-{_digest(task)}"
    if folder.is_dir():
        return folder
    partial = cache / f".{folder.name}.{os.getpid()}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        build_start_tree(task, partial)
        os.replace(partial, folder)
    except OSError:
        if not folder.is_dir():  # not another process's finished build
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return folder
