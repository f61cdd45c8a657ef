"""search_filing's ranking on real questions: does the gold evidence page come first?

    .venv/bin/python bench/finance_search.py            # every question of filings/ and financebench/
    .venv/bin/python bench/finance_search.py --quick    # the 24 questions of filings/ only (CI)

For every FinanceBench question in ``../shared/data/filings/questions.jsonl`` and
``../shared/data/financebench/questions.jsonl``, the question's text is the query and its filing's
pages the corpus (PDFium text, as ingestion stores it); the gold page is the question's first
``evidence_page_num`` (0-based there, 1-based here). Two rankings are compared on the same pages:

- before: the former search_filing, pages containing every query word (case-insensitive
  substring), in page order;
- after: ``plugins.finance.search.rank_pages`` (BM25, stop words dropped, Snowball stems).

Printed: for each ranking, how many gold pages are first, in the top 5, in the top 10, and not
returned at all, plus the median milliseconds of a first query (which builds the index) and of a
second query over the same pages (the index kept in memory, as the tool keeps it). The question
text is a long query; "before" needed every word on one page, which a whole question almost
never is: it shows what a model asking in words got, not the best the old tool could do with
hand-picked keywords. The table is the result; nothing is asserted beyond the run completing with at least one
question (exit status 1 when the data folder is missing pages or a question cannot be read).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pypdfium2
from rich.console import Console
from rich.table import Table

from plugins.finance.extract import page_texts
from plugins.finance.search import query_words, rank_pages

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def all_words_in_page_order(pages: list[tuple[str, int, str]], query: str, limit: int) -> list[int]:
    """The former search: pages containing every word of the query, in page order."""
    words = [w.lower() for w in query.split()]
    return [page for _, page, text in pages if all(w in text.lower() for w in words)][:limit]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="only filings/ (24 questions)")
    options = parser.parse_args()
    sets = ["filings"] if options.quick else ["filings", "financebench"]
    if not all((DATA / s / "questions.jsonl").is_file() for s in sets):
        print(f"no FinanceBench data at {DATA} (../shared/data next to the repository): nothing to measure")
        return 0
    console = Console()
    ranks: dict[str, list[int | None]] = {"before": [], "after": []}
    times: list[float] = []
    warm: list[float] = []
    texts: dict[Path, list[str]] = {}
    for name in sets:
        for line in (DATA / name / "questions.jsonl").read_text().splitlines():
            question = json.loads(line)
            evidence = question.get("evidence") or []
            pdf = DATA / name / f"{question['doc_name']}.pdf"
            if not evidence or not pdf.is_file():
                continue
            if pdf not in texts:
                texts[pdf] = page_texts(pypdfium2.PdfDocument(str(pdf)))
            pages = [(question["doc_name"], i + 1, t) for i, t in enumerate(texts[pdf])]
            gold = int(evidence[0]["evidence_page_num"]) + 1
            before = all_words_in_page_order(pages, question["question"], 50)
            started = time.perf_counter()
            hits = rank_pages(pages, question["question"], 50)
            times.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            rank_pages(pages, " ".join(query_words(question["question"])[:3]), 50)  # another query, same pages
            warm.append((time.perf_counter() - started) * 1000)
            for label, order in (("before", before), ("after", [h.page for h in hits])):
                ranks[label].append(order.index(gold) + 1 if gold in order else None)
    if not times:
        print("no question with an evidence page was read")
        return 1
    table = Table(title=f"search_filing: rank of the gold evidence page ({len(times)} questions, {', '.join(sets)})")
    for column in ("ranking", "first", "top 5", "top 10", "not returned"):
        table.add_column(column, justify="right" if column != "ranking" else "left")
    for label, found in ranks.items():
        table.add_row(label, *(str(sum(1 for r in found if r is not None and r <= k)) for k in (1, 5, 10)),
                      str(sum(1 for r in found if r is None)))  # fmt: skip
    console.print(table)
    console.print(f"BM25 query time over one filing: first query (builds the index) median {statistics.median(times):.1f} ms, "
                  f"max {max(times):.1f} ms; next query on the same pages median {statistics.median(warm):.1f} ms "
                  f"({len(texts)} filings)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
