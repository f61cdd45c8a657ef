"""Reading a git patch into its file sections (``_parse``): each one's kind, names (git's C-style
quoting, the ``a/`` and ``b/`` prefixes), modes and, for a symbolic link, the target its hunk
writes. Hunks are read by their line counts, so a ``--- `` line inside one is content."""

from __future__ import annotations

from dataclasses import dataclass

from core.apply.paths import LINK_MODE, printable
from core.errors import UserError


@dataclass
class _Section:
    kind: str = "modify"
    path: str = ""
    old_path: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    link_target: str | None = None
    binary: bool = False
    has_hunk: bool = False


def _unquote(text: str) -> tuple[str, str]:
    """A C-style quoted name at the start of ``text`` (git's ``quote_c_style``): (name, rest)."""
    assert text.startswith('"')
    out = bytearray()
    i = 1
    simple = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return out.decode("utf-8", "surrogateescape"), text[i + 1:]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
                continue
            if nxt in "0123" and i + 3 < len(text) and all(c in "01234567" for c in text[i + 1:i + 4]):
                out.append(int(text[i + 1:i + 4], 8))
                i += 4
                continue
            raise UserError("the patch holds a badly quoted file name; it is not applied")
        out.extend(ch.encode("utf-8", "surrogateescape"))
        i += 1
    raise UserError("the patch holds a badly quoted file name; it is not applied")


def _strip_prefix(name: str) -> str:
    """git apply's ``-p1``: drop the first path component (``a/``, ``b/``)."""
    return name.split("/", 1)[1] if "/" in name else name


def _name_field(value: str) -> str | None:
    """The name of a ``---``/``+++`` line without its prefix; None for ``/dev/null``."""
    if value.startswith('"'):
        name, _ = _unquote(value)
    else:
        name = value.removesuffix("\t")
        name = name.split("\t", 1)[0]
    return None if name == "/dev/null" else _strip_prefix(name)


def _plain_field(value: str) -> str:
    """The name of a ``rename from``/``copy to`` line (no prefix)."""
    return _unquote(value)[0] if value.startswith('"') else value


def _git_line_names(rest: str) -> tuple[str | None, str | None]:
    """Both names of a ``diff --git a/X b/Y`` line (prefixes dropped), as far as they can be told
    apart; (None, None) when they cannot (git then needs the other headers too)."""
    if rest.startswith('"'):
        a, tail = _unquote(rest)
        tail = tail.lstrip(" ")
        b = _unquote(tail)[0] if tail.startswith('"') else tail
        return _strip_prefix(a), _strip_prefix(b)
    if rest.endswith('"') and ' "' in rest:
        head, _, quoted = rest.rpartition(' "')
        return _strip_prefix(head), _strip_prefix(_unquote('"' + quoted)[0])
    if len(rest) % 2 == 1:  # "a/X b/X": the same name twice
        half = len(rest) // 2
        a, b = rest[:half], rest[half + 1:]
        if rest[half] == " " and _strip_prefix(a) == _strip_prefix(b):
            return _strip_prefix(a), _strip_prefix(b)
    return None, None


_HUNK = "@@ -"


def _hunk_counts(line: str) -> tuple[int, int]:
    """The old and new line counts of a ``@@ -a,b +c,d @@`` header."""
    try:
        ranges = line[3:].split(" @@", 1)[0].split(" ")
        old, new = ranges[0].lstrip("-"), ranges[1].lstrip("+")
        return (int(old.split(",")[1]) if "," in old else 1), (int(new.split(",")[1]) if "," in new else 1)
    except (IndexError, ValueError):
        raise UserError(f"the patch holds a malformed hunk header ({printable(line[:80])}); it is not applied") from None


def _parse(data: bytes) -> list[_Section]:
    """The file sections of a git patch, in order; each with its kind, names, modes and, for a
    symbolic link, the target written in its hunk."""
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    sections: list[_Section] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("diff --git "):
            i += 1
            continue
        s = _Section()
        a, b = _git_line_names(line[len("diff --git "):])
        minus: str | None = None
        plus: str | None = None
        seen_minus = seen_plus = False
        rename_from = rename_to = None
        i += 1
        # extended headers, then the ---/+++ pair
        while i < len(lines) and not lines[i].startswith(("diff --git ", _HUNK, "GIT binary patch", "Binary files ")):
            h = lines[i]
            if h.startswith("old mode "):
                s.old_mode = h[9:].strip()
            elif h.startswith("new mode "):
                s.new_mode = h[9:].strip()
            elif h.startswith("deleted file mode "):
                s.kind, s.old_mode = "delete", h[18:].strip()
            elif h.startswith("new file mode "):
                s.kind, s.new_mode = "add", h[14:].strip()
            elif h.startswith(("rename from ", "copy from ")):
                s.kind = "rename" if h.startswith("rename") else "copy"
                rename_from = _plain_field(h.split(" from ", 1)[1])
            elif h.startswith(("rename to ", "copy to ")):
                rename_to = _plain_field(h.split(" to ", 1)[1])
            elif h.startswith("index "):
                fields = h.split()
                if len(fields) == 3:  # the mode is unchanged
                    s.old_mode = s.old_mode or fields[2]
                    s.new_mode = s.new_mode or fields[2]
            elif h.startswith("--- "):
                minus, seen_minus = _name_field(h[4:]), True
            elif h.startswith("+++ "):
                plus, seen_plus = _name_field(h[4:]), True
            i += 1
        if s.kind in ("rename", "copy"):
            s.old_path, s.path = rename_from, rename_to or ""
        elif s.kind == "add":
            s.path = plus if seen_plus and plus else (b or "")
        elif s.kind == "delete":
            s.old_path = minus if seen_minus and minus else a
            s.path = s.old_path or ""
        else:
            s.path = plus if seen_plus and plus else (b or "")
            s.old_path = minus if seen_minus and minus else (a or s.path)
        if s.kind != "add" and s.kind != "delete" and s.old_mode and not s.new_mode:
            s.new_mode = s.old_mode
        if not s.path or (s.kind != "add" and not s.old_path):
            raise UserError("the patch has a file section whose names cannot be read; it is not applied")
        # the body: hunks (read by their line counts, so a '--- ' inside one is content) or a binary patch
        new_side: list[str] = []
        while i < len(lines) and not lines[i].startswith("diff --git "):
            line = lines[i]
            if line.startswith(_HUNK):
                s.has_hunk = True
                old_n, new_n = _hunk_counts(line)
                i += 1
                while i < len(lines) and (old_n > 0 or new_n > 0):
                    body = lines[i]
                    if body.startswith("\\"):  # "\ No newline at end of file"
                        i += 1
                        continue
                    tag = body[:1]
                    if tag in (" ", ""):
                        old_n, new_n = old_n - 1, new_n - 1
                        new_side.append(body[1:])
                    elif tag == "-":
                        old_n -= 1
                    elif tag == "+":
                        new_n -= 1
                        new_side.append(body[1:])
                    else:
                        raise UserError("the patch has a hunk shorter than its header says; it is not applied")
                    i += 1
                continue
            if line.startswith(("GIT binary patch", "Binary files ")):
                s.binary = True
            i += 1
        if s.new_mode == LINK_MODE and s.kind != "delete" and s.has_hunk and not s.binary:
            s.link_target = "\n".join(new_side)
        sections.append(s)
    return sections
