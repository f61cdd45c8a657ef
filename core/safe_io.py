"""Files Horizon itself writes or reads in folders that the agent's commands can also write.

The agent's code runs sandboxed, but Horizon reads and writes some of its files unsandboxed, as
the user (often root): full observations in the workspace, test reports in the scratch folder.
A command could have planted a symbolic link there (to ``/etc/passwd``) or a FIFO (which blocks
a reader forever). These helpers never follow a link and never open anything but a regular file.
No command runs while Horizon does this (each command's processes die with it), so there is no
race between the check and the use.

``write_private`` and ``read_private`` keep a secret (``agent server``'s bearer token) in a file
only this user can read: created exclusively (``O_EXCL | O_NOFOLLOW``, mode 0600) in a folder no
other user can write, read back only if it is still a regular file of this user's that nobody
else can read. The Blender add-on's token file (``plugins/threed/addon``) follows the same rule
with its own copy: the add-on runs inside Blender, where Horizon's core cannot be imported.
"""

from __future__ import annotations

import errno
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


def read_below(top: Path, relative: str | Path, limit: int) -> bytes:
    """Read the regular file ``top / relative`` opening it once, without following a link anywhere below ``top``.

    Each folder on the way is opened with ``O_NOFOLLOW | O_DIRECTORY`` relative to the one before
    (``dir_fd``), the file with ``O_NOFOLLOW | O_NONBLOCK``, and the descriptor is checked with
    ``fstat``: what is read is what was opened, even while something else renames or swaps names
    in that tree (a live run's sandboxed command in its workspace). ``top`` itself is Horizon's
    own folder and is opened normally.

    Args:
        top: the folder the file must be in.
        relative: its path below ``top``, no ``..`` and not absolute.
        limit: most bytes read; a bigger file is refused.

    Raises:
        ValueError: ``relative`` is absolute, empty, has ``..`` or a NUL byte.
        OSError: a link on the way (``ELOOP``, or ``ENOTDIR`` for a folder), missing (``ENOENT``),
            not a regular file, or bigger than ``limit`` (``EFBIG``).
    """
    parts = Path(relative).parts
    if not parts or Path(relative).is_absolute() or ".." in parts or any("\0" in part for part in parts):
        raise ValueError(f"{str(relative)!r} is not a plain path below {top}")
    folder = os.open(top, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=folder)
            os.close(folder)
            folder = inner
        fd = os.open(parts[-1], os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=folder)
    finally:
        os.close(folder)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, f"{relative} is not a regular file")
        if info.st_size > limit:
            raise OSError(errno.EFBIG, f"{relative} is bigger than {limit} bytes")
        data = f.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"{relative} is bigger than {limit} bytes")
    return data


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


def _check_private_folder(folder: Path) -> None:
    """Refuse a folder other users could write (they could swap the file) or that is not ours."""
    info = os.stat(folder)
    if not stat.S_ISDIR(info.st_mode):
        raise NotADirectoryError(f"{folder} is not a folder")
    if info.st_uid not in (os.getuid(), 0):
        raise PermissionError(f"{folder} belongs to another user (uid {info.st_uid}): a secret there would not be private")
    if info.st_mode & stat.S_IWOTH:
        raise PermissionError(f"{folder} is writable by every user (mode {stat.S_IMODE(info.st_mode):o}): a secret there "
                              "could be replaced; use a folder of your own")


def write_private(path: Path, data: str) -> None:
    """Create ``path`` as a new file that only this user can read or write (mode 0600).

    The folder is made (mode 0700) when missing. Nothing at ``path`` is followed or replaced:
    the file is created with ``O_EXCL | O_NOFOLLOW``, so a file or a symbolic link already there
    (dangling or not) makes this fail. A write that fails half-way removes the file.

    Raises:
        FileExistsError: something (a file, a link) is at ``path`` already.
        PermissionError: the folder is writable by every user, or belongs to another user.
        OSError: the folder or file cannot be made (the operating system's reason).
    """
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    _check_private_folder(folder)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # the umask can only narrow the mode; never wider than 0600 either way
        with os.fdopen(fd, "wb", closefd=False) as f:
            f.write(data.encode())
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        os.close(fd)
        path.unlink(missing_ok=True)
        raise
    os.close(fd)


def read_private(path: Path) -> bytes:
    """Read a file written by ``write_private``, only if it is still private.

    Raises:
        FileNotFoundError: nothing is at ``path``.
        OSError: ``path`` is a symbolic link (errno ``ELOOP``), not a regular file, or its folder
            is writable by every user.
        PermissionError: the file belongs to another user, or others may read or write it.
    """
    _check_private_folder(path.parent)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(f"{path} is not a regular file")
        if info.st_uid != os.getuid():
            raise PermissionError(f"{path} belongs to another user (uid {info.st_uid})")
        if info.st_mode & 0o077:
            raise PermissionError(f"{path} can be read or written by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                                  f"chmod 600 {path} if it is yours, or delete it")
        return f.read()
