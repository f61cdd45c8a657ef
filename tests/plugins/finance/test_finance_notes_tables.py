"""Notes and segment tables on real pages (issue 29 item 2): scale from headings, years and quarters
in column headings as periods, a year naming a row, segments as columns, share counts in thousands,
and the PDFium characters the table pass reads giving what pdfplumber's give."""

from __future__ import annotations

import json
from pathlib import Path

import pdfplumber
import pytest

from plugins.finance.extract import open_document, page_texts
from plugins.finance.pdfium_chars import pdfium_page
from plugins.finance.tables import document_scales, parse_table_page, table_facts
from tests.plugins.finance.conftest import DATA, FILINGS, need_data

FINANCEBENCH = DATA / "financebench"


def _texts(path: Path) -> list[str]:
    need_data()
    if not path.is_file():
        pytest.skip(f"{path.name} is not in ../shared/data")
    doc = open_document(path)
    try:
        return page_texts(doc)
    finally:
        doc.close()


def facts_as_ingested(path: Path, page: int) -> list[dict]:
    """The table facts of one real page, read as the table pass reads it (PDFium characters, the
    scale the filing declares for the part the page is in)."""
    texts = _texts(path)
    doc = open_document(path)
    try:
        tables = parse_table_page(pdfium_page(doc, page), page, texts[page - 1], inherited=document_scales(texts)[page - 1])
    finally:
        doc.close()
    return table_facts(path.stem, "0" * 64, tables)


def one(facts: list[dict], **where) -> dict:
    found = [f for f in facts if all(f[k] == v for k, v in where.items())]
    assert len(found) == 1, (where, [(f["label"], f["raw_value"], f["column_label"]) for f in found] or "none")
    return found[0]


def test_a_division_table_takes_the_scale_the_filing_declares():
    # PepsiCo p.73 prints no "in millions"; p.68 opens the notes with "Unless otherwise noted, tabular
    # dollars are in millions" (main stored FLNA's total assets as $11,042)
    facts = facts_as_ingested(FINANCEBENCH / "PEPSICO_2022_10K.pdf", 73)
    flna = one(facts, label="FLNA", column_label="Total Assets 2022")
    assert (flna["scale_word"], flna["value"], flna["fiscal_year"]) == ("millions", 11_042e6, 2022)
    total = one(facts, label="Total", column_label="Capital Spending 2020")
    assert total["value"] == 4_240e6
    # a part of the filing that declares nothing inherits nothing: the cover page is in no scale
    assert document_scales(_texts(FINANCEBENCH / "PEPSICO_2022_10K.pdf"))[0] == ("units", 1.0)


def test_years_over_right_aligned_numbers_are_the_columns_periods_and_a_year_naming_a_row_is_its_label():
    facts = facts_as_ingested(FILINGS / "COSTCO_2021_10K.pdf", 52)
    # "2021" and "2020" sit left of their numbers' right edge (main labelled both columns 2020)
    debt = [f for f in facts if f["label"] == "Total long-term debt"]
    assert sorted((f["fiscal_year"], f["value"]) for f in debt) == [(2020, 7_657e6), (2021, 7_531e6)]
    # the maturity schedule "2022  $ 800": 2022 names the row (main stored it as a value of $2,022)
    assert not [f for f in facts if f["raw_value"] in ("2022", "2023", "2024", "2025", "2026")]
    assert one(facts, label="2022", raw_value="800")["value"] == 800e6
    assert one(facts, label="Thereafter", raw_value="5,295")["value"] == 5_295e6


def test_quarter_columns_under_a_year_heading_are_quarters():
    # Amazon's quarterly results: "Year Ended December 31, 2016" over "First Quarter ... Fourth Quarter"
    # (main read every column as the fiscal year 2016, 12 months, and lost "First")
    facts = [f for f in facts_as_ingested(FILINGS / "AMAZON_2017_10K.pdf", 72) if f["label"] == "Net sales"]
    by_value = {f["value"]: f for f in facts}
    q1, q4 = by_value[29_128e6], by_value[43_741e6]
    assert (q1["months"], q1["fiscal_year"], q1["period_label"], q1["period_end"]) == (3, 2016, "Q1 2016", None)
    assert "First Quarter" in q1["column_label"]
    assert (q4["months"], q4["period_end"]) == (3, "2016-12-31")  # the fourth quarter ends with the year
    assert all(f["months"] == 3 for f in facts) and len(facts) == 8


def test_a_segment_table_with_segments_as_columns_dates_its_rows_by_their_year_heading():
    # CVS p.179: segments across, "2022:", "2021:", "2020:" over groups of rows (main: no period at all)
    facts = facts_as_ingested(FINANCEBENCH / "CVSHEALTH_2022_10K.pdf", 179)
    revenue = [f for f in facts if f["label"] == "Revenues from external customers" and f["column_label"] == "Consolidated Totals"]
    assert sorted((f["fiscal_year"], f["value"]) for f in revenue) == [(2020, 267_908e6), (2021, 290_912e6), (2022, 321_629e6)]
    hcb = one(facts, label="Total revenues", column_label="Health Care Benefits", fiscal_year=2021)
    assert hcb["value"] == 82_186e6


def test_costco_share_counts_printed_in_thousands_are_scaled_as_thousands(tmp_path):
    from plugins.finance.ingest import INGESTED, ingest_document
    from plugins.finance.store import connect

    facts = facts_as_ingested(FILINGS / "COSTCO_2021_10K.pdf", 60)  # "(shares in 000's)" in the note's caption
    assert one(facts, label="Weighted average diluted shares", fiscal_year=2021)["value"] == 444_346e3
    con = connect(tmp_path / "f.duckdb")
    status = ingest_document(con, FILINGS / "COSTCO_2021_10K.pdf", tmp_path / "cache")
    assert status.status in INGESTED
    # the income statement: "Shares used in calculation (000's)" over "Diluted 444,346" (main: 444,346 million)
    rows = con.execute("SELECT value, scale_word FROM facts WHERE doc_name = 'COSTCO_2021_10K' AND page = 36 "
                       "AND label = 'Diluted' AND unit = 'shares' AND fiscal_year = 2021").fetchall()
    assert rows == [(444_346e3, "thousands")]
    con.close()


def test_pdfium_characters_give_the_table_facts_pdfplumbers_give():
    path = FILINGS / "NETFLIX_2017_10K.pdf"
    texts = _texts(path)
    key = ("label", "raw_value", "value", "column_label", "fiscal_year", "months", "unit")
    doc = open_document(path)
    with pdfplumber.open(path) as pdf:
        for page in (25, 52, 59):
            slow = table_facts("n", "0", parse_table_page(pdf.pages[page - 1], page, texts[page - 1]))
            fast = table_facts("n", "0", parse_table_page(pdfium_page(doc, page), page, texts[page - 1]))
            assert slow and [tuple(f[k] for k in key) for f in fast] == [tuple(f[k] for k in key) for f in slow]
            assert all(abs(a["x0"] - b["x0"]) < 0.5 and abs(a["top"] - b["top"]) < 1.5 for a, b in zip(fast, slow))
    doc.close()


def test_pages_that_look_like_tables_but_yield_nothing_are_named_and_each_page_is_cached(tmp_path):
    from plugins.finance.ingest import ingest_document
    from plugins.finance.store import connect
    from plugins.finance.tables import table_pass

    path = FILINGS / "NETFLIX_2017_10K.pdf"
    texts = _texts(path)
    con = connect(tmp_path / "f.duckdb")
    status = ingest_document(con, path, tmp_path / "cache")
    con.close()
    # the exhibit index (pp. 64-68: exhibit numbers, file numbers and dates in columns) gives no value, and says so
    assert "no table values could be read there: p.64, p.65, p.68" in status.note
    facts, pages, empty = table_pass(path, "f" * 64, texts, set(), tmp_path / "pages", "t")
    assert {64, 65, 68} <= set(empty) and 25 in pages and facts
    cached = tmp_path / "pages" / "pages" / f"{'f' * 64}-p25-t.json"
    rows = json.loads(cached.read_text())
    rows[0]["label"] = "read from the page cache"
    cached.write_text(json.dumps(rows))
    again, _, _ = table_pass(path, "f" * 64, texts, set(), tmp_path / "pages", "t")
    assert next(f for f in again if f["page"] == 25)["label"] == "read from the page cache"
    assert [f["fact_id"] for f in again] == [f["fact_id"] for f in facts] and facts[0]["fact_id"].startswith("NETFLIX_2017_10K:p")


def test_years_and_unit_prices_in_a_thousands_table_are_not_scaled():
    # PepsiCo p.89, RSUs and PSUs "(in thousands)": the remaining term in years and the grant-date fair value of one
    # unit are not thousands of dollars (main: $1,240 and $143,020); the aggregate intrinsic value is
    facts = facts_as_ingested(FINANCEBENCH / "PEPSICO_2022_10K.pdf", 89)
    row = {f["column_index"]: f for f in facts if f["label"].startswith("Outstanding at December 31, 2022")}
    term = next(f for f in row.values() if "(years)" in f["column_label"])
    price = next(f for f in row.values() if "Grant-Date Fair Value" in f["column_label"])
    value = next(f for f in row.values() if "Intrinsic Value" in f["column_label"])
    assert (term["unit"], term["value"]) == ("years", 1.24)
    assert (price["unit"], price["value"]) == ("USD/share", 143.02)
    assert (value["unit"], value["value"]) == ("USD", 1_032_222e3)


def test_a_year_in_the_tables_corner_dates_its_columns_with_their_own_headers():
    # Verizon 2022 p.101: "2022" left of "Consumer Business" (one table per year) dates the columns, and "Total" stacked
    # over "Reportable Segments" labels only that column (main: "Total Business", no year)
    facts = facts_as_ingested(FINANCEBENCH / "VERIZON_2022_10K.pdf", 101)
    revenue = [(f["column_label"], f["fiscal_year"], f["value"]) for f in facts if f["label"] == "Total Operating Revenues(2)"]
    assert revenue[:3] == [("Consumer", 2022, 103_506e6), ("Business", 2022, 31_072e6), ("Total Reportable Segments", 2022, 134_578e6)]
    # 3M 2018 p.127 (quarterly data): "2018" over "First Quarter" ... gives quarters of 2018, not the year
    q = one(facts_as_ingested(FILINGS / "3M_2018_10K.pdf", 127), label="Net sales", column_label="First Quarter", fiscal_year=2018)
    assert (q["months"], q["value"]) == (3, 8_278e6)


def test_a_footnote_mark_kerned_onto_a_headers_year_keeps_the_year():
    # PepsiCo 2022 p.70: "Operating Profit/(Loss) 2022( a)" (main: no year, so the division profit column was not used)
    facts = facts_as_ingested(FINANCEBENCH / "PEPSICO_2022_10K.pdf", 70)
    flna = one(facts, label="FLNA", column_label="Operating Profit/(Loss) 2022( a)")
    assert (flna["fiscal_year"], flna["value"]) == (2022, 6_135e6)
