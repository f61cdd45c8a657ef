"""Reading numbers as printed in financial statements.

Conventions follow US SEC filings (Regulation S-X presentation): a value in parentheses is
negative, an em dash or hyphen alone means nil (stored as 0), ``$`` marks currency, and a
statement-level caption such as "(in millions, except per share data)" gives the scale of every
amount on the page except per-share figures.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Tokens that stand for nil in a numeric column.
NIL_TOKENS = {"—", "–", "-", "--", "— ", "−"}

_NUMBER = re.compile(r"^\(?\$?\(?(?P<minus>[-−])?(?P<digits>\d{1,3}(?:,\d{3})+|\d+)(?P<frac>\.\d+)?\)?(?P<pct>%)?\)?$")
_SCALE = re.compile(
    r"(?:in|\$\s*in|dollars\s+in|amounts\s+in)\s+(?P<word>thousands|millions|billions)"
    r"|\(\s*(?:(?:US)?\$\s*|USD\s+)?(?P<bare>thousands?|millions?|billions?)\b",  # "(Millions)", "($ million, except ...)"
    re.IGNORECASE,
)
SCALES = {"units": 1.0, "ones": 1.0, "thousands": 1e3, "millions": 1e6, "billions": 1e9}


@dataclass(frozen=True)
class ParsedNumber:
    """One numeric token.

    Attributes:
        amount: the signed number as printed, before scaling (``(1,577)`` gives -1577.0).
        is_percent: the token ended with ``%``.
        is_nil: the token was a dash meaning nil (amount 0).
    """

    amount: float
    is_percent: bool = False
    is_nil: bool = False


def parse_number(token: str) -> ParsedNumber | None:
    """Parse one printed token (``$ 2,853``, ``(16,135)``, ``12.5%``, ``—``).

    Args:
        token: the token's text; surrounding spaces and a leading ``$`` are allowed.

    Returns:
        The parsed number, or None when the token is not a number (a word, a footnote mark
        such as ``(1)`` is still a number: callers decide by position).
    """
    text = token.strip().replace("$", "").replace(" ", "")
    if text in NIL_TOKENS or text in {"(—)", "$—"}:
        return ParsedNumber(0.0, is_nil=True)
    match = _NUMBER.match(text)
    if not match or text.count("(") != text.count(")"):
        return None
    amount = float(match["digits"].replace(",", "") + (match["frac"] or ""))
    negative = text.startswith("(") or bool(match["minus"])
    return ParsedNumber(-amount if negative else amount, is_percent=bool(match["pct"]))


def detect_scale(text: str) -> tuple[str, float]:
    """Find a statement's scale caption ("in millions", "(Millions)", "$ in thousands").

    Args:
        text: the page text (only the first match counts: the caption sits under the title).

    Returns:
        ``(word, multiplier)``, e.g. ``("millions", 1e6)``; ``("units", 1.0)`` when none is found.
    """
    match = _SCALE.search(text)
    if not match:
        return "units", 1.0
    word = (match["word"] or match["bare"]).lower()
    word = word if word.endswith("s") else word + "s"
    return word, SCALES[word]


def scale_multiplier(scale: str | float) -> float:
    """Turn a scale given as a word ("millions") or a number (1e6) into its multiplier.

    Raises:
        ValueError: an unknown word or a non-positive number (the message lists the words).
    """
    if isinstance(scale, (int, float)):
        if scale <= 0:
            raise ValueError(f"scale must be positive, got {scale}")
        return float(scale)
    word = scale.strip().lower()
    if word not in SCALES:
        raise ValueError(f"unknown scale {scale!r}; use one of {', '.join(SCALES)} or a number such as 1e6")
    return SCALES[word]
