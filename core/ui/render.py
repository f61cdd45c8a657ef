"""Helpers the templates call: telling a unified diff from other text, and classing its lines
(the line prefixes of GNU diff's unified format: ``+``, ``-``, ``@@``, ``---``/``+++``)."""

from __future__ import annotations

import re

__all__ = ["diff_lines", "looks_like_diff"]

_HUNK = re.compile(r"^@@ -\d+(,\d+)? \+\d+(,\d+)? @@", re.MULTILINE)


def looks_like_diff(text: str | None) -> bool:
    """True when ``text`` holds at least one unified-diff hunk header (``@@ -a,b +c,d @@``)."""
    return bool(text) and _HUNK.search(text) is not None


def diff_lines(text: str) -> list[tuple[str, str]]:
    """``text`` as ``(css class, line)`` pairs: ``add``, ``del``, ``hunk``, ``file`` (headers) or
    ``ctx``; the template escapes each line."""
    out = []
    for line in text.splitlines():
        if line.startswith(("+++ ", "--- ", "diff --git", "index ", "new file mode", "deleted file mode", "rename ")):
            kind = "file"
        elif line.startswith("@@"):
            kind = "hunk"
        elif line.startswith("+"):
            kind = "add"
        elif line.startswith("-"):
            kind = "del"
        else:
            kind = "ctx"
        out.append((kind, line))
    return out
