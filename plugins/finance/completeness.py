"""Completeness of each located statement: the lines it must have, and whether its totals foot.

A statement whose values were read is ``damaged`` when a line every statement of its kind prints
was not stored (``REQUIRED``: a balance sheet without total assets lost its totals, whatever else
was read), or when an accounting identity over its totals does not hold
(``plugins.finance.checks``: total assets against liabilities and equity, within the printed
unit), unless the difference is one printed line of the same column that maps to no concept (the
statement foots with it, to the printed unit; the identity does not know that line). A statement that was located but none of whose values could be read is ``damaged`` too.
Otherwise it is ``ok``; a kind that was not located is ``not_located``. The verdict, with the
page and what is missing or off, goes into ``statement_locations.status`` and ``.problem``, and
``ingest`` turns every damaged statement into a warning of its document (never ``ok``).
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from plugins.finance.checks import CheckResult
from plugins.finance.concepts import BALANCE, CASH_FLOW, INCOME, STATEMENTS

#: kind -> the lines it must have: each a (what, concepts any of which will do).
REQUIRED: dict[str, list[tuple[str, tuple[str, ...]]]] = {
    BALANCE: [("total assets", ("total_assets",)),
              ("total liabilities (or total liabilities and equity)", ("total_liabilities", "total_liabilities_and_equity")),
              ("total equity", ("total_equity", "equity_parent"))],
    INCOME: [("revenue", ("revenue",)),
             ("net income", ("net_income", "net_income_including_nci"))],
    CASH_FLOW: [("operating cash flow (or the net change in cash)", ("operating_cash_flow", "net_change_in_cash"))],
}


@dataclass
class Verdict:
    """One statement kind of one document.

    Attributes:
        statement: the kind (``balance_sheet``, ``income_statement``, ``cash_flow``).
        status: ``ok``, ``damaged`` or ``not_located``.
        problem: what is missing or does not foot, with the page (empty when ``ok``).
    """

    statement: str
    status: str
    problem: str = ""


def _money(value: float) -> str:
    """A USD amount in millions, as the reasons print it."""
    return f"{value / 1e6:,.1f} $m"


def _one_line_off(con: duckdb.DuckDBPyConnection, doc_name: str, check: CheckResult) -> bool:
    """Whether a failed identity is off by exactly one printed line that maps to no concept (MGM's "Change
    in cash classified as assets held for sale" between FX and the net change): the statement foots with it,
    the identity only does not know the line. Exactly means within one printed unit, not the identity's
    0.1%: a balance sheet's 40 other lines would match a gap of 0.1% of total assets by chance."""
    gap = abs(check.lhs - check.rhs)
    return bool(con.execute(
        "SELECT count(*) FROM facts WHERE doc_name = ? AND statement = ? AND period_label = ? AND concept IS NULL "
        "AND abs(abs(value) - ?) <= scale", [doc_name, check.statement, check.period_label, gap]).fetchone()[0])


def statement_verdicts(con: duckdb.DuckDBPyConnection, doc_name: str, located: dict[str, str],
                       checks: list[CheckResult]) -> list[Verdict]:
    """Judge each primary statement of one stored document.

    Args:
        con: the filings database, with the document's facts written.
        doc_name: the document.
        located: kind -> the pages it was located on (``statement_locations.pages``: '' when not located).
        checks: the identities compared on its values (``run_checks(con, [doc_name]).results``).

    Returns:
        One verdict per kind of ``concepts.STATEMENTS``, in that order.
    """
    rows = con.execute("SELECT statement, list(DISTINCT page ORDER BY page), list(DISTINCT concept) FILTER (concept IS NOT NULL) "
                       "FROM facts WHERE doc_name = ? AND statement NOT LIKE 'table:%' GROUP BY statement", [doc_name]).fetchall()
    read = {kind: (pages, set(concepts or [])) for kind, pages, concepts in rows}
    out = []
    for kind in STATEMENTS:
        if kind not in read:
            if located.get(kind):
                out.append(Verdict(kind, "damaged", f"{kind} located on p.{located[kind]} but no values could be read there"))
            else:
                out.append(Verdict(kind, "not_located"))
            continue
        pages, concepts = read[kind]
        where = "p." + ",".join(map(str, pages))
        problems = [f"no {what}" for what, any_of in REQUIRED[kind] if not concepts.intersection(any_of)]
        for c in checks:
            if c.statement == kind and not c.passed and not _one_line_off(con, doc_name, c):
                problems.append(f"{c.name} does not foot for {c.period_label} ({_money(c.lhs)} against {_money(c.rhs)}, "
                                f"off by {_money(abs(c.lhs - c.rhs))})")
        if problems:
            out.append(Verdict(kind, "damaged", f"{kind} on {where} is damaged: " + "; ".join(problems)
                               + " (check the page; its values are stored but incomplete or inconsistent)"))
        else:
            out.append(Verdict(kind, "ok"))
    return out
