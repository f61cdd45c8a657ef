"""Every table of a filing as values: real FinanceBench pages (segment, geography, non-GAAP tables)."""

from __future__ import annotations

import json
import shutil

import pdfplumber
import pytest

from core.tools import ToolContext
from plugins.finance import tools
from plugins.finance.episode import EpisodeFiles
from plugins.finance.extract import open_document, page_texts
from plugins.finance.ingest import ingest
from plugins.finance.model import create_views
from plugins.finance.store import connect
from plugins.finance.tables import classify, column_period, parse_table_page, table_pages
from tests.plugins.finance.conftest import DATA, PDFS, need_data

BENCH = DATA / "financebench"
JNJ = "JOHNSON_JOHNSON_2022Q4_EARNINGS"
AMCOR = "AMCOR_2023Q4_EARNINGS"
AMCOR_8K = "AMCOR_2022_8K_dated-2022-07-01"


def need_bench() -> None:
    if not (BENCH / "questions.jsonl").is_file():
        pytest.skip(f"FinanceBench filings not found at {BENCH.resolve()} (../shared/data is not present)")


@pytest.fixture(scope="module")
def releases_db(tmp_path_factory, finance_cache):
    """Two earnings releases and an 8-K of FinanceBench, ingested once for the module."""
    need_bench()
    path = tmp_path_factory.mktemp("tables") / "filings.duckdb"
    con = connect(path)
    statuses = ingest(con, [BENCH / f"{n}.pdf" for n in (JNJ, AMCOR, AMCOR_8K)], finance_cache)
    create_views(con)
    con.close()
    return path, {s.doc_name: s for s in statuses}


@pytest.fixture
def db(releases_db):
    con = connect(releases_db[0], read_only=True)
    yield con
    con.close()


def _fact(con, doc, page, label, column_like, title_like="%"):
    rows = con.execute("SELECT fact_id, statement, value, unit, column_label, period_label, raw_value, page, x0, top, x1, bottom, sha256 "
                       "FROM facts WHERE doc_name = ? AND page = ? AND label = ? AND column_label LIKE ? AND title LIKE ?",
                       [doc, page, label, column_like, title_like]).fetchall()
    assert len(rows) == 1, rows
    return rows[0]


def test_geography_and_segment_tables_of_an_earnings_release_become_facts(db):
    # FinanceBench financebench_id_01484: "US sales increased 3.0% vs international sales decline of 0.6%" (page 2)
    fact_id, statement, value, unit, column, period, raw, page, x0, top, x1, bottom, sha = _fact(
        db, JNJ, 2, "International", "% Change Reported", "%Full Year%")
    assert (statement, value, unit, raw, page, column, period) == ("table:geography", -0.6, "percent", "(0.6)%", 2, "% Change Reported", None)
    assert fact_id.startswith(f"{JNJ}:p2:l") and x0 < x1 and top < bottom and len(sha) == 64
    sales = db.execute("SELECT value, unit, period_label FROM facts WHERE doc_name = ? AND page = 2 AND label = 'International' "
                       "AND raw_value = '46,363'", [JNJ]).fetchone()
    assert sales == (46_363e6, "USD", "FY2022")
    pharma = db.execute("SELECT statement, value, column_label FROM facts WHERE doc_name = ? AND page = 2 AND label = 'Pharmaceutical4' "
                        "AND raw_value = '13,163'", [JNJ]).fetchone()
    assert pharma == ("table:segment", 13_163e6, "2022")
    us = db.execute("SELECT table_class, value, fact_id FROM table_values WHERE doc_name = ? AND page = 2 AND label = 'U.S.' "
                    "AND raw_value = '$48,580'", [JNJ]).fetchone()
    assert us[:2] == ("geography", 48_580e6) and us[2].startswith(f"{JNJ}:p2:")
    assert db.execute("SELECT count(*) FROM concept_values WHERE statement LIKE 'table:%'").fetchone()[0] == 0


def test_a_non_gaap_reconciliation_value_is_a_fact_with_its_column(db):
    # FinanceBench financebench_id_01928: "AMCOR's Adj. EBITDA was $2,018mn in FY 2023" (page 12)
    fact_id, statement, value, unit, column, period, raw, page, *_ = _fact(
        db, AMCOR, 12, "Adjusted EBITDA, EBIT, Net income and EPS", "%2023 EBITDA")
    assert (statement, value, unit, raw, period, page) == ("table:non_gaap", 2_018e6, "USD", "2,018", "FY2023", 12)
    assert fact_id.startswith(f"{AMCOR}:p12:l") and fact_id.endswith(":c4")
    assert column == "Twelve Months Ended June 30, 2023 EBITDA"
    eps = db.execute("SELECT value, unit, scale_word FROM facts WHERE doc_name = ? AND page = 12 AND raw_value = '73.3'", [AMCOR]).fetchone()
    assert eps == (pytest.approx(0.733), "USD/share", "cents")  # "EPS (Diluted US cents)"


def test_answer_question_accepts_a_table_fact(releases_db, tmp_path):
    context = ToolContext(workspace=tmp_path / "ws", sandbox=None, scratch=tmp_path / "scratch")
    context.workspace.mkdir()
    files = EpisodeFiles(context)
    files.root.mkdir(parents=True)
    shutil.copy(releases_db[0], files.db)
    files.write_json(files.task, {"filings": [], "ticker": None})
    questions = {json.loads(line)["financebench_id"]: json.loads(line) for line in (BENCH / "questions.jsonl").open()}
    question = questions["financebench_id_01928"]
    files.write_json(files.questions, [{"qid": "q1", "doc_name": AMCOR, "question": question["question"]},
                                       {"qid": "q2", "doc_name": JNJ, "question": questions["financebench_id_01484"]["question"]}])
    table = tools.get_table({"document": AMCOR, "page": 12}, context)
    assert not table.is_error and "[table:non_gaap]" in table.output
    line = next(ln for ln in table.output.splitlines() if ln.split("  ")[1:2] == ["Adjusted EBITDA, EBIT, Net income and EPS"])
    fact = f"{AMCOR}:p12:{line.split()[0]}:c4"
    answer = tools.answer_question({"question_id": "q1", "document": AMCOR, "page": 12, "value": 2018, "unit": "USD",
                                    "scale": "millions", "formula": f"{{{fact}}}"}, context)
    assert not answer.is_error, answer.output
    assert answer.data["computed"] == 2_018e6
    wrong = tools.answer_question({"question_id": "q1", "document": AMCOR, "page": 12, "value": 2117, "unit": "USD",
                                   "scale": "millions", "formula": f"{{{fact}}}"}, context)
    assert wrong.is_error and "the formula gives" in wrong.output
    with connect(releases_db[0], read_only=True) as con:  # "US sales increased 3.0%": the geography table's U.S. row
        us = con.execute("SELECT fact_id FROM table_values WHERE doc_name = ? AND page = 2 AND label = 'U.S.' AND raw_value = '3.0%' "
                         "AND title LIKE '%Full Year%'", [JNJ]).fetchone()[0]
    growth = tools.answer_question({"question_id": "q2", "document": JNJ, "page": 2, "value": 3.0, "unit": "percent",
                                    "formula": f"{{{us}}}", "text": "U.S. sales grew 3.0% in FY2022"}, context)
    assert not growth.is_error and growth.data["computed"] == 3.0
    assert "values on this page are stored facts" in tools.read_page({"document": AMCOR, "page": 12, "max_chars": 100}, context).output
    assert "get_table" in tools.search_filing({"query": "Adjusted EBITDA", "document": AMCOR}, context).output


def test_a_page_without_a_table_adds_no_facts(db):
    prose = BENCH / f"{AMCOR_8K}.pdf"
    doc = open_document(prose)
    texts = page_texts(doc)
    doc.close()
    assert table_pages(texts) == []
    with pdfplumber.open(prose) as pdf:  # the parser itself finds nothing on the indenture page either
        assert parse_table_page(pdf.pages[1], 2, texts[1]) == []
    assert db.execute("SELECT count(*) FROM facts WHERE doc_name = ?", [AMCOR_8K]).fetchone()[0] == 0
    status = db.execute("SELECT status FROM documents WHERE doc_name = ?", [AMCOR_8K]).fetchone()[0]
    assert status == "no_statements"


def test_reingestion_comes_from_the_cache_with_the_table_values(releases_db, finance_cache, tmp_path):
    first = releases_db[1]
    con = connect(tmp_path / "again.duckdb")
    again = ingest(con, [BENCH / f"{JNJ}.pdf"], finance_cache)[0]
    assert again.from_cache and again.facts == first[JNJ].facts
    assert con.execute("SELECT count(*) FROM facts WHERE statement LIKE 'table:%'").fetchone()[0] > 100
    con.close()


def test_odd_pdfs_go_through_the_table_pass_with_a_clear_status(tmp_path, finance_cache):
    # a malformed file, a ledger with numbers run into text, a Chinese report: readable, so the
    # table pass runs on them; none may end in "the parser failed"
    need_data()
    con = connect(tmp_path / "odd.duckdb")
    names = ["malformed-from-issue-932", "issue-912", "issue-67-example"]
    statuses = ingest(con, [PDFS / f"{n}.pdf" for n in names], finance_cache)
    for status in statuses:
        assert status.status in ("ok", "no_statements", "damaged"), status
        assert "parser failed" not in status.error
        assert status.status == "ok" or "no income statement" in status.error or "the PDF is damaged" in status.error
    assert statuses[0].status == "damaged"  # its page box is inverted (test_finance_bad_input)
    stored = con.execute("SELECT count(*) FROM facts WHERE doc_name = 'malformed-from-issue-932'").fetchone()[0]
    assert stored == statuses[0].facts
    con.close()


def test_column_periods_and_classes_follow_the_stated_rules():
    twelve = column_period("Twelve Months Ended June 30, 2023 EBITDA")
    assert (twelve.label, twelve.months, str(twelve.period_end)) == ("FY2023", 12, "2023-06-30")
    assert column_period("Q4 2022").label == "Q4 2022"  # a quarter the header names without a date
    assert column_period("December 31, 2022").label == "2022-12-31"
    assert column_period("% Change Reported") is None
    assert classify("SEGMENT SALES RESULTS", "2022 2021", ["Pharmaceutical", "MedTech"], "") == "segment"
    assert classify("", "2022 2021", ["U.S.", "International", "Worldwide"], "") == "geography"
    assert classify("", "2023", ["Adjusted EBITDA", "Interest paid"], "") == "non_gaap"
    assert classify("", "2023 2022", ["Balance at January 1", "Additions"], "") == "reconciliation"
    assert classify("", "2023 2022", ["Leases", "Other"], "Notes to Consolidated Financial Statements\n") == "note"
    assert classify("", "2023 2022", ["Leases", "Other"], "", after_statements=True) == "note"
    assert classify("", "2023 2022", ["Foreign currency translation", "International tax"], "") == "other"
    assert classify("", "2023 2022", ["Leases", "Other"], "Item 7. Management's Discussion and Analysis") == "mdna"
    assert classify("", "2023 2022", ["Leases", "Other"], "") == "other"
