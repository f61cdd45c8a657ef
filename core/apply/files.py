"""Files and trees on disk: a path's state (comparable, JSON-safe), the hard-link copy of a tree
that staging starts from, the paths two such trees differ in, folder modes set once a tree is
complete, durable JSON records, and the removal of trees Horizon made or swapped out."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import secrets
import shutil
import stat
from pathlib import Path
from typing import Any

from core.apply.paths import _ancestors
from core.errors import UserError


def _state(path: Path) -> list[Any] | None:
    """What a path holds, comparable and JSON-safe: ``["file", mode, sha256]``, ``["link",
    target]``, ``["dir", mode]``, ``["other", type]``, or None when nothing is there."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        return ["link", os.readlink(path)]
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return ["file", stat.S_IMODE(st.st_mode), digest.hexdigest()]
    if stat.S_ISDIR(st.st_mode):
        return ["dir", stat.S_IMODE(st.st_mode)]
    return ["other", stat.S_IFMT(st.st_mode)]


def _dir_modes(root: Path, paths: list[str]) -> dict[str, int]:
    """Mode of each folder above ``paths`` that exists under ``root``."""
    found = {}
    for d in sorted({a for p in paths for a in _ancestors(p)}):
        try:
            st = os.lstat(root / d)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            found[d] = stat.S_IMODE(st.st_mode)
    return found


def _write_json(path: Path, value: Any, *, compact: bool = False) -> None:
    """Write ``value`` to ``path`` atomically and durably (temporary file, fsync, rename, fsync)."""
    tmp = path.with_name(path.name + f".tmp-{secrets.token_hex(4)}")
    with open(tmp, "w") as f:
        json.dump(value, f, ensure_ascii=True, **({"separators": (",", ":")} if compact else {"indent": 1}))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def _rmtree(path: Path) -> bool:
    """Remove a tree we made or swapped out, making read-only folders writable on the way;
    True when it is gone."""

    def retry(func: Any, target: str, _exc: Any) -> None:
        parent = os.path.dirname(target)
        try:
            os.chmod(parent, stat.S_IMODE(os.lstat(parent).st_mode) | stat.S_IRWXU)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, stat.S_IMODE(os.lstat(target).st_mode) | stat.S_IRWXU)
            func(target)
        except OSError:
            pass

    if not os.path.lexists(path):
        return True
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return True
    shutil.rmtree(path, onerror=retry)
    return not os.path.lexists(path)


def _link_tree(src: Path, dst: Path) -> dict[str, tuple[int, int, int]]:
    """Make ``dst`` (which must not exist) a copy of ``src``: folders new, every other entry a
    hard link to the same file (a copy where a link cannot be made).

    Returns:
        Each folder's (mode, uid, gid), by relative path ("" for the root), to be set by
        ``_finish_dirs`` once the staged tree is complete (a read-only folder must stay writable
        until then).

    Raises:
        UserError: a mount point inside ``src`` (its files cannot be swapped with the rest).
    """
    root_st = os.lstat(src)
    modes: dict[str, tuple[int, int, int]] = {"": (stat.S_IMODE(root_st.st_mode), root_st.st_uid, root_st.st_gid)}
    os.mkdir(dst, 0o700)
    stack = [""]
    while stack:
        rel = stack.pop()
        s_dir, d_dir = src / rel if rel else src, dst / rel if rel else dst
        with os.scandir(s_dir) as entries:
            for entry in entries:
                r = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    if st.st_dev != root_st.st_dev:
                        raise UserError(f"{s_dir / entry.name} is a mount point inside the repository; "
                                        f"agent apply cannot swap it: unmount it, or apply the patch by hand")
                    os.mkdir(d_dir / entry.name, 0o700)
                    modes[r] = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
                    stack.append(r)
                else:
                    _link_or_copy(Path(entry.path), d_dir / entry.name)
    return modes


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EMLINK, errno.EXDEV, errno.EACCES, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        _copy_fresh(src, dst)


def _copy_fresh(src: Path, dst: Path) -> None:
    """Copy one entry as a new file (never a link to ``src``'s data)."""
    st = os.lstat(src)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
    elif stat.S_ISREG(st.st_mode):
        shutil.copy2(src, dst, follow_symlinks=False)
        if os.geteuid() == 0:
            os.chown(dst, st.st_uid, st.st_gid, follow_symlinks=False)
    else:
        raise UserError(f"{src} is a special file (a FIFO, socket or device) that cannot be copied; move it out of the repository")


def _finish_dirs(root: Path, modes: dict[str, tuple[int, int, int]]) -> None:
    as_root = os.geteuid() == 0
    for rel, (mode, uid, gid) in sorted(modes.items(), key=lambda kv: -kv[0].count("/")):
        path = root / rel if rel else root
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        if as_root:
            os.chown(path, uid, gid)
        os.chmod(path, mode)


def _changed_paths(a_root: Path, b_root: Path) -> set[str]:
    """Every path that differs between two trees that share their unchanged files (hard links):
    a non-folder whose inode differs (and whose content or mode differs too), or an entry, folder
    or not, present in one tree only."""
    changed: set[str] = set()

    def entries(path: Path) -> dict[str, os.DirEntry[str]]:
        try:
            with os.scandir(path) as it:
                return {e.name: e for e in it}
        except (FileNotFoundError, NotADirectoryError):
            return {}

    def all_below(root: Path, rel: str) -> None:
        for dirpath, dirnames, filenames in os.walk(root / rel):
            base = Path(dirpath).relative_to(root).as_posix()
            changed.update(f"{base}/{n}" for n in dirnames + filenames)

    stack = [""]
    while stack:
        rel = stack.pop()
        ea, eb = entries(a_root / rel), entries(b_root / rel)
        for name in ea.keys() | eb.keys():
            r = f"{rel}/{name}" if rel else name
            x, y = ea.get(name), eb.get(name)
            x_dir = x is not None and x.is_dir(follow_symlinks=False)
            y_dir = y is not None and y.is_dir(follow_symlinks=False)
            if x_dir and y_dir:
                stack.append(r)
                continue
            same_kind = x is not None and y is not None and not x_dir and not y_dir
            if same_kind and (x.inode() == y.inode() or _state(a_root / r) == _state(b_root / r)):  # type: ignore[union-attr]
                continue
            changed.add(r)
            if x_dir:
                all_below(a_root, r)
            if y_dir:
                all_below(b_root, r)
    return changed


def _prune(tree: Path, keep: set[str]) -> None:
    """Remove from ``tree`` everything but the paths in ``keep`` and the folders above them."""
    keep_dirs = {a for p in keep for a in _ancestors(p)}
    stack = [""]
    while stack:
        rel = stack.pop()
        path = tree / rel if rel else tree
        try:
            entries = list(os.scandir(path))
        except FileNotFoundError:
            continue
        try:
            os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | stat.S_IRWXU)
        except OSError:
            pass
        for entry in entries:
            r = f"{rel}/{entry.name}" if rel else entry.name
            if r in keep:
                continue
            if r in keep_dirs and entry.is_dir(follow_symlinks=False):
                stack.append(r)
                continue
            if entry.is_dir(follow_symlinks=False):
                _rmtree(Path(entry.path))
            else:
                try:
                    os.unlink(entry.path)
                except FileNotFoundError:
                    pass
