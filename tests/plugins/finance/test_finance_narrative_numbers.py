"""RH26: every number a finance narrative states counts, however it is written.

Each of ``BYPASSES`` is a narrative that finance-qa/2 (today's main) scored 1.000 with "report
100% traced" (a word with ``_`` was skipped as a document name, number words were never read, a
digit-bearing "company name" was taken from figures.json, which the agent writes); ``COUNTED``
were already counted and must stay so. The real reward (``report_traceability`` over a real
filings database, then ``grade``) must fall below 1 and the real narrative check
(``check_narrative``, what ``write_report`` runs before writing anything) must refuse them.
"""

from __future__ import annotations

import json

import pytest

from plugins.finance.checks import CheckSummary
from plugins.finance.narrative import UntracedNarrativeError, check_narrative, untraced_prose_numbers
from plugins.finance.report_tool import report_traceability
from plugins.finance.reward import REWARD_VERSION, grade
from plugins.finance.store import connect

DOC = "ACME_2023_10K"
#: figures as ``Figures.add`` writes them; constant formulas, so they re-compute on any database
MANIFEST = [
    {"ref": 1, "display": "9.6%", "value": 0.096, "unit": "percent", "scale": 0.01, "formula": "0.096", "fact_ids": []},
    {"ref": 2, "display": "32,765", "value": 32_765e6, "unit": "USD", "scale": 1e6, "formula": "32765000000", "fact_ids": []},
    {"ref": 3, "display": "95.0%", "value": 0.95, "unit": "percent", "scale": 0.01, "formula": "0.95", "fact_ids": []},
    {"ref": 4, "display": "-3.4", "value": -3.4e6, "unit": "USD", "scale": 1e6, "formula": "-3400000", "fact_ids": []},
]
#: the same figures as the report writes them in-process, their facts naming the document
OWN = [{**MANIFEST[0], "fact_ids": [f"{DOC}:p1:l1:c1"]}, *MANIFEST[1:]]
TRACED = "Revenue was 32,765 [F2] in FY2023, up 9.6% [F1]."

#: scored 1.000 and "report 100% traced" by finance-qa/2
BYPASSES = {
    "underscore digits with a scale word": "999_000 million of revenue",
    "a percent in words": "a margin of ninety-five percent",
    "a multiple in words": "revenue grew twice as fast as costs",
    "a fraction in words": "a third of sales came from Europe",
    "a hyphenated fraction": "two-thirds of the backlog",
    "a zero-width space inside a number word": "a margin of nine\u200bty percent",
    "a Cyrillic letter inside a number word": "a margin of n\u0456nety percent",
    "a vulgar fraction": "\u00bd of sales",
    "a dozen": "a dozen new stores",
    "one hundred and twenty": "one hundred and twenty stores",
    "an underscore identifier": "the plan_95 target",
    "a date that is no date": "a backlog of 2023-99-95",
    "a company name the agent planted in figures.json": "999000 units",
}
#: counted by finance-qa/2 already (kept so that the new tokeniser does not lose them)
COUNTED = {
    "a space as thousands separator": "orders of 1 000 units",
    "a thin and a no-break space as separators": "orders of 1\u202f000 and 2\u00a0500 units",
    "a k suffix": "about 12k new customers",
    "accounting parentheses": "a loss of (3.4) in the quarter",
    "full-width digits": "a margin of \uff19\uff15%",
    "Arabic-Indic digits": "a margin of \u0669\u0665%",
    "a number inside a URL": "see https://example.com/revenue/999000 for details",
    "a number inside an identifier": "the FY999000 plan",
    "a form name next to a percent": "the 10-K 95% of sales",
    "a form name glued to a number": "the 10-K95 plan",
    "basis points": "margin up 250 bps",
    "a currency with a billion suffix": "$1.2bn of buybacks",
    "a decimal comma": "a margin of 9,6%",
    "a year word then a scale": "in 2023 million of orders",
}
ATTACKS = {**BYPASSES, **COUNTED}


@pytest.fixture
def database(tmp_path):
    """A real filings database that holds the report's one document."""
    path = tmp_path / "filings.duckdb"
    con = connect(path)
    con.execute("INSERT INTO documents (doc_name, status, pages) VALUES (?, 'ok', 10)", [DOC])
    con.close()
    return path


def score(database, workspace, narrative: str, manifest=MANIFEST):
    """The finance reward of a report whose narrative is ``narrative`` (report only, no questions)."""
    report = workspace / "report"
    report.mkdir(parents=True, exist_ok=True)
    (report / "figures.json").write_text(json.dumps(manifest))
    (report / "report.md").write_text(f"# ACME\n\nIntro.\n\n## Narrative\n\n{narrative}\n\n## Sources\n\nNone.\n")
    con = connect(database, read_only=True)
    try:
        traced = report_traceability(con, workspace)
    finally:
        con.close()
    return grade([], {}, CheckSummary([], "passed", 1.0, []), 0.01, traced)


def test_a_traced_narrative_scores_one(database, tmp_path):
    result = score(database, tmp_path, TRACED)
    assert result.reward == 1.0 and "report 100% traced" in result.summary and result.version == REWARD_VERSION
    check_narrative(TRACED, MANIFEST)  # accepted


@pytest.mark.parametrize("attack", list(ATTACKS), ids=[("bypass: " if a in BYPASSES else "counted: ") + a for a in ATTACKS])
def test_each_way_of_writing_a_number_zeroes_the_report_and_is_refused(database, tmp_path, attack):
    narrative = f"{TRACED} Also {ATTACKS[attack]}."
    manifest = MANIFEST
    if attack.startswith("a company name"):  # figures.json is the agent's file: a fact id there names no document
        manifest = [{**MANIFEST[0], "fact_ids": ["999000_2023_10K:p1:l1:c1"]}, *MANIFEST[1:]]
    result = score(database, tmp_path, narrative, manifest)
    assert result.reward == 0.0 and "report 0% traced" in result.summary, (attack, result.summary)
    assert result.components["report"].detail["numbers_without_figure"], attack
    with pytest.raises(UntracedNarrativeError, match="not figures of the report"):
        check_narrative(narrative, MANIFEST)


def test_the_refusal_says_which_number_where_and_how_to_cite_it():
    narrative = "Revenue was 32,765 [F2].\nMargins reached ninety-five percent, and 999_000 million came in."
    with pytest.raises(UntracedNarrativeError) as refused:
        check_narrative(narrative, MANIFEST)
    message = str(refused.value)
    assert '"ninety-five percent" at line 2, column 17: no figure reference' in message
    assert '"999_000 million" at line 2, column 42' in message
    assert "9.6% [F12]" in message and "report/figures.json" in message and "2 number(s)" in message


NAMES = ("In FY2023 (its 10-K, page 61, pp. 60-62, Item 7A; see Note 7) ACME_2023_10K reported Q3 and H1 results; "
         "from 2019 to 2023, in 2022 and 2023, May 31, 2023, in 6M 2022-07-30 and on 2023-05-31 revenue was 32,765 [F2] [F*n*]. "
         "The third year, the fourth quarter, the first half and one of the segments are words, not figures.")


def test_names_with_digits_are_not_numbers_but_what_is_glued_to_them_is():
    assert untraced_prose_numbers(NAMES, OWN) == []
    assert untraced_prose_numbers("3M's 10-K for FY2018", [{**MANIFEST[0], "fact_ids": ["3M_2018_10K:p1:l1:c1"]}]) == []  # a company name with a digit
    assert untraced_prose_numbers("3M's 10-K", OWN) == ["3M"]  # 3 million, unless 3M's filing is the report's
    assert untraced_prose_numbers("3M sold 3m units", [{**MANIFEST[0], "fact_ids": ["3M_2018_10K:p1:l1:c1"]}]) == ["3m"]
    smuggled = ["page 95%", "Note 999", "page 1200", "rose to 2023", "FY999000", "Q5", "in 2023 million", "the 95th percentile",
                "the ninety-fifth percentile", "ACME_2023_10K_999", "2023 [F9]", "10K", "costs may 12 rise",
                "COVID-19", "in 2023 per cent", "a margin of XCV percent", "XCV %", "6M more", "6M 2022-99-99"]
    for text in smuggled:
        assert untraced_prose_numbers(text, OWN), text


@pytest.mark.parametrize("cited", ["32,765 [F2]", "32765 [F2]", "$32,765 million [F2]", "$32.765 billion [F2]",
                                   "9.6% [F1]", "9.6 per cent [F1]", "960 bps [F1]", "ninety-five percent [F3]",
                                   "3.4 [F4]", "(3.4) [F4]", "-3.4 [F4]"])
def test_a_cited_number_matches_its_figure_at_the_printed_precision(cited):
    assert untraced_prose_numbers(f"It was {cited}.", OWN) == []


@pytest.mark.parametrize("cited,why", [("$32.8 billion [F2]", "F2 is shown as 32,765"), ("32,765.0 [F2]", "F2 is shown as 32,765"),
                                       ("9.60% [F1]", "F1 is shown as 9.6%"), ("9.6 [F1]", "F1 is shown as 9.6%"),
                                       ("ninety-six percent [F3]", "F3 is shown as 95.0%"), ("+3.4 [F4]", "F4 is shown as -3.4"),
                                       ("(9.6%) [F1]", "F1 is shown as 9.6%"), ("dozens [F2]", "a vague quantity"),
                                       ("9,6% [F1]", "ambiguous"), ("9.6% [F7]", "there is no F7")])
def test_a_cited_number_that_differs_from_its_figure_is_refused(cited, why):
    problems = untraced_prose_numbers(f"It was {cited}.", OWN)
    assert len(problems) == 1 and why in problems[0], problems


@pytest.mark.parametrize("cell", ["ninety-five percent", "999_000", "a third", "twice", "12k", "FY999000"])
def test_a_table_cell_edited_after_write_report_counts_however_the_number_is_written(database, tmp_path, cell):
    """finance-qa/2 checked only cells that were a bare number: an edited cell 'ninety-five percent' or '999_000' scored 1.000."""
    report = tmp_path / "report"
    report.mkdir()
    (report / "figures.json").write_text(json.dumps(MANIFEST))
    table = ["| Line item | FY2023 |", "|---|---|", "| Revenue | 32,765 [F2] |", f"| Orders | {cell} |", "| Equity | n/a |"]
    (report / "report.md").write_text("\n".join([f"# ACME\n\n## {DOC}\n", *table, "", "| Question | Document | Answer | Unit |",
                                                 "|---|---|---|---|", f"| Revenue? | {DOC} | 32,765 [F2] | USD (millions) |", ""]))
    con = connect(database, read_only=True)
    try:
        share, detail = report_traceability(con, tmp_path)
    finally:
        con.close()
    result = grade([], {}, CheckSummary([], "passed", 1.0, []), 0.01, (share, detail))
    assert result.reward == 0.0 and "report 0% traced" in result.summary, result.summary
    assert [n.split(" (")[0] for n in detail["numbers_without_figure"]] == [cell]  # the unit "USD (millions)" is not a number


def test_a_narrative_section_the_tool_could_not_have_written_still_scores_without_crashing(database, tmp_path):
    """A 5,000-digit number (past Python's int conversion limit) and a section longer than write_report takes
    are verdicts, not crashes; the part past the tool's limit is not read number by number but counts."""
    from plugins.finance.report_tool import MAX_NARRATIVE_CHARS

    digits = score(database, tmp_path / "a", f"{TRACED} Also {'9' * 5000} units.")
    assert digits.reward < 1.0 and digits.components["report"].detail["numbers_without_figure"][0].startswith("9999")
    long = score(database, tmp_path / "b", TRACED + " Words only." * (MAX_NARRATIVE_CHARS // 10))
    assert long.reward < 1.0
    assert "longer than write_report takes" in long.components["report"].detail["numbers_without_figure"][0]
