"""Bad documents: each gets a clear per-document error and the good filings next to them are still ingested."""

from __future__ import annotations

import shutil

import matplotlib
import numpy as np
import pytest

from plugins.finance.extract import deduped_page_text
from plugins.finance.ingest import ingest
from plugins.finance.store import connect
from tests.plugins.finance.conftest import FILINGS, PDFS, need_data

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after choosing the non-interactive back end


def scanned_pdf(path):
    """A one-page PDF whose only content is a raster image of a statement (no text layer)."""
    fig = plt.figure(figsize=(8.5, 11))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.axis("off")
    ax.text(0.1, 0.9, "CONSOLIDATED BALANCE SHEETS   Total assets   $ 1,234", fontsize=14, rasterized=True)
    ax.imshow(np.random.default_rng(0).random((40, 40)), extent=(0.1, 0.9, 0.1, 0.8), rasterized=True)
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, finance_cache):
    """Bad documents interleaved with two good filings, ingested into one database."""
    need_data()
    base = tmp_path_factory.mktemp("bad")
    good = FILINGS / "NETFLIX_2017_10K.pdf"
    truncated = base / "NETFLIX_truncated.pdf"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    not_pdf = base / "notes.pdf"
    not_pdf.write_text("Total assets 1,234\n")
    paths = [
        PDFS / "password-example.pdf", good, truncated, scanned_pdf(base / "scanned.pdf"), PDFS / "malformed-from-issue-932.pdf",
        PDFS / "issue-71-duplicate-chars.pdf", PDFS / "issue-842-example.pdf", not_pdf, base / "missing.pdf",
        FILINGS / "ULTABEAUTY_2023Q4_EARNINGS.pdf",
    ]
    con = connect(base / "f.duckdb")
    statuses = {s.doc_name: s for s in ingest(con, paths, finance_cache)}
    yield statuses, con
    con.close()


@pytest.mark.parametrize("name,words", [
    ("password-example", ["encrypted", "unencrypted copy"]),
    ("NETFLIX_truncated", ["not a readable PDF", "truncated or corrupt"]),
    ("scanned", ["no page has a text layer", "OCR"]),
    ("notes", ["not a readable PDF"]),
    ("missing", ["No such file", "task folder"]),
])
def test_each_bad_document_gets_a_clear_error(mixed, name, words):
    statuses, con = mixed
    status = statuses[name]
    assert status.status == "error" and status.facts == 0
    assert all(w in status.error for w in words), status.error
    row = con.execute("SELECT status, error FROM documents WHERE doc_name = ?", [name]).fetchone()
    assert row == ("error", status.error)
    assert con.execute("SELECT count(*) FROM facts WHERE doc_name = ?", [name]).fetchone()[0] == 0


@pytest.mark.parametrize("name", ["issue-71-duplicate-chars", "issue-842-example"])
def test_readable_documents_without_statements_stay_searchable(mixed, name):
    statuses, con = mixed
    assert statuses[name].status == "no_statements" and "no income statement" in statuses[name].error
    assert con.execute("SELECT count(*) FROM pages WHERE doc_name = ?", [name]).fetchone()[0] == statuses[name].pages >= 1


def test_a_damaged_pdf_that_pdfium_opens_says_it_is_damaged_and_what_to_do(mixed):
    statuses, con = mixed
    status = statuses["malformed-from-issue-932"]  # its page box is written upside down ([0 841.68 631.08 0])
    assert status.status == "damaged" and "the PDF is damaged" in status.error and "page box inverted" in status.error
    assert "repair it" in status.error and "qpdf" in status.error and status.facts == 0
    assert con.execute("SELECT status FROM documents WHERE doc_name = 'malformed-from-issue-932'").fetchone()[0] == "damaged"
    assert con.execute("SELECT count(*) FROM pages WHERE doc_name = 'malformed-from-issue-932'").fetchone()[0] == 1  # searchable
    for name in ("NETFLIX_2017_10K", "issue-71-duplicate-chars", "issue-842-example"):  # sound files show no sign
        assert statuses[name].status != "damaged"


def test_good_filings_around_bad_ones_are_ingested(mixed):
    statuses, con = mixed
    for name in ("NETFLIX_2017_10K", "ULTABEAUTY_2023Q4_EARNINGS"):
        assert statuses[name].status == "ok" and statuses[name].facts > 100
    value = con.execute("SELECT value FROM facts WHERE doc_name = 'NETFLIX_2017_10K' AND concept = 'total_assets' "
                        "AND period_label = '2017-12-31'").fetchone()[0]
    assert value == 19_012_742_000


def test_bold_text_drawn_twice_reads_once(tmp_path):
    need_data()
    raw = (PDFS / "issue-842-example.pdf")
    text = deduped_page_text(raw, 1)
    assert "安徽安利合成革股份有限公司" in text and "安安" not in text
    assert "项目描述" in deduped_page_text(PDFS / "issue-71-duplicate-chars.pdf", 1)
    copy = shutil.copy(raw, tmp_path / "x.pdf")
    with pytest.raises(Exception, match="pages 1-1, not 5"):
        deduped_page_text(copy, 5)


def test_linear_dedupe_matches_pdfplumber_on_doubled_pdfs():
    import pdfplumber

    from plugins.finance.extract import dedupe_chars

    need_data()
    for name in ("issue-842-example.pdf", "issue-71-duplicate-chars.pdf"):
        with pdfplumber.open(PDFS / name) as pdf:
            page = pdf.pages[0]
            ours = sorted(c["text"] for c in dedupe_chars(page.chars))
            theirs = sorted(c["text"] for c in page.dedupe_chars(extra_attrs=()).chars)
            # the same characters survive (each copy within 1 pt of the one pdfplumber keeps)
            assert ours == theirs and len(ours) < len(page.chars)
