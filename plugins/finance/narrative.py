"""The check every report paragraph passes: each number in the prose is a traced figure.

A paragraph, written by a script from figures or by the agent, may state numbers only as a
figure's display followed by its reference (``revenue grew 9.6% [F12]``). What a number is
(digits in any grouping or script, number words, percents, scales, fractions) and which
tokens with digits are names rather than numbers (document names, form names, fiscal years,
dates, page and note numbers) is decided in one place, ``plugins.finance.narrative_numbers``,
which both this check (``write_report``) and the reward's "report traced" share use; so a
narrative cannot carry a number that the figures manifest (``figures.json``) does not derive
from stored facts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from plugins.finance.narrative_numbers import narrative_problems


def untraced_prose_numbers(text: str, manifest: list[dict[str, Any]], documents: Iterable[str] | None = None,
                           vague: bool = True) -> list[str]:
    """Numbers in ``text`` that are not a listed figure shown as listed.

    Args:
        text: the paragraph(s), Markdown.
        manifest: the report's figures (``figures.json`` items with ``ref``, ``display`` and ``scale``).
        documents: the report's document names (names, not numbers); None reads them from the
            manifest's formulas, which only a caller that wrote the manifest itself may do.
        vague: count vague quantities (``dozens``, ``millions``) and unit words with no number; False for a table cell.

    Returns:
        The offending numbers in order: ``"9.7% [F12] (F12 is shown as 9.6%)"`` when F12 is
        displayed otherwise, ``"9.6% [F3] (there is no F3)"``, a bare ``"9.7%"`` or
        ``"ninety-five percent"`` when it carries no reference, ``"FY999000 (...why...)"`` for a
        number that cannot cite a figure. Empty when the text traces.
    """
    return [str(p) for p in narrative_problems(text, manifest, documents, vague)]


class UntracedNarrativeError(ValueError):
    """A narrative states a number that is not a figure of the report; the message lists them and says what to do."""


def check_narrative(text: str, manifest: list[dict[str, Any]], where: str = "the narrative",
                    documents: Iterable[str] | None = None) -> None:
    """Refuse a narrative that is not plain traced paragraphs.

    A narrative is Markdown paragraphs: no headings (a heading such as ``## Sources`` would change
    which tables the report's reward checks) and no tables or HTML; every number is a figure shown
    as the report shows it (``plugins.finance.narrative_numbers``); ``documents`` as for
    ``untraced_prose_numbers``.

    Raises:
        UntracedNarrativeError: with the offending lines or tokens and how to cite.
    """
    structure = [line.strip()[:40] for line in text.splitlines() if line.lstrip().startswith(("#", "|", "<"))]
    if structure:
        raise UntracedNarrativeError(
            f"{where} may hold paragraphs only (no headings, tables or HTML): {'; '.join(structure[:5])}")
    problems = narrative_problems(text, manifest, documents)
    if problems:
        listed = "; ".join(p.describe(hint=False) for p in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise UntracedNarrativeError(
            f"{where} states {len(problems)} number(s) that are not figures of the report: {listed}{more}. Every number counts, "
            "however it is written (digits, words such as ninety-five or a third, 12k, $1.2bn, percents); write each as a "
            "figure's display followed by its reference exactly as the report shows it (e.g. 9.6% [F12]; the figures with their "
            "refs are in report/figures.json and the report's tables), or leave it out")


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
