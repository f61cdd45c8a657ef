"""Ingestion of the twelve real filings: values checked by hand against the PDFs, provenance, identities.

Every expected value below was read off the page text of the PDF (pdfplumber and PDFium agree)
at the page given (1-based; FinanceBench's 0-based ``evidence_page_num`` plus one).
"""

from __future__ import annotations

import pytest

from plugins.finance.checks import run_checks
from plugins.finance.numbers import detect_scale, parse_number

# (document, page, statement, concept, period label, amount as printed, scale)
HAND_CHECKED = [
    ("3M_2018_10K", 58, "balance_sheet", "total_assets", "2018-12-31", 36500, 1e6),
    ("3M_2018_10K", 58, "balance_sheet", "total_liabilities", "2018-12-31", 26652, 1e6),
    ("3M_2018_10K", 58, "balance_sheet", "total_equity", "2018-12-31", 9848, 1e6),
    ("3M_2018_10K", 58, "balance_sheet", "ppe_net", "2018-12-31", 8738, 1e6),
    ("3M_2018_10K", 60, "cash_flow", "capital_expenditure", "FY2018", -1577, 1e6),
    ("3M_2018_10K", 60, "cash_flow", "operating_cash_flow", "FY2018", 6439, 1e6),
    ("3M_2018_10K", 56, "income_statement", "revenue", "FY2018", 32765, 1e6),
    ("ACTIVISIONBLIZZARD_2019_10K", 69, "balance_sheet", "ppe_net", "2019-12-31", 253, 1e6),
    ("ACTIVISIONBLIZZARD_2019_10K", 69, "balance_sheet", "ppe_net", "2018-12-31", 282, 1e6),
    ("ACTIVISIONBLIZZARD_2019_10K", 70, "income_statement", "revenue", "FY2019", 6489, 1e6),
    ("ACTIVISIONBLIZZARD_2019_10K", 70, "income_statement", "net_income", "FY2017", 273, 1e6),
    ("ACTIVISIONBLIZZARD_2019_10K", 73, "cash_flow", "capital_expenditure", "FY2019", -116, 1e6),
    ("AMAZON_2017_10K", 38, "income_statement", "revenue", "FY2017", 177866, 1e6),
    ("AMAZON_2017_10K", 38, "income_statement", "cost_of_revenue", "FY2017", 111934, 1e6),
    ("AMAZON_2017_10K", 40, "balance_sheet", "accounts_payable", "2016-12-31", 25309, 1e6),
    ("AMAZON_2017_10K", 40, "balance_sheet", "inventory", "2017-12-31", 16047, 1e6),
    ("BESTBUY_2023_10K", 39, "balance_sheet", "total_assets", "2023-01-28", 15803, 1e6),
    ("BESTBUY_2023_10K", 42, "cash_flow", "operating_cash_flow", "FY2023", 1824, 1e6),
    ("BESTBUY_2024Q2_10Q", 3, "balance_sheet", "cash_and_equivalents", "2023-07-29", 1093, 1e6),
    ("BESTBUY_2024Q2_10Q", 4, "income_statement", "revenue", "3M 2023-07-29", 9583, 1e6),
    ("BESTBUY_2024Q2_10Q", 4, "income_statement", "revenue", "6M 2023-07-29", 19050, 1e6),
    ("BLOCK_2020_10K", 86, "income_statement", "revenue", "FY2020", 9497578, 1e3),
    ("BLOCK_2020_10K", 86, "income_statement", "cost_of_revenue", "FY2019", 2823815, 1e3),
    ("COSTCO_2021_10K", 38, "balance_sheet", "total_assets", "2021-08-29", 59268, 1e6),
    ("COSTCO_2021_10K", 38, "balance_sheet", "total_liabilities", "2021-08-29", 41190, 1e6),
    ("GENERALMILLS_2020_10K", 50, "balance_sheet", "total_current_assets", "2020-05-31", 5121.3, 1e6),
    ("GENERALMILLS_2020_10K", 50, "balance_sheet", "total_current_liabilities", "2020-05-31", 7491.5, 1e6),
    ("GENERALMILLS_2020_10K", 50, "balance_sheet", "temporary_equity", "2020-05-31", 544.6, 1e6),
    ("GENERALMILLS_2020_10K", 52, "cash_flow", "capital_expenditure", "FY2020", -460.8, 1e6),
    ("MICROSOFT_2016_10K", 52, "income_statement", "cost_of_revenue", "FY2016", 32780, 1e6),
    ("MICROSOFT_2016_10K", 52, "income_statement", "net_income", "FY2016", 16798, 1e6),
    ("NETFLIX_2017_10K", 45, "balance_sheet", "total_current_liabilities", "2017-12-31", 5466312, 1e3),
    ("NIKE_2021_10K", 59, "income_statement", "cost_of_revenue", "FY2021", 24576, 1e6),
    ("NIKE_2021_10K", 61, "balance_sheet", "inventory", "2020-05-31", 7367, 1e6),
    ("ULTABEAUTY_2023Q4_EARNINGS", 7, "balance_sheet", "total_assets", "2023-01-28", 5370411, 1e3),
]


@pytest.mark.parametrize("doc,page,statement,concept,period,amount,scale", HAND_CHECKED,
                         ids=[f"{h[0]}-{h[3]}-{h[4]}" for h in HAND_CHECKED])
def test_hand_checked_values_and_their_pages(db, doc, page, statement, concept, period, amount, scale):
    rows = db.execute(
        "SELECT amount, scale, value, page, unit, statement, raw_value, x0, top, x1, bottom FROM facts "
        "WHERE doc_name = ? AND concept = ? AND period_label = ?", [doc, concept, period]).fetchall()
    assert len(rows) == 1, rows
    got_amount, got_scale, value, got_page, unit, got_statement, raw, x0, top, x1, bottom = rows[0]
    assert (got_amount, got_scale, got_page, got_statement, unit) == (pytest.approx(amount), scale, page, statement, "USD")
    assert value == pytest.approx(amount * scale)
    assert parse_number(raw).amount == pytest.approx(amount)  # the raw token is what was printed
    assert 200 < x0 < x1 <= 800 and 0 <= top < bottom <= 800  # the number, in a value column


def test_every_filing_has_its_three_statements_on_the_right_pages(db):
    pages = dict(db.execute(
        "SELECT doc_name || '/' || statement, min(page) FROM facts GROUP BY ALL").fetchall())
    # FinanceBench's evidence pages (0-based) + 1 for the statements its questions cite
    assert pages["3M_2018_10K/cash_flow"] == 60 and pages["3M_2018_10K/balance_sheet"] == 58
    assert pages["ACTIVISIONBLIZZARD_2019_10K/income_statement"] == 70
    assert pages["AMAZON_2017_10K/income_statement"] == 38 and pages["AMAZON_2017_10K/balance_sheet"] == 40
    assert pages["NIKE_2021_10K/income_statement"] == 59 and pages["NIKE_2021_10K/balance_sheet"] == 61
    assert pages["BLOCK_2020_10K/cash_flow"] == 90
    docs = db.execute("SELECT doc_name, statements FROM documents").fetchall()
    assert len(docs) == 12
    assert all(set(s.split(",")) == {"balance_sheet", "income_statement", "cash_flow"} for _, s in docs), docs


def test_identities_hold_on_every_filing(db):
    summary = run_checks(db)
    failed = [r for r in summary.results if not r.passed]
    assert not failed, failed
    assert summary.status == "passed" and summary.score == 1.0
    assert {r.doc_name for r in summary.results} == {d for (d,) in db.execute("SELECT doc_name FROM documents").fetchall()}
    assert len(summary.results) >= 80
    # General Mills's redeemable interest sits between liabilities and equity: without it the identity fails
    gm = [r for r in summary.results if r.doc_name == "GENERALMILLS_2020_10K" and r.name == "assets = liabilities + equity"]
    assert gm and all("GENERALMILLS_2020_10K:p50:l30" in " ".join(r.fact_ids) or len(r.fact_ids) == 4 for r in gm)


def test_checks_are_inconclusive_when_nothing_was_extracted(db):
    summary = run_checks(db, documents=["NO_SUCH_DOCUMENT"])
    assert (summary.status, summary.score, summary.results) == ("inconclusive", 0.0, [])


def test_per_share_and_share_counts_are_not_scaled(db):
    eps = db.execute("SELECT amount, value, unit, scale FROM facts WHERE doc_name = 'MICROSOFT_2016_10K' "
                     "AND concept = 'eps_diluted' AND period_label = 'FY2016'").fetchone()
    assert eps == (2.1, 2.1, "USD/share", 1.0)
    shares = db.execute("SELECT value, unit FROM facts WHERE doc_name = 'MICROSOFT_2016_10K' AND page = 52 "
                        "AND label = 'Diluted' AND unit = 'shares' AND period_label = 'FY2016'").fetchone()
    assert shares == (8013e6, "shares")


@pytest.mark.parametrize("token,amount", [("(1,577)", -1577.0), ("$ 2,853", 2853.0), ("5,121.3", 5121.3), ("—", 0.0),
                                          ("$(16,135)", -16135.0), ("12.5%", 12.5)])
def test_number_tokens(token, amount):
    assert parse_number(token).amount == amount


def test_words_and_unbalanced_parentheses_are_not_numbers():
    assert parse_number("Goodwill") is None and parse_number("(1,577") is None and parse_number("2018:") is None


@pytest.mark.parametrize("caption,scale", [("(Dollars in millions, except per share amount)", 1e6), ("(Millions)", 1e6),
                                           ("(In thousands, except per share data)", 1e3), ("$ in millions", 1e6),
                                           ("(Millions, except per share amounts)", 1e6), ("Net sales 2018", 1.0)])
def test_scale_captions(caption, scale):
    assert detect_scale(caption)[1] == scale


@pytest.mark.parametrize("fact_id", ["3M_2018_10K:p60:l24:c0", "NETFLIX_2017_10K:p45:l24:c0", "GENERALMILLS_2020_10K:p50:l11:c1"])
def test_the_stored_bounding_box_is_the_printed_number(db, fact_id):
    import pdfplumber

    from tests.plugins.finance.conftest import FILINGS

    doc, page, raw, x0, top, x1, bottom = db.execute(
        "SELECT doc_name, page, raw_value, x0, top, x1, bottom FROM facts WHERE fact_id = ?", [fact_id]).fetchone()
    with pdfplumber.open(FILINGS / f"{doc}.pdf") as pdf:
        cell = pdf.pages[page - 1].dedupe_chars(extra_attrs=()).within_bbox((x0 - 0.5, top - 0.5, x1 + 0.5, bottom + 0.5))
        assert cell.extract_text().replace(" ", "") == raw.replace(" ", "")
