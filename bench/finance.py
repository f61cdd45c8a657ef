"""Filing ingestion speed against bare pdfplumber, and query time of the statement views.

    .venv/bin/python bench/finance.py [--docs NAME ...] [--all] [--repeat 20]
    .venv/bin/python bench/finance.py --quick      # ULTABEAUTY_2023Q4_EARNINGS (9 pages), 3 repeats (CI)

1. Whole documents: Horizon's ingestion (PDFium text of every page, pdfplumber words and tables
   on the statement pages, PDFium characters on the pages the table pass picks, DuckDB writes),
   uncached, against bare pdfplumber ``extract_text`` + ``extract_tables`` on every page of the
   same files. Pages per second counts every page of the document for both. Target (issue 29):
   ingestion at most 0.3x bare's time.
2. Statement pages only: ingestion's pdfplumber pass (de-duplication, words, the line parser,
   tables: ``extract_statements``) against bare text + tables on the same pages.
3. Table pages only: the pages the cheap pass picks (``tables.table_pages``: lines ending in two
   or more numbers in the PDFium text), how long ingestion's table pass takes on them
   (``tables.extract_tables``: PDFium characters, de-duplication, words, columns, labels, classes)
   and bare text + tables on the same pages, side by side.
4. Re-ingestion from the parse cache (same bytes, another run).
5. Query time of the views ``income_statement``, ``balance_sheet``, ``cash_flow`` and
   ``metrics`` over the ingested documents (median of ``--repeat`` runs).

Reads ../shared/data/filings/ next to the repository (``--docs`` also takes the names of
../shared/data/financebench/). By default three filings (85 + 73 + 9
pages) keep the bare-pdfplumber pass to about a minute on 2 cores; ``--all`` takes all twelve.
Without that folder the benchmark says so and exits 0 (nothing to measure); otherwise the exit
status is non-zero when it breaks: a filing whose ingestion ends in ``error``, a re-ingestion
that does not come from the cache, statement views without a row, or an exception. The speed
target is reported, not asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pdfplumber
from rich.console import Console
from rich.table import Table

from plugins.finance.extract import extract_statements, locate_statements, open_document, page_texts
from plugins.finance.ingest import INGESTED, ingest
from plugins.finance.model import create_views
from plugins.finance.store import connect
from plugins.finance.tables import extract_tables

FILINGS = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "filings"
DEFAULT = ["AMAZON_2017_10K", "NETFLIX_2017_10K", "ULTABEAUTY_2023Q4_EARNINGS"]
QUICK = ["ULTABEAUTY_2023Q4_EARNINGS"]


def _find(name: str) -> Path:
    """A filing by name, in filings/ or else in financebench/ (the 27 FinanceBench filings)."""
    path = FILINGS / f"{name}.pdf"
    other = FILINGS.parent / "financebench" / f"{name}.pdf"
    return other if not path.is_file() and other.is_file() else path


def bare_pdfplumber(path: Path, pages: list[int] | None = None) -> tuple[int, float]:
    """Text and tables of every page (or of ``pages``, 1-based) with plain pdfplumber; (pages, seconds)."""
    start = time.perf_counter()
    with pdfplumber.open(path) as pdf:
        chosen = [pdf.pages[i - 1] for i in pages] if pages else pdf.pages
        for page in chosen:
            page.extract_text()
            page.extract_tables()
        count = len(chosen)
    return count, time.perf_counter() - start


def main() -> None:
    """Parse the arguments, ingest and query the filings, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--docs", nargs="*", default=None, help="filing names (without .pdf)")
    parser.add_argument("--all", action="store_true", help="all twelve filings")
    parser.add_argument("--repeat", type=int, default=None, help="runs per view query (default 20)")
    parser.add_argument("--quick", action="store_true", help=f"{', '.join(QUICK)} only, 3 runs per view query (CI)")
    args = parser.parse_args()
    docs = args.docs or (QUICK if args.quick else DEFAULT)
    args.repeat = args.repeat or (3 if args.quick else 20)
    if not FILINGS.is_dir():
        print(f"skipped: {FILINGS.resolve()} not found; the benchmark reads the shared filings next to the repository "
              "(../shared/data/filings)")
        return  # missing data, not a broken benchmark
    paths = sorted(FILINGS.glob("*.pdf")) if args.all else [_find(d) for d in docs]
    missing = [p.name for p in paths if not p.is_file()]
    if missing:
        print(f"skipped: {', '.join(missing)} not found in {FILINGS.resolve()}")
        return
    broken: list[str] = []
    console = Console(width=220)
    rows = []
    totals = {"pages": 0, "ingest": 0.0, "bare": 0.0, "st_pages": 0, "st_ingest": 0.0, "st_bare": 0.0, "cached": 0.0,
              "tb_pages": 0, "tb_ingest": 0.0, "tb_bare": 0.0, "tb_facts": 0}
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "bench.duckdb"
        con = connect(db)
        for path in paths:
            start = time.perf_counter()
            status = ingest(con, [path], Path(tmp) / "cache")[0]
            ingest_s = time.perf_counter() - start
            if status.status == "error":
                broken.append(f"{path.stem}: ingestion failed: {status.error}")
            start = time.perf_counter()
            again = ingest(con, [path], Path(tmp) / "cache")[0]
            cached_s = time.perf_counter() - start
            if status.status in INGESTED and not again.from_cache:
                broken.append(f"{path.stem}: the second ingestion did not come from the parse cache ({again})")
            texts = page_texts(open_document(path))
            located = locate_statements(texts)
            statement_pages = sorted({p for ps in located.values() for p in ps})
            pages, bare_s = bare_pdfplumber(path)
            _, st_bare_s = bare_pdfplumber(path, statement_pages)
            start = time.perf_counter()  # ingestion's pdfplumber pass alone, on the same pages
            statements, _ = extract_statements(path, located, texts)
            st_ingest_s = time.perf_counter() - start
            start = time.perf_counter()  # the table pass alone, on the pages its cheap pass picks
            tables, table_pages = extract_tables(path, texts, {p for st in statements for p in st.pages})
            tb_ingest_s = time.perf_counter() - start
            _, tb_bare_s = bare_pdfplumber(path, table_pages) if table_pages else (0, 0.0)
            tb_facts = sum(len(v.values) for t in tables for v in t.lines)
            rows.append((path.stem, pages, status.facts, pages / ingest_s, pages / bare_s, ingest_s / bare_s,
                         len(statement_pages), st_ingest_s / st_bare_s, len(table_pages), tb_facts, tb_ingest_s, tb_bare_s, cached_s))
            for key, value in (("pages", pages), ("ingest", ingest_s), ("bare", bare_s), ("st_pages", len(statement_pages)),
                               ("st_ingest", st_ingest_s), ("st_bare", st_bare_s), ("cached", cached_s), ("tb_pages", len(table_pages)),
                               ("tb_ingest", tb_ingest_s), ("tb_bare", tb_bare_s), ("tb_facts", tb_facts)):
                totals[key] += value
        create_views(con)
        queries = {}
        for view in ("income_statement", "balance_sheet", "cash_flow", "metrics"):
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                n = len(con.execute(f"SELECT * FROM {view}").fetchall())
                times.append(time.perf_counter() - start)
            queries[view] = (n, statistics.median(times) * 1000)
            if view != "metrics" and n == 0 and any(r[2] for r in rows):
                broken.append(f"the {view} view has no rows although {sum(r[2] for r in rows)} facts were stored")
        con.close()
    table = Table(title="Ingestion vs bare pdfplumber (text + tables)")
    for column in ("document", "pages", "facts", "ingest pages/s", "bare pages/s", "time ratio", "statement pages",
                   "ratio on statement pages", "table pages", "table facts", "table pass s", "bare, same pages s",
                   "ratio on table pages", "cached re-ingest s"):
        table.add_column(column, justify="right")
    for name, pages, facts, ips, bps, ratio, spages, sratio, tpages, tfacts, tsec, tbare, cached in rows:
        tratio = f"{tsec / tbare:.2f}x" if tbare else "-"
        table.add_row(name, str(pages), str(facts), f"{ips:.1f}", f"{bps:.2f}", f"{ratio:.3f}x", str(spages), f"{sratio:.2f}x",
                      str(tpages), str(tfacts), f"{tsec:.2f}", f"{tbare:.2f}", tratio, f"{cached:.2f}")
    tb_ratio = f"{totals['tb_ingest'] / totals['tb_bare']:.2f}x" if totals["tb_bare"] else "-"
    table.add_row("all", str(totals["pages"]), "", f"{totals['pages'] / totals['ingest']:.1f}", f"{totals['pages'] / totals['bare']:.2f}",
                  f"{totals['ingest'] / totals['bare']:.3f}x", str(totals["st_pages"]), f"{totals['st_ingest'] / totals['st_bare']:.2f}x",
                  str(totals["tb_pages"]), str(totals["tb_facts"]), f"{totals['tb_ingest']:.2f}", f"{totals['tb_bare']:.2f}", tb_ratio,
                  f"{totals['cached']:.2f}")
    console.print(table)
    verdict = "met" if totals["ingest"] / totals["bare"] <= 0.3 else "missed"
    console.print(f"target: ingestion time at most 0.3x bare pdfplumber on the same files: {verdict}")
    qtable = Table(title=f"Statement views over {len(paths)} filings (median of {args.repeat})")
    for column in ("view", "rows", "ms"):
        qtable.add_column(column, justify="right")
    for view, (n, ms) in queries.items():
        qtable.add_row(view, str(n), f"{ms:.2f}")
    console.print(qtable)
    if broken:
        sys.exit("broken:\n  " + "\n  ".join(broken))


if __name__ == "__main__":
    main()
