"""Which static-check findings a run introduced, and which were there before it.

A finding is matched with the findings on the run's starting files by its *fingerprint*: the
checker's code and message (line numbers inside the message masked: ruff's F811 says "from line
3") and the text of its source line, stripped; not by its line number, which any edit above it
shifts. Equal fingerprints pair off one to one (a multiset), so a second copy of an old mistake
counts as new. A finding on a line the run edited has a new fingerprint, so it is new: it is on
the agent's own line.

The starting files come from the run's baseline database (``core.api.start_tree``), read
without touching the workspace. ``plugins.coding.static`` runs the checkers on them in the
sandbox, as on the workspace, and only for files whose bytes changed: in an unchanged file every
finding was there before. Nothing here starts a process but git on the baseline database.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from core.api import start_files, start_tree

_FINDING = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?:\d+:)? (?P<message>.*)$")
_LINE_NUMBER = re.compile(r"\bline \d+\b")


def parse_finding(finding: str) -> tuple[str, int, str]:
    """``(path, line, message)`` of a ``path:line[:col]: message`` finding (``CheckReport.findings``).

    Raises:
        ValueError: the text is not such a finding.
    """
    match = _FINDING.match(finding)
    if not match:
        raise ValueError(f"not a finding: {finding!r}")
    return match["path"], int(match["line"]), match["message"]


def fingerprint(message: str, line_text: str) -> tuple[str, str]:
    """What identifies a finding across edits: its message with line numbers masked, and its line's text stripped."""
    return _LINE_NUMBER.sub("line N", message), line_text.strip()


def _line(lines: list[str], number: int) -> str:
    return lines[number - 1] if 0 < number <= len(lines) else ""


def split_findings(
    current: list[str], start: list[str], current_lines: Callable[[str], list[str]], start_lines: Callable[[str], list[str]]
) -> tuple[list[str], list[str]]:
    """Split ``current`` findings into (new, already there) by matching fingerprints with ``start``.

    Args:
        current: findings on the files now.
        start: findings on the starting versions of the same files.
        current_lines: ``path -> lines of the file now``.
        start_lines: ``path -> lines of its starting version``.

    Returns:
        ``(new, old)``, each in the order of ``current``.
    """
    unmatched = Counter()
    for finding in start:
        path, line, message = parse_finding(finding)
        unmatched[(path, *fingerprint(message, _line(start_lines(path), line)))] += 1
    new, old = [], []
    for finding in current:
        path, line, message = parse_finding(finding)
        key = (path, *fingerprint(message, _line(current_lines(path), line)))
        if unmatched[key]:
            unmatched[key] -= 1
            old.append(finding)
        else:
            new.append(finding)
    return new, old


def text_lines(data: bytes) -> list[str]:
    """A file's lines as checkers number them (undecodable bytes replaced)."""
    return data.decode("utf-8", "replace").splitlines()


def blob_sha(data: bytes) -> str:
    """The git blob id of ``data`` (``sha1("blob <size>\\0" + data)``): compared with the start tree's ids, no git process needed."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def start_versions(baseline: Path, paths: list[str]) -> dict[str, bytes]:
    """The starting bytes of those of ``paths`` that the start tree holds as files."""
    return {path: data for path, (mode, data) in start_files(baseline, paths).items() if mode != "120000"}


def changed_files(root: Path, baseline: Path, suffix: str, current: list[str]) -> tuple[list[str], list[str], list[str]]:
    """Files ending with ``suffix`` that differ from the start: (changed, added, deleted).

    Args:
        current: the files with that suffix now (relative POSIX paths), e.g. ``java_sources``.

    Returns:
        ``changed``: in both, other bytes; ``added``: in ``current`` only; ``deleted``: in the
        start tree only and gone from the workspace.
    """
    start = {e.path: e.sha for e in start_tree(baseline) if e.path.endswith(suffix) and e.mode != "120000"}
    changed, added = [], []
    for rel in current:
        if rel not in start:
            added.append(rel)
            continue
        try:
            if blob_sha((root / rel).read_bytes()) != start[rel]:
                changed.append(rel)
        except OSError:
            changed.append(rel)
    now = set(current)
    deleted = [rel for rel in start if rel not in now and not (root / rel).exists()]
    return changed, added, deleted
