"""The check every report paragraph passes: each number in the prose is a traced figure.

A paragraph, written by a script from figures or by the agent, may state numbers only as a
figure's display followed by its reference (``revenue grew 9.6% [F12]``); dates are allowed as
``FY2023`` or ``2023-05-31``, and document names (``NIKE_2023_10K``) are not numbers. Anything else with a digit is reported, so a narrative cannot
carry a number that the figures manifest (``figures.json``) does not derive from stored facts.
"""

from __future__ import annotations

import re
from typing import Any

_CITED = re.compile(r"(-?\$?[\d,]*\d(?:\.\d+)?%?)\s\[F(\d+)\]")
#: not numbers: fiscal years, dates, figure references, document names (``NIKE_2023_10K``)
_DATES = re.compile(r"\bFY\d{4}\b|\b\d{4}-\d{2}-\d{2}\b|\[F\d+\]|\[F\*n\*\]|\b[A-Za-z0-9-]*_[A-Za-z0-9_-]+")


def untraced_prose_numbers(text: str, manifest: list[dict[str, Any]]) -> list[str]:
    """Numbers in ``text`` that are not a listed figure shown as listed.

    Args:
        text: the paragraph(s), Markdown.
        manifest: the report's figures (``figures.json`` items with ``ref`` and ``display``).

    Returns:
        The offending tokens in order: ``"9.7% [F12]"`` when F12 is displayed otherwise or not
        listed, a bare ``"9.7%"`` when it carries no reference. Empty when the text traces.
    """
    displays = {str(f.get("ref")): f.get("display") for f in manifest if isinstance(f, dict)}
    bad = []

    def check(match: re.Match[str]) -> str:
        shown = match[1].replace("$", "")
        if displays.get(match[2]) != shown:
            bad.append(match[0])
        return " "

    rest = _DATES.sub(" ", _CITED.sub(check, text))
    bad += re.findall(r"[-$]?[\d,]*\d(?:\.\d+)?%?", rest)
    return bad
