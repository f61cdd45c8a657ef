"""Files Horizon itself writes or reads in folders that the agent's commands can also write.

The agent's code runs sandboxed, but Horizon reads and writes some of its files unsandboxed, as
the user (often root): full observations in the workspace, test reports in the scratch folder.
A command could have planted a symbolic link there (to ``/etc/passwd``) or a FIFO (which blocks
a reader forever). These helpers never follow a link and never open anything but a regular file.
No command runs while Horizon does this (each command's processes die with it), so there is no
race between the check and the use.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path


def make_dirs(folder: Path, top: Path) -> None:
    """Create ``folder`` and its parents below ``top``, replacing any symbolic link on the way.

    Raises:
        ValueError: ``folder`` is not below ``top``.
    """
    current = top
    for part in folder.relative_to(top).parts:
        current = current / part
        if current.is_symlink() or (current.exists() and not current.is_dir()):
            current.unlink()  # planted: a link out of the tree, or a file where a folder belongs
        current.mkdir(exist_ok=True)


def write_new(path: Path, data: str | bytes) -> None:
    """Write ``path`` as a fresh regular file (whatever was there is removed, links not followed)."""
    if path.is_symlink() or path.exists():
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data.encode("utf-8", errors="surrogateescape") if isinstance(data, str) else data)


def read_regular(path: Path) -> bytes:
    """Read ``path`` only if it is a regular file, not through a link.

    Raises:
        OSError: missing, a symbolic link (ELOOP), a FIFO, a device or a folder.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        return f.read()


def remove_tree(top: Path) -> None:
    """Delete the folder ``top`` and everything in it, as ``shutil.rmtree(top, ignore_errors=True)``.

    A loop over a stack, not recursion: a tree any number of folders deep is removed (Python
    3.11's ``rmtree`` raises ``RecursionError`` past about 1,000). Links are removed, never
    followed. What cannot be removed (a path over the system's length limit) is left.

    Args:
        top: the folder to delete; nothing happens when it is missing or not a folder.
    """
    folders: list[str] = []
    stack = [str(top)]
    while stack:
        folder = stack.pop()
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                continue
            folders.append(folder)
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        os.unlink(entry.path)
        except OSError:
            continue
    for folder in reversed(folders):  # children before their parents
        try:
            os.rmdir(folder)
        except OSError:
            pass
