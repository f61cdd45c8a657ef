"""Completeness as a verdict, on real filings: a statement that lost its totals is ``damaged``, never ``ok``.

MGM Resorts' 10-Q for 2023 Q2 prints its balance sheet (p.3) with the two grand totals on lines
without a label ("$ 42,905,829 $ 45,692,206" under "Total other assets" and under "Total
stockholders' equity"), so total assets and total liabilities and equity are not stored; its cash
flow (p.6) foots only with "Change in cash and cash equivalents classified as assets held for
sale" (25,938 and (37,232)), a line no identity names.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from plugins.finance.completeness import statement_verdicts
from plugins.finance.ingest import ingest
from plugins.finance.store import connect

from .conftest import DATA, FILINGS, episode_context, need_data

FINANCEBENCH = DATA / "financebench"


@pytest.fixture(scope="module")
def ingested(tmp_path_factory, finance_cache):
    """MGM's 10-Q (a balance sheet without its totals) and two complete filings, ingested for real."""
    need_data()
    paths = [FINANCEBENCH / "MGMRESORTS_2023Q2_10Q.pdf", FILINGS / "ULTABEAUTY_2023Q4_EARNINGS.pdf", FILINGS / "BESTBUY_2024Q2_10Q.pdf"]
    if not all(p.is_file() for p in paths):
        pytest.skip(f"filings not found: {[str(p) for p in paths if not p.is_file()]}")
    path = tmp_path_factory.mktemp("completeness") / "filings.duckdb"
    con = connect(path)
    statuses = {s.doc_name: s for s in ingest(con, paths, finance_cache)}
    yield con, statuses, path
    con.close()


def _verdicts(con, doc: str) -> dict[str, tuple[str, str]]:
    return {r[0]: (r[1], r[2]) for r in con.execute(
        "SELECT statement, status, problem FROM statement_locations WHERE doc_name = ?", [doc]).fetchall()}


def test_balance_sheet_without_totals_is_damaged_with_page_and_what(ingested):
    con, statuses, _ = ingested
    status, problem = _verdicts(con, "MGMRESORTS_2023Q2_10Q")["balance_sheet"]
    assert status == "damaged"
    assert problem.startswith("balance_sheet on p.3 is damaged") and "no total assets" in problem
    # the document is never plain ok, and its warning (what list_documents and the task prompt show) says why
    doc = statuses["MGMRESORTS_2023Q2_10Q"]
    assert doc.status == "ok_with_warnings"
    assert "DAMAGED: balance_sheet on p.3" in doc.error and "no total assets" in doc.error
    assert con.execute("SELECT error FROM documents WHERE doc_name = 'MGMRESORTS_2023Q2_10Q'").fetchone()[0] == doc.error


def test_a_line_no_identity_names_does_not_make_a_statement_damaged(ingested):
    con, _, _ = ingested
    # net change = operating + investing + financing + FX is off by the held-for-sale line, which is printed
    assert _verdicts(con, "MGMRESORTS_2023Q2_10Q")["cash_flow"] == ("ok", "")
    assert _verdicts(con, "MGMRESORTS_2023Q2_10Q")["income_statement"] == ("ok", "")


def test_complete_filings_stay_ok(ingested):
    con, statuses, _ = ingested
    for doc in ("ULTABEAUTY_2023Q4_EARNINGS", "BESTBUY_2024Q2_10Q"):
        assert statuses[doc].status == "ok", statuses[doc].error
        assert _verdicts(con, doc) == {k: ("ok", "") for k in ("balance_sheet", "income_statement", "cash_flow")}


def test_totals_that_do_not_foot_are_damaged(ingested, tmp_path):
    """Total assets changed in the stored facts (as a misread digit would) makes the balance sheet not foot."""
    con, _, _ = ingested
    from plugins.finance.checks import run_checks

    con.execute("CREATE TEMP TABLE saved AS SELECT * FROM facts WHERE doc_name = 'BESTBUY_2024Q2_10Q'")
    try:
        con.execute("UPDATE facts SET value = value + 7e8, normalised_value = normalised_value + 7e8 "
                    "WHERE doc_name = 'BESTBUY_2024Q2_10Q' AND concept = 'total_assets' AND period_label = '2023-07-29'")
        located = {"balance_sheet": "3", "income_statement": "4", "cash_flow": "6"}
        verdicts = {v.statement: v for v in statement_verdicts(con, "BESTBUY_2024Q2_10Q", located,
                                                                run_checks(con, ["BESTBUY_2024Q2_10Q"]).results)}
        assert verdicts["balance_sheet"].status == "damaged"
        assert "p.3" in verdicts["balance_sheet"].problem and "does not foot for 2023-07-29" in verdicts["balance_sheet"].problem
        assert "off by 700.0 $m" in verdicts["balance_sheet"].problem
        assert verdicts["income_statement"].status == verdicts["cash_flow"].status == "ok"
    finally:
        con.execute("DELETE FROM facts WHERE doc_name = 'BESTBUY_2024Q2_10Q'")
        con.execute("INSERT INTO facts SELECT * FROM saved")
        con.execute("DROP TABLE saved")


def test_located_statement_with_no_values_is_damaged(ingested):
    con, _, _ = ingested
    verdicts = {v.statement: v for v in statement_verdicts(con, "NO_SUCH_DOC", {"balance_sheet": "12"}, [])}
    assert verdicts["balance_sheet"].status == "damaged" and "p.12" in verdicts["balance_sheet"].problem
    assert verdicts["cash_flow"].status == "not_located"


def test_an_older_database_gains_the_verdict_columns(tmp_path: Path):
    import duckdb

    old = tmp_path / "old.duckdb"
    con = duckdb.connect(str(old))
    con.execute("CREATE TABLE statement_locations (doc_name VARCHAR, statement VARCHAR, pages VARCHAR, score DOUBLE, "
                "confidence DOUBLE, runner_up VARCHAR, reason VARCHAR, excluded VARCHAR)")
    con.close()
    con = connect(old)
    columns = [r[1] for r in con.execute("PRAGMA table_info('statement_locations')").fetchall()]
    con.close()
    assert columns[-2:] == ["status", "problem"]


def test_list_documents_shows_the_damaged_statement(ingested, tmp_path):

    from plugins.finance import tools

    con, _, path = ingested
    con.execute("CHECKPOINT")
    context = episode_context(path, tmp_path)
    listing = tools.list_documents({}, context)
    lines = [ln for ln in listing.output.splitlines() if ln.startswith("MGMRESORTS_2023Q2_10Q")]
    assert len(lines) == 1, listing.output
    line = lines[0]
    assert "WARNING: DAMAGED: balance_sheet on p.3 is damaged: no total assets" in line, line
    assert "MGMRESORTS_2023Q2_10Q" in listing.data["warnings"] and "BESTBUY_2024Q2_10Q" not in listing.data["warnings"]
