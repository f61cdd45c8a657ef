"""Viewing files with line numbers and editing them by exact search/replace.

Both functions take absolute, already-resolved paths (``ToolContext.resolve``) plus the
repository root for messages, and raise ``ToolError`` with what went wrong and what to do.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path

from core.api import ToolError
from plugins.coding.search import BINARY_SNIFF_BYTES, is_binary_bytes, iter_files
from plugins.coding.syntax import check_edit

#: Most lines ``view_file`` shows in one call.
MAX_VIEW_LINES = 200
#: Longest line ``view_file`` shows, in characters; longer ones are cut with a marker.
MAX_VIEW_LINE_CHARS = 500
#: Most lines of the diff ``edit_file`` returns.
MAX_DIFF_LINES = 60
#: Files larger than this are neither shown nor edited.
MAX_FILE_BYTES = 4 << 20


def _rel(root: Path, path: Path) -> str:
    try:
        return path.relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        return str(path)


def _similar_paths(root: Path, path: Path, limit: int = 5) -> list[str]:
    """Files elsewhere in the repository with the same name, or with a similar relative path."""
    root = root.resolve()
    candidates = [p.relative_to(root).as_posix() for p in iter_files(root)]
    same_name = [c for c in candidates if c.rsplit("/", 1)[-1] == path.name]
    if same_name:
        return same_name[:limit]
    return difflib.get_close_matches(_rel(root, path), candidates, n=limit, cutoff=0.6)


def _missing(root: Path, path: Path) -> ToolError:
    rel = _rel(root, path)
    similar = _similar_paths(root, path)
    hint = f"; did you mean: {', '.join(similar)}?" if similar else "; use search_code or find_symbol to locate the file"
    return ToolError(f"file {rel!r} does not exist{hint}")


def _read_text(root: Path, path: Path) -> str:
    """Read a text file for viewing or editing; ToolError for missing, directory, binary, huge."""
    rel = _rel(root, path)
    if path.is_dir():
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in path.iterdir() if p.name != ".git")
        shown = ", ".join(entries[:40]) + (f", … ({len(entries) - 40} more)" if len(entries) > 40 else "")
        raise ToolError(f"{rel!r} is a directory, not a file; it contains: {shown or '(nothing)'}. Give a file path.")
    if not path.exists():
        raise _missing(root, path)
    if not path.is_file():  # a FIFO would block the reader forever; a device has no end
        raise ToolError(f"{rel!r} is not a regular file (a FIFO, socket or device) and cannot be shown or edited")
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ToolError(f"{rel!r} is too large ({size} bytes); use search_code to find the part you need")
    data = path.read_bytes()
    if is_binary_bytes(data[:BINARY_SNIFF_BYTES]):
        raise ToolError(f"{rel!r} is a binary file ({size} bytes) and cannot be shown or edited as text")
    # surrogateescape keeps undecodable bytes intact when the text is written back.
    return data.decode("utf-8", errors="surrogateescape")


def _numbered(lines: list[str], number: int, width: int) -> str:
    line = lines[number - 1].encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if len(line) > MAX_VIEW_LINE_CHARS:
        line = line[:MAX_VIEW_LINE_CHARS] + f" … (+{len(line) - MAX_VIEW_LINE_CHARS} chars)"
    return f"{number:>{width}}\t{line}"


def _lines_that_fit(lines: list[str], first: int, last: int, width: int, max_chars: int | None) -> int:
    """The last line from ``first`` on (at most ``last`` and ``MAX_VIEW_LINES`` lines) whose numbered text fits ``max_chars``."""
    end = min(last, first + MAX_VIEW_LINES - 1)
    if max_chars is None:
        return end
    used = 0
    for number in range(first, end + 1):
        used += len(_numbered(lines, number, width)) + 1
        if used > max_chars and number > first:
            return number - 1
    return end


def view_file(root: Path, path: Path, start_line: int = 1, end_line: int | None = None, max_chars: int | None = None) -> str:
    """Return lines ``start_line..end_line`` of a text file, numbered, at most ``MAX_VIEW_LINES`` and ``max_chars``.

    Args:
        root: repository root, for messages.
        path: absolute path of the file (inside ``root``).
        start_line: first line to show, 1-based.
        end_line: last line to show (inclusive); ``None`` for as far as the caps allow.
        max_chars: the most characters to return (the call's output budget,
            ``ToolContext.output_limit``); whole lines are left out at the end to fit, at
            least one line is shown. None: only ``MAX_VIEW_LINES`` applies.

    Returns:
        A header ``path (lines a-b of n)``, then ``number<TAB>text`` lines, then, when lines
        asked for were left out, ``[lines c-d of n not shown (why); view_file path=p
        start_line=c end_line=e shows them]`` (``e`` < ``d`` when they would not fit in one call
        either: "shows the next k of them").

    Raises:
        ToolError: missing file, directory, binary or huge file, or an out-of-range line.
    """
    rel = _rel(root, path)
    text = _read_text(root, path)
    lines = text.splitlines()
    total = len(lines)
    if total == 0:
        return f"{rel} is empty (0 lines)"
    if start_line < 1:
        raise ToolError(f"start_line must be 1 or more (got {start_line}); lines are numbered from 1")
    if start_line > total:
        raise ToolError(f"start_line {start_line} is past the end of {rel}, which has {total} lines")
    if end_line is not None and end_line < start_line:
        raise ToolError(f"end_line ({end_line}) is before start_line ({start_line})")
    wanted_end = total if end_line is None else min(end_line, total)
    width = len(str(wanted_end))
    room = None if max_chars is None else max_chars - len(rel) - 40 - (len(rel) + 180)  # header and the closing note
    last = _lines_that_fit(lines, start_line, wanted_end, width, room)
    out = [f"{rel} (lines {start_line}-{last} of {total})"]
    out += [_numbered(lines, number, width) for number in range(start_line, last + 1)]
    if last < wanted_end:
        at_most = last - start_line + 1 == MAX_VIEW_LINES
        why = (
            f"{MAX_VIEW_LINES} lines at most per call"
            if at_most
            else f"this call's output is limited to {max_chars:,} characters"
        )
        following = _lines_that_fit(lines, last + 1, wanted_end, width, room)
        shows = "shows them" if following == wanted_end else f"shows the next {following - last} of them"
        out.append(f"[lines {last + 1}-{wanted_end} of {total} not shown ({why}); "
                   f"view_file path={rel} start_line={last + 1} end_line={following} {shows}]")  # fmt: skip
    elif end_line is not None and end_line > total:
        out.append(f"[end of file: {rel} has {total} lines]")
    return "\n".join(out)


@dataclass
class EditOutcome:
    """What ``edit_file`` changed: the file (relative), whether it was created, the first changed line, a diff."""

    path: str
    created: bool
    line: int
    diff: str


_LINE_NUMBER_PREFIX = re.compile(r"^\s*\d+\t")


def _newline_style(text: str) -> str:
    """``"\\r\\n"`` when every line break is CRLF, else ``"\\n"`` (mixed files are left raw)."""
    crlf = text.count("\r\n")
    return "\r\n" if crlf and crlf == text.count("\n") else "\n"


def _occurrences(text: str, needle: str) -> list[int]:
    """Start offsets of every (possibly overlapping) occurrence of ``needle``."""
    found, index = [], text.find(needle)
    while index != -1:
        found.append(index)
        index = text.find(needle, index + 1)
    return found


def _nearest_regions(text: str, old: str, limit: int = 2) -> list[tuple[int, int, float]]:
    """The windows of lines most similar to ``old``: (first line, last line, similarity 0..1).

    A window has as many lines as ``old``; its score is the mean of difflib's ratio and the
    share of ``old``'s characters found in it, so that a slightly wrong fragment of a long line
    still finds that line.
    """
    lines = text.split("\n")
    target = old.strip("\n")
    size = max(1, len(target.split("\n")))
    if not target.strip():
        return []
    scored: list[tuple[float, int]] = []
    floor = 0.55
    for start in range(max(1, len(lines) - size + 1)):
        window = "\n".join(lines[start : start + size])
        if not window.strip():
            continue
        matcher = difflib.SequenceMatcher(None, target, window, autojunk=False)
        upper = matcher.quick_ratio()
        upper_coverage = min(1.0, upper * (len(target) + len(window)) / 2 / len(target))
        if (upper + upper_coverage) / 2 < floor:
            continue
        ratio = matcher.ratio()
        coverage = ratio * (len(target) + len(window)) / 2 / len(target)
        score = (ratio + coverage) / 2
        if score >= floor:
            scored.append((score, start))
    scored.sort(key=lambda item: (-item[0], item[1]))
    chosen: list[tuple[int, int, float]] = []
    for ratio, start in scored:
        if all(abs(start - (c[0] - 1)) >= size for c in chosen):
            chosen.append((start + 1, min(start + size, len(lines)), ratio))
        if len(chosen) == limit:
            break
    return chosen


def _no_match_error(rel: str, text: str, old: str) -> ToolError:
    message = [f"old_text was not found in {rel}; it must match the file exactly (spaces, indentation and line breaks included)."]
    old_lines = old.split("\n")
    if all(_LINE_NUMBER_PREFIX.match(line) for line in old_lines if line.strip()):
        message.append("old_text seems to start with line numbers copied from view_file: leave them out.")
    lines = text.split("\n")
    regions = _nearest_regions(text, old)
    if regions:
        message.append("The most similar part(s) of the file:")
        for first, last, ratio in regions:
            message.append(f"--- lines {first}-{last} ({ratio:.0%} similar):")
            width = len(str(last))
            message += [f"{n:>{width}}\t{lines[n - 1]}" for n in range(first, last + 1)][:30]
        message.append("Copy the text from there (without the line numbers) into old_text, or view_file the region first.")
    else:
        message.append("Nothing in the file resembles it: view_file the file and copy the exact text to replace.")
    return ToolError("\n".join(message))


def _diff(rel: str, before: str, after: str, created: bool) -> str:
    diff = list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            fromfile="/dev/null" if created else f"a/{rel}",
            tofile=f"b/{rel}",
            n=2,
            lineterm="",
        )
    )
    if len(diff) > MAX_DIFF_LINES:
        diff = diff[:MAX_DIFF_LINES] + [f"… ({len(diff) - MAX_DIFF_LINES} more diff lines)"]
    return "\n".join(diff)


def edit_file(root: Path, path: Path, old_text: str, new_text: str) -> EditOutcome:
    """Replace the single exact occurrence of ``old_text`` with ``new_text`` in a file.

    Matching ignores the difference between ``\\r\\n`` and ``\\n`` when the file uses CRLF line
    breaks throughout; the file is written back with its own line-break style. An empty
    ``old_text`` on a file that does not exist creates it (with parent folders) holding
    ``new_text``.

    Args:
        root: repository root, for messages.
        path: absolute path of the file (inside ``root``).
        old_text: the exact text to replace; must occur exactly once.
        new_text: the replacement.

    Returns:
        ``EditOutcome`` with a unified diff of the change.

    Raises:
        ToolError: file missing (with a non-empty ``old_text``), not text, ``old_text`` absent
            (the message shows the most similar regions with line numbers), present several
            times (the message gives their line numbers), the edit would change nothing, or
            it would break the syntax of a file that parsed before (``syntax.check_edit``; the
            file is left unchanged).
    """
    rel = _rel(root, path)
    if old_text == "":
        if path.exists():
            raise ToolError(
                f"old_text is empty but {rel!r} already exists; give the exact text to replace "
                "(an empty old_text only creates new files)"
            )
        if path.parent.exists() and not path.parent.is_dir():
            raise ToolError(f"cannot create {rel!r}: {_rel(root, path.parent)!r} is a file")
        check_edit(rel, None, new_text)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(new_text.encode("utf-8", "surrogateescape"))
        return EditOutcome(rel, True, 1, _diff(rel, "", new_text, created=True))
    raw = _read_text(root, path)
    newline = _newline_style(raw)
    text = raw.replace("\r\n", "\n") if newline == "\r\n" else raw
    if newline == "\r\n":
        old_text, new_text = old_text.replace("\r\n", "\n"), new_text.replace("\r\n", "\n")
    if old_text == new_text:
        raise ToolError("old_text and new_text are identical; the edit would change nothing")
    found = _occurrences(text, old_text)
    if not found:
        raise _no_match_error(rel, text, old_text)
    if len(found) > 1:
        numbers = [text.count("\n", 0, offset) + 1 for offset in found]
        shown = ", ".join(map(str, numbers[:20])) + (", …" if len(numbers) > 20 else "")
        raise ToolError(
            f"old_text occurs {len(found)} times in {rel} (starting at lines {shown}); "
            "include more surrounding lines in old_text so that it matches exactly once"
        )
    offset = found[0]
    updated = text[:offset] + new_text + text[offset + len(old_text) :]
    check_edit(rel, text, updated)
    out = updated.replace("\n", "\r\n") if newline == "\r\n" else updated
    path.write_bytes(out.encode("utf-8", "surrogateescape"))
    line = text.count("\n", 0, offset) + 1
    return EditOutcome(rel, False, line, _diff(rel, text, updated, created=False))
