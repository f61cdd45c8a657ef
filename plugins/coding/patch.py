"""Applying a multi-file unified diff to the workspace atomically: every hunk of every file, or nothing.

Format: the unified diff of ``diff -u`` / ``git diff`` (GNU diffutils manual, "Unified
Format"): per file a ``--- a/path`` and a ``+++ b/path`` line (``/dev/null`` on one side to
create or delete a file; ``a/`` and ``b/`` prefixes and tab-separated timestamps are
dropped), then hunks ``@@ -start,count +start,count @@`` whose lines start with ``' '``
(context), ``'-'`` (removed) or ``'+'`` (added). ``diff --git``, ``index``, ``new file mode``
and similar lines are skipped, and so is text before the first file header.

Leniency, because models write patches by hand: the counts in a hunk header are not trusted
(a hunk ends at the next ``@@``, file header or the end); an empty line inside a hunk is an
empty context line; a hunk is placed at its stated line if its old lines are there, else at
the nearest place they occur after the previous hunk, else with trailing whitespace ignored.
A hunk that fits nowhere fails the whole patch, and the error names it and shows the most
similar lines of the file.

Every changed file is syntax-checked (``syntax.check_edit``) before anything is written; files
are then replaced one by one with ``os.replace`` and, should a write fail, the ones already
written are restored.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from core.api import ToolError
from plugins.coding.files import MAX_FILE_BYTES, _nearest_regions
from plugins.coding.search import is_binary_bytes
from plugins.coding.syntax import check_edit

_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_SKIPPED_PREFIXES = ("diff ", "index ", "new file mode", "deleted file mode", "old mode", "new mode", "similarity index", "rename ", "Binary files")


@dataclass
class Hunk:
    """One hunk: its stated start line in the old file, its lines (prefix kept), and its number in the file."""

    old_start: int
    lines: list[str]
    number: int
    header: str

    @property
    def old(self) -> list[str]:
        """The lines the hunk expects (context and removed)."""
        return [line[1:] for line in self.lines if line[:1] in (" ", "-")]

    @property
    def new(self) -> list[str]:
        """The lines the hunk leaves (context and added)."""
        return [line[1:] for line in self.lines if line[:1] in (" ", "+")]


@dataclass
class FilePatch:
    """The hunks for one file; ``old_path`` None creates the file, ``new_path`` None deletes it."""

    old_path: str | None
    new_path: str | None
    hunks: list[Hunk] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The file's path (the new one, or the old one when deleting)."""
        return self.new_path or self.old_path or ""


def _header_path(line: str) -> str | None:
    raw = line[4:].split("\t", 1)[0].strip()
    if raw.startswith('"') and raw.endswith('"'):
        raw = raw[1:-1]
    if raw == "/dev/null":
        return None
    return raw[2:] if raw.startswith(("a/", "b/")) else raw


def parse_unified_diff(text: str) -> list[FilePatch]:
    """Split a unified diff into per-file patches.

    Args:
        text: the diff; one or more files.

    Returns:
        The file patches, in the order they appear.

    Raises:
        ToolError: no ``---``/``+++`` file header, a hunk before any file header, a file with no
            hunk (other than a deletion), a hunk with no lines, or a line that is not part of
            a hunk.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    patches: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    index = 0
    while index < len(lines):
        line = lines[index]
        if line.startswith("--- ") and index + 1 < len(lines) and lines[index + 1].startswith("+++ "):
            current = FilePatch(_header_path(line), _header_path(lines[index + 1]))
            if current.old_path is None and current.new_path is None:
                raise ToolError(f"patch line {index + 1}: both sides are /dev/null; name the file in '--- a/path' and '+++ b/path'")
            patches.append(current)
            hunk = None
            index += 2
            continue
        match = _HUNK_HEADER.match(line)
        if match:
            if current is None:
                raise ToolError(f"patch line {index + 1}: hunk {line!r} comes before any '--- a/path' / '+++ b/path' file header")
            hunk = Hunk(int(match.group(1)), [], len(current.hunks) + 1, line.strip())
            current.hunks.append(hunk)
            index += 1
            continue
        if hunk is not None and (line[:1] in (" ", "-", "+") or line == ""):
            hunk.lines.append(line if line else " ")
        elif hunk is not None and line.startswith("\\"):
            pass  # "\ No newline at end of file"
        elif line.startswith(_SKIPPED_PREFIXES) or (hunk is None and not line.strip()) or current is None:
            # git metadata, blank lines between files, and prose before the first file (as in git format-patch)
            hunk = None if line.startswith("diff ") else hunk
        else:
            raise ToolError(
                f"patch line {index + 1} ({line[:80]!r}) is not part of a hunk; hunk lines start with ' ' (context), "
                "'-' (removed) or '+' (added), after a '@@ -start,count +start,count @@' header"
            )
        index += 1
    if not patches:
        raise ToolError("the patch has no file header; a unified diff names each file with '--- a/path' and '+++ b/path' lines before its '@@' hunks")
    for patch in patches:
        for hunk_ in patch.hunks:
            while hunk_.lines and hunk_.lines[-1] == " ":  # blank lines between files, not context
                hunk_.lines.pop()
            if not hunk_.lines:
                raise ToolError(f"hunk {hunk_.number} of {patch.path} ({hunk_.header}) has no lines")
        if not patch.hunks and patch.new_path is not None:
            raise ToolError(f"the patch for {patch.path} has no '@@' hunk")
    return patches


def _find(lines: list[str], wanted: list[str], stated: int, floor: int) -> int | None:
    """Where ``wanted`` occurs in ``lines`` at or after ``floor``: at ``stated`` if possible, else nearest."""
    if not wanted:  # pure insertion: trust the stated line
        return min(max(stated, floor), len(lines))
    size = len(wanted)
    for compare in (lambda a, b: a == b, lambda a, b: a.rstrip() == b.rstrip()):
        starts = [s for s in range(floor, len(lines) - size + 1) if all(compare(lines[s + k], wanted[k]) for k in range(size))]
        if starts:
            return min(starts, key=lambda s: (abs(s - stated), s))
    return None


def _hunk_error(patch: FilePatch, hunk: Hunk, text: str) -> ToolError:
    old = "\n".join(hunk.old)
    message = [
        (
            f"hunk {hunk.number} of {patch.path} ({hunk.header}) does not apply: its context and removed lines "
            "(those starting with ' ' or '-') are not in the file as written. Nothing was changed."
        )
    ]
    regions = _nearest_regions(text, old)
    if regions:
        lines = text.split("\n")
        message.append("The most similar part(s) of the file:")
        for first, last, ratio in regions:
            message.append(f"--- lines {first}-{last} ({ratio:.0%} similar):")
            width = len(str(last))
            message += [f"{n:>{width}}\t{lines[n - 1]}" for n in range(first, last + 1)][:30]
    message.append("view_file the region and copy its lines exactly into the hunk, or use edit_file for a single change.")
    return ToolError("\n".join(message))


def _apply_hunks(patch: FilePatch, text: str) -> str:
    lines = text.split("\n")
    trailing_newline = text.endswith("\n")
    if trailing_newline:
        lines.pop()
    offset = 0  # lines added minus removed by earlier hunks
    floor = 0
    for hunk in patch.hunks:
        stated = max(0, hunk.old_start - 1) + offset
        at = _find(lines, hunk.old, stated, floor)
        if at is None:
            raise _hunk_error(patch, hunk, text)
        lines[at : at + len(hunk.old)] = hunk.new
        offset += len(hunk.new) - len(hunk.old)
        floor = at + len(hunk.new)
    if not lines:
        return ""
    return "\n".join(lines) + ("\n" if trailing_newline or not text else "")


@dataclass
class PatchedFile:
    """One file a patch changed: its path, what happened (``created``, ``modified``, ``deleted``), lines added and removed."""

    path: str
    action: str
    added: int
    removed: int


def _read(path: Path, rel: str) -> str:
    if not path.is_file():
        raise ToolError(f"the patch changes {rel}, which does not exist (to create a file, use '--- /dev/null'); nothing was changed")
    data = path.read_bytes()
    if len(data) > MAX_FILE_BYTES or is_binary_bytes(data):
        raise ToolError(f"{rel} is binary or too large to patch; nothing was changed")
    return data.decode("utf-8", "surrogateescape")


def apply_patch(text: str, resolve: Callable[[str], Path], root: Path) -> list[PatchedFile]:
    """Apply a unified diff to files under ``root``: all of it, or nothing at all.

    Args:
        text: the unified diff (see the module docstring for the format and its leniency).
        resolve: turns a patch path into an absolute path inside the workspace, raising
            ``ToolError`` for paths outside it (``ToolContext.resolve``).
        root: the repository root, for relative names.

    Returns:
        One ``PatchedFile`` per file, in patch order.

    Raises:
        ToolError: the patch cannot be read, a path is outside the workspace or inside
            ``.git``, a file is patched twice, a file to create exists or one to change does
            not, a hunk does not apply, or a result would break a file's syntax. The workspace
            is unchanged in every case.
    """
    patches = parse_unified_diff(text)
    root = root.resolve()
    planned: list[tuple[Path, str, str | None, str | None, FilePatch]] = []  # path, rel, before, after
    seen: set[Path] = set()
    for patch in patches:
        path = resolve(patch.path)
        rel = path.relative_to(root).as_posix() if path != root else "."
        if rel == "." or rel == ".git" or rel.startswith(".git/"):
            raise ToolError(f"the patch names {patch.path!r}, which cannot be changed; give files of the repository")
        if path in seen:
            raise ToolError(f"the patch changes {rel} twice; merge its hunks under one '--- a/{rel}' / '+++ b/{rel}' header")
        seen.add(path)
        if patch.old_path is None:
            if path.exists():
                raise ToolError(f"the patch creates {rel} ('--- /dev/null'), but it exists already; write a diff against its content. Nothing was changed")
            before, after = None, "\n".join(line for h in patch.hunks for line in h.new) + "\n"
        else:
            before = _read(path, rel)
            after = _apply_hunks(patch, before) if patch.hunks else ""
            if patch.new_path is None and after.strip():
                raise ToolError(f"the patch deletes {rel} ('+++ /dev/null') but its hunks leave text in it; nothing was changed")
        if patch.new_path is not None:
            check_edit(rel, before, after)
        planned.append((path, rel, before, after if patch.new_path is not None else None, patch))
    written: list[tuple[Path, str | None]] = []
    try:
        for path, _rel, before, after, _patch in planned:
            written.append((path, before))
            if after is None:
                path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.horizon-patch")
            temporary.write_bytes(after.encode("utf-8", "surrogateescape"))
            os.replace(temporary, path)
    except OSError as exc:
        for path, before in reversed(written):
            path.with_name(f".{path.name}.horizon-patch").unlink(missing_ok=True)
            if before is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(before.encode("utf-8", "surrogateescape"))
        raise ToolError(f"writing the patched files failed ({exc}); every file was restored, nothing was changed") from None
    result = []
    for _path, rel, before, after, patch in planned:
        added = sum(1 for h in patch.hunks for line in h.lines if line.startswith("+"))
        removed = sum(1 for h in patch.hunks for line in h.lines if line.startswith("-"))
        action = "created" if before is None else "deleted" if after is None else "modified"
        result.append(PatchedFile(rel, action, added, removed))
    return result
