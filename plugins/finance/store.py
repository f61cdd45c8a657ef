"""The filings database (DuckDB): its tables, and writing one ingested document into it.

Tables (one row per ...)::

    documents   document: name, path, sha256, pages, status ('ok' | 'ok_with_warnings' |
                'no_statements' | 'damaged' | 'error'), error (what was wrong and what to do; for
                'ok_with_warnings' the warnings: a statement not located with confidence, no
                identity compared), statements found, seconds to ingest, note (pages without a
                text layer, which were not read)
    pages       page of every readable document: 1-based page number and its text (PDFium)
    facts       value printed in a table, with provenance: document and its sha256,
                statement (the main statement: 'income_statement', 'balance_sheet', 'cash_flow';
                for any other table 'table:<class>', the class one of segment, geography, note,
                reconciliation, non_gaap, per_share, mdna, other, see plugins/finance/tables.py),
                title (statement title, or the caption above the table),
                page (1-based), line number, the bounding box of the printed number
                (x0, top, x1, bottom in PDF points from the page's top-left corner), the label and the whole line as printed, the raw token, the amount as
                printed (sign from parentheses), scale word and multiplier, value = amount * scale
                in the unit ('USD', 'USD/share', 'shares', 'percent', 'count': stores, employees; 'years': a table's "(years)" column), currency, period label ('FY2018',
                '2023-07-29' for an instant, '3M 2023-07-29', 'Q2 2023' for a quarter the header
                names without a date, ' (restated)' / ' (as reported)' appended), fiscal year,
                period end, months (the period's length: 12 for a fiscal year, 3 for a quarter, 6 or 9
                for year-to-date columns; NULL for balance-sheet instants), column, and the standard
                concept when the label maps to one (``plugins/finance/concept_labels.toml``); for a
                mapped fact (NULL otherwise), sign (+1 or -1) and normalised_value = sign * value, the value in the
                concept's polarity (the US-GAAP taxonomy's: costs and payments positive, a loss
                negative, cash used negative) whichever way the filer printed it; amount, value and
                raw_value stay as printed. Identities and the modelling views use normalised_value
                (the main statements' facts only; other tables' values carry no concept, sign or
                normalised_value); column_label (the header text printed over the column, e.g.
                "Full Year % Change" or "Consumer Health"; the period label for the main
                statements; a table value's period fields are NULL when its header names no year).
    cells       non-empty cell of the ruling-line tables pdfplumber finds on statement pages
    statement_locations  primary statement kind of every readable document, as located
                (``plugins.finance.locate``): pages chosen ('' when none, else comma-separated),
                score and confidence (0-1), runner_up ('p.93 (0.90)': the best other candidate
                page and its score, '' when none), reason (what decided, in words), excluded
                (candidate pages set aside and why: guarantor, consolidating, parent-only,
                pro-forma statements), status (``ok``, ``damaged``: a line it must have was not read
                or its totals do not foot, ``not_located``; NULL when the document was not ingested)
                and problem (for ``damaged``: the page and what is missing or off;
                ``plugins.finance.completeness``)

``fact_id`` is ``DOC:pPAGE:lLINE:cCOLUMN`` (``3M_2018_10K:p60:l24:c0``): stable across
re-ingestion of the same file with the same parser, so scripts and reports can cite it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    doc_name VARCHAR PRIMARY KEY, path VARCHAR, sha256 VARCHAR, pages INTEGER, status VARCHAR,
    error VARCHAR, statements VARCHAR, ingest_s DOUBLE, from_cache BOOLEAN, note VARCHAR);
CREATE TABLE IF NOT EXISTS pages (doc_name VARCHAR, page INTEGER, text VARCHAR);
CREATE TABLE IF NOT EXISTS facts (
    fact_id VARCHAR PRIMARY KEY, doc_name VARCHAR, sha256 VARCHAR, statement VARCHAR, title VARCHAR,
    page INTEGER, line_no INTEGER, x0 DOUBLE, top DOUBLE, x1 DOUBLE, bottom DOUBLE,
    label VARCHAR, concept VARCHAR, raw_text VARCHAR, raw_value VARCHAR, amount DOUBLE,
    scale_word VARCHAR, scale DOUBLE, value DOUBLE, unit VARCHAR, currency VARCHAR,
    period_label VARCHAR, fiscal_year INTEGER, period_end DATE, months INTEGER, column_index INTEGER,
    sign INTEGER, normalised_value DOUBLE, column_label VARCHAR);
CREATE TABLE IF NOT EXISTS cells (doc_name VARCHAR, page INTEGER, table_index INTEGER, row_index INTEGER,
    col_index INTEGER, text VARCHAR);
CREATE TABLE IF NOT EXISTS statement_locations (doc_name VARCHAR, statement VARCHAR, pages VARCHAR, score DOUBLE,
    confidence DOUBLE, runner_up VARCHAR, reason VARCHAR, excluded VARCHAR, status VARCHAR, problem VARCHAR);
"""

#: Column order of each table, for writing rows given as dicts.
COLUMNS = {
    "pages": ["doc_name", "page", "text"],
    "cells": ["doc_name", "page", "table_index", "row_index", "col_index", "text"],
    "facts": ["fact_id", "doc_name", "sha256", "statement", "title", "page", "line_no", "x0", "top", "x1", "bottom",
              "label", "concept", "raw_text", "raw_value", "amount", "scale_word", "scale", "value", "unit", "currency",
              "period_label", "fiscal_year", "period_end", "months", "column_index", "sign", "normalised_value", "column_label"],
    "statement_locations": ["doc_name", "statement", "pages", "score", "confidence", "runner_up", "reason", "excluded",
                            "status", "problem"],
}


def connect(path: Path, read_only: bool = False, locked: bool = False) -> duckdb.DuckDBPyConnection:
    """Open the filings database at ``path`` (created with its schema unless ``read_only``).

    Args:
        locked: also forbid file access from SQL (``read_csv``, ``ATTACH``, ``COPY``) and any
            change of that setting: for queries written by the agent.

    Raises:
        duckdb.IOException: the file is locked by another process or unreadable.
    """
    if read_only:
        config = {"enable_external_access": False, "lock_configuration": True} if locked else {}
        return duckdb.connect(str(path), read_only=True, config=config)
    con = duckdb.connect(str(path))
    con.execute(SCHEMA)
    for column, kind in (("sign", "INTEGER"), ("normalised_value", "DOUBLE"), ("column_label", "VARCHAR")):  # databases made before them
        con.execute(f"ALTER TABLE facts ADD COLUMN IF NOT EXISTS {column} {kind}")
    for column in ("status", "problem"):
        con.execute(f"ALTER TABLE statement_locations ADD COLUMN IF NOT EXISTS {column} VARCHAR")
    return con


def write_document(con: duckdb.DuckDBPyConnection, document: dict[str, Any], rows: dict[str, list[dict[str, Any]]]) -> None:
    """Replace one document's rows (``documents`` and every table of ``COLUMNS``) in one transaction.

    Args:
        document: the ``documents`` row.
        rows: ``{"pages": [...], "facts": [...], "cells": [...], "statement_locations": [...]}``, each a list of row dicts
            with the keys in ``COLUMNS``; missing tables are taken as empty.
    """
    name = document["doc_name"]
    con.execute("BEGIN")
    try:
        for table in ("documents", *COLUMNS):
            con.execute(f"DELETE FROM {table} WHERE doc_name = ?", [name])
        con.execute(
            "INSERT INTO documents VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [name, document["path"], document["sha256"], document["pages"], document["status"], document["error"],
             document["statements"], document["ingest_s"], document["from_cache"], document.get("note", "")],
        )
        for table, columns in COLUMNS.items():
            data = rows.get(table) or []
            if not data:
                continue
            arrow = pa.Table.from_pylist([{c: r.get(c) for c in columns} for r in data])
            con.register("incoming", arrow)
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM incoming")
            con.unregister("incoming")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise
