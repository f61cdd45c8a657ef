"""Concept mapping by meaning, signs by polarity and periods of every filing type, on real filings.

The filings are FinanceBench's (``../shared/data/financebench/``), which the mapping was not fitted
to; the 12 original filings come from the session's ``filings_db``. Expected amounts were read off
the PDF pages named (1-based) with PDFium's text.
"""

from __future__ import annotations

import pytest

from plugins.finance.checks import run_checks
from plugins.finance.concepts import KEY_CONCEPTS, LABELS, canonical, map_concept, polarity_sign
from plugins.finance.ingest import INGESTED, ingest
from plugins.finance.model import create_views
from plugins.finance.store import connect
from tests.plugins.finance.conftest import DATA, need_data

FINANCEBENCH = DATA / "financebench"
DOCS = ["AMD_2015_10K", "LOCKHEEDMARTIN_2020_10K", "AMCOR_2023Q4_EARNINGS", "AMCOR_2023Q2_10Q", "PEPSICO_2023Q1_EARNINGS",
        "JOHNSON_JOHNSON_2022Q4_EARNINGS", "AMCOR_2022_8K_dated-2022-07-01", "PEPSICO_2023_8K_dated-2023-05-05",
        "FOOTLOCKER_2022_8K_dated-2022-05-20", "CVSHEALTH_2022_10K"]


@pytest.fixture(scope="module")
def fb(tmp_path_factory, finance_cache):
    """A read-only database of the FinanceBench filings these tests read (ingested once)."""
    need_data()
    path = tmp_path_factory.mktemp("financebench") / "f.duckdb"
    con = connect(path)
    statuses = {s.doc_name: s.status for s in ingest(con, [FINANCEBENCH / f"{d}.pdf" for d in DOCS], finance_cache)}
    create_views(con)
    con.close()
    assert "error" not in statuses.values(), statuses
    con = connect(path, read_only=True)
    yield con
    con.close()


def _fact(con, doc, concept, period):
    rows = con.execute("SELECT label, amount, value, sign, normalised_value, page, months FROM facts "
                       "WHERE doc_name = ? AND concept = ? AND period_label = ?", [doc, concept, period]).fetchall()
    assert len(rows) == 1, (doc, concept, period, rows)
    return dict(zip(["label", "amount", "value", "sign", "normalised_value", "page", "months"], rows[0]))


# -- the labels the fitted patterns missed (issue 16), as printed by new filers -----------------

@pytest.mark.parametrize("label,statement,concept", [
    ("Loss from operations", "income_statement", "operating_income"),
    ("Net loss", "income_statement", "net_income"),
    ("Consolidated net income attributable to Amcor plc", "income_statement", "net_income"),
    ("Net cash provided by/(used in) operating activities", "cash_flow", "operating_cash_flow"),
    ("Net Cash (Used for)/Provided by Financing Activities", "cash_flow", "financing_cash_flow"),
    ("Payments to acquire property, plant and equipment", "cash_flow", "capital_expenditure"),
    ("Inventories, net (Note 6)", "balance_sheet", "inventory"),
    ("Net income attributable to non\ufffecontrolling interests", "income_statement", "net_income_nci"),
    ("Net earnings, including earnings attributable to redeemable and noncontrolling interests", "income_statement",
     "net_income_including_nci"),
    ("Total 3M Company shareholders’ equity", "balance_sheet", "equity_parent"),
    ("Total liabilities and stockholders’ equity (deficit)", "balance_sheet", "total_liabilities_and_equity"),
    ("Cash, cash equivalents and restricted funds at end of period", "cash_flow", "cash_end_of_period"),
    ("Earnings per share attributable to 3M common shareholders — diluted", "income_statement", "eps_diluted"),
])
def test_labels_map_by_meaning(label, statement, concept):
    assert map_concept(label, statement) == concept


def test_a_label_maps_only_on_its_own_statement_and_unrelated_lines_stay_unmapped():
    assert map_concept("Total assets", "income_statement") is None
    assert map_concept("Loss before income taxes", "income_statement") is None
    assert map_concept("Net loss on disposal of property, plant and equipment", "cash_flow") is None
    assert map_concept("Other operating activities", "cash_flow") is None


def test_profit_or_loss_wording_gives_the_sign():
    assert canonical("Loss from operations").sense == "negative"
    assert canonical("Operating income (loss)").sense == "both"
    # a loss printed without parentheses under a loss-only label is negative; in parentheses it already is
    assert polarity_sign("operating_income", canonical("Loss from operations"), [120.0, 80.0]) == -1
    assert polarity_sign("net_income", canonical("Net loss"), [-660.0, -403.0]) == 1
    # a signed concept under a two-sided label keeps the printed sign, even when every year is a loss
    assert polarity_sign("net_income", canonical("Net income (loss)"), [-5.0, -7.0]) == 1


def test_the_dictionary_is_complete_and_well_formed():
    assert len(KEY_CONCEPTS) == 24
    for concept, info in LABELS.items():
        assert info["statement"] in ("income_statement", "balance_sheet", "cash_flow"), concept
        assert info["balance"] in ("debit", "credit") and isinstance(info["signed"], bool), concept
        assert info["standard_label"] and info["element"], concept


# -- signs on real pages ----------------------------------------------------------------------

def test_a_cost_in_parentheses_and_a_cost_printed_plain_get_the_same_sign(fb):
    lmt = _fact(fb, "LOCKHEEDMARTIN_2020_10K", "cost_of_revenue", "FY2020")   # p67 "Total cost of sales (56,744)"
    amd = _fact(fb, "AMD_2015_10K", "cost_of_revenue", "FY2015")              # p56 "Cost of sales 2,911"
    assert (lmt["amount"], lmt["page"], amd["amount"], amd["page"]) == (-56744, 67, 2911, 56)
    assert lmt["normalised_value"] == 56744e6 and amd["normalised_value"] == 2911e6
    assert (lmt["sign"], amd["sign"]) == (-1, 1)
    assert lmt["value"] == -56744e6  # the printed value is kept beside the normalised one


def test_identities_use_the_normalised_cost(fb):
    # Amcor's earnings release prints cost of sales in parentheses: revenue - cost = gross profit only once normalised
    summary = run_checks(fb, ["AMCOR_2023Q4_EARNINGS"])
    gross = [r for r in summary.results if r.name == "gross profit = revenue - cost of revenue"]
    assert len(gross) == 4 and all(r.passed for r in gross), gross
    fy = next(r for r in gross if r.period_label == "FY2023")
    assert (fy.lhs, fy.rhs) == (pytest.approx(2725e6), pytest.approx(14694e6 - 11969e6))
    assert " + {AMCOR_2023Q4_EARNINGS:p8:" in fy.rhs_formula  # revenue - (-cost) over the printed values


def test_free_cash_flow_subtracts_the_payment_whichever_way_it_was_printed(db):
    cf = db.execute("SELECT operating_cash_flow, capital_expenditure, free_cash_flow FROM cash_flow "
                    "WHERE doc_name = '3M_2018_10K' AND period_label = 'FY2018'").fetchone()
    assert cf == (pytest.approx(6439e6), pytest.approx(1577e6), pytest.approx(4862e6))  # p60: capex printed "(1,577)"


def test_net_loss_and_operating_loss_keep_a_negative_sign(fb):
    loss = _fact(fb, "AMD_2015_10K", "net_income", "FY2015")       # p56 "Net loss $ (660)"
    op = _fact(fb, "AMD_2015_10K", "operating_income", "FY2015")    # p56 "Operating income (loss) (481)"
    assert (loss["label"], loss["normalised_value"]) == ("Net loss", -660e6)
    assert op["normalised_value"] == -481e6 and _fact(fb, "AMD_2015_10K", "operating_income", "FY2013")["normalised_value"] == 103e6


def test_diluted_earnings_per_share_under_its_caption(fb):
    # CVS p108: "Diluted earnings per share:" over continuing, discontinued and "Net income attributable to CVS Health 3.14"
    eps = _fact(fb, "CVSHEALTH_2022_10K", "eps_diluted", "FY2022")
    assert (eps["label"], eps["amount"], eps["page"]) == ("Net income attributable to CVS Health", 3.14, 108)
    assert fb.execute("SELECT concept FROM facts WHERE doc_name = 'CVSHEALTH_2022_10K' AND label = 'Dividends declared per share' "
                      "AND column_index = 0").fetchone() == (None,)


# -- attribution ------------------------------------------------------------------------------

def test_attribution_lines_are_kept_apart(db):
    got = dict(db.execute("SELECT concept, amount FROM facts WHERE doc_name = '3M_2018_10K' AND period_label IN ('FY2018', '2018-12-31') "
                          "AND concept IN ('net_income', 'net_income_including_nci', 'net_income_nci', 'total_equity', 'equity_parent')").fetchall())
    # p56: net income including NCI 5,363; attributable to NCI 14; attributable to 3M 5,349
    # p58: total 3M Company shareholders' equity 9,796; total equity 9,848
    assert got == {"net_income_including_nci": 5363, "net_income_nci": 14, "net_income": 5349,
                   "equity_parent": 9796, "total_equity": 9848}


def test_parent_and_noncontrolling_profit_on_a_quarterly_report(fb):
    parent = _fact(fb, "AMCOR_2023Q2_10Q", "net_income", "3M 2022-12-31")
    nci = _fact(fb, "AMCOR_2023Q2_10Q", "net_income_nci", "3M 2022-12-31")
    assert "attributable to Amcor" in parent["label"] and "non" in nci["label"].lower()
    assert parent["normalised_value"] > 0 and nci["normalised_value"] != parent["normalised_value"]


# -- periods ----------------------------------------------------------------------------------

def test_an_earnings_release_with_dates_printed_as_digits(fb):
    # PepsiCo Q1 2023 release p4: "12 Weeks Ended" over "3/25/2023 3/19/2022"; net revenue 17,846 and 16,200
    now = _fact(fb, "PEPSICO_2023Q1_EARNINGS", "revenue", "3M 2023-03-25")
    before = _fact(fb, "PEPSICO_2023Q1_EARNINGS", "revenue", "3M 2022-03-19")
    assert (now["amount"], now["months"], now["page"], before["amount"]) == (17846, 3, 4, 16200)


def test_a_fourth_quarter_column_is_three_months(fb):
    # Johnson & Johnson's release p10: "FOURTH QUARTER 2022 2021", sales to customers 23,706 and 24,804
    rows = fb.execute("SELECT period_label, months, amount FROM facts WHERE doc_name = 'JOHNSON_JOHNSON_2022Q4_EARNINGS' "
                      "AND concept = 'revenue' ORDER BY amount").fetchall()
    assert rows == [("Q4 2022", 3, 23706), ("Q4 2021", 3, 24804)]


def test_quarter_and_year_columns_side_by_side(fb):
    # Amcor's Q4 release p8: three months and twelve months ended June 30, 2022 and 2023
    got = {r[0]: r[1:] for r in fb.execute(
        "SELECT period_label, months, period_end, amount FROM facts WHERE doc_name = 'AMCOR_2023Q4_EARNINGS' "
        "AND concept = 'revenue'").fetchall()}
    assert {k: (m, a) for k, (m, _, a) in got.items()} == {
        "3M 2022-06-30": (3, 3909), "3M 2023-06-30": (3, 3673), "FY2022": (12, 14544), "FY2023": (12, 14694)}
    assert str(got["FY2023"][1]) == "2023-06-30"


def test_quarter_and_year_to_date_columns_of_a_10q(fb):
    months = dict(fb.execute("SELECT period_label, min(months) FROM facts WHERE doc_name = 'AMCOR_2023Q2_10Q' "
                             "AND statement = 'income_statement' GROUP BY 1").fetchall())
    assert months == {"3M 2021-12-31": 3, "3M 2022-12-31": 3, "6M 2021-12-31": 6, "6M 2022-12-31": 6}
    bs = fb.execute("SELECT DISTINCT period_label, months FROM facts WHERE doc_name = 'AMCOR_2023Q2_10Q' "
                    "AND statement = 'balance_sheet' ORDER BY 1").fetchall()
    assert bs == [("2022-06-30", None), ("2022-12-31", None)]  # "as of" dates: instants


def test_current_reports_without_statements_store_no_values(fb):
    # the three 8-Ks are a notes indenture and two shareholder-vote reports: no statement, no fabricated period
    rows = fb.execute("SELECT doc_name, status FROM documents WHERE doc_name LIKE '%8K%' ORDER BY 1").fetchall()
    assert [s for _, s in rows] == ["no_statements"] * 3
    # other tables' values (a vote tally, a maturity schedule) may be stored, but nothing as a statement line
    assert fb.execute("SELECT count(*) FROM facts WHERE doc_name LIKE '%8K%' AND statement NOT LIKE 'table:%'").fetchone()[0] == 0
    assert fb.execute("SELECT count(*) FROM facts WHERE doc_name LIKE '%8K%' AND concept IS NOT NULL").fetchone()[0] == 0


def test_two_statements_on_one_page_are_parsed_apart():
    # Amcor's Q4 release p9: the cash-flow statement, then "U.S. GAAP Condensed Consolidated Balance Sheets" below it
    import pdfplumber

    from plugins.finance.extract import parse_statement_page

    need_data()
    with pdfplumber.open(FINANCEBENCH / "AMCOR_2023Q4_EARNINGS.pdf") as pdf:
        cols, items, _ = parse_statement_page(pdf.pages[8], 9, "balance_sheet")
        cf_cols, cf_items, _ = parse_statement_page(pdf.pages[8], 9, "cash_flow")
    assert [c.label for c in cols] == ["2022-06-30", "2023-06-30"]
    total = next(i for i in items if i.label == "Total assets")
    assert [v[1] for v in total.values] == ["17,426", "17,003"] and items[0].label == "Cash and cash equivalents"
    assert [c.months for c in cf_cols] == [12, 12]
    assert cf_items[-1].label == "Cash and cash equivalents at the end of the period"  # the balance sheet is not read as cash flows
    assert total.line_no > cf_items[-1].line_no  # line numbers still count from the page's top


# -- headers the filings above do not print: generated pages (matplotlib, real text) -------------

def _statement_pdf(path, header_rows, lines):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backends.backend_pdf import PdfPages

    with matplotlib.rc_context({"pdf.fonttype": 42}), PdfPages(path) as pdf:
        fig = plt.figure(figsize=(8.5, 11))
        ax = fig.add_axes((0, 0, 1, 1))
        ax.axis("off")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        y = 0.95
        for text in ("CONDENSED CONSOLIDATED STATEMENTS OF OPERATIONS", "(In millions)"):
            ax.text(0.5, y, text, ha="center", fontsize=11)
            y -= 0.025
        for cells in header_rows:
            for x, text in cells:
                ax.text(x, y, text, ha="right", fontsize=9)
            y -= 0.02
        for label, *values in lines:
            ax.text(0.06, y, label, fontsize=10)
            for x, v in zip((0.5, 0.64, 0.8), values):
                ax.text(x, y, v, ha="right", fontsize=10)
            y -= 0.022
        pdf.savefig(fig)
        plt.close(fig)


LINES = [("Revenue", "100", "120", "220"), ("Cost of revenue", "(60)", "(70)", "(130)"), ("Gross profit", "40", "50", "90"),
         ("Operating expenses", "30", "30", "60"), ("Loss from operations", "5", "8", "13"), ("Other income", "1", "1", "2"),
         ("Net loss", "4", "7", "11"), ("Net loss per share, diluted", "(0.04)", "(0.07)", "(0.11)")]


def test_quarters_named_over_one_year_become_separate_columns(tmp_path):
    # the 8-K layout of issue 16: "Q1  Q2  Six Months" under a single "2023" once made one FY2023 column
    path = tmp_path / "NAMED_2023_8K.pdf"
    _statement_pdf(path, [[(0.64, "2023")], [(0.5, "Q1"), (0.64, "Q2"), (0.8, "Six Months")]], LINES)
    con = connect(tmp_path / "f.duckdb")
    assert ingest(con, [path], tmp_path / "cache")[0].status in INGESTED  # one statement alone: ok_with_warnings
    got = {r[0]: r[1:] for r in con.execute("SELECT period_label, months, amount FROM facts WHERE concept = 'revenue'").fetchall()}
    assert got == {"Q1 2023": (3, 100), "Q2 2023": (3, 120), "6M 2023": (6, 220)}
    cost = con.execute("SELECT amount, normalised_value FROM facts WHERE concept = 'cost_of_revenue' AND period_label = 'Q2 2023'").fetchone()
    assert cost == (-70, 70e6)
    # "Loss from operations 5" and "Net loss 4" printed without parentheses are losses
    signed = dict(con.execute("SELECT concept, normalised_value FROM facts WHERE period_label = 'Q1 2023' "
                              "AND concept IN ('operating_income', 'net_income')").fetchall())
    assert signed == {"operating_income": -5e6, "net_income": -4e6}
    con.close()


def test_restated_and_reported_columns_stay_apart(tmp_path):
    path = tmp_path / "RESTATED_2023_10K.pdf"
    _statement_pdf(path, [[(0.5, "2023"), (0.64, "2022"), (0.8, "2022")], [(0.64, "As Restated"), (0.8, "As Reported")]], LINES)
    con = connect(tmp_path / "f.duckdb")
    assert ingest(con, [path], tmp_path / "cache")[0].status in INGESTED  # one statement alone: ok_with_warnings
    got = dict(con.execute("SELECT period_label, amount FROM facts WHERE concept = 'revenue'").fetchall())
    assert got == {"FY2023": 100, "FY2022 (restated)": 120, "FY2022 (as reported)": 220}
    con.close()
