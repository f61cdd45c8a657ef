"""A statement that runs over two pages is joined, each value keeping its own page.

None of the twelve filings splits a main statement across pages, so the input is generated: a
three-page PDF drawn with matplotlib (real text, TrueType fonts) whose balance sheet starts on
page 2 and ends on page 3 under a "(continued)" title.
"""

from __future__ import annotations

import matplotlib
import numpy as np
import pytest

from plugins.finance.checks import run_checks
from plugins.finance.ingest import ingest
from plugins.finance.store import connect

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.backends.backend_pdf import PdfPages  # after choosing the non-interactive back end

FIRST = [("Current assets:", None, None), ("Cash and cash equivalents", "100", "90"), ("Receivables", "50", "40"),
         ("Inventories", "30", "35"), ("Total current assets", "180", "165"), ("Property and equipment, net", "200", "210"),
         ("Goodwill", "20", "20"), ("Total assets", "$ 400", "$ 395"), ("Current liabilities:", None, None),
         ("Accounts payable", "60", "55"), ("Accrued liabilities", "(5)", "10")]
SECOND = [("Total current liabilities", "55", "65"), ("Long-term debt", "145", "140"), ("Total liabilities", "200", "205"),
          ("Common stock", "10", "10"), ("Retained earnings", "190", "180"), ("Total equity", "200", "190"),
          ("Total liabilities and equity", "$ 400", "$ 395"), ("Memo: employees (thousands)", "1", "1")]


def _page(pdf: PdfPages, title: str, lines: list) -> None:
    fig = plt.figure(figsize=(8.5, 11))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.axis("off")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    y = 0.95
    for text in (title, "(In millions)"):
        ax.text(0.5, y, text, ha="center", fontsize=11)
        y -= 0.025
    ax.text(0.62, y, "2024", ha="right", fontsize=10)
    ax.text(0.8, y, "2023", ha="right", fontsize=10)
    for label, a, b in lines:
        y -= 0.022
        ax.text(0.06, y, label, fontsize=10)
        if a is not None:
            ax.text(0.62, y, a, ha="right", fontsize=10)
            ax.text(0.8, y, b, ha="right", fontsize=10)
    pdf.savefig(fig)
    plt.close(fig)


@pytest.fixture
def two_page_statement(tmp_path):
    path = tmp_path / "SPLIT_2024_10K.pdf"
    with matplotlib.rc_context({"pdf.fonttype": 42}), PdfPages(path) as pdf:
        _page(pdf, "Annual report", [("Front matter", None, None)])
        _page(pdf, "CONSOLIDATED BALANCE SHEETS", FIRST)
        _page(pdf, "CONSOLIDATED BALANCE SHEETS (continued)", SECOND)
    return path


def test_a_statement_over_two_pages_is_joined(two_page_statement, tmp_path):
    con = connect(tmp_path / "f.duckdb")
    status = ingest(con, [two_page_statement], tmp_path / "cache")[0]
    # values stored, with a warning: a filing of only a balance sheet lacks the other two statements
    assert status.status == "ok_with_warnings" and "income_statement not located" in status.error and "cash_flow not located" in status.error
    assert con.execute("SELECT pages FROM statement_locations WHERE statement = 'balance_sheet'").fetchone()[0] == "2,3"
    got = dict(con.execute("SELECT concept, page FROM facts WHERE period_label = 'FY2024' AND concept IS NOT NULL").fetchall())
    assert got["total_assets"] == 2 and got["total_liabilities_and_equity"] == 3 and got["total_equity"] == 3
    assert con.execute("SELECT amount FROM facts WHERE label = 'Accrued liabilities' AND column_index = 0").fetchone()[0] == -5
    summary = run_checks(con)
    assert summary.status == "passed" and len(summary.results) == 4  # two identities x two years, each spanning both pages
    con.close()



def test_a_scanned_page_inside_a_filing_is_named_and_the_rest_is_read(tmp_path):
    path = tmp_path / "MIXED_2024_10K.pdf"
    with matplotlib.rc_context({"pdf.fonttype": 42}), PdfPages(path) as pdf:
        fig = plt.figure(figsize=(8.5, 11))
        ax = fig.add_axes((0, 0, 1, 1))
        ax.axis("off")
        ax.imshow(np.random.default_rng(1).random((60, 45)), rasterized=True)  # a page that is only an image
        pdf.savefig(fig)
        plt.close(fig)
        _page(pdf, "CONSOLIDATED BALANCE SHEETS", FIRST)
        _page(pdf, "CONSOLIDATED BALANCE SHEETS (continued)", SECOND)
    con = connect(tmp_path / "f.duckdb")
    status = ingest(con, [path], tmp_path / "cache")[0]
    assert status.status == "ok_with_warnings" and status.facts > 20  # warned: no income or cash-flow statement
    assert status.note == "1 page(s) have no text layer (scanned?) and were not read: 1; OCR them to include them"
    assert con.execute("SELECT note FROM documents").fetchone()[0] == status.note
    con.close()
