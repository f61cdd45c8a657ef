"""Paths as a patch names them and as they lie on disk: shown safely (``printable``), checked to
stay inside the repository, inside ``.git`` or not, and where a symbolic link leads
(``_resolve_link``)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from core.errors import UserError

#: git's modes for a symbolic link, an executable file and a submodule.
LINK_MODE = "120000"
EXEC_MODE = "100755"
SUBMODULE_MODE = "160000"


def _is_git_path(path: str) -> bool:
    return any(part.lower() == ".git" for part in path.split("/"))


def printable(text: str | None) -> str:
    """``text`` as printable: unchanged when every character is printable, else quoted with
    escapes (a control character, a bidirectional override or an undecodable byte is visible, not
    interpreted by the terminal)."""
    if text is None:
        return ""
    if text.isprintable() and not any(0xDC80 <= ord(ch) <= 0xDCFF for ch in text):
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


def _check_relative(name: str) -> None:
    parts = name.split("/")
    if name.startswith("/") or ".." in parts or "" in parts or "\0" in name:
        raise UserError(f"the patch names a path outside the repository or an invalid path: {printable(name)}; it is not applied")


def _resolved_repo(repo: Path) -> Path:
    path = Path(os.path.realpath(repo))
    if not path.is_dir():
        raise UserError(f"{repo} is not a folder: the repository the run was started on is gone or moved")
    return path


def _ancestors(rel: str) -> list[str]:
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _readlink(path: Path) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def _mode_on_disk(path: Path) -> str | None:
    """The git mode of a file in the repository (None if it is not there)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return LINK_MODE
    return EXEC_MODE if st.st_mode & 0o100 else "100644"


def _resolve_link(fs_root: Path, repo: Path, rel: str, target: str, overlay: dict[str, str | None] | None = None) -> str | None:
    """Where the link ``rel`` -> ``target`` leads inside the tree at ``fs_root``, following the
    tree's other links (``overlay`` first, then the links on disk); None when it leaves the tree.

    Absolute targets count as inside only under ``repo`` (the tree's final path); a loop counts
    as leaving.
    """
    budget = [40]  # the kernel's own limit on links followed in one lookup

    def walk(base: list[str], link_target: str) -> list[str] | None:
        if link_target.startswith("/"):
            root = str(repo)
            if link_target != root and not link_target.startswith(root.rstrip("/") + "/"):
                return None
            base, link_target = [], link_target[len(root):]
        stack = list(base)
        for part in link_target.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not stack:
                    return None
                stack.pop()
                continue
            stack.append(part)
            key = "/".join(stack)
            if overlay is not None and key in overlay:
                nxt = overlay[key]
            else:
                nxt = _readlink(fs_root / key)
            if nxt is not None:
                budget[0] -= 1
                if budget[0] <= 0:
                    return None
                resolved = walk(stack[:-1], nxt)
                if resolved is None:
                    return None
                stack = resolved
        return stack

    found = walk(rel.split("/")[:-1], target)
    return None if found is None else "/".join(found)
