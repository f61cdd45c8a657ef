"""The finance plugin's tools: find and read filings, query the extracted statements, answer, finish.

Every tool reads the episode's filings database (``scratch/finance/filings.duckdb``) through a
read-only connection; ``answer_question`` writes only ``scratch/finance/answers.json``. Pages
are 1-based (the number a PDF viewer shows). A fact id (``3M_2018_10K:p60:l24:c0``) names one
printed value: document, page, line and column.
"""

from __future__ import annotations

import math
import threading
from typing import Any, Literal

import duckdb
from pydantic import BaseModel, Field

from core.api import Tool, ToolContext, ToolError, ToolResult, tool
from plugins.finance.episode import EpisodeFiles
from plugins.finance.formula import FormulaError, evaluate, fact_ids
from plugins.finance.ingest import INGESTED
from plugins.finance.numbers import SCALES
from plugins.finance.search import query_words, rank_pages, snippet

SQL_TIME_LIMIT_S = 5.0
SQL_MAX_ROWS = 200


def _doc_names(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in con.execute("SELECT doc_name FROM documents ORDER BY doc_name").fetchall()]


def _check_document(con: duckdb.DuckDBPyConnection, name: str) -> int:
    """The document's page count. Raises ToolError naming the known documents."""
    row = con.execute("SELECT pages, status, error FROM documents WHERE doc_name = ?", [name]).fetchone()
    if row is None:
        raise ToolError(f"no document {name!r}; documents: {', '.join(_doc_names(con))}")
    if row[1] == "error":
        raise ToolError(f"{name} could not be ingested: {row[2]}")
    return row[0]


class NoArgs(BaseModel):
    pass


@tool(read_only=True)
def list_documents(args: NoArgs, ctx: ToolContext) -> ToolResult:
    """List the filings of this task: name, pages, the statements recognised (with their pages and how confidently each was located), warnings, or why a document could not be read.

    Returns a result whose ``data`` is ``{"documents": n, "warnings": [names of documents with warnings]}``.
    """
    files = EpisodeFiles(ctx)
    with files.read_only() as con:
        docs = con.execute("SELECT doc_name, pages, status, error, note FROM documents ORDER BY doc_name").fetchall()
        where = dict(con.execute(
            "SELECT doc_name, string_agg(statement || ' p.' || page, ', ' ORDER BY page) FROM "
            "(SELECT DISTINCT doc_name, statement, min(page) AS page FROM facts WHERE statement NOT LIKE 'table:%' GROUP BY ALL) "
            "GROUP BY doc_name").fetchall())
        located = dict(con.execute(
            "SELECT doc_name, string_agg(statement || ' ' || printf('%.2f', confidence) || "
            "CASE WHEN runner_up <> '' THEN ' (runner-up ' || runner_up || ')' ELSE '' END, ', ' ORDER BY statement) "
            "FROM statement_locations WHERE pages <> '' GROUP BY doc_name").fetchall())
        tables = {r[0]: r[1:] for r in con.execute(
            "SELECT doc_name, count(*), count(DISTINCT page) FROM facts WHERE statement LIKE 'table:%' GROUP BY doc_name").fetchall()}
    lines = []
    for name, pages, status, error, note in docs:
        values, on_pages = tables.get(name, (0, 0))
        other = f"; {values} values of other tables on {on_pages} pages (get_table)" if values else ""
        if status in INGESTED:
            lines.append(f"{name}: {pages} pages; {where.get(name, '')}{other}"
                         + (f"; location confidence: {located[name]}" if name in located else "")
                         + (f"; WARNING: {error}" if status == "ok_with_warnings" else "") + (f"; NOTE: {note}" if note else ""))
        elif status in ("no_statements", "damaged") and values:
            lines.append(f"{name}: {pages} pages; no main statement recognised{other}" + (f"; NOTE: {note}" if note else ""))
        else:
            lines.append(f"{name}: {status.upper()}: {error}" + (f"; NOTE: {note}" if note else ""))
    return ToolResult(output="\n".join(lines) or "no documents",
                      data={"documents": len(docs), "warnings": [d[0] for d in docs if d[2] == "ok_with_warnings"]})


class SearchArgs(BaseModel):
    query: str = Field(min_length=1, description="words to look for, ranked by relevance (BM25; word forms match: 'revenues' finds 'revenue'), e.g. 'segment operating income 2022'")
    document: str = Field("", description="limit to one document (name from list_documents); empty for all")
    max_results: int = Field(10, ge=1, le=50, description="most pages to return")


@tool(read_only=True)
def search_filing(args: SearchArgs, ctx: ToolContext) -> ToolResult:
    """Search the text of every page of the filings, best pages first (BM25 relevance): each hit names the document, page, score, the query words found, and a snippet around them. Use it to find evidence pages for questions the statements do not answer.

    Returns a result whose ``data`` is ``{"pages": [[document, page], ...]}``, best first.
    """
    files = EpisodeFiles(ctx)
    with files.read_only() as con:
        if args.document:
            _check_document(con, args.document)
        where, params = ("WHERE doc_name = ?", [args.document]) if args.document else ("", [])
        pages = con.execute(f"SELECT doc_name, page, text FROM pages {where} ORDER BY doc_name, page", params).fetchall()
        hits = rank_pages(pages, args.query, args.max_results)
        stored = _stored_values(con, [(h.document, h.page) for h in hits])
    words = query_words(args.query)
    head = f"search_filing {args.query!r}" + (f" in {args.document}" if args.document else "") + f": {len(pages)} pages searched"
    if not words:
        return ToolResult(output=f"{head}; the query has only stop words: give content words", data={"pages": []})
    if not hits:
        return ToolResult(output=f"{head}; no page contains any of: {', '.join(words)}", data={"pages": []})
    out = [f"{head}; best {len(hits)} by relevance:"]
    for hit in hits:
        missing = [w for w in words if w not in hit.matched]
        found = ", ".join(hit.matched) + (f" (not: {', '.join(missing)})" if missing else "")
        values = stored.get((hit.document, hit.page), 0)
        held = f"; {values} stored values, fact ids: get_table" if values else ""
        out.append(f"{hit.document} p.{hit.page} (score {hit.score:.1f}; {found}{held}): {snippet(hit.text, hit.matched, 320)}")
    return ToolResult(output="\n".join(out), data={"pages": [[h.document, h.page] for h in hits]})


def _stored_values(con: duckdb.DuckDBPyConnection, pages: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    """``{(document, page): facts stored on it}`` for the pages given (pages without facts left out)."""
    if not pages:
        return {}
    rows = con.execute("SELECT doc_name, page, count(*) FROM facts WHERE (doc_name, page) IN (SELECT (d, p) FROM "
                       "(SELECT unnest(?) AS d, unnest(?) AS p)) GROUP BY ALL",
                       [[d for d, _ in pages], [p for _, p in pages]]).fetchall()
    return {(d, p): n for d, p, n in rows}


class ReadPageArgs(BaseModel):
    document: str = Field(description="document name from list_documents")
    page: int = Field(ge=1, description="1-based page number")
    offset: int = Field(0, ge=0, description="first character to show (for long pages)")
    max_chars: int = Field(4000, ge=100, le=20000, description="most characters to show")


@tool(read_only=True)
def read_page(args: ReadPageArgs, ctx: ToolContext) -> ToolResult:
    """Show the text of one page of a filing.

    Returns a result whose ``data`` is ``{"chars": total characters on the page}``.
    """
    files = EpisodeFiles(ctx)
    with files.read_only() as con:
        pages = _check_document(con, args.document)
        if args.page > pages:
            raise ToolError(f"{args.document} has pages 1-{pages}, not {args.page}")
        text = con.execute("SELECT text FROM pages WHERE doc_name = ? AND page = ?", [args.document, args.page]).fetchone()[0]
        values = _stored_values(con, [(args.document, args.page)]).get((args.document, args.page), 0)
    part = text[args.offset: args.offset + args.max_chars]
    more = len(text) - args.offset - len(part)
    tail = f"\n[{more} more characters: offset={args.offset + len(part)}]" if more > 0 else ""
    if values:
        tail += f"\n[{values} values on this page are stored facts; get_table shows their fact ids for answer_question]"
    return ToolResult(output=f"{args.document} p.{args.page}:\n{part}{tail}", data={"chars": len(text)})


class StatementArgs(BaseModel):
    document: str = Field(description="document name from list_documents")
    statement: Literal["income_statement", "balance_sheet", "cash_flow"] = Field(description="which main statement")


def _fmt(amount: float) -> str:
    text = f"{amount:,.2f}".rstrip("0").rstrip(".") if amount != int(amount) else f"{amount:,.0f}"
    return f"({text.lstrip('-')})" if amount < 0 else text


@tool(read_only=True)
def get_statement(args: StatementArgs, ctx: ToolContext) -> ToolResult:
    """Show a main statement as extracted: each line's fact id, label, standard concept and the amounts as printed per period column, with the page, scale and unit. Amounts in parentheses are negative.

    Returns a result whose ``data`` is ``{"lines": n, "periods": [labels]}``.
    """
    files = EpisodeFiles(ctx)
    with files.read_only() as con:
        _check_document(con, args.document)
        rows = con.execute(
            "SELECT page, line_no, column_index, period_label, label, concept, amount, unit, scale_word, title FROM facts "
            "WHERE doc_name = ? AND statement = ? ORDER BY page, line_no, column_index", [args.document, args.statement]).fetchall()
    if not rows:
        raise ToolError(f"no {args.statement} was recognised in {args.document}; try search_filing and read_page")
    periods = dict.fromkeys((r[2], r[3]) for r in rows)
    head = (f"{args.document} {args.statement} ({rows[0][9]}), amounts in {rows[0][8]} of USD unless the unit says otherwise; "
            "fact id = " + f"{args.document}:p<page>:l<line>:c<column>\n"
            + "columns: " + "  ".join(f"c{c}={label}" for c, label in sorted(periods)))
    lines: dict[tuple[int, int], list[Any]] = {}
    for page, line, col, _, label, concept, amount, unit, scale_word, _ in rows:
        entry = lines.setdefault((page, line), [label, concept, unit, scale_word, {}])
        entry[4][col] = amount
    out = [head]
    for (page, line), (label, concept, unit, scale_word, values) in lines.items():
        tag = f" [{concept}]" if concept else ""
        unit_note = f" ({unit})" if unit != "USD" else ""
        cells = "  ".join(f"c{c}={_fmt(v)}" for c, v in sorted(values.items()))
        out.append(f"p{page}:l{line}  {label}{tag}{unit_note}  {cells}")
    return ToolResult(output="\n".join(out), data={"lines": len(lines), "periods": [p for _, p in sorted(periods)]})


class TableArgs(BaseModel):
    document: str = Field(description="document name from list_documents")
    page: int = Field(ge=1, description="1-based page number (search_filing says which pages hold stored values)")


@tool(read_only=True)
def get_table(args: TableArgs, ctx: ToolContext) -> ToolResult:
    """Show the stored values of one page's tables (segment, geography, note, non-GAAP, MD&A tables and the main statements): each table's class and caption, its columns (header text, period), and per row the fact id, label and amounts as printed. Cite these fact ids in answer_question.

    Returns a result whose ``data`` is ``{"tables": n, "values": n}``.
    """
    files = EpisodeFiles(ctx)
    with files.read_only() as con:
        pages = _check_document(con, args.document)
        if args.page > pages:
            raise ToolError(f"{args.document} has pages 1-{pages}, not {args.page}")
        rows = con.execute(
            "SELECT statement, title, scale_word, line_no, column_index, coalesce(column_label, period_label, ''), period_label, label, "
            "amount, unit FROM facts WHERE doc_name = ? AND page = ? ORDER BY line_no, column_index", [args.document, args.page]).fetchall()
    if not rows:
        raise ToolError(f"{args.document} p.{args.page} holds no stored values (no table with numbers was found there); "
                        "read_page shows its text, search_filing finds pages that hold values")
    out: list[str] = [(f"{args.document} p.{args.page}: fact id = {args.document}:p{args.page}:l<line>:c<column>; "
                       "amounts as printed, in the scale shown unless the unit says otherwise")]
    current: tuple[str, str] | None = None
    columns: dict[int, str] = {}
    lines: dict[int, list[Any]] = {}
    tables = 0

    def flush() -> None:
        if current is None:
            return
        out.append(f"[{current[0]}] {current[1]}")
        out.append("columns: " + "  ".join(f"c{c}={label or '(no header)'}" for c, label in sorted(columns.items())))
        for line, (label, unit, values) in lines.items():
            unit_note = f" ({unit})" if unit != "USD" else ""
            out.append(f"l{line}  {label}{unit_note}  " + "  ".join(f"c{c}={_fmt(v)}" for c, v in sorted(values.items())))

    for statement, title, scale_word, line, col, column_label, period, label, amount, unit in rows:
        key = (statement, f"{title} ({scale_word})")
        if key != current:
            flush()
            current, columns, lines, tables = key, {}, {}, tables + 1
        columns.setdefault(col, column_label + (f" [{period}]" if period and period != column_label else ""))
        lines.setdefault(line, [label, unit, {}])[2][col] = amount
    flush()
    return ToolResult(output="\n".join(out), data={"tables": tables, "values": len(rows)})


class SQLArgs(BaseModel):
    query: str = Field(min_length=1, description=(
        "one read-only DuckDB SQL query over the tables documents, pages, facts (statement 'table:<class>' for values of "
        "segment, geography, note, non_gaap, ... tables), cells and the views concept_values, table_values, "
        "income_statement, balance_sheet, cash_flow, metrics (values in USD)"))
    max_rows: int = Field(50, ge=1, le=SQL_MAX_ROWS, description=f"most rows to return (1-{SQL_MAX_ROWS})")


@tool(read_only=True)
def sql(args: SQLArgs, ctx: ToolContext) -> ToolResult:
    """Run a read-only SQL query on the filings database (DuckDB dialect). facts has fact_id, doc_name, statement, title, page, line_no, label, concept, amount (as printed), scale, value (USD), unit, period_label, fiscal_year, period_end, months, column_label. Limited rows and 5 seconds.

    Returns a result whose ``data`` is ``{"rows": n shown, "truncated": bool, "columns": [...]}``.
    """
    files = EpisodeFiles(ctx)
    with files.read_only() as con:
        timer = threading.Timer(SQL_TIME_LIMIT_S, con.interrupt)
        timer.start()
        try:
            cursor = con.execute(args.query)
            columns = [d[0] for d in cursor.description or []]
            rows = cursor.fetchmany(args.max_rows + 1) if columns else []
        except duckdb.InterruptException:
            raise ToolError(f"the query ran past {SQL_TIME_LIMIT_S:.0f} s and was stopped; add filters or a LIMIT") from None
        except duckdb.Error as exc:
            message = str(exc).split("\n")[0]
            if "read-only" in message.lower() or "permission" in message.lower() or "configuration" in message.lower():
                message += " (the database is read-only and file access is disabled; query the tables and views only)"
            raise ToolError(f"SQL error: {message}") from None
        finally:
            timer.cancel()
    truncated = len(rows) > args.max_rows
    rows = rows[: args.max_rows]
    text = "\t".join(columns) + "\n" + "\n".join("\t".join("NULL" if v is None else str(v) for v in r) for r in rows)
    if truncated:
        text += f"\n[more rows not shown; raise max_rows (up to {SQL_MAX_ROWS}) or narrow the query]"
    return ToolResult(output=text, data={"rows": len(rows), "truncated": truncated, "columns": columns})


class AnswerArgs(BaseModel):
    question_id: str = Field(description="the question's id, as listed in the task")
    document: str = Field(description="the document holding the evidence")
    page: int = Field(ge=1, description="1-based page of the evidence (a page of the cited facts when there are any)")
    value: float | None = Field(None, description="the numeric answer as you state it, e.g. 1577 for '$1,577 million'; omit for a text answer")
    unit: Literal["USD", "USD/share", "shares", "count", "percent", "ratio", "days", "times", "text"] = Field(
        "text", description="the unit of value: 'percent' for 30.8 meaning 30.8%, 'ratio' for 0.68, 'count' for stores or employees, 'text' for a prose answer")
    scale: Literal["units", "thousands", "millions", "billions"] = Field("units", description="the scale of value: 1577 with 'millions' is 1,577,000,000")
    formula: str = Field("", description=(
        "how value follows from stored facts: arithmetic over {fact_id} (each the fact's value in USD, unscaled), e.g. "
        "'-{3M_2018_10K:p60:l24:c0}' or '{A:p1:l2:c0} / {A:p1:l3:c0}'; it must give value x scale"))
    fact_ids: list[str] = Field(default_factory=list, description="facts the answer rests on (optional when the formula names them)")
    text: str = Field("", description="the answer in words (required for prose answers, optional otherwise)")


def _decimals(value: float) -> int:
    text = repr(value)
    return len(text.split(".")[1]) if "." in text and not text.endswith(".0") else 0


@tool(read_only=True)
def answer_question(args: AnswerArgs, ctx: ToolContext) -> ToolResult:
    """Record the answer to one question with its evidence page. A numeric answer must come from stored facts: give a formula over fact ids (or one fact id); the tool recomputes it and refuses a value the facts do not give. Answering again replaces the earlier answer.

    Returns a result whose ``data`` is the recorded answer.
    """
    files = EpisodeFiles(ctx)
    questions = {q["qid"]: q for q in files.read_json(files.questions, [])}
    if args.question_id not in questions:
        raise ToolError(f"no question {args.question_id!r}; questions: {', '.join(questions) or 'none in this task'}")
    if args.unit == "text" and not args.text.strip():
        raise ToolError("a text answer needs 'text'; for a number give value, unit and scale")
    if args.unit != "text" and args.value is None:
        raise ToolError(f"unit {args.unit!r} needs a numeric 'value'")
    if args.value is not None and not math.isfinite(args.value):
        raise ToolError("value must be a finite number")
    ids = list(dict.fromkeys(fact_ids(args.formula) + [i.strip() for i in args.fact_ids]))
    with files.read_only() as con:
        pages = _check_document(con, args.document)
        if args.page > pages:
            raise ToolError(f"{args.document} has pages 1-{pages}, not {args.page}")
        found = {r[0]: r[1:] for r in con.execute(
            "SELECT fact_id, value, page, doc_name FROM facts WHERE fact_id IN (SELECT unnest(?))", [ids]).fetchall()} if ids else {}
    unknown = [i for i in ids if i not in found]
    if unknown:
        raise ToolError(f"unknown fact ids: {', '.join(unknown)}; take them from get_statement, get_table (p<page>:l<line>:c<column>) or the facts table")
    record: dict[str, Any] = {"question_id": args.question_id, "document": args.document, "page": args.page, "value": args.value,
                              "unit": args.unit, "scale": args.scale, "formula": args.formula, "fact_ids": ids, "text": args.text}
    if args.value is not None and args.unit != "text":
        formula = args.formula or (f"{{{ids[0]}}}" if len(ids) == 1 else "")
        if not formula:
            raise ToolError("every figure must trace to stored values: give a formula over {fact_id}s, or exactly one fact id")
        try:
            computed = evaluate(formula, {i: v[0] for i, v in found.items()})
        except FormulaError as exc:
            raise ToolError(str(exc)) from None
        stated = args.value * SCALES[args.scale]
        allowed = max(0.005 * abs(computed), 0.5 * 10 ** -_decimals(args.value) * SCALES[args.scale])
        if abs(stated - computed) > allowed:
            raise ToolError(f"the formula gives {computed:,.6g} but value x scale is {stated:,.6g}; state the value the facts give "
                            "(value in the chosen scale, rounded as the question asks) or fix the formula")
        if found and args.page not in {v[1] for v in found.values()}:
            raise ToolError(f"page {args.page} holds none of the cited facts (their pages: "
                            f"{', '.join(str(p) for p in sorted({v[1] for v in found.values()}))}); cite the evidence page")
        record.update(formula=formula, computed=computed)
    answers = files.read_json(files.answers, {})
    answers[args.question_id] = record
    files.write_json(files.answers, answers)
    shown = f"{args.value:g} {args.unit}" + (f" ({args.scale})" if args.scale != "units" else "") if args.value is not None else repr(args.text[:80])
    return ToolResult(output=f"Recorded answer to {args.question_id}: {shown}, evidence {args.document} p.{args.page}"
                      + (f"; = {record['formula']} = {record['computed']:,.6g}" if "computed" in record else ""), data=record)


class MetricsArgs(BaseModel):
    document: str = Field(description="document name from list_documents")


@tool(read_only=True)
def get_metrics(args: MetricsArgs, ctx: ToolContext) -> ToolResult:
    """Show derived metrics per fiscal year from the extracted statements: margins, revenue growth, ROE, ROA, leverage, current ratio, free cash flow (formulas in the metrics view).

    Returns a result whose ``data`` is ``{"years": n}``.
    """
    files = EpisodeFiles(ctx)
    with files.read_only() as con:
        _check_document(con, args.document)
        cursor = con.execute("SELECT * EXCLUDE (doc_name) FROM metrics WHERE doc_name = ? ORDER BY fiscal_year", [args.document])
        columns = [d[0] for d in cursor.description]
        rows = cursor.fetchall()
    if not rows:
        raise ToolError(f"no 12-month income statement was extracted from {args.document}, so no yearly metrics")
    out = ["\t".join(columns)] + ["\t".join("NULL" if v is None else f"{v:.4g}" if isinstance(v, float) else str(v) for v in r) for r in rows]
    return ToolResult(output="\n".join(out), data={"years": len(rows)})


class FinishArgs(BaseModel):
    summary: str = Field(min_length=1, description="what you answered or wrote, and anything you could not find")


@tool(read_only=True)
def finish(args: FinishArgs, ctx: ToolContext) -> ToolResult:
    """Finish the task once every question is answered (and the report written, when asked), with a short summary.

    Returns a result with ``done=True`` and ``data["summary"]``.
    """
    summary = args.summary.strip()
    if not summary:
        raise ToolError("summary is empty; say what you answered")
    return ToolResult(output=f"Finished: {summary}", done=True, data={"summary": summary})


#: The finance tools, in the order they are offered to the model (report tools are added by the plugin).
FINANCE_TOOLS: list[Tool] = [list_documents, search_filing, read_page, get_statement, get_table, get_metrics, sql, answer_question]
