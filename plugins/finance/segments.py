"""Segment and geography revenue tables found by an identity, not by a table's class alone.

Any table a filing prints (``facts.statement LIKE 'table:%'``, see ``plugins.finance.tables``)
may break revenue down: by reportable segment, by region, by product. The evidence used here is
the accounting identity that a breakdown of revenue adds up to the consolidated revenue:

1. A table column (one page, one ``column_index``, one fiscal year, unit USD) is split into
   *blocks*: runs of printed lines with values, broken by a line of text only (a heading); a line
   with values in other units only ("% of total revenue") does not break a run. A line is a total when its label
   says so (``is_total``: "Total ...", also kerned apart as "T otal ...").
2. A block is a *revenue breakdown* of fiscal year Y when its rows other than totals and
   subtotals (labels starting "total"/"subtotal") sum to the income statement's revenue of Y
   within rounding: half a unit of the printed scale per row, plus 0.05% of revenue.
3. A breakdown is *geographic* when most of its row labels are regions (``tables._REGIONS``, the
   whole label), else it is a *segment* breakdown when the table was classed ``segment`` or a
   block with the same row labels elsewhere on its page or the next gives a profit measure
   (segments report profit; product lines usually do not). Other breakdowns (by product or
   service) are not used.
4. A segment *profit* block is another block with at least two of the segment labels whose total
   line is the income statement's operating income (the identity again), or whose total's label
   says "operating income", "income from operations", "income before income taxes" or
   "earnings before interest and taxes"; only its rows named as segments are kept.

5. A table printed with the segments as *columns* (CVS, Coca-Cola: one group of rows per year under
   a "2022:" heading, ``tables`` dates each value by it and keeps the segment in ``column_label``)
   gives one block per printed row and year, read across (``across_blocks``): its rows are the
   columns other than totals (a header saying "total", "totals", "consolidated" or "full year"),
   corporate and eliminations columns included as rows, exactly as the lines of a column block.
   Only a row named as revenue or sales can be a revenue breakdown; the identity, its tolerance and
   the classes above are the same, and a profit block is another row of the same group (its label
   names the measure).
6. A segment block that does not add up to revenue but to its own printed total of the reportable
   segments ("Total Reportable Segments", Verizon p.101) is reconciled in two steps (``_reconciled``):
   a column on the same page or the next must print that amount on a line so labelled, then the
   reconciling lines ("Corporate and other", "Eliminations", Verizon p.102) up to a total or
   "consolidated" line, and the total and those lines must add up to revenue. Both sums are the
   identity with its tolerance; the breakdown's rows are then the segments and the reconciling
   lines, which add up to revenue. Nothing else is matched: a block whose rows miss either sum is
   not used.

Every value returned is a stored fact (its ``fact_id``), so a report prints each as a traced
figure. A filing without such a table gets no breakdown: nothing is estimated.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import duckdb

from plugins.finance.tables import _REGIONS

#: Relative part of the identity's tolerance (on top of half a printed unit per row).
REL_TOLERANCE = 0.0005
_TOTAL = re.compile(r"^(total|subtotal|sub-total)\b")
#: ``Block.column_index`` of a block read across one printed row (segments as columns).
ACROSS = -1
#: a row of a segments-as-columns table that may break revenue down; a column header that is a total
_REVENUE_ROW = re.compile(r"\b(revenues?|net sales|sales)\b")
_TOTAL_COLUMN = re.compile(r"\b(total|totals|consolidated)\b|\bfull year\b")
_PROFIT = (("operating income", re.compile(r"operating income|income from operations|operating (profit|earnings)")),
           ("EBIT", re.compile(r"income before income taxes|earnings before interest and taxes|\bebit\b")))


def is_total(label: str | None) -> bool:
    """A total or subtotal line's label: "Total", "Subtotal", also when kerning split the word ("T otal segment operating
    profit", General Mills' 2022 segment note)."""
    text = normal_label(label)
    if _TOTAL.match(text):
        return True
    return bool(re.match(r"^(t|to|tot|tota|s|su|sub|subt|subto|subtot|subtota) ", text)) and text.replace(" ", "").startswith(("total", "subtotal"))


def normal_label(label: str | None) -> str:
    """A row label compared across tables and years: lower case, footnote marks and punctuation at the ends dropped."""
    text = (label or "").lower().replace("’", "'").replace("—", "-").replace("–", "-")
    text = re.sub(r"\(\d\)|\(\w\)$|\*", " ", text)
    return re.sub(r"\s+", " ", text).strip(" :.$,")


@dataclass
class Row:
    """One printed table row's value in one column."""

    label: str
    fact_id: str
    value: float
    line_no: int = 0


@dataclass
class Block:
    """A run of consecutive lines of one table column.

    Attributes:
        doc_name, page, column_index, fiscal_year, kind: where it is (``kind`` = the table's class, ``table:segment``...;
            ``column_index`` is ``ACROSS`` for a block read across one row of a segments-as-columns table).
        rows: lines other than totals, in printed order (for ``ACROSS``: the columns, labelled by their headers).
        total: the last line when it is a total, else None (for ``ACROSS``: the last total column).
        scale: the printed scale of the values (1e6 for millions).
        row_label: for ``ACROSS``, the printed row's label ("Total revenues"); None for a column block.
        header: for a column block, its column's header ("Operating Profit/(Loss) 2022"); None for ``ACROSS``.
    """

    doc_name: str
    page: int
    column_index: int
    fiscal_year: int
    kind: str
    scale: float
    rows: list[Row] = field(default_factory=list)
    total: Row | None = None
    row_label: str | None = None
    header: str | None = None

    def labels(self) -> set[str]:
        """The rows' normalised labels."""
        return {normal_label(r.label) for r in self.rows}

    def sums_to(self, value: float) -> bool:
        """True when the rows add up to ``value`` within rounding (half a printed unit per row, plus ``REL_TOLERANCE``)."""
        tolerance = 0.5 * self.scale * len(self.rows) + REL_TOLERANCE * abs(value)
        return len(self.rows) >= 2 and abs(sum(r.value for r in self.rows) - value) <= tolerance


@dataclass
class Breakdown:
    """A revenue breakdown of one document and fiscal year, with the evidence.

    Attributes:
        kind: ``"segment"`` or ``"geography"``.
        revenue: the block whose rows sum to the consolidated revenue.
        revenue_fact: the income statement's revenue fact id it was checked against.
        profit: ``(measure, block)`` when a segment profit block was found ("operating income" or "EBIT").
        reportable: for a breakdown reconciled in two steps (module docstring, 6), ``(segments' total, reconciliation's
            line)``: the segment table's printed total of the reportable segments, which the segment rows add up to,
            and the same amount printed as the first line of the reconciliation table; else None.
    """

    kind: str
    revenue: Block
    revenue_fact: str
    profit: tuple[str, Block] | None = None
    reportable: tuple[Row, Row] | None = None


def blocks(con: duckdb.DuckDBPyConnection, doc_name: str) -> list[Block]:
    """Candidate blocks of the document's table values in USD with a fiscal year (module docstring).

    A run of consecutive printed lines of one column gives one candidate per (start, end): start
    at the run's first line or just after a total line, end at a total line (the block's total)
    or at the run's last line (no total). Totals inside a candidate are subtotals ("Total NIKE
    Brand" above Converse) and are left out of its rows, so the identity decides which span is
    the breakdown.
    """
    rows = con.execute(
        "SELECT page, column_index, fiscal_year, line_no, label, fact_id, value, scale, statement, column_label FROM facts "
        "WHERE doc_name = ? AND statement LIKE 'table:%' AND unit = 'USD' AND fiscal_year IS NOT NULL "
        "AND value IS NOT NULL AND (months IS NULL OR months = 12) ORDER BY page, column_index, line_no", [doc_name]).fetchall()
    # lines holding any value (a "% of revenue" row between two amounts): they do not break a run; a text line does
    valued = set(con.execute("SELECT DISTINCT page, line_no FROM facts WHERE doc_name = ? AND statement LIKE 'table:%'",
                             [doc_name]).fetchall())
    runs: list[list[tuple]] = []
    for row in rows:
        prev = runs[-1][-1] if runs else None
        if (prev is None or prev[:3] != row[:3]
                or any((row[0], line) not in valued for line in range(prev[3] + 1, row[3]))):
            runs.append([])
        runs[-1].append(row)
    found = []
    for run in runs:
        page, column, year, *_ = run[0]
        totals = [is_total(r[4]) for r in run]
        starts = [0] + [i + 1 for i, t in enumerate(totals) if t and i + 1 < len(run)]
        ends = [i for i, t in enumerate(totals) if t] + ([len(run) - 1] if not totals[-1] else [])
        for s in starts:
            for e in (e for e in ends if e >= s):
                block = Block(doc_name, page, column, year, run[s][8], run[s][7] or 1.0,
                              [Row(r[4] or "", r[5], r[6], r[3]) for r, t in zip(run[s:e + 1], totals[s:e + 1], strict=True) if not t],
                              header=run[s][9])
                if totals[e]:
                    block.total = Row(run[e][4] or "", run[e][5], run[e][6], run[e][3])
                if block.rows:
                    found.append(block)
    return found


def across_blocks(con: duckdb.DuckDBPyConnection, doc_name: str) -> list[Block]:
    """Candidate blocks of the document's tables printed with segments as columns (module docstring, 5).

    One block per printed row and fiscal year whose values (USD, 12 months or no duration) all share
    that year under two or more distinct column headers: a row of a table whose periods are row
    headings ("2022:"), where each column is a segment. Rows are the columns other than totals, in
    printed order; ``total`` is the last total column; ``row_label`` the row's label.
    """
    rows = con.execute(
        "SELECT page, line_no, fiscal_year, label, column_label, fact_id, value, scale, statement FROM facts "
        "WHERE doc_name = ? AND statement LIKE 'table:%' AND unit = 'USD' AND fiscal_year IS NOT NULL AND value IS NOT NULL "
        "AND column_label IS NOT NULL AND (months IS NULL OR months = 12) ORDER BY page, line_no, fiscal_year, column_index",
        [doc_name]).fetchall()
    groups: dict[tuple, list[tuple]] = {}
    for row in rows:
        groups.setdefault(row[:3], []).append(row)
    found = []
    for (page, _line, year), cells in groups.items():
        headers = [normal_label(c[4]) for c in cells]
        if len(cells) < 2 or len(set(headers)) < len(cells):
            continue
        block = Block(doc_name, page, ACROSS, year, cells[0][8], cells[0][7] or 1.0, row_label=cells[0][3] or "")
        for cell, header in zip(cells, headers, strict=True):
            if _TOTAL_COLUMN.search(header) or is_total(header):
                block.total = Row(cell[4], cell[5], cell[6])
            else:
                block.rows.append(Row(cell[4], cell[5], cell[6]))
        if block.rows:
            found.append(block)
    return found


def breakdowns(con: duckdb.DuckDBPyConnection, doc_name: str, revenue: dict[int, tuple[str, float]],
               operating_income: dict[int, float] | None = None) -> list[Breakdown]:
    """The revenue breakdowns a document prints, found by the identity (module docstring).

    Args:
        con: the filings database.
        doc_name: one document.
        revenue: ``{fiscal_year: (revenue fact id, value in USD)}`` from the income statements.
        operating_income: ``{fiscal_year: value in USD}``, to recognise a segment operating-income block.

    Returns:
        Breakdowns of kind ``segment`` and ``geography``, each with the first profit block found for segments.
    """
    operating_income = operating_income or {}
    all_blocks = blocks(con, doc_name) + across_blocks(con, doc_name)
    found = []
    for block in all_blocks:
        if block.row_label is not None and not _REVENUE_ROW.search(normal_label(block.row_label)):
            continue  # a segments-as-columns row other than revenue or sales
        if block.fiscal_year not in revenue:
            continue
        reportable = None
        if not block.sums_to(revenue[block.fiscal_year][1]):
            reconciled = _reconciled(con, block, revenue[block.fiscal_year][1])
            if reconciled is None:
                continue
            block, reportable = reconciled
        profit = _profit_block(block, all_blocks, operating_income)
        regions = sum(bool(_REGIONS.match(normal_label(r.label))) for r in block.rows)
        if regions * 2 > len(block.rows) and profit is None:
            kind = "geography"
        elif block.kind == "table:segment" or profit is not None:
            kind = "segment"
        else:
            continue
        found.append(Breakdown(kind, block, revenue[block.fiscal_year][0], profit, reportable))
    return found


#: the label of a total of the reportable segments ("Total Reportable Segments", "Total segments", "Segment total")
_REPORTABLE = re.compile(r"^total (reportable |operating |business )?segments?\b|^(reportable )?segments? total\b")
#: the last line of a reconciliation: consolidated revenue ("Consolidated Operating Revenues", "Total")
_CONSOLIDATED = re.compile(r"^consolidated\b")


def _reconciled(con: duckdb.DuckDBPyConnection, block: Block, revenue: float) -> tuple[Block, tuple[Row, Row]] | None:
    """A segment block reconciled to revenue in two steps (module docstring, 6), or None.

    ``block``'s rows must add up to its printed total of the reportable segments, and a column of a
    table on the same page or the next (same fiscal year, USD) must print that amount on a line
    labelled as that total, then reconciling lines (text lines between them allowed, at most two in
    a row) up to a total or "consolidated" line, with the total and the reconciling lines adding up
    to ``revenue``. Returns the block with the reconciling lines appended to its rows and the
    consolidated line as its total, and the two printings of the reportable total.
    """
    total = block.total
    header = normal_label(total.label) if total is not None else ""
    if (total is None or not _REPORTABLE.search(header) or not block.sums_to(total.value)
            or any(_REPORTABLE.search(normal_label(r.label)) for r in block.rows)):
        return None
    lines = con.execute(
        "SELECT page, column_index, line_no, label, fact_id, value FROM facts WHERE doc_name = ? AND page IN (?, ?) "
        "AND statement LIKE 'table:%' AND unit = 'USD' AND fiscal_year = ? AND value IS NOT NULL "
        "AND (months IS NULL OR months = 12) ORDER BY page, column_index, line_no",
        [block.doc_name, block.page, block.page + 1, block.fiscal_year]).fetchall()
    columns: dict[tuple[int, int], list[tuple]] = {}
    for line in lines:
        columns.setdefault(line[:2], []).append(line)
    for column in columns.values():
        for i, line in enumerate(column):
            if not _REPORTABLE.search(normal_label(line[3])) or abs(line[5] - total.value) > 0.5 * block.scale:
                continue
            items: list[Row] = []
            for prev, nxt in zip(column[i:], column[i + 1:]):
                label = normal_label(nxt[3])
                if nxt[2] - prev[2] > 3:
                    break  # more than two text lines between: another table
                if is_total(label) or _CONSOLIDATED.search(label):
                    gap = line[5] + sum(r.value for r in items) - revenue  # the reconciliation's own identity
                    if items and abs(gap) <= 0.5 * block.scale * (len(items) + 1) + REL_TOLERANCE * abs(revenue):
                        merged = Block(block.doc_name, block.page, block.column_index, block.fiscal_year, block.kind,
                                       block.scale, block.rows + items, Row(nxt[3] or "", nxt[4], nxt[5], nxt[2]),
                                       block.row_label, block.header)
                        if merged.sums_to(revenue):
                            return merged, (total, Row(line[3] or "", line[4], line[5], line[2]))
                    break
                items.append(Row(nxt[3] or "", nxt[4], nxt[5], nxt[2]))
    return None


def _profit_block(revenue: Block, candidates: list[Block], operating_income: dict[int, float]) -> tuple[str, Block] | None:
    names = revenue.labels()
    lines = {r.line_no for r in revenue.rows}
    for block in candidates:
        if (block is revenue or block.fiscal_year != revenue.fiscal_year or block.page not in (revenue.page, revenue.page + 1)
                or block.total is None or len(block.labels() & names) < 2):
            continue
        # another column of the same printed lines (PepsiCo p.70: net revenue and operating profit side by side)
        beside = (block.column_index != revenue.column_index and ACROSS not in (block.column_index, revenue.column_index)
                  and block.page == revenue.page and lines <= {r.line_no for r in block.rows})
        if block.column_index != revenue.column_index and not beside:
            continue
        oi = operating_income.get(block.fiscal_year)
        if oi is not None and abs(block.total.value - oi) <= 0.5 * block.scale + REL_TOLERANCE * abs(oi):
            measure = "operating income"
        else:
            label = normal_label(block.header if beside else block.row_label if block.row_label is not None else block.total.label)
            measure = next((name for name, pattern in _PROFIT if pattern.search(label)), None)
        if measure:
            kept = Block(block.doc_name, block.page, block.column_index, block.fiscal_year, block.kind, block.scale,
                         [r for r in block.rows if normal_label(r.label) in names], block.total, block.row_label, block.header)
            return measure, kept
    return None


@dataclass
class CompanyBreakdown:
    """One kind of breakdown (segment or geography) of a company over fiscal years.

    Attributes:
        kind: ``"segment"`` or ``"geography"``.
        years: ``{fiscal_year: Breakdown}``, each year from the latest document that prints it.
        labels: ``[(normalised label, label as printed)]`` in printed order, latest document first.
        measure: the profit measure printed by segment ("operating income", "EBIT"), or None.
    """

    kind: str
    years: dict[int, Breakdown] = field(default_factory=dict)
    labels: list[tuple[str, str]] = field(default_factory=list)
    measure: str | None = None


def company_breakdowns(con: duckdb.DuckDBPyConnection, docs: list[str], revenue_ids: dict[int, str],
                       operating_income_ids: dict[int, str]) -> dict[str, CompanyBreakdown]:
    """A company's segment and geography revenue over the years its documents print.

    Within a document the page with the most breakdown years (then the most profit blocks, then
    the later page: the notes over MD&A) is used, with the years only the page before or after prints when
    their rows have the same labels (one table per year over two pages); across documents a later one wins for a year
    both print (the same rule as the rest of the company report).

    Args:
        con: the filings database.
        docs: the company's documents, oldest first.
        revenue_ids, operating_income_ids: ``{fiscal_year: fact_id}`` of the income statement.

    Returns:
        ``{"segment": ..., "geography": ...}``, only the kinds found.
    """
    values = dict(con.execute("SELECT fact_id, value FROM facts WHERE fact_id IN (SELECT unnest(?))",
                              [list(revenue_ids.values()) + list(operating_income_ids.values())]).fetchall())
    revenue = {y: (i, values[i]) for y, i in revenue_ids.items() if values.get(i) is not None}
    income = {y: values[i] for y, i in operating_income_ids.items() if values.get(i) is not None}
    result: dict[str, CompanyBreakdown] = {}
    for doc in docs:
        for kind in ("segment", "geography"):
            found = [b for b in breakdowns(con, doc, revenue, income) if b.kind == kind]
            if not found:
                continue
            pages = {b.revenue.page for b in found}
            best = max(pages, key=lambda p: (len({b.revenue.fiscal_year for b in found if b.revenue.page == p}),
                                             sum(b.profit is not None for b in found if b.revenue.page == p), p))
            target = result.setdefault(kind, CompanyBreakdown(kind))
            chosen = {b.revenue.fiscal_year: b for b in found if b.revenue.page == best}
            names = [b.revenue.labels() for b in chosen.values()]
            for b in found:  # a note over two pages: Verizon's 2022 and 2021 tables on p.101, 2020 on p.102
                if abs(b.revenue.page - best) == 1 and b.revenue.fiscal_year not in chosen and b.revenue.labels() in names:
                    chosen[b.revenue.fiscal_year] = b
            target.years.update(chosen)
    for target in result.values():
        seen: dict[str, str] = {}
        for year in sorted(target.years, reverse=True):
            for row in target.years[year].revenue.rows:
                seen.setdefault(normal_label(row.label), re.sub(r"\s*\(\w\)$", "", row.label).strip())
        target.labels = list(seen.items())
        measures = [b.profit[0] for b in target.years.values() if b.profit]
        target.measure = measures[-1] if measures else None
    return result
