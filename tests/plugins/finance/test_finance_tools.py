"""The finance tools called directly on a copy of the session's filings database."""

from __future__ import annotations

import json

import pytest

from plugins.finance import tools
from plugins.finance.episode import EpisodeFiles
from plugins.finance.store import connect
from tests.plugins.finance.conftest import episode_context


@pytest.fixture
def ctx(filings_db, tmp_path):
    """A tool context whose scratch holds the twelve filings and one question."""
    context = episode_context(filings_db, tmp_path)
    files = EpisodeFiles(context)
    files.write_json(files.questions, [{"qid": "q1", "doc_name": "3M_2018_10K", "question": "FY2018 capex?"}])
    return context


def test_sql_limits_rows_and_time(ctx, monkeypatch):
    result = tools.sql({"query": "SELECT fact_id FROM facts ORDER BY fact_id", "max_rows": 3}, ctx)
    assert not result.is_error and result.data["rows"] == 3 and result.data["truncated"]
    monkeypatch.setattr(tools, "SQL_TIME_LIMIT_S", 0.3)
    slow = tools.sql({"query": "SELECT count(*) FROM range(100000000000) a"}, ctx)
    assert slow.is_error and "was stopped" in slow.output


def test_statement_search_and_pages(ctx):
    statement = tools.get_statement({"document": "3M_2018_10K", "statement": "cash_flow"}, ctx)
    assert "p60:l24  Purchases of property, plant and equipment (PP&E) [capital_expenditure]  c0=(1,577)" in statement.output
    assert statement.data["periods"] == ["FY2018", "FY2017", "FY2016"]
    found = tools.search_filing({"query": "Yardbird acquired", "document": "BESTBUY_2023_10K"}, ctx)
    assert ["BESTBUY_2023_10K", 51] in found.data["pages"]
    assert found.output.startswith("search_filing 'Yardbird acquired' in BESTBUY_2023_10K:")
    page = tools.read_page({"document": "NIKE_2021_10K", "page": 61, "max_chars": 200}, ctx)
    assert page.output.startswith("NIKE_2021_10K p.61:") and "more characters" in page.output
    past = tools.read_page({"document": "NIKE_2021_10K", "page": 999}, ctx)
    assert past.is_error and "pages 1-109" in past.output


def test_answers_are_checked_and_recorded(ctx):
    unknown = tools.answer_question({"question_id": "q9", "document": "3M_2018_10K", "page": 60, "text": "x"}, ctx)
    assert unknown.is_error and "questions: q1" in unknown.output
    bad_fact = tools.answer_question({"question_id": "q1", "document": "3M_2018_10K", "page": 60, "value": 1, "unit": "USD",
                                      "formula": "{3M_2018_10K:p60:l99:c0}"}, ctx)
    assert bad_fact.is_error and "unknown fact ids" in bad_fact.output
    sneaky = tools.answer_question({"question_id": "q1", "document": "3M_2018_10K", "page": 60, "value": 1, "unit": "USD",
                                    "formula": "__import__('os').system('true')"}, ctx)
    assert sneaky.is_error and "only numbers" in sneaky.output
    ok = tools.answer_question({"question_id": "q1", "document": "3M_2018_10K", "page": 60, "value": 1.577, "unit": "USD",
                                "scale": "billions", "formula": "-{3M_2018_10K:p60:l24:c0}"}, ctx)
    assert not ok.is_error and ok.data["computed"] == 1_577_000_000
    saved = json.loads(EpisodeFiles(ctx).answers.read_text())
    assert saved["q1"]["fact_ids"] == ["3M_2018_10K:p60:l24:c0"] and saved["q1"]["page"] == 60


def test_metrics_and_documents(ctx):
    metrics = tools.get_metrics({"document": "GENERALMILLS_2020_10K"}, ctx)
    assert "current_ratio" in metrics.output and metrics.data["years"] == 3
    listing = tools.list_documents({}, ctx)
    assert listing.data["documents"] == 12 and "3M_2018_10K: 160 pages; income_statement p.56" in listing.output
    line = next(ln for ln in listing.output.splitlines() if ln.startswith("3M_2018_10K"))
    assert "location confidence: balance_sheet 1.00" in line and "income_statement 0.9" in line and "WARNING" not in line, line
    assert listing.data["warnings"] == [ln.split(":")[0] for ln in listing.output.splitlines() if "WARNING" in ln]


def test_search_ranks_pages_by_relevance_not_page_order(ctx):
    """BM25: the pages that are about the words come first, word forms match, and the hit says
    which query words it has; a query of stop words says so instead of returning nothing silently."""
    from plugins.finance.search import rank_pages

    pages = [("D", 1, "revenue revenue cost"), ("D", 2, "segment revenues by segment: segment A, segment B"),
             ("D", 3, "nothing here"), ("D", 4, "the segment")]  # fmt: skip
    hits = rank_pages(pages, "segment revenue", 10)
    assert hits[0].page == 2  # page 1 says "revenue" twice, but page 2 has both words, "revenues" stemmed
    assert hits[0].matched == ["segment", "revenue"] and 3 not in [h.page for h in hits]
    found = tools.search_filing({"query": "Yardbird acquisition", "document": "BESTBUY_2023_10K", "max_results": 5}, ctx)
    assert found.data["pages"][0] == ["BESTBUY_2023_10K", 51], found.output  # the page about the acquisition
    assert "Yardbird" in found.output.splitlines()[1]
    empty = tools.search_filing({"query": "the of and"}, ctx)
    assert not empty.is_error and "only stop words" in empty.output


def test_write_report_takes_a_narrative_only_when_every_number_is_a_cited_figure(ctx):
    from plugins.finance.report_tool import report_traceability, write_report
    from tests.plugins.finance.conftest import FILINGS

    files = EpisodeFiles(ctx)
    files.write_json(files.task, {"filings": [str(FILINGS / "3M_2018_10K.pdf")], "ticker": "MMM"})
    report = ctx.workspace / "report" / "report.md"
    made_up = write_report({"title": "3M", "narrative": "Revenue grew 3.5% in FY2018 to $32.8 billion."}, ctx)
    assert made_up.is_error and "3.5%" in made_up.output and "32.8" in made_up.output and "[F12]" in made_up.output
    assert "figures.json" in made_up.output and not report.exists()  # nothing written

    plain = write_report({"title": "3M"}, ctx)
    assert not plain.is_error and "figures.json" in plain.output and "Main figures:" in plain.output
    first = plain.data["citable"][0]
    assert first.startswith("3M_2018_10K Revenue FY2018 32,765 [F") and first in plain.output
    cited = first.split(" FY2018 ")[1]  # "32,765 [F3]"
    figures = plain.data["figures"]

    heading = write_report({"title": "3M", "narrative": f"Revenue was {cited}.\n\n## Sources\n\n| a | 1 |"}, ctx)
    assert heading.is_error and "paragraphs only" in heading.output
    wrong_ref = write_report({"title": "3M", "narrative": f"Revenue was {cited.replace('32,765', '32,766')}."}, ctx)
    assert wrong_ref.is_error and "32,766 [F" in wrong_ref.output

    told = write_report({"title": "3M", "narrative": f"In FY2018 (its 10-K) 3M's revenue was {cited}, read from the income statement."}, ctx)
    assert not told.is_error and told.data["figures"] == figures  # a narrative adds no figure, only cites them
    text = report.read_text()
    assert f"## Narrative\n\nIn FY2018 (its 10-K) 3M's revenue was {cited}, read from the income statement." in text
    con = connect(files.db, read_only=True)
    try:
        share, detail = report_traceability(con, ctx.workspace)
    finally:
        con.close()
    assert share == 1.0 and detail["figures"] == figures and not detail["numbers_without_figure"]
    # a number slipped into the narrative after the tool checked it scores the report 0
    report.write_text(text.replace("read from the income statement.", "up 3.5% on FY2017."))
    con = connect(files.db, read_only=True)
    try:
        share, detail = report_traceability(con, ctx.workspace)
    finally:
        con.close()
    assert share == 0.0 and detail["numbers_without_figure"] == ["3.5%"] and "cite no figure" in detail["why"]


def test_write_report_refuses_numbers_written_any_way_and_says_where_and_how_to_cite(ctx):
    """RH26 through the tool: finance-qa/2 accepted "999_000 million" (a word with _) and "ninety-five percent"
    (a number in words); the refusal names each number, its line and column, and how to cite a figure."""
    from plugins.finance.report_tool import write_report
    from tests.plugins.finance.conftest import FILINGS

    files = EpisodeFiles(ctx)
    files.write_json(files.task, {"filings": [str(FILINGS / "3M_2018_10K.pdf")], "ticker": "MMM"})
    cited = write_report({"title": "3M"}, ctx).data["citable"][0].split(" FY2018 ")[1]  # "32,765 [F3]"
    report = ctx.workspace / "report" / "report.md"
    before = report.read_text()
    attack = f"Revenue was {cited}.\nMargins reached ninety-five percent and 999_000 million came from twice the stores."
    refused = write_report({"title": "3M", "narrative": attack}, ctx)
    assert refused.is_error and "3 number(s)" in refused.output, refused.output
    assert '"ninety-five percent" at line 2, column 17: no figure reference' in refused.output
    assert '"999_000 million" at line 2, column 41' in refused.output and '"twice" at line 2' in refused.output
    assert "9.6% [F12]" in refused.output and "figures.json" in refused.output
    assert report.read_text() == before  # nothing written
    names = (f"In FY2018 (3M_2018_10K, its 10-K, page 56, Note 7) 3M's revenue was {cited}; in Q4 2018 the third "
             "segment grew, one of several.")
    told = write_report({"title": "3M", "narrative": names}, ctx)
    assert not told.is_error, told.output
