"""Reports: the committed example traces every figure to the real filing; generation, tampering, bad questions."""

from __future__ import annotations

import json
import re

import pytest

from plugins.finance.formula import FormulaError
from plugins.finance.report import FinanceReport, verify_figures
from plugins.finance.report_tool import untraced_numbers
from tests.plugins.finance.conftest import FILINGS, ROOT

EXAMPLE = ROOT / "examples" / "finance" / "report"


def test_every_figure_of_the_committed_report_traces_to_a_stored_value(db):
    manifest = json.loads((EXAMPLE / "figures.json").read_text())
    markdown = (EXAMPLE / "report.md").read_text()
    traced, problems = verify_figures(db, manifest)
    assert problems == [] and traced == len(manifest) >= 60
    assert untraced_numbers(markdown, manifest) == []
    refs = set(re.findall(r"\[F(\d+)\]", markdown))
    assert refs == {str(f["ref"]) for f in manifest}  # every figure printed, every printed figure listed
    # the Sources table names each fact with the page and the number as printed there
    for fact_id, page, raw in re.findall(r"\| `([^`]+)` \| [^|]+ \| (\d+) \|[^\n]*\| `([^`]+)` at", markdown):
        row = db.execute("SELECT page, raw_value FROM facts WHERE fact_id = ?", [fact_id]).fetchone()
        assert row == (int(page), raw), fact_id
    html = (EXAMPLE / "report.html").read_text()
    assert html.count("[F") == markdown.count("[F") and '<img src="charts/3M_2018_10K.png"' in html
    assert (EXAMPLE / "charts" / "3M_2018_10K.png").stat().st_size > 5000


def test_a_changed_figure_is_caught(db):
    manifest = json.loads((EXAMPLE / "figures.json").read_text())
    markdown = (EXAMPLE / "report.md").read_text()
    first = manifest[0]
    tampered = markdown.replace(f"{first['display']} [F{first['ref']}]", f"31,000 [F{first['ref']}]", 1)
    assert untraced_numbers(tampered, manifest) == [f"31,000 [F{first['ref']}]"]
    assert untraced_numbers(tampered.replace(" [F2]", "", 1), manifest)  # a bare number without a figure
    manifest[1] = {**manifest[1], "display": "99,999"}
    assert verify_figures(db, manifest)[1][0].startswith("F2: shows 99,999 but the stored facts give")


def test_generate_writes_markdown_html_charts_and_answers(filings_db, tmp_path):
    questions = [{"question": "FY2017 revenue growth", "document": "AMAZON_2017_10K",
                  "formula": "100 * ({revenue@FY2017} / {revenue@FY2016} - 1)", "unit": "percent", "decimals": 1},
                 {"question": "FY2016 COGS", "document": "MICROSOFT_2016_10K", "formula": "{cost_of_revenue@FY2016}",
                  "unit": "USD", "scale": "millions"}]
    result = FinanceReport(filings=[FILINGS / "AMAZON_2017_10K.pdf", FILINGS / "MICROSOFT_2016_10K.pdf"], ticker=None,
                           questions=questions, db=filings_db, as_of="2018-03-01").generate(tmp_path / "out")
    text = result.markdown.read_text()
    assert "| FY2017 revenue growth | AMAZON_2017_10K | 30.8 [F" in text and "| FY2016 COGS | MICROSOFT_2016_10K | 32,780 [F" in text
    assert result.checks_status == "passed" and len(result.charts) == 2
    assert "<table>" in result.html.read_text() and "## Sources" in text


def test_a_question_about_a_concept_that_was_not_extracted_says_which(filings_db, tmp_path):
    bad = [{"question": "?", "document": "3M_2018_10K", "formula": "{revenue@FY2030}", "unit": "USD"}]
    with pytest.raises(FormulaError, match="3M_2018_10K has no stored revenue for FY2030"):
        FinanceReport(filings=[FILINGS / "3M_2018_10K.pdf"], questions=bad, db=filings_db).generate(tmp_path / "out")


def test_no_report_scores_zero(db, tmp_path):
    from plugins.finance.report_tool import report_traceability

    share, detail = report_traceability(db, tmp_path)
    assert share == 0.0 and "no report was written" in detail["why"]
