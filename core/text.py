"""Making model and tool text safe for everything downstream: UTF-8 encoders, DuckDB, JSON.

Python strings may hold lone surrogates (``"\\ud800"``): a model's output decoded from JSON
escapes, or bytes that are not UTF-8 decoded with ``surrogateescape``. They cannot be encoded as
UTF-8, so the run store (DuckDB ``VARCHAR`` and ``JSON``), the checkpoint serializer (which
silently turns them into ``?``) and the HTTP client of a model server all fail or disagree on
them. ``utf8_safe`` replaces each lone surrogate with U+FFFD and joins correctly paired halves
into the character they spell; everything else (NUL bytes, right-to-left marks, emoji) is kept.
"""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

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
    if isinstance(value, BaseModel):
        fields = {name: getattr(value, name) for name in type(value).model_fields}
        clean = utf8_safe(fields)
        return value if clean is fields else type(value).model_validate(clean)  # type: ignore[return-value]
    return value
