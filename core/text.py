"""Making model and tool text safe for everything downstream: UTF-8 encoders, DuckDB, JSON, terminals.

Python strings may hold lone surrogates (``"\\ud800"``): a model's output decoded from JSON
escapes, or bytes that are not UTF-8 decoded with ``surrogateescape``. They cannot be encoded as
UTF-8, so the run store (DuckDB ``VARCHAR`` and ``JSON``), the checkpoint serializer (which
silently turns them into ``?``) and the HTTP client of a model server all fail or disagree on
them. ``utf8_safe`` replaces each lone surrogate with U+FFFD and joins correctly paired halves
into the character they spell; everything else (NUL bytes, right-to-left marks, emoji) is kept.

A terminal *interprets* text: an escape sequence in a tool's output can clear the screen
(``ESC [ 2 J``), set the clipboard (OSC 52), retitle the window (OSC 0), plant a hyperlink whose
target differs from its text (OSC 8), or hide a line behind a lone carriage return.
``terminal_safe`` removes every control character and escape sequence (ECMA-48) and keeps the
visible text; everything Horizon prints to a terminal from a model, a tool, a repository or a
model server goes through it (``core.cli``). Stored text is never changed: the run store and
``agent show --json`` keep the exact bytes.
"""

from __future__ import annotations

import re
import sys
from typing import TypeVar

T = TypeVar("T")


def utf8_safe(value: T) -> T:
    """Return ``value`` with every string in it encodable as UTF-8 (lone surrogates become U+FFFD).

    Walks strings, lists, tuples, dict values and keys, and pydantic models (rebuilt from their
    cleaned fields). A value that needs no change is returned as is, the same object, so the
    common case copies nothing.
    """
    if isinstance(value, str):
        try:
            value.encode("utf-8")
            return value
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")  # type: ignore[return-value]
    if isinstance(value, (list, tuple)):
        items = [utf8_safe(v) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items) if isinstance(value, tuple) else items  # type: ignore[return-value]
    if isinstance(value, dict):
        pairs = [(utf8_safe(k), utf8_safe(v)) for k, v in value.items()]
        if all(k2 is k and v2 is v for (k2, v2), (k, v) in zip(pairs, value.items())):
            return value
        return dict(pairs)  # type: ignore[return-value]
    pydantic = sys.modules.get("pydantic")  # a model exists only once pydantic is loaded: the CLI starts without it
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        fields = {name: getattr(value, name) for name in type(value).model_fields}
        clean = utf8_safe(fields)
        return value if clean is fields else type(value).model_validate(clean)  # type: ignore[return-value]
    return value


# ECMA-48 (5th edition, 1991), section 5, with the C1 set of section 5.3 in both its forms: the
# 7-bit ``ESC Fe`` (ESC followed by 0x40-0x5F) and the 8-bit code points U+0080-U+009F. Only
# whole sequences are matched here; a control character left over (an ESC that starts no valid
# sequence, a string introducer without its terminator) is removed by ``_CONTROL`` afterwards,
# so the parameters of a broken sequence are left as plain, harmless text.
_SEQUENCE = re.compile(
    r"""
      (?:\x1b\[|\x9b) [\x30-\x3f]* [\x20-\x2f]* [\x40-\x7e]
          # CSI (5.4): parameter bytes, intermediate bytes, one final byte ("ESC[2J", "ESC[31m")
    | (?:\x1b[\]P^_X]|[\x9d\x90\x9e\x9f\x98]) [^\x07\x1b\x80-\x9f]* (?:\x07|\x1b\\|\x9c)
          # control strings (5.6): OSC, DCS, PM, APC and SOS up to ST ("ESC \\" or 0x9C) or BEL,
          # which xterm accepts for OSC ("ESC]52;c;...BEL", "ESC]8;;url ESC\\"); the body stops at
          # any ESC or C1, so a broken string never swallows the text after it and the scan is linear
    | \x1b [\x20-\x2f]* [\x30-\x7e]
          # every other escape sequence (5.3): nF ("ESC ( B"), Fp ("ESC 7"), Fe ("ESC M"), Fs ("ESC c")
    """,
    re.VERBOSE,
)
# What may stay: TAB and LF. CR is handled before (a lone CR would let a line overwrite itself).
# Also the bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069):
# they reorder what a terminal shows ("Trojan Source"); the marks U+200E/U+200F are harmless.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_CR = re.compile(r"\r\n?")


def terminal_safe(text: str) -> str:
    """Return ``text`` as a terminal may show it: no control character, no escape sequence.

    Removed: every escape sequence of ECMA-48 (CSI, OSC ended by BEL or ST, DCS, SOS, PM and
    APC strings, the two- and three-character ``ESC`` sequences), in its 7-bit (``ESC [``) and
    8-bit (U+009B) forms; then every remaining C0 control character but TAB and LF, DEL, every
    C1 control character (U+0080-U+009F) and the bidirectional override, embedding and isolate
    characters. A CR LF pair becomes LF and a lone CR becomes LF, so nothing can be drawn over.
    Lone surrogates become U+FFFD (``utf8_safe``), so the result can always be encoded. Plain text,
    newlines and tabs included, is returned unchanged; text with no control character at all is
    returned as is, without a copy.

    Args:
        text: any text from a model, a tool, a repository or a server.

    Returns:
        The text without control characters; printable characters keep their order.
    """
    text = utf8_safe(text)
    if text.isprintable():  # the common case: nothing to remove (no TAB, LF, CR or control either)
        return text
    text = _SEQUENCE.sub("", text)
    text = _CR.sub("\n", text)
    return _CONTROL.sub("", text)
