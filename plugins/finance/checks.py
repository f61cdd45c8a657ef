"""Accounting identities over the stored facts: the domain's own check of an extraction.

Identities (per document, statement column):

    balance sheet   total assets = total liabilities and equity
                    total assets = total liabilities + temporary equity + total equity
    income          gross profit = revenue - cost of revenue
    cash flow       net change in cash = operating + investing + financing + FX effect
                    cash at end = cash at beginning + net change in cash

Terms are the facts' normalised values (``facts.normalised_value``: each concept in its
polarity, so a cost printed in parentheses and one printed plain enter alike); the formulas over
fact ids carry the same signs (``-{id}`` for a fact whose printed sign was flipped), so they
evaluate to the compared sides on the printed values.

Each holds when ``|lhs - rhs| <= max(one printed unit (1 x scale), 0.1% of max(|lhs|, |rhs|))``:
a statement rounds each line to its printed unit, so sums can be off by one. An identity whose
terms were not all extracted is not compared. When nothing at all could be compared the
outcome is ``inconclusive`` and counts as a failure: extracting nothing must not score.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

RELATIVE_TOLERANCE = 0.001

#: name -> (statement, lhs concepts (summed), rhs concepts (summed); a leading "-" subtracts).
IDENTITIES: dict[str, tuple[str, list[str], list[str]]] = {
    "assets = liabilities and equity": ("balance_sheet", ["total_assets"], ["total_liabilities_and_equity"]),
    "assets = liabilities + equity": ("balance_sheet", ["total_assets"], ["total_liabilities", "temporary_equity", "total_equity"]),
    "gross profit = revenue - cost of revenue": ("income_statement", ["gross_profit"], ["revenue", "-cost_of_revenue"]),
    "net change in cash = operating + investing + financing + FX": (
        "cash_flow", ["net_change_in_cash"], ["operating_cash_flow", "investing_cash_flow", "financing_cash_flow", "fx_effect_on_cash"]),
    "cash at end = cash at beginning + net change": ("cash_flow", ["cash_end_of_period"], ["cash_beginning_of_period", "net_change_in_cash"]),
}


@dataclass
class CheckResult:
    """One identity on one document and period.

    Attributes:
        doc_name, statement, period_label: where.
        name: the identity (a key of ``IDENTITIES``).
        lhs, rhs: both sides in the facts' unit (USD), scaled.
        tolerance: the allowed difference (USD).
        passed: ``|lhs - rhs| <= tolerance``.
        fact_ids: the facts on each side, for the report's sources.
        lhs_formula, rhs_formula: each side as a formula over fact ids (``plugins.finance.formula``).
    """

    doc_name: str
    statement: str
    period_label: str
    name: str
    lhs: float
    rhs: float
    tolerance: float
    passed: bool
    fact_ids: list[str] = field(default_factory=list)
    lhs_formula: str = ""
    rhs_formula: str = ""


@dataclass
class CheckSummary:
    """All identities over a set of documents.

    Attributes:
        results: every comparison made.
        status: ``passed`` (all held), ``failed`` (some did not) or ``inconclusive`` (none compared).
        score: share that held; 0 when inconclusive.
        uncompared: documents with facts for which no identity could be compared.
    """

    results: list[CheckResult]
    status: str
    score: float
    uncompared: list[str]


def _side(spec: list[str], values: dict[str, tuple[float, float, str, int]]) -> float:
    """Sum the normalised terms of one side of an identity (a leading "-" subtracts; absent terms count 0)."""
    return sum((-1 if t.startswith("-") else 1) * values[t.lstrip("-")][0] for t in spec if t.lstrip("-") in values)


def _formula(spec: list[str], values: dict[str, tuple[float, float, str, int]]) -> str:
    """One side of an identity as a formula over fact ids (``{a} + {b} - {c}``), each fact's sign applied."""
    text = ""
    for t in spec:
        if t.lstrip("-") in values:
            _, _, fid, sign = values[t.lstrip("-")]
            negative = t.startswith("-") != (sign < 0)
            text += (" - " if negative else " + ") + "{" + fid + "}"
    text = text.strip()
    return text[2:] if text.startswith("+ ") else text or "0"


def run_checks(con: duckdb.DuckDBPyConnection, documents: list[str] | None = None) -> CheckSummary:
    """Evaluate ``IDENTITIES`` on the mapped facts of ``documents`` (all when None)."""
    where = "WHERE concept IS NOT NULL" + (" AND doc_name IN (SELECT unnest(?))" if documents else "")
    rows = con.execute(
        f"SELECT doc_name, statement, period_label, concept, normalised_value, scale, fact_id, sign FROM facts {where}",
        [documents] if documents else [],
    ).fetchall()
    table: dict[tuple[str, str, str], dict[str, tuple[float, float, str, int]]] = {}
    for doc, statement, period, concept, value, scale, fact_id, sign in rows:
        table.setdefault((doc, statement, period), {})[concept] = (value, scale, fact_id, sign)
    results = []
    for (doc, statement, period), values in sorted(table.items()):
        for name, (kind, lhs_terms, rhs_terms) in IDENTITIES.items():
            if kind != statement:
                continue
            terms = [t.lstrip("-") for t in lhs_terms + rhs_terms]
            optional = {"fx_effect_on_cash", "temporary_equity"}  # absent when the filer has none
            if any(t not in values for t in terms if t not in optional):
                continue

            lhs, rhs = _side(lhs_terms, values), _side(rhs_terms, values)
            unit = max(values[t][1] for t in terms if t in values)
            tolerance = max(unit, RELATIVE_TOLERANCE * max(abs(lhs), abs(rhs)))
            results.append(CheckResult(doc, statement, period, name, lhs, rhs, tolerance, abs(lhs - rhs) <= tolerance,
                                       [values[t][2] for t in terms if t in values],
                                       _formula(lhs_terms, values), _formula(rhs_terms, values)))
    with_facts = {r[0] for r in rows}
    compared = {r.doc_name for r in results}
    if not results:
        return CheckSummary([], "inconclusive", 0.0, sorted(with_facts))
    held = sum(r.passed for r in results)
    return CheckSummary(results, "passed" if held == len(results) else "failed", held / len(results), sorted(with_facts - compared))
