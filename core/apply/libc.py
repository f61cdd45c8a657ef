"""What Python's standard library lacks, called in the C library through ctypes: ``renameat2``
with ``RENAME_EXCHANGE`` (two paths swapped in one system call), ``syncfs``, and ``prctl`` so
that a child process (git) dies with Horizon."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import signal
from pathlib import Path
from typing import Any

_LIBC: list[Any] = []


def _libc() -> Any:
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True))
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]


AT_FDCWD = -100
RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> None:
    """Swap two paths atomically (``renameat2(RENAME_EXCHANGE)``, Linux 3.15+, glibc 2.28+).

    Raises:
        OSError: with ``ENOSYS`` where the C library or the kernel lacks it, ``EINVAL`` where the
            filesystem does not support it, or the call's own error.
    """
    libc = _libc()
    func = getattr(libc, "renameat2", None) if libc is not None else None
    if func is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    if func(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(a))


def _syncfs(path: Path) -> None:
    """Flush the filesystem holding ``path`` to disk (the staged files, before the swap)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "syncfs"):
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        libc.syncfs(fd)
    finally:
        os.close(fd)


def _die_with_parent() -> None:
    """Run in a child process before it starts (``preexec_fn``): SIGKILL it when Horizon dies."""
    libc = _libc()
    if libc is not None:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
