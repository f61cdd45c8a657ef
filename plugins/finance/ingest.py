"""Ingesting filings into the filings database, one document at a time, cached by content hash.

A document that cannot be read (encrypted, truncated, corrupt, no text layer) gets a
``documents`` row with status ``error`` and a message saying what was wrong and what to do;
the other documents are ingested regardless. A readable document in which no main statement is
recognised gets status ``no_statements`` (its pages stay searchable), or ``damaged`` when the file
also shows signs of damage that PDFium repaired silently (``extract.damage_signs``: truncated, a
wrong cross-reference offset, an inverted page box), with what to do. A document whose primary
statements were not all located with confidence (``plugins.finance.locate``), or on whose values
no accounting identity could be compared (``plugins.finance.checks``), or one of whose located
statements is damaged (``plugins.finance.completeness``: a line it must have, such as total assets,
was not read, or its totals do not foot; ``statement_locations.status`` says ``damaged`` and
``.problem`` the page and what), gets ``ok_with_warnings`` and the reasons in ``error``, never
``ok``: its values are stored and usable, but deserve a look. ``INGESTED``
lists the statuses whose values are stored; test membership in it rather than ``== "ok"``.

The parse of a document depends only on its bytes and the parser, so it is cached as JSON under
``cache_dir/<sha256>-<PARSER_VERSION>.json``; ingesting the same filing again (another run,
another test) only copies rows; the table pass also caches each page's facts
(``cache_dir/pages/<sha256>-p<page>-<PARSER_VERSION>.json``). A page that looked like a table but
gave no value is named in the document's ``note``. ``HORIZON_FINANCE_CACHE`` moves the cache (default
``$HORIZON_HOME/cache/finance``).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from core.api import horizon_home
from plugins.finance.checks import run_checks
from plugins.finance.completeness import Verdict, statement_verdicts
from plugins.finance.concepts import STATEMENTS
from plugins.finance.extract import (
    FilingError,
    best_concepts,
    concept_signs,
    damage_signs,
    extract_statements,
    open_document,
    page_texts,
    share_scale,
)
from plugins.finance.locate import CONFIDENT, Location, locate
from plugins.finance.store import write_document
from plugins.finance.tables import table_pass

#: Part of the parse cache's key: bump it whenever parsing changes what is stored (9: located and
#: scored statements, concepts by meaning with signs, every table's values; 10: table counts with unit count,
#: no running headers in column labels or as rows, damage signs cached; 11: a utility's "Total capitalization
#: and liabilities" is total liabilities and equity; 12: a caption's dates go to the column of their own year
#: (PepsiCo's "December 31, 2022, December 25, 2021 and December 26, 2020"), "Shares used in per share
#: calculation" lines are share counts, not per-share amounts; 13: notes tables read from PDFium characters, scale from
#: the nearest caption or the filing's "tabular dollars are in millions", years and quarters in headers as periods,
#: a year naming a row is its label, "2022:" row headings give segments-as-columns tables their period, share counts
#: "(000's)" in thousands; 14: a year in the labels' place on the column headers' line is the table's period (Verizon's
#: segment tables), a footnote mark kerned onto a header's year ("2022( a)") no longer hides it, the top of one column's stacked
#: header ("Total" over "Reportable") is not spread to its neighbours).
PARSER_VERSION = "14"
#: Statuses of a document whose values were stored (the others: ``no_statements``, ``damaged``, ``error``).
INGESTED = ("ok", "ok_with_warnings")


@dataclass
class DocumentStatus:
    """How one document's ingestion ended.

    Attributes:
        doc_name: the file name without ``.pdf``.
        status: ``ok``, ``ok_with_warnings``, ``no_statements``, ``damaged`` or ``error``.
        error: what was wrong and what to do (empty when ``ok``; the warnings when ``ok_with_warnings``).
        pages: pages in the PDF (0 when it could not be opened).
        facts: values stored.
        from_cache: the parse came from the cache.
        note: pages that could not be read (no text layer), empty when none.
    """

    doc_name: str
    status: str
    error: str
    pages: int
    facts: int
    from_cache: bool
    note: str = ""


def default_cache_dir() -> Path:
    """``$HORIZON_FINANCE_CACHE``, else ``$HORIZON_HOME/cache/finance``."""
    return Path(os.environ.get("HORIZON_FINANCE_CACHE") or horizon_home() / "cache" / "finance")


def parse_document(path: Path, sha256: str, cache_dir: Path | None = None
                   ) -> tuple[int, dict[str, list[dict[str, Any]]], list[str], list[str], list[int]]:
    """Parse one PDF into table rows: the main statements (``extract``), then every other table
    (``tables.table_pass``: a cheap pass over the PDFium text picks the pages, their PDFium
    characters are parsed, each page's facts cached under ``cache_dir/pages`` when given).

    Returns:
        ``(page count, {"pages": [...], "facts": [...], "cells": [...], "statement_locations": [...]},
        statement kinds found, signs of damage (``extract.damage_signs``), pages the table pass
        read that yielded no value)``.

    Raises:
        FilingError: unreadable, encrypted, or no text layer.
    """
    name = path.stem
    doc = open_document(path)
    try:
        texts = page_texts(doc)
        damage = damage_signs(path, doc)
    finally:
        doc.close()
    if not texts:
        raise FilingError(f"{path.name}: the PDF has no pages")
    if not any(t.strip() for t in texts):
        raise FilingError(f"{path.name}: no page has a text layer (a scanned document?); run OCR on it first (e.g. ocrmypdf) and ingest the result")
    rows: dict[str, list[dict[str, Any]]] = {"pages": [{"doc_name": name, "page": i + 1, "text": t} for i, t in enumerate(texts)]}
    located = locate(texts)
    rows["statement_locations"] = [location_row(name, where) for where in located.values()]
    statements, cells = extract_statements(path, {k: w.pages for k, w in located.items() if w.pages}, texts)
    rows["cells"] = [{"doc_name": name, "page": c["page"], "table_index": c["table"], "row_index": c["row"],
                      "col_index": c["col"], "text": c["text"]} for c in cells]
    facts = []
    for st in statements:
        concepts = best_concepts(st)
        signs = concept_signs(st, concepts)
        for i, line in enumerate(st.lines):
            unit = line.unit
            scale_word, scale = (st.scale_word, st.scale) if unit != "USD/share" else ("units", 1.0)
            if unit == "shares":  # Costco prints its share counts in thousands under "(in millions)"
                scale_word, scale = share_scale(f"{line.section} {line.label}", scale_word, scale)
            for col, raw, amount, cell in line.values:
                column = st.columns[col]
                facts.append({
                    "fact_id": f"{name}:p{line.page}:l{line.line_no}:c{col}", "doc_name": name, "sha256": sha256,
                    "statement": st.kind, "title": st.title, "page": line.page, "line_no": line.line_no,
                    "x0": cell[0], "top": cell[1], "x1": cell[2], "bottom": cell[3],
                    "label": line.label, "concept": concepts.get(i), "raw_text": line.raw_text, "raw_value": raw,
                    "amount": amount, "scale_word": scale_word, "scale": scale, "value": amount * scale, "unit": unit,
                    "currency": st.currency, "period_label": column.label, "fiscal_year": column.fiscal_year,
                    "period_end": column.period_end.isoformat() if column.period_end else None,
                    "months": column.months, "column_index": col, "column_label": column.label,
                    "sign": signs.get(i), "normalised_value": amount * scale * signs[i] if i in signs else None,
                })
    # every other table (segments, notes, MD&A, releases), on the pages the statements did not take
    statement_pages = {p for st in statements for p in st.pages}
    other, _, empty = table_pass(path, sha256, texts, statement_pages, cache_dir, PARSER_VERSION)
    facts.extend(other)
    rows["facts"] = facts
    return len(texts), rows, [st.kind for st in statements], damage, empty


def location_row(doc_name: str, where: Location) -> dict[str, Any]:
    """A ``statement_locations`` row (``plugins.finance.store``) for one statement kind."""
    runner = where.runner_up
    return {"doc_name": doc_name, "statement": where.kind, "pages": ",".join(map(str, where.pages)), "score": where.score,
            "confidence": where.confidence, "runner_up": f"p.{runner.page} ({runner.score:.2f})" if runner else "",
            "reason": where.reason, "excluded": "; ".join(f"p.{c.page}: {c.excluded}" for c in where.excluded)}


def warnings(locations: list[dict[str, Any]], kinds: list[str], identities: int,
             verdicts: list[Verdict] | None = None) -> list[str]:
    """Why an ingested document deserves a look (empty when it does not).

    Args:
        locations: its ``statement_locations`` rows.
        kinds: the statements whose values were read.
        identities: accounting identities compared on its values.
        verdicts: each statement's completeness (``completeness.statement_verdicts``); a damaged
            one is warned of with its page and what is missing or does not foot.
    """
    out = []
    by_kind = {row["statement"]: row for row in locations}
    damaged = {v.statement: v.problem for v in verdicts or [] if v.status == "damaged"}
    for kind in STATEMENTS:
        row = by_kind.get(kind)
        if row is None or not row["pages"]:
            out.append(f"{kind} not located ({row['reason'] if row else 'no candidate page'})")
        elif kind in damaged:
            low = row["confidence"] < CONFIDENT
            out.append(f"DAMAGED: {damaged[kind]}" + (f"; it was located with low confidence {row['confidence']:.2f}: {row['reason']}" if low else ""))
        elif kind not in kinds:
            out.append(f"{kind} located on p.{row['pages']} but no values could be read there")
        elif row["confidence"] < CONFIDENT:
            out.append(f"{kind} located with low confidence {row['confidence']:.2f}: {row['reason']}")
    if not identities:
        out.append("no accounting identity could be compared on its values (the totals they need were not mapped)")
    return out


def ingest_document(con: duckdb.DuckDBPyConnection, path: Path, cache_dir: Path | None = None) -> DocumentStatus:
    """Ingest one PDF into the database behind ``con``; never raises for a bad document.

    Args:
        con: an open read-write connection to the filings database.
        path: the PDF.
        cache_dir: where parses are cached (``default_cache_dir()`` when None).

    Returns:
        The document's status; its ``documents`` row holds the same.
    """
    started = time.perf_counter()
    name = path.stem
    cache_dir = cache_dir or default_cache_dir()
    document = {"doc_name": name, "path": str(path), "sha256": "", "pages": 0, "status": "error", "error": "",
                "statements": "", "ingest_s": 0.0, "from_cache": False}
    rows: dict[str, list[dict[str, Any]]] = {}
    try:
        try:
            data = path.read_bytes()
        except OSError as exc:
            raise FilingError(f"{path}: cannot read the file ({exc.strerror}); give a path relative to the task folder or the repository root") from None
        sha = hashlib.sha256(data).hexdigest()
        document["sha256"] = sha
        cached = cache_dir / f"{sha}-{PARSER_VERSION}.json"
        if cached.is_file():
            saved = json.loads(cached.read_text())
            pages, rows, kinds, damage = saved["pages_count"], saved["rows"], saved["statements"], saved.get("damage", [])
            empty = saved.get("empty_table_pages", [])
            for fact in rows["facts"]:  # the same bytes under another file name
                fact["doc_name"] = name
                fact["fact_id"] = f"{name}:{fact['fact_id'].split(':', 1)[1]}"
            for table in ("pages", "cells", "statement_locations"):
                for row in rows[table]:
                    row["doc_name"] = name
            document["from_cache"] = True
        else:
            pages, rows, kinds, damage, empty = parse_document(path, sha, cache_dir)
            cache_dir.mkdir(parents=True, exist_ok=True)
            tmp = cached.with_suffix(".tmp")
            tmp.write_text(json.dumps({"pages_count": pages, "rows": rows, "statements": kinds, "damage": damage,
                                       "empty_table_pages": empty}))
            os.replace(tmp, cached)
        document.update(pages=pages, statements=",".join(kinds), status="ok" if kinds else "no_statements")
        blank = [r["page"] for r in rows["pages"] if not r["text"].strip()]
        if blank:
            listed = ", ".join(map(str, blank[:20])) + (" ..." if len(blank) > 20 else "")
            document["note"] = f"{len(blank)} page(s) have no text layer (scanned?) and were not read: {listed}; OCR them to include them"
        if empty:  # a page that looked like a table (lines ending in numbers) but gave no value: say which
            listed = ", ".join(f"p.{n}" for n in empty[:20]) + (" ..." if len(empty) > 20 else "")
            note = (f"{len(empty)} page(s) look like tables (lines ending in numbers) but no table values could be read "
                    f"there: {listed}; their text is searchable with search_filing")
            document["note"] = f"{document['note']}; {note}" if document.get("note") else note
        if not kinds and damage:  # PDFium opened it by repairing it: what it read is not to be trusted as the filing
            document.update(status="damaged", error=(
                f"{path.name}: the PDF is damaged ({'; '.join(damage)}), and no statement was recognised in what could be "
                "read; repair it (e.g. `qpdf --replace-input FILE.pdf`, or print it to a new PDF) or download the filing "
                "again, then ingest the repaired copy; the pages read are searchable with search_filing meanwhile"))
        elif not kinds:
            document["error"] = (f"{path.name}: no income statement, balance sheet or cash-flow statement was recognised; "
                                 "its pages are searchable with search_filing")
    except FilingError as exc:
        document["error"], rows = str(exc), {}
    except Exception as exc:  # noqa: BLE001 - a parser bug on one document must not stop the others
        document["error"], rows = f"{path.name}: the parser failed ({type(exc).__name__}: {exc}); please report this file", {}
    write_document(con, document, rows)
    if document["status"] == "ok":
        checks = run_checks(con, [name]).results
        locations = rows.get("statement_locations", [])
        verdicts = statement_verdicts(con, name, {r["statement"]: r["pages"] for r in locations}, checks)
        for v in verdicts:  # the verdict of each statement, beside where it was located
            con.execute("UPDATE statement_locations SET status = ?, problem = ? WHERE doc_name = ? AND statement = ?",
                        [v.status, v.problem, name, v.statement])
        found = warnings(locations, kinds, len(checks), verdicts)
        if found:  # rewritten in place: the checks read the stored facts
            document.update(status="ok_with_warnings", error="; ".join(found))
            con.execute("UPDATE documents SET status = ?, error = ? WHERE doc_name = ?", [document["status"], document["error"], name])
    document["ingest_s"] = round(time.perf_counter() - started, 3)
    con.execute("UPDATE documents SET ingest_s = ? WHERE doc_name = ?", [document["ingest_s"], name])
    return DocumentStatus(name, document["status"], document["error"], document["pages"], len(rows.get("facts", [])),
                          document["from_cache"], document.get("note", ""))


def ingest(con: duckdb.DuckDBPyConnection, paths: list[Path], cache_dir: Path | None = None) -> list[DocumentStatus]:
    """Ingest several PDFs in order; one bad document never stops the others.

    Returns:
        One status per path, in the same order.
    """
    return [ingest_document(con, Path(p), cache_dir) for p in paths]
