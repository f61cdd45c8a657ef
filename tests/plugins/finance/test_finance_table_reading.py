"""Table reading on real pages: count rows are counts, running headers stay out of column labels and rows."""

from __future__ import annotations

import pdfplumber
import pytest

from plugins.finance.extract import open_document, page_texts
from plugins.finance.tables import is_count, parse_table_page, table_facts
from tests.plugins.finance.conftest import DATA, FILINGS, need_data


def page_facts(path, page: int) -> list[dict]:
    """The table facts of one real page, parsed as ingestion parses it."""
    need_data()
    if not path.is_file():
        pytest.skip(f"{path.name} is not in ../shared/data")
    doc = open_document(path)
    texts = page_texts(doc)
    doc.close()
    with pdfplumber.open(path) as pdf:
        tables = parse_table_page(pdf.pages[page - 1], page, texts[page - 1])
    return table_facts(path.stem, "0" * 64, tables)


def test_store_and_employee_counts_are_counts_not_millions():
    facts = page_facts(FILINGS / "BESTBUY_2023_10K.pdf", 27)  # "($ in millions)" over a store-count table
    stores = [f for f in facts if f["label"] == "Total International segment stores" and f["raw_value"] == "160"]
    assert stores and all(f["unit"] == "count" and f["scale"] == 1 and f["value"] == 160 for f in stores)
    revenue = next(f for f in facts if f["label"] == "Revenue" and f["raw_value"] == "3,504")
    assert revenue["unit"] == "USD" and revenue["value"] == 3_504e6  # money on the same page keeps the caption's scale
    employees = next(f for f in page_facts(DATA / "financebench" / "ADOBE_2017_10K.pdf", 34) if f["label"] == "Worldwide employees")
    assert (employees["unit"], employees["scale"], employees["value"]) == ("count", 1, 17_973)


def test_the_count_rule_keeps_money_and_share_counts_scaled():
    assert is_count("Best Buy", "2022 Stores Closed(1)", "", "(4)")
    assert not is_count("Store-related projects(1)", "2022", "", "355")  # dollars spent on stores
    assert not is_count("Number of shares repurchased and retired", "2022", "", "11.8")  # millions of shares
    assert not is_count("Comparable store sales", "2023", "", "(5.4)%")
    assert not is_count("Other countries", "2023", "", "105,171")  # Microsoft's revenue outside the United States
    # a share-repurchase table: shares bought and dollars left, not counts of things
    assert not is_count("April 1, 2016 – April 30, 2016", "Total Number of Total Number of Shares Purchased", "", "23,687,526")
    assert not is_count("Beginning repurchase authority", "that May Yet be Purchased Under the Plans (1)",
                        "Approximate Dollar Value of Shares", "8,700")


def test_table_of_contents_links_stay_out_of_column_labels_and_footers_are_not_rows():
    facts = page_facts(DATA / "financebench" / "ADOBE_2017_10K.pdf", 44)
    labels = {f["column_label"] for f in facts}
    assert labels >= {"Fiscal 2017", "Fiscal 2016", "Fiscal 2015"} and not any("Table of Contents" in lb for lb in labels)
    assert next(f for f in facts if f["label"] == "Subscription" and f["column_label"] == "Fiscal 2017")["fiscal_year"] == 2017
    nike = page_facts(DATA / "financebench" / "NIKE_2023_10K.pdf", 91)  # "2023 FORM 10-K 87" printed at the foot
    assert not [f for f in nike if "FORM 10-K" in f["label"].upper()]
    assert [f["value"] for f in nike if f["label"] == "Greater China" and f["column_index"] == 0][:1] == [162e6]  # accounts receivable, as printed


def test_a_statement_pages_running_footer_is_not_a_line_item():
    from plugins.finance.extract import extract_statements

    path = DATA / "financebench" / "NIKE_2023_10K.pdf"
    need_data()
    doc = open_document(path)
    texts = page_texts(doc)
    doc.close()
    statements, _ = extract_statements(path, {"income_statement": [59]}, texts)  # "2023 FORM 10-K 57" at its foot
    labels = [line.label for st in statements for line in st.lines]
    assert "Revenues" in labels and not [lb for lb in labels if "FORM 10-K" in lb.upper()]
