"""Company-report figures from their definitions, on real filings (issue 29, item 3): borrowings are
current + long-term debt and the report names the lines; the diluted share count is read wherever the
income statement (or its notes) prints it; each column's period end comes from its own heading; a
report's claim that something is "not printed" is checked against the pages it cites."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from plugins.finance.company_report import Company, CompanyReport, _Writer, company_data, debt_kind
from plugins.finance.extract import caption_ends
from plugins.finance.store import connect
from tests.plugins.finance.conftest import DATA, financebench_db

BENCH = DATA / "financebench"
DOCS = ["VERIZON_2022_10K", "PEPSICO_2022_10K", "AMD_2015_10K", "GENERALMILLS_2022_10K"]


@pytest.fixture(scope="module")
def definitions_db(tmp_path_factory, finance_cache) -> Path:
    """Verizon's, PepsiCo's, AMD's and General Mills' 10-Ks from ../shared/data/financebench, ingested once."""
    return financebench_db(tmp_path_factory, finance_cache, DOCS, "definitions")


@pytest.fixture
def con(definitions_db):
    connection = connect(definitions_db, read_only=True)
    yield connection
    connection.close()


def _values(con, ids: list[str]) -> list[float]:
    return [con.execute("SELECT value FROM facts WHERE fact_id = ?", [i]).fetchone()[0] for i in ids]


def test_borrowings_are_current_plus_long_term_debt(con):
    # Verizon's balance sheet (p.56): "Debt maturing within one year $ 9,963 $ 7,443" and "Long-term debt 140,676 143,425";
    # main summed the long-term line only, so net debt and equity value were off by the current portion
    data = company_data(con, ["VERIZON_2022_10K"])
    assert sorted(_values(con, data.facts[2022]["debt"])) == [9_963e6, 140_676e6]
    assert sorted(_values(con, data.facts[2021]["debt"])) == [7_443e6, 143_425e6]
    assert sorted(data.debt_lines[i][:2] for i in data.facts[2022]["debt"]) == [
        ("current", "Debt maturing within one year"), ("long-term", "Long-term debt")]
    # the labels filers print for the two parts; leases, accrued interest and debt securities held are not borrowings
    assert [debt_kind(x) for x in ("Short-term borrowings, including current portion of long-term debt: 2021—$1,636; 2020—$2,002",
                                   "Current portion of long-term debt and short-term borrowings (Note 12)",
                                   "Long-term debt, excluding current portion", "Long-term debt, net", "Debt")] == [
        "current", "current", "long-term", "long-term", "debt"]
    assert [debt_kind(x) for x in ("Accrued interest on long-term debt", "Investments in short-term debt securities",
                                   "Operating lease liabilities", "Total long-term debt")] == [None] * 4


def test_the_report_says_which_lines_make_up_borrowings(definitions_db, tmp_path):
    result = CompanyReport([Company("Verizon", "VZ", [BENCH / "VERIZON_2022_10K.pdf"])], as_of="2023-08-01",
                           db=definitions_db).generate(tmp_path)
    markdown = result.markdown.read_text()
    assert ('Borrowings at the end of FY2022 = current + long-term debt, the balance-sheet lines current: '
            '"Debt maturing within one year" (p.56); long-term: "Long-term debt" (p.56).') in markdown
    row = next(x for x in markdown.splitlines() if x.startswith("| Net debt (borrowings - cash) |"))
    net_debt = result.figures[int(re.search(r"\[F(\d+)\]", row)[1]) - 1]
    assert net_debt.value == pytest.approx((9_963 + 140_676 - 2_605) * 1e6)  # cash and cash equivalents 2,605 on p.56
    assert result.narrative_problems == []


def test_diluted_shares_are_read_where_the_income_statement_prints_them(con):
    # Verizon (p.54) prints "Weighted-average shares outstanding (in millions)" under "Basic Earnings Per Common Share" and
    # again under "Diluted Earnings Per Common Share"; AMD (p.56) prints "Diluted 783" under "Shares used in per share
    # calculation", which main stored as a per-share amount
    verizon = company_data(con, ["VERIZON_2022_10K"])
    assert {y: _values(con, verizon.facts[y]["diluted_shares"]) for y in (2020, 2021, 2022)} == {
        2020: [4_142e6], 2021: [4_150e6], 2022: [4_204e6]}
    assert verizon.shares_source[2022] == "income statement"
    amd = company_data(con, ["AMD_2015_10K"])
    assert _values(con, amd.facts[2015]["diluted_shares"]) == [783e6]
    unit, = con.execute("SELECT DISTINCT unit FROM facts WHERE doc_name = 'AMD_2015_10K' AND page = 56 AND label = 'Diluted' "
                        "AND raw_value = '783'").fetchone()
    assert unit == "shares"


def test_period_ends_come_from_each_columns_own_heading(con):
    # PepsiCo: "Fiscal years ended December 31, 2022, December 25, 2021 and December 26, 2020" over "2022 2021 2020";
    # main gave every column December 31
    pepsi = company_data(con, ["PEPSICO_2022_10K"])
    assert pepsi.year_end == {2022: "2022-12-31", 2021: "2021-12-25", 2020: "2020-12-26"}
    ends = dict(con.execute("SELECT fiscal_year, max(period_end)::VARCHAR FROM facts WHERE doc_name = 'PEPSICO_2022_10K' "
                            "AND statement = 'balance_sheet' GROUP BY 1").fetchall())
    assert ends == {2022: "2022-12-31", 2021: "2021-12-25"}  # "December 31, 2022 and December 25, 2021"
    # AMD prints each date over its own year; General Mills heads its income statement "Fiscal Year 2022 2021 2020"
    # only, so its year ends are those its balance sheet's columns print
    assert company_data(con, ["AMD_2015_10K"]).year_end == {2015: "2015-12-26", 2014: "2014-12-27", 2013: "2013-12-28"}
    assert company_data(con, ["GENERALMILLS_2022_10K"]).year_end == {2022: "2022-05-29", 2021: "2021-05-30"}


def test_a_caption_gives_a_date_only_to_the_year_it_names():
    assert caption_ends("Fiscal years ended December 31, 2022, December 25, 2021 and December 26, 2020 (in millions)") == (
        {2022: (12, 31), 2021: (12, 25), 2020: (12, 26)}, None)
    assert caption_ends("Years ended December 31, 2022, 2021 and 2020") == ({2022: (12, 31), 2021: (12, 31), 2020: (12, 31)}, (12, 31))
    assert caption_ends("Year Ended May 31, 2023 2022 2021") == ({2023: (5, 31), 2022: (5, 31), 2021: (5, 31)}, (5, 31))
    assert caption_ends("At January 28") == ({}, (1, 28)) and caption_ends("(in millions)") == ({}, None)


def test_a_not_printed_claim_is_checked_against_the_pages_it_cites(definitions_db, tmp_path):
    con = connect(definitions_db, read_only=True)
    try:
        spec = CompanyReport([Company("Verizon", "VZ", [BENCH / "VERIZON_2022_10K.pdf"])], db=definitions_db)
        writer = _Writer(spec, con, tmp_path)
        # Verizon's income statement (p.54) prints its diluted count: the report may not say it is not printed
        said = writer._not_printed("VERIZON_2022_10K", 2022, ["the diluted share count"])
        assert said.startswith("the diluted share count is printed on p.54") and "do not print" not in said
        assert "4,204" not in said  # the quotation is the label, not a number that is no figure
        # General Mills' balance sheet prints no share count at all: that claim stands, with the pages checked
        said = writer._not_printed("GENERALMILLS_2022_10K", 2022, ["the diluted share count"])
        assert "do not print the diluted share count (p.45 checked)" in said
    finally:
        con.close()


EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "finance" / "financebench-report"


def test_the_committed_hand_checked_example_traces_and_its_readme_quotes_it(con):
    import json

    from plugins.finance.report import verify_figures
    from plugins.finance.report_tool import untraced_numbers

    manifest = json.loads((EXAMPLE / "figures.json").read_text())
    markdown = (EXAMPLE / "report.md").read_text()
    traced, problems = verify_figures(con, manifest)
    assert problems == [] and traced == len(manifest) > 200
    assert untraced_numbers(markdown, manifest) == []
    # every figure the README checks by hand is shown in the report as the README quotes it
    displays = {f"F{f['ref']}": f["display"] for f in manifest}
    quoted = re.findall(r"(-?[\d,]+(?:\.\d+)?%?) \[(F\d+)\]", (EXAMPLE / "README.md").read_text())
    assert len({ref for _, ref in quoted}) >= 20
    assert [(shown, ref) for shown, ref in quoted if displays.get(ref) != shown] == []
    assert all(f"{shown} [{ref}]" in markdown for shown, ref in quoted)
    assert "Fiscal years: FY2020 ended 2020-12-26, FY2021 ended 2021-12-25, FY2022 ended 2022-12-31" in markdown
    assert '"Debt maturing within one year" (p.56)' in markdown and "do not print" not in markdown
    # the segment tables (Verizon p.101-102, PepsiCo p.70) and PepsiCo's revenue by country (p.74) are cited too
    assert "| Consumer | 88,533 [F52] | 95,300 [F53] | 103,506 [F54] |" in markdown and "| FLNA | 18,189" in markdown
    assert {p.name for p in (EXAMPLE / "pages").iterdir()} == {
        f"{d}-p{n}.png" for d, pages in (("VERIZON_2022_10K", (54, 56, 57, 101, 102)), ("PEPSICO_2022_10K", (62, 64, 66, 70, 74)))
        for n in pages}


def test_segments_whose_note_totals_reconcile_with_revenue_are_found(con):
    # General Mills' 2022 segment note (p.84) prints its total as "T otal" (kerned apart): main took it for a segment,
    # so no block added up to revenue and the report said its segments were not available
    from plugins.finance.segments import company_breakdowns, is_total

    data = company_data(con, ["GENERALMILLS_2022_10K"])
    revenue = {y: f["revenue"][0] for y, f in data.facts.items() if "revenue" in f}
    income = {y: f["operating_income"][0] for y, f in data.facts.items() if "operating_income" in f}
    segments = company_breakdowns(con, data.docs, revenue, income)["segment"]
    assert sorted(segments.years) == [2020, 2021, 2022]
    fy22 = segments.years[2022]
    assert fy22.revenue.page == 84 and len(fy22.revenue.rows) == 4
    assert {r.label: r.value for r in fy22.revenue.rows}["North America Retail"] == 11_572.0e6
    assert sum(r.value for r in fy22.revenue.rows) == pytest.approx(18_992.8e6) == _values(con, [revenue[2022]])[0]
    assert segments.measure == "operating income" and {r.label: r.value for r in fy22.profit[1].rows}["Pet"] == pytest.approx(470.6e6)
    assert is_total("T otal segment operating profit") and is_total("Total") and not is_total("Timberland")
