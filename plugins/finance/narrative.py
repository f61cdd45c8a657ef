"""The check every report paragraph passes: each number in the prose is a traced figure.

A paragraph, written by a script from figures or by the agent, may state numbers only as a
figure's display followed by its reference (``revenue grew 9.6% [F12]``); dates are allowed as
``FY2023`` or ``2023-05-31``; document names (``NIKE_2023_10K``), the names of the companies
whose filings the figures come from (``3M``, read from the figures' fact ids), SEC form names
(``10-K``, ``10-Q``, ``8-K``, ``20-F``) and period labels (``Q4``, ``H1``) are not numbers. Anything
else with a digit is reported, so a narrative cannot carry a number that the figures manifest
(``figures.json``) does not derive from stored facts.
"""

from __future__ import annotations

import re
from typing import Any

_CITED = re.compile(r"(-?\$?[\d,]*\d(?:\.\d+)?%?)\s\[F(\d+)\]")
#: not numbers: fiscal years, dates, figure references, document names (``NIKE_2023_10K``)
_DATES = re.compile(r"\bFY\d{4}\b|\b\d{4}-\d{2}-\d{2}\b|\[F\d+\]|\[F\*n\*\]|\b[A-Za-z0-9-]*_[A-Za-z0-9_-]+"
                    r"|\b(?:10-K|10-Q|8-K|20-F|40-F|6-K|S-1)\b|\b[QH][1-4]\b")
#: a document stem's company part: ``3M`` of ``3M_2018_10K``
_COMPANY = re.compile(r"^(.+?)_(?:FY)?\d{4}")


def _company_names(manifest: list[dict[str, Any]]) -> set[str]:
    """The company parts of the documents the figures' facts come from (``3M``, ``NIKE``)."""
    names = set()
    for figure in manifest:
        for fact in figure.get("fact_ids", []) if isinstance(figure, dict) else []:
            if match := _COMPANY.match(str(fact).split(":")[0]):
                names.add(match[1])
    return {n for n in names if any(ch.isdigit() for ch in n)}  # only names with a digit could be taken for a number


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
            listed = displays.get(match[2])
            bad.append(match[0] + (f" (F{match[2]} is shown as {listed})" if listed else f" (there is no F{match[2]})"))
        return " "

    rest = _DATES.sub(" ", _CITED.sub(check, text))
    for name in _company_names(manifest):
        rest = re.sub(rf"(?<![\w$.,-]){re.escape(name)}(?![\w%])", " ", rest, flags=re.IGNORECASE)
    bad += re.findall(r"[-$]?[\d,]*\d(?:\.\d+)?%?", rest)
    return bad


class UntracedNarrativeError(ValueError):
    """A narrative states a number that is not a figure of the report; the message lists them and says what to do."""


def check_narrative(text: str, manifest: list[dict[str, Any]], where: str = "the narrative") -> None:
    """Refuse a narrative that is not plain traced paragraphs.

    A narrative is Markdown paragraphs: no headings (a heading such as ``## Sources`` would change
    which tables the report's reward checks) and no tables or HTML; every number is a figure shown
    as the report shows it (``untraced_prose_numbers``).

    Raises:
        UntracedNarrativeError: with the offending lines or tokens and how to cite.
    """
    structure = [line.strip()[:40] for line in text.splitlines() if line.lstrip().startswith(("#", "|", "<"))]
    if structure:
        raise UntracedNarrativeError(
            f"{where} may hold paragraphs only (no headings, tables or HTML): {'; '.join(structure[:5])}")
    untraced = untraced_prose_numbers(text, manifest)
    if untraced:
        raise UntracedNarrativeError(
            f"{where} states numbers that are not figures of the report: {', '.join(untraced[:10])}; write each number as "
            "a figure's display and reference exactly as the report shows it (e.g. 9.6% [F12]; the figures with their refs "
            "are in report/figures.json and the report's tables), or leave it out")


def citable_figures(markdown: str, per_table: int = 4) -> list[str]:
    """The main figures a narrative can cite, compactly: each table row's latest column as shown.

    Args:
        markdown: the report's Markdown (tables whose first header cell is "Line item" or "Metric").
        per_table: rows listed per table.

    Returns:
        ``["3M_2018_10K Revenue FY2018 32,765 [F3]", ...]`` in report order.
    """
    out, section, header, taken = [], "", [], 0
    for line in markdown.splitlines():
        if line.startswith("## "):
            section = line[3:].strip()
        if not line.startswith("|"):
            header = []
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if cells[0] in ("Line item", "Metric"):
            header, taken = cells, 0
            continue
        if not header or line.startswith("|---") or taken >= per_table:
            continue
        shown = [(h, c) for h, c in zip(header[1:], cells[1:], strict=False) if "[F" in c]
        if shown:
            out.append(f"{section} {cells[0]} {shown[-1][0]} {shown[-1][1]}")
            taken += 1
    return out
