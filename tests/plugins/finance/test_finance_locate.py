"""Statement location on real filings: guarantor pages set aside with their reason, scores, warnings.

None of the 39 shared filings prints condensed consolidating (guarantor-column) statements; the
closest real pages are the guarantor / obligor-group summaries of MGM Resorts' 2020 10-K (p.51,
titled by its "Balance Sheet" caption) and Amcor's 2023 Q2 10-Q (p.45, an income statement of
the obligor group), both of which pass the title and numbers tests a primary statement passes.
"""

from __future__ import annotations

from pathlib import Path

import pypdfium2
import pytest

from plugins.finance.concepts import statement_kind
from plugins.finance.extract import page_texts
from plugins.finance.ingest import ingest
from plugins.finance.locate import CONFIDENT, candidates, exclusion, locate, totals_that_add_up
from plugins.finance.store import connect

from .conftest import DATA, FILINGS

FINANCEBENCH = DATA / "financebench"


def _texts(path: Path) -> list[str]:
    if not path.is_file():
        pytest.skip(f"{path.resolve()} not found (../shared/data is not present)")
    doc = pypdfium2.PdfDocument(path)
    try:
        return page_texts(doc)
    finally:
        doc.close()


@pytest.fixture(scope="module")
def mgm() -> list[str]:
    return _texts(FINANCEBENCH / "MGMRESORTS_2020_10K.pdf")


def test_guarantor_summary_is_a_candidate_by_title_but_set_aside_with_its_reason(mgm):
    # p.51 would qualify by title alone: that is what the exclusion is for
    assert statement_kind(mgm[50]) == "balance_sheet"
    assert "guarantor" in exclusion(mgm[50])
    set_aside = [c for c in candidates(mgm) if c.excluded]
    assert [(c.page, c.kind) for c in set_aside] == [(51, "balance_sheet")] and set_aside[0].score == 0.0


def test_consolidated_statements_chosen_over_the_guarantor_pages(mgm):
    found = locate(mgm)
    balance = found["balance_sheet"]
    assert balance.pages == [64]  # CONSOLIDATED BALANCE SHEETS, whose total assets line has no label
    assert [c.page for c in balance.excluded] == [51] and "p.51 (guarantor" in balance.reason
    assert found["income_statement"].pages == [65] and found["cash_flow"].pages == [67]
    assert all(found[k].confidence >= CONFIDENT for k in found), {k: (v.confidence, v.reason) for k, v in found.items()}


def test_obligor_group_income_statement_set_aside_in_a_10q():
    texts = _texts(FINANCEBENCH / "AMCOR_2023Q2_10Q.pdf")
    found = locate(texts)
    assert found["income_statement"].pages == [5]
    assert [(c.page, "obligor" in c.excluded) for c in found["income_statement"].excluded] == [(45, True)]
    assert {k: v.pages for k, v in found.items()} == {"balance_sheet": [7], "income_statement": [5], "cash_flow": [8]}


def test_runner_up_and_score_parts_recorded_on_a_10k():
    texts = _texts(FILINGS / "3M_2018_10K.pdf")
    found = locate(texts)
    income = found["income_statement"]
    assert income.pages == [56] and income.runner_up is not None and income.runner_up.page != 56
    assert income.score > income.runner_up.score and f"runner-up p.{income.runner_up.page}" in income.reason
    assert totals_that_add_up(texts[55]) >= 1  # "Total operating expenses" = the four lines above it


def test_a_two_page_balance_sheet_keeps_its_liabilities_page():
    # American Water's balance sheet repeats its title on p.85 (liabilities) with no "continued"
    found = locate(_texts(FINANCEBENCH / "AMERICANWATERWORKS_2021_10K.pdf"))
    assert found["balance_sheet"].pages == [84, 85]


def test_ingest_stores_locations_and_warns_when_a_statement_is_missing(tmp_path):
    path = FINANCEBENCH / "MGMRESORTS_2023Q2_10Q.pdf"
    if not path.is_file():
        pytest.skip(f"{path.resolve()} not found")
    con = connect(tmp_path / "f.duckdb")
    status = ingest(con, [path], tmp_path / "cache")[0]
    rows = {r[0]: r[1:] for r in con.execute("SELECT statement, pages, confidence, excluded FROM statement_locations").fetchall()}
    assert set(rows) == {"balance_sheet", "income_statement", "cash_flow"}
    assert rows["income_statement"][0] == "4" and rows["cash_flow"][0] == "6"
    # its balance sheet (p.3) has no "Total assets" label: located, with low confidence, and the
    # p.36 guarantor summary set aside
    assert rows["balance_sheet"][0] == "3" and rows["balance_sheet"][1] < CONFIDENT and "p.36: guarantor" in rows["balance_sheet"][2]
    # and it lost its totals (they are printed on unlabelled lines): damaged, with the low confidence said too
    assert status.status == "ok_with_warnings" and "DAMAGED: balance_sheet on p.3" in status.error, status
    assert "no total assets" in status.error and "located with low confidence" in status.error, status
    assert con.execute("SELECT status, error FROM documents").fetchone() == (status.status, status.error)
