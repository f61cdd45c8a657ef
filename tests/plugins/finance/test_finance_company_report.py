"""Company reports on real filings: every figure traces, the DCF per share is its formula, the
sensitivity table's centre is the base case, missing concepts say "not available", prose is checked."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest

from plugins.finance.company_report import Company, CompanyReport, PeerGroup, UntracedNarrativeError
from plugins.finance.formula import evaluate, fact_ids
from plugins.finance.ingest import ingest
from plugins.finance.market import MarketData, SnapshotStore
from plugins.finance.model import DCFAssumptions, create_views, discounted_cash_flow
from plugins.finance.narrative import untraced_prose_numbers
from plugins.finance.page_images import render_pages
from plugins.finance.report import verify_figures
from plugins.finance.report_tool import untraced_numbers
from plugins.finance.store import connect
from tests.plugins.finance.conftest import DATA, ROOT, need_data

EXAMPLE = ROOT / "examples" / "finance" / "company-report"
NAMES = ["filings/NIKE_2021_10K", "financebench/NIKE_2023_10K", "financebench/FOOTLOCKER_2022_8K_dated-2022-05-20",
         "filings/MICROSOFT_2016_10K", "financebench/MICROSOFT_2023_10K", "financebench/ADOBE_2017_10K", "financebench/ADOBE_2022_10K"]


def pdf(name: str) -> Path:
    return DATA / f"{name}.pdf"


@pytest.fixture(scope="module")
def company_db(tmp_path_factory, finance_cache) -> Path:
    """The example's seven filings, ingested once for this module."""
    need_data()
    if not all(pdf(n).is_file() for n in NAMES):
        pytest.skip("the FinanceBench filings are not in ../shared/data/financebench")
    path = tmp_path_factory.mktemp("company") / "filings.duckdb"
    con = connect(path)
    ingest(con, [pdf(n) for n in NAMES], finance_cache)
    create_views(con)
    con.close()
    return path


@pytest.fixture(scope="module")
def generated(company_db, tmp_path_factory):
    """A report on Nike (two 10-Ks), Foot Locker (an 8-K: no annual statements) and Adobe (no usable share count)."""
    companies = [Company("Nike", "NKE", [pdf(NAMES[0]), pdf(NAMES[1])]), Company("Foot Locker", "FL", [pdf(NAMES[2])]),
                 Company("Adobe", "ADBE", [pdf(NAMES[6])])]
    out = tmp_path_factory.mktemp("report")
    result = CompanyReport(companies, peers=[PeerGroup("Peers", ["NKE", "FL", "ADBE"])], as_of="2023-08-01",
                           db=company_db).generate(out)
    return result, out, (out / "report.md").read_text()


def section(markdown: str, heading: str) -> str:
    start = markdown.index(heading)
    following = markdown.find("\n## ", start + 1)
    return markdown[start:following if following > 0 else None]


def table_cells(markdown: str, row_label: str) -> list[str]:
    line = next(x for x in markdown.splitlines() if x.startswith(f"| {row_label} |"))
    return [c.strip() for c in line.strip("|").split("|")][1:]


def test_the_committed_example_traces_to_the_filings(company_db):
    manifest = json.loads((EXAMPLE / "figures.json").read_text())
    markdown = (EXAMPLE / "report.md").read_text()
    con = connect(company_db, read_only=True)
    try:
        traced, problems = verify_figures(con, manifest)
        assert problems == [] and traced == len(manifest) > 300
        assert untraced_numbers(markdown, manifest) == []
        # every paragraph that states figures states nothing else (company notes carry only dates, no figures)
        body = markdown.split("## Sources")[0]
        prose = [p for p in body.split("\n\n") if "[F" in p and not p.startswith(("|", "#", "!"))]
        assert len(prose) >= 10 and [n for p in prose for n in untraced_prose_numbers(p, manifest)] == []
        assert {str(f["ref"]) for f in manifest} == set(re.findall(r"\[F(\d+)\]", markdown))
        # each source links to the image of the page its fact was read from, and that image is committed
        links = re.findall(r"\| `([^`]+)` \| [^|]+ \| \[(\d+)\]\((pages/[^)]+)\) \|", markdown)
        assert len(links) > 100
        for fact_id, page, image in links:
            assert con.execute("SELECT page FROM facts WHERE fact_id = ?", [fact_id]).fetchone()[0] == int(page)
            assert (EXAMPLE / image).stat().st_size > 5000, image
    finally:
        con.close()
    assert sum(p.stat().st_size for p in EXAMPLE.rglob("*") if p.is_file()) < 4_000_000  # a few MB at most


def test_every_figure_and_every_number_in_the_prose_traces(generated, company_db):
    result, out, markdown = generated
    assert result.narrative_problems == []
    con = connect(company_db, read_only=True)
    try:
        manifest = json.loads((out / "figures.json").read_text())
        traced, problems = verify_figures(con, manifest)
        assert problems == [] and traced == len(manifest) == len(result.figures)
    finally:
        con.close()
    assert untraced_numbers(markdown, manifest) == []
    assert {p.name for p in result.page_images} >= {"NIKE_2023_10K-p59.png", "NIKE_2021_10K-p59.png"}


def test_dcf_equity_value_per_share_is_enterprise_value_less_net_debt_over_diluted_shares(generated, company_db):
    result, _, markdown = generated
    nike = section(markdown, "## Nike (NKE)")
    per_share = table_cells(nike, "Equity value per diluted share ($)")[0]
    figure = result.figures[int(re.search(r"\[F(\d+)\]", per_share)[1]) - 1]
    con = connect(company_db, read_only=True)
    try:
        dcf = discounted_cash_flow(con, "NIKE_2023_10K", DCFAssumptions())
        debt = con.execute("SELECT sum(value) FROM facts WHERE doc_name = 'NIKE_2023_10K' AND period_label = '2023-05-31' "
                           "AND label IN ('Long-term debt', 'Notes payable', 'Current portion of long-term debt')").fetchone()[0]
        cash, shares = (con.execute(f"SELECT value FROM facts WHERE doc_name = 'NIKE_2023_10K' AND {where}").fetchone()[0] for where in
                        ("concept = 'cash_and_equivalents' AND period_label = '2023-05-31'",
                         "label = 'Diluted' AND unit = 'shares' AND period_label = 'FY2023'"))
        values = {r[0]: r[1] for r in con.execute("SELECT fact_id, value FROM facts WHERE fact_id IN (SELECT unnest(?))",
                                                  [fact_ids(figure.formula)]).fetchall()}
    finally:
        con.close()
    expected = (dcf.enterprise_value - (debt - cash)) / shares
    assert figure.value == pytest.approx(expected, rel=1e-12) == evaluate(figure.formula, values)
    assert per_share == f"{expected:,.2f} [F{figure.ref}]"
    assert shares == pytest.approx(1_569.8e6) and 40 < expected < 70  # Nike's FY2023 diluted count as printed


def test_the_sensitivity_tables_centre_is_the_base_case(generated):
    result, _, markdown = generated
    nike = section(markdown, "## Nike (NKE)")
    base = table_cells(nike, "Equity value per diluted share ($)")[0]
    grid = [line for line in nike.splitlines() if re.match(r"\| \d+\.\d% \[F\d+\] \|", line)]
    assert len(grid) == 5
    centre = [c.strip() for c in grid[2].strip("|").split("|")][3]
    by_ref = {f"F{f.ref}": f for f in result.figures}
    centre_figure, base_figure = (by_ref[re.search(r"\[(F\d+)\]", c)[1]] for c in (centre, base))
    assert centre_figure.display == base_figure.display and centre_figure.value == pytest.approx(base_figure.value, rel=1e-12)
    row_rates = [by_ref[re.search(r"\[(F\d+)\]", line)[1]].value for line in grid]
    assert row_rates == pytest.approx([0.08, 0.085, 0.09, 0.095, 0.10])
    values = [[by_ref[r].value for r in re.findall(r"\[(F\d+)\]", line)[1:]] for line in grid]
    assert all(row == sorted(row) for row in values)  # higher terminal growth, higher value
    assert [row[0] for row in values] == sorted((row[0] for row in values), reverse=True)  # higher rate, lower value


def test_concepts_the_filings_lack_are_not_available_never_numbers(generated):
    _, _, markdown = generated
    nike = section(markdown, "## Nike (NKE)")
    assert set(table_cells(nike, "Operating margin")) == {"n/a"}  # Nike prints no operating-income line
    assert "operating margin is not available" in nike
    adobe = section(markdown, "## Adobe (ADBE)")
    # "Shares used to compute diluted net income per share" is a share count (it was stored as a per-share amount,
    # and the value per share said "not available"): 471 million in FY2022, as printed on p.54
    assert table_cells(adobe, "Diluted shares (millions)")[-1].startswith("471.0 [F")
    assert table_cells(adobe, "Equity value per diluted share ($)") != ["n/a"]
    assert "Equity value per share is not available for Adobe" not in adobe
    foot_locker = section(markdown, "## Foot Locker (FL)")
    assert "Not available" in foot_locker and "[F" not in foot_locker
    peers = section(markdown, "## Peers: Peers")
    assert table_cells(peers, "Revenue ($m)")[1] == "n/a" and "Foot Locker: not available" in peers
    assert "Price multiples (P/E, EV/EBITDA, EV/revenue, price/book) are not available" in nike


def test_the_prose_check_catches_numbers_without_a_matching_figure():
    manifest = [{"ref": 1, "display": "9.6%"}, {"ref": 2, "display": "51,217"}]
    assert untraced_prose_numbers("Revenue was 51,217 [F2] in FY2023, up 9.6% [F1] by 2023-05-31.", manifest) == []
    assert untraced_prose_numbers("Revenue grew 9.7% [F1].", manifest) == ["9.7% [F1] (F1 is shown as 9.6%)"]
    assert untraced_prose_numbers("Revenue grew 9.6% [F3].", manifest) == ["9.6% [F3] (there is no F3)"]
    assert untraced_prose_numbers("Revenue was about 52,000 in FY2023.", manifest) == ["52,000"]


def test_company_form_and_quarter_names_are_not_numbers_but_amounts_still_are():
    """A newcomer's narrative about 3M was refused for "3M" and "10-K"; names with digits that the
    figures' own documents carry, SEC form names and quarter labels are words."""
    manifest = [{"ref": 3, "display": "32,765", "fact_ids": ["3M_2018_10K:p1:l1:c1"]}]
    assert untraced_prose_numbers("Per its 10-K, 3M reported revenue of 32,765 [F3] in FY2018 (Q4 strong).", manifest) == []
    assert untraced_prose_numbers("3M sold $3M more, 13M units.", manifest) == ["$3M", "13M"]  # M: millions
    assert untraced_prose_numbers("3M reported 32,765 [F3].", [{"ref": 3, "display": "32,765"}]) == ["3M"]  # not a company of these figures


def test_bad_input_is_refused_with_what_to_do(tmp_path):
    with pytest.raises(ValueError, match="at least one Company"):
        CompanyReport([])
    nike = Company("Nike", "NKE", [tmp_path / "a.pdf"])
    with pytest.raises(ValueError, match="not companies of this report"):
        CompanyReport([nike], peers=[PeerGroup("x", ["NKE", "FL"])])
    with pytest.raises(ValueError, match="duplicate tickers"):
        CompanyReport([nike, nike])
    with pytest.raises(ValueError, match="no filings"):
        CompanyReport([Company("Empty", "E", [])])


def test_a_page_outside_the_document_is_refused(tmp_path):
    need_data()
    nike = pdf(NAMES[0])
    with pytest.raises(ValueError, match="page 500 cannot be rendered"):
        render_pages({"NIKE_2021_10K": nike}, {("NIKE_2021_10K", 500)}, tmp_path / "pages")
    (image,) = render_pages({"NIKE_2021_10K": nike}, {("NIKE_2021_10K", 59)}, tmp_path / "pages", scale=0.5)
    assert image.name == "NIKE_2021_10K-p59.png" and image.read_bytes()[:4] == b"\x89PNG"


def test_an_analysts_note_is_printed_only_when_its_numbers_are_figures(generated, company_db, tmp_path):
    _, _, markdown = generated
    revenue, growth = table_cells(section(markdown, "## Nike (NKE)"), "Revenue")[-1], table_cells(markdown, "Revenue growth")[-1]
    companies = [Company("Nike", "NKE", [pdf(NAMES[0]), pdf(NAMES[1])])]
    note = f"Revenue reached {revenue} in FY2023, {growth} above FY2022; the model takes that growth as given."
    CompanyReport(companies, as_of="2023-08-01", db=company_db, notes={"NKE": note}).generate(tmp_path / "ok")
    printed = (tmp_path / "ok" / "report.md").read_text()
    assert "#### Analyst's note\n\n" + note in printed
    shown = revenue.split(" [")[0]
    tampered = note.replace(shown, "52,000", 1)
    with pytest.raises(UntracedNarrativeError, match=r"note on NKE states numbers .*52,000"):
        CompanyReport(companies, as_of="2023-08-01", db=company_db, notes={"NKE": tampered}).generate(tmp_path / "bad")
    assert not (tmp_path / "bad" / "report.md").exists()
    with pytest.raises(ValueError, match="notes for \\['MSFT'\\]"):
        CompanyReport(companies, notes={"MSFT": "x"})


def test_multiples_use_a_dated_price_snapshot_and_the_filings(company_db, tmp_path):
    store = SnapshotStore(tmp_path / "market")
    closes = [{"date": d, "open": c, "high": c, "low": c, "close": c, "volume": 1e6}
              for d, c in (("2023-07-28", 110.0), ("2023-07-31", 110.39), ("2023-08-02", 999.0))]  # the last is after as_of
    store.save("NKE", "prices", {}, closes, datetime(2023, 8, 1, tzinfo=UTC), "test")
    market = MarketData(tmp_path / "market", offline=True)
    companies = [Company("Nike", "NKE", [pdf(NAMES[0]), pdf(NAMES[1])]), Company("Adobe", "ADBE", [pdf(NAMES[6])])]
    result = CompanyReport(companies, as_of="2023-08-01", db=company_db, market=market).generate(tmp_path / "out")
    markdown = result.markdown.read_text()
    nike = section(markdown, "## Nike (NKE)")
    by_ref = {f"F{f.ref}": f for f in result.figures}

    def figure(row: str):
        return by_ref[re.search(r"\[(F\d+)\]", next(x for x in nike.splitlines() if x.startswith(f"| {row}")))[1]]

    assert figure("Share price ($, close on 2023-07-31").display == "110.39"
    assert figure("P/E (price / diluted EPS of FY2023)").value == pytest.approx(110.39 / 3.23)
    assert figure("Market value of equity").value == pytest.approx(110.39 * 1_569.8e6)
    assert "| EV / EBITDA" in nike and table_cells(nike, "EV / EBITDA (operating income + depreciation and amortisation, FY2023)") == ["n/a"]
    # no snapshot for Adobe: not available, and the reason
    assert "not available: they need a share price from a dated market snapshot (no snapshot of ADBE prices" in markdown


def _breakdowns(company_db, docs):
    from plugins.finance.company_report import company_data
    from plugins.finance.segments import company_breakdowns
    con = connect(company_db, read_only=True)
    try:
        data = company_data(con, docs)
        revenue = {y: f["revenue"][0] for y, f in data.facts.items() if "revenue" in f}
        income = {y: f["operating_income"][0] for y, f in data.facts.items() if "operating_income" in f}
        found = company_breakdowns(con, data.docs, revenue, income)
        values = dict(con.execute("SELECT fact_id, value FROM facts WHERE fact_id IN (SELECT unnest(?))",
                                  [list(revenue.values())]).fetchall())
        return found, {y: values[i] for y, i in revenue.items()}
    finally:
        con.close()


def test_segment_rows_are_found_by_the_revenue_identity_on_real_filings(company_db):
    nike, revenue = _breakdowns(company_db, ["NIKE_2021_10K", "NIKE_2023_10K"])
    segments = nike["segment"]
    assert [shown for _, shown in segments.labels][:6] == ["North America", "Europe, Middle East & Africa", "Greater China",
                                                          "Asia Pacific & Latin America", "Global Brand Divisions", "Converse"]
    assert sorted(segments.years) == [2019, 2020, 2021, 2022, 2023] and segments.measure == "EBIT"
    fy23 = segments.years[2023]
    assert (fy23.revenue.doc_name, fy23.revenue.page) == ("NIKE_2023_10K", 90)  # the later 10-K wins FY2021 too
    assert {r.label: r.value for r in fy23.revenue.rows}["North America"] == 21_608e6
    assert sum(r.value for r in fy23.revenue.rows) == revenue[2023] == 51_217e6
    assert {r.label: r.value for r in fy23.profit[1].rows}["Greater China"] == 2_283e6
    assert "geography" not in nike  # Nike prints no revenue-by-country table that adds up to revenue

    msft, _ = _breakdowns(company_db, ["MICROSOFT_2016_10K", "MICROSOFT_2023_10K"])
    assert [s for _, s in msft["segment"].labels][:3] == ["Productivity and Business Processes", "Intelligent Cloud",
                                                          "More Personal Computing"]
    assert msft["segment"].measure == "operating income"  # its total is the income statement's operating income
    assert {r.label: r.value for r in msft["segment"].years[2023].profit[1].rows}["Intelligent Cloud"] == 37_884e6
    assert {s for _, s in msft["geography"].labels} == {"United States", "Other countries"}


def test_a_company_without_a_segment_table_that_adds_up_says_so(generated):
    _, out, markdown = generated
    adobe = section(markdown, "## Adobe (ADBE)")
    # Adobe's 2022 10-K prints its segment table with segments as columns: not recognised, and said so
    assert "Revenue by reportable segment: not available" in adobe
    assert "#### Revenue by geography ($ millions)" in adobe and "| Americas |" in adobe
    nike = section(markdown, "## Nike (NKE)")
    assert "| North America |" in nike and "#### Segment EBIT" in nike and "charts/NKE-segments.png" in nike
    sums = [c.split(" [")[0] for c in table_cells(nike, "Sum of the rows above")]
    assert sums == [c.split(" [")[0] for c in table_cells(nike, "Revenue (income statement)")] and "51,217" in sums
    assert (out / "charts" / "NKE-segments.png").stat().st_size > 10_000
