"""Every other table of a filing as values with provenance: segment, geography, note, MD&A tables.

The main statements have their own path (``extract.extract_statements``, concept mapping); this
module turns the remaining tables into ``facts`` rows, without mapping them to concepts.

Two passes, as for the statements:

1. A cheap pass over the PDFium text already read for every page (``table_pages``): a page may
   hold a table when at least ``MIN_TABLE_LINES`` of its lines end in two or more numeric tokens.
2. Only those pages are parsed (``parse_table_page``), from their PDFium characters
   (``pdfium_chars``: the same characters and boxes pdfplumber reads, about twenty times faster):
   the positioned, de-duplicated lines of ``extract`` (``_lines``, ``_merge_parentheses``), each split into a label and the run
   of numbers that ends it; consecutive value lines form a table; the numbers' x-extents are
   clustered into columns; each column's label is the header text printed over it (a phrase that
   spans several columns, "Twelve Months Ended June 30, 2023", belongs to each of them); the
   period (year, months, end date) is read from that label when it names one.

A table is classified by the first rule that matches, in this order (``classify``): words in
its caption (the text lines above it), header and row labels, and the page's running head:

* ``non_gaap``: "non-GAAP", "adjusted", "EBITDA", "constant currency", "free cash flow" in the
  caption or a row label (not the column headers: "Adjusted operational" % change columns sit
  in plain sales tables);
* ``per_share``: most row labels speak of "per share" / "EPS";
* ``segment``: "segment" in the caption or header;
* ``geography``: "geographic" in the caption, or two or more row labels that name regions
  ("United States", "U.S.", "International", "Europe", "EMEA", "Asia", ...: the whole label,
  so "Foreign currency translation" is no region);
* ``reconciliation``: "reconciliation", "roll-forward", or a row "balance at/beginning of";
* ``note``: the page is in the notes ("Notes to (consolidated) financial statements" or
  "Note N" in its first lines, or it comes after the main statements' pages);
* ``mdna``: the page's first lines say "Management's Discussion" or "Results of Operations";
* ``other``: anything else.

The class is stored in ``facts.statement`` as ``table:<class>`` (``table:segment``), so SQL can
tell these values from the main statements' (``statement LIKE 'table:%'``).
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from plugins.finance.extract import (
    _DURATION,
    _YEAR,
    MONTHS,
    RUNNING_ROW,
    Column,
    LineItem,
    _lines,
    _merge_parentheses,
    _Word,
    duration_of,
    share_scale,
)
from plugins.finance.numbers import SCALES, detect_scale, parse_number

#: A page goes through the table pass when this many PDFium text lines end in two or more numbers.
MIN_TABLE_LINES = 3
#: Words closer than this (PDF points) to the label before them belong to the label ("Notes due 2025", "(5)").
LABEL_GAP = 6.0
#: A text line with this many words (or more) is running prose: it ends a table and is not a header.
PROSE_WORDS = 14
#: Header lines read above a table's first value line.
MAX_HEADER_LINES = 6
TABLE_CLASSES = ("non_gaap", "per_share", "segment", "geography", "reconciliation", "note", "mdna", "other")

_NUMERIC_TOKEN = re.compile(r"^\(?\$?\(?[-−]?(\d{1,3}(,\d{3})+|\d+)(\.\d+)?\)?%?\)?$|^[—–-]$|^\$?—$")
_TRAILING_NUMBERS = re.compile(r"(?:\s+\(?\$?\s?\(?[-−]?\d[\d,]*(?:\.\d+)?\)?%?\)?|\s+[—–])\s*$")
_SINGULAR_SCALE = re.compile(r"(?:\$|\bin)\s*(thousand|million|billion)\b", re.IGNORECASE)
_SCALE_CAPTION = re.compile(r"^\(?\s*(\$|dollars|amounts)?\s*(in\s+)?(thousands|millions|billions|million|thousand|billion)\b.*\)?$", re.IGNORECASE)
#: Running page headers and footers: never a column's header nor a table row ("Table of Contents" links, "2023 FORM 10-K").
_RUNNING = re.compile(r"\btable of contents\b", re.IGNORECASE)
#: A value counts things, not dollars, when its row label or its column's header names what is counted (``COUNT_WORDS``),
#: or the table's caption does and names no money, and neither label nor header names money or shares (``MONEY_WORDS``):
#: such values are stored with unit ``count`` and scale 1, whatever the caption's "(in millions)" says. Share counts keep
#: the caption's scale (printed in millions as captioned).
#: Not "countries" or "locations": "Other countries" is a revenue row of a geography table.
COUNT_WORDS = re.compile(r"\b(number of (?!shares)|stores|store count|employees|associates|team members|headcount|"
                         r"restaurants|warehouses|stores (opened|closed))\b", re.IGNORECASE)
MONEY_WORDS = re.compile(r"\b(costs?|expenses?|sales|revenues?|income|profit|loss|tax|compensation|benefits?|plans?|projects?|"
                         r"related|assets?|liabilit|lease|payments?|capital|depreciation|amortization|impairment|charges?|"
                         r"stock|shares?|per|\$|dollars?|price|value|amounts?)", re.IGNORECASE)
#: A filing's own statement of the scale of what follows: "Unless otherwise noted, tabular dollars are presented in
#: millions" (PepsiCo), "(amounts in millions, except share ... data)" under a part's heading (Costco's notes and MD&A).
_SCALE_DECLARATION = re.compile(r"(unless otherwise (noted|stated|indicated)|tabular (dollars|amounts)|all (dollar )?amounts)"
                                r"[^.]{0,80}?\b(in|are) (thousands|millions|billions)\b", re.IGNORECASE)
#: A part of a filing starts on this page: its scale declaration (or the lack of one) ends the previous part's.
_PART_HEAD = re.compile(r"^\s*(item\s+\d+[a-z]?\b|notes to (the )?(condensed )?(consolidated )?financial statements)", re.IGNORECASE)
#: A row heading inside a table naming the period of the rows under it ("2022:", "Year ended December 31, 2021"):
#: segment tables with segments as columns (CVS, Verizon) print the year this way.
_PERIOD_HEADING = re.compile(r"^((fiscal|year|years|three months|six months|nine months|twelve months|quarter|(first|second|third|fourth) quarter)"
                             r"[\w ,]*? )?(ended |ending )?([a-z]+\.? \d{1,2},? )?(19[5-9]\d|20[0-4]\d):?$", re.IGNORECASE)
#: A column header's word that may sit left of the right-aligned numbers under it: a year, "First" (over "Quarter").
_HEADER_WORD = re.compile(r"^((19[5-9]\d|20[0-4]\d)[,.]?|first|second|third|fourth|q[1-4])$", re.IGNORECASE)
#: A column of lengths of time: "Weighted-Average Contractual Remaining (years)", "Remaining Life (in years)".
_YEARS_COLUMN = re.compile(r"\((in )?years\)|\bin years\b|\b(remaining|contractual) (term|life)\b", re.IGNORECASE)
#: A column of prices of one share or unit: "Weighted-Average Grant-Date Fair Value", "Exercise Price", "Average Price Paid".
_UNIT_PRICE = re.compile(r"grant[- ]date fair value|exercise price|price paid|average price|fair value per", re.IGNORECASE)
_TITLE = re.compile(r"^[A-Z][A-Z&,'’-]+(\s+[A-Z&,'’-]+)+$")  # "REGIONAL SALES RESULTS"
_REGIONS = re.compile(r"^(united states|u\.\s?s\.|us|international|europe|emea|asia|asia pacific|apac|latin america|latam|lacc|north america|"
                      r"canada|china|japan|mexico|brazil|germany|united kingdom|uk|france|india|africa|middle east|americas|rest of (the )?world|"
                      r"other (countries|international|foreign)|foreign|non-u\.s\.|outside the u\.s\.)[\W\d]*$")  # the whole label


@dataclass
class TableColumn:
    """One value column of a table.

    Attributes:
        x0, x1: the horizontal extent of its numbers, in PDF points from the page's left edge.
        label: the header text printed over it ("Twelve Months Ended June 30, 2023 EBITDA"),
            empty when none is printed.
        period: the period its header names (year, end date, months), or None.
        percent: the header marks a percentage column ("%", "% Change", "percent").
    """

    x0: float
    x1: float
    label: str = ""
    period: Column | None = None
    percent: bool = False


@dataclass
class Table:
    """One table found on a page.

    Attributes:
        page: 1-based page number.
        index: the table's position on the page (0 for the topmost).
        kind: its class (one of ``TABLE_CLASSES``).
        caption: the text lines printed just above its header (its title, when it has one).
        scale_word, scale: from a caption such as "($ in millions)" above it, else the nearest one printed
            above it on its page, else the page's, else the filing's declaration for the part it is in
            (``document_scales``); ``units`` when none says.
        columns: left to right.
        lines: its rows with values; ``LineItem.values`` hold ``(column index, raw token,
            amount as printed, token bbox)``.
    """

    page: int
    index: int
    kind: str
    caption: str
    scale_word: str
    scale: float
    columns: list[TableColumn]
    lines: list[LineItem] = field(default_factory=list)
    #: per line (by ``LineItem.line_no``): the period of a row heading above it ("2022:"), for columns naming none.
    row_periods: dict[int, Column] = field(default_factory=dict)


def document_scales(texts: list[str]) -> list[tuple[str, float]]:
    """The scale each page inherits from its filing, for tables that print none of their own.

    A declaration ("Unless otherwise noted, tabular dollars are presented in millions"; a
    "(amounts in millions, ...)" caption in a page's first lines) holds from its page to the next
    page that starts a part ("Item 8", "Notes to Consolidated Financial Statements") without one.

    Args:
        texts: every page's PDFium text, index 0 for page 1.

    Returns:
        ``(scale word, multiplier)`` per page, ``("units", 1.0)`` where nothing is declared.
    """
    out: list[tuple[str, float]] = []
    current = ("units", 1.0)
    for text in texts:
        head = [ln for ln in text.splitlines() if ln.strip() and not _RUNNING.search(ln)][:6]
        found = ("units", 1.0)
        if m := _SCALE_DECLARATION.search(re.sub(r"\s+", " ", text)):
            found = (m[6].lower(), SCALES[m[6].lower()])
        else:
            for ln in head:
                if re.search(r"\((amounts|dollars|\$)\s+in\s+(thousands|millions|billions)\b", ln, re.IGNORECASE):
                    found = _scale(ln)
                    break
        if found[0] != "units":
            current = found
        elif any(_PART_HEAD.match(ln) for ln in head):
            current = ("units", 1.0)
        out.append(current)
    return out


# -- the cheap pass ----------------------------------------------------------------------------

def _ends_in_numbers(line: str, count: int = 2) -> bool:
    text = line.rstrip()
    for _ in range(count):
        match = _TRAILING_NUMBERS.search(text)
        if not match:
            return False
        text = text[: match.start()]
    return True


def table_pages(texts: list[str], skip: set[int] = frozenset()) -> list[int]:
    """Pages that may hold a table, from their PDFium text alone (no layout analysis).

    Args:
        texts: every page's text, index 0 for page 1.
        skip: 1-based pages to leave out (the main statements' pages, parsed elsewhere).

    Returns:
        1-based page numbers, ascending, of pages with at least ``MIN_TABLE_LINES`` lines ending
        in two or more numeric tokens (``1,048 70.5``, ``(90) (6.0)``, ``— 5,992``).
    """
    return [i + 1 for i, text in enumerate(texts)
            if i + 1 not in skip and sum(_ends_in_numbers(ln) for ln in text.splitlines()) >= MIN_TABLE_LINES]


# -- one page ----------------------------------------------------------------------------------

def _split_row(row: list[_Word]) -> tuple[list[_Word], list[_Word]]:
    """Split a positioned line into (label words, value words): the values are the run of numeric
    tokens that ends the line, less any token set within ``LABEL_GAP`` of the label before it."""
    words = [w for w in row if w.text != "$"]
    cut = len(words)
    while cut > 0 and _NUMERIC_TOKEN.match(words[cut - 1].text) and parse_number(words[cut - 1].text) is not None:
        cut -= 1
    while 0 < cut < len(words) and words[cut].x0 - words[cut - 1].x1 < LABEL_GAP:
        cut += 1  # "Notes due 2025", "intangibles (5)": the number is part of the label
    if cut == 0 and len(words) >= 2 and _YEAR.match(words[0].text) and not _is_years_row(words):
        cut = 1  # "2023  $ 55" in a maturity schedule: the year names the row, it is no value
    return words[:cut], words[cut:]


def _scale(text: str) -> tuple[str, float]:
    """``numbers.detect_scale``, plus the singular "($ million)" / "in thousand" of some releases."""
    found = detect_scale(text)
    if found[0] == "units" and (m := _SINGULAR_SCALE.search(text)):
        word = m[1].lower() + "s"
        return word, SCALES[word]
    return found


def _is_years_row(values: list[_Word]) -> bool:
    return bool(values) and all(_YEAR.match(w.text) for w in values)


def _phrases(row: list[_Word], gap: float = 7.0) -> list[_Word]:
    """Join words of a header line that sit closer than ``gap`` points into phrases."""
    out: list[_Word] = []
    for w in row:
        if out and w.x0 - out[-1].x1 < gap:
            prev = out.pop()
            out.append(_Word(f"{prev.text} {w.text}", prev.x0, w.x1, min(prev.top, w.top), max(prev.bottom, w.bottom)))
        else:
            out.append(_Word(w.text, w.x0, w.x1, w.top, w.bottom))
    return out


def _cluster_columns(value_rows: list[tuple[int, list[_Word]]]) -> list[tuple[float, float]]:
    """Column extents from the value tokens' x-extents: tokens that overlap horizontally and come
    from different lines share a column (numbers are right-aligned, dashes centred)."""
    clusters: list[list[Any]] = []  # [x0, x1, set of row ids]
    tokens = sorted(((w.x0, w.x1, r) for r, words in value_rows for w in words), key=lambda t: (t[1], t[0]))
    for x0, x1, r in tokens:
        best, overlap = None, 0.0
        for c in clusters:
            o = min(x1, c[1]) - max(x0, c[0])
            if o > overlap and r not in c[2]:
                best, overlap = c, o
        if best is None:
            clusters.append([x0, x1, {r}])
        else:
            best[0], best[1] = min(best[0], x0), max(best[1], x1)
            best[2].add(r)
    merged: list[list[Any]] = []
    for c in sorted(clusters, key=lambda c: c[0]):
        if merged and min(c[1], merged[-1][1]) - max(c[0], merged[-1][0]) > 0 and not (c[2] & merged[-1][2]):
            merged[-1] = [min(c[0], merged[-1][0]), max(c[1], merged[-1][1]), c[2] | merged[-1][2]]
        else:
            merged.append(c)
    return [(c[0], c[1]) for c in merged]


def column_period(label: str) -> Column | None:
    """The period a column header names, or None when it names no year.

    "Twelve Months Ended June 30, 2023" gives FY2023 ending 2023-06-30 (12 months); "Q4 2022"
    3 months; "December 31, 2022" an instant at that date; a bare "2022" the fiscal year with
    the length unknown (months None).
    """
    label = re.sub(r"\b((?:19|20)\d\d)\(\s?[a-z]\)", r"\1", label)  # "2022( a)": a footnote mark kerned onto the year
    years = [w.rstrip(",.") for w in label.split() if _YEAR.match(w)]
    if not years:
        return None
    year = int(years[-1])
    squeezed = re.sub(r"\s+", "", label).lower()
    months = None
    quarter = re.search(r"\b(first|second|third|fourth|1st|2nd|3rd|4th)\s+quarter\b|\bq([1-4])\b|\b([1-4])q\b", label.lower())
    if quarter:  # "Year Ended December 31, 2016 ... Second Quarter": the column is the quarter, not the year
        n = quarter[2] or quarter[3] or str(["first", "second", "third", "fourth"].index(
            {"1st": "first", "2nd": "second", "3rd": "third", "4th": "fourth"}.get(quarter[1], quarter[1])) + 1)
        end = _label_end(label, year)
        fourth = n == "4"  # a fiscal year's end date is its fourth quarter's; the others' ends are not printed
        return Column(center=0.0, fiscal_year=year, period_end=end if fourth or not _YEAR_END.search(label) else None,
                      months=3, name=f"Q{n}")
    if m := _DURATION.search(squeezed):
        months = duration_of(m)
    elif re.search(r"\bq[1-4]\b|quarter", label.lower()):
        months = 3
    elif re.search(r"full year|fiscal year|year ended|years ended|twelve months", label.lower()):
        months = 12
    return Column(center=0.0, fiscal_year=year, period_end=_label_end(label, year), months=months)


#: A header naming the whole year a column's quarter belongs to ("Year Ended December 31, 2016").
_YEAR_END = re.compile(r"\b(fiscal )?years? ended\b", re.IGNORECASE)


def _label_end(label: str, year: int) -> date | None:
    """The month and day a header prints ("June 30, 2023"), in ``year``; None when it prints none."""
    if m := re.search(r"\b(" + "|".join(k for k in MONTHS if len(k) > 3 or k == "may") + r")\.?\s+(\d{1,2}),?", label.lower()):
        try:
            return date(year, MONTHS[m[1]], int(m[2]))
        except ValueError:
            return None
    return None


def classify(caption: str, header: str, labels: list[str], page_head: str, after_statements: bool = False) -> str:
    """A table's class by the first matching rule of the module docstring.

    Args:
        caption: the text lines above its header; header: the header text; labels: its row
        labels; page_head: the page's first lines (running head); after_statements: the page
        comes after the main statements' pages (where the notes are).

    Returns:
        One of ``TABLE_CLASSES``.
    """
    above = f"{caption} {header}".lower()
    rows = [ln.lower().strip() for ln in labels]
    if re.search(r"non-gaap|\badjusted\b|ebitda|constant currency|free cash flow", f"{caption.lower()} {' '.join(rows)}"):
        return "non_gaap"
    if rows and sum(bool(re.search(r"per (common |diluted )?share|\beps\b", r)) for r in rows) * 2 > len(rows):
        return "per_share"
    if "segment" in above:
        return "segment"
    if "geograph" in above or sum(bool(_REGIONS.match(r)) for r in rows) >= 2:
        return "geography"
    if re.search(r"reconciliation|roll-?forward", above) or any(re.match(r"balances?,? (at|as of) |.*beginning of (the )?(year|period)", r) for r in rows):
        return "reconciliation"
    head = page_head.lower()
    if after_statements or re.search(r"notes to (the )?(condensed )?(consolidated )?financial statements|^\s*note \d+", head, re.MULTILINE):
        return "note"
    if re.search(r"management['’]s discussion|results of operations", head):
        return "mdna"
    return "other"


def parse_table_page(page: Any, page_number: int, page_text: str, after_statements: bool = False,
                     inherited: tuple[str, float] = ("units", 1.0)) -> list[Table]:
    """Find and parse the tables of one page.

    Args:
        page: a pdfplumber page, or a ``pdfium_chars.PdfiumPage`` (only its ``chars`` are read; they are
            de-duplicated by ``extract._lines``).
        page_number: its 1-based number.
        page_text: its PDFium text (for the scale caption and the running head).
        after_statements: the page follows the main statements' pages (see ``classify``).
        inherited: the scale the filing declares for the part the page is in (``document_scales``),
            for tables with no scale of their own or on their page.

    Returns:
        The tables, top to bottom; a table needs two or more value lines, one of them with two
        or more values, or three value lines. Lines are numbered as the statement parser numbers
        them (1-based among the page's positioned lines), so fact ids agree across both paths.
    """
    rows = [_merge_parentheses(r) for r in _lines(page)]
    page_scale = _scale(page_text)
    if page_scale[0] == "units":
        page_scale = inherited
    page_head = "\n".join([ln for ln in page_text.splitlines() if ln.strip()][:6])
    split = [_split_row(r) for r in rows]
    blocks: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    gap_rows: list[int] = []  # text lines since the last value line
    for i, (label, values) in enumerate(split):
        prose = len(rows[i]) >= PROSE_WORDS and not values
        if not values or _is_years_row(values) or prose:
            if prose:
                current, gap_rows = None, []
            else:
                gap_rows.append(i)
            continue
        left = current["left"] if current else None
        header_like = left is not None and any(w.x0 >= left - 5 for g in gap_rows for w in rows[g])
        if current is None or header_like:
            header = _header_rows(rows, split, i)
            current = {"header": header, "value_rows": [], "left": min(w.x0 for w in values)}
            blocks.append(current)
        current["value_rows"].append(i)
        current["left"] = min(current["left"], min(w.x0 for w in values))
        gap_rows = []
    tables = []
    for block in blocks:
        first = block["header"][0] if block["header"] else block["value_rows"][0]
        above = [_scale(" ".join(w.text for w in rows[j])) for j in range(first)]
        stated = [found for found in above if found[0] != "units"]
        scale = stated[-1] if stated else page_scale  # the nearest caption above it, else the page's
        table = _build_table(block, rows, split, page_number, scale, page_head, len(tables), after_statements)
        if table is not None:
            tables.append(table)
    return tables


def _header_rows(rows: list[list[_Word]], split: list[tuple[list[_Word], list[_Word]]], first: int) -> list[int]:
    """The text lines (and year lines) directly above value line ``first``, nearest last."""
    header: list[int] = []
    for j in range(first - 1, max(-1, first - 1 - MAX_HEADER_LINES), -1):
        values = split[j][1]
        if (values and not _is_years_row(values)) or len(rows[j]) >= PROSE_WORDS:
            break
        header.insert(0, j)
    return header


def _label_columns(columns: list[TableColumn], phrases: list[_Word], spread: bool, below: list[_Word] = ()) -> None:
    """Add one header line's phrases to the labels of the columns they stand over.

    A phrase labels every column it overlaps. On the topmost header line only (``spread``,
    where spanning headers sit), a column no phrase overlaps takes, when the line
    has several phrases, the one whose share of the line holds its centre (split halfway between
    phrase centres: "Q4" and "Full Year" over three columns each); when the line has one
    phrase, that phrase if the column lies within 1.5 column spacings of its ends ("% Change"
    over four columns of changes), unless the phrase is the top of one column's stacked header: a
    phrase of the next header line (``below``) right-aligned with it and at least as wide ("Total"
    over "Reportable" over "Segments", Verizon's segment tables; a spanning header is wider than
    what it spans) and names no period.
    """
    centers = [(c.x0 + c.x1) / 2 for c in columns]
    spacing = sorted(b - a for a, b in itertools.pairwise(centers))[(len(centers) - 1) // 2] if len(centers) > 1 else 60.0
    stacked = (len(phrases) == 1 and column_period(phrases[0].text) is None  # a period spans its columns ("June 30, 2023")
               and any(abs(b.x1 - phrases[0].x1) <= 3 and b.x1 - b.x0 >= phrases[0].x1 - phrases[0].x0 for b in below))
    for c, center in zip(columns, centers):
        hit = [p for p in phrases if min(p.x1, c.x1 + 3) - max(p.x0, c.x0 - 3) > 0]
        if hit or not spread:
            pass
        elif len(phrases) > 1:
            bounds = [(a.center + b.center) / 2 for a, b in itertools.pairwise(phrases)]
            hit = [phrases[sum(center > b for b in bounds)]]
        elif phrases[0].x0 - 1.5 * spacing <= center <= phrases[0].x1 + 1.5 * spacing and not stacked:
            hit = phrases
        if not hit and not spread:  # a year centred over its column but short of its numbers ("2022" over "$ 461")
            near = [p for p in phrases if _HEADER_WORD.match(p.text) and abs(p.center - center) < 0.5 * spacing
                    and not any(min(p.x1, o.x1 + 3) - max(p.x0, o.x0 - 3) > 0 for o in columns)]
            hit = sorted(near, key=lambda p: abs(p.center - center))[:1]
        for p in hit:
            c.label = f"{c.label} {p.text}".strip()


def _build_table(block: dict[str, Any], rows: list[list[_Word]], split: list[tuple[list[_Word], list[_Word]]],
                 page_number: int, page_scale: tuple[str, float], page_head: str, index: int, after_statements: bool) -> Table | None:
    value_rows = block["value_rows"]
    counts = [len(split[i][1]) for i in value_rows]
    if not (len(value_rows) >= 3 or (len(value_rows) >= 2 and max(counts) >= 2)):
        return None
    extents = _cluster_columns([(i, split[i][1]) for i in value_rows])
    columns = [TableColumn(x0, x1) for x0, x1 in extents]
    left_edge = min(c.x0 for c in columns)
    label_right = max((w.x1 for i in value_rows for w in split[i][0]), default=0.0)
    header_text, caption_lines = [], []
    section_period: Column | None = None
    corner_year = ""
    for h in block["header"]:
        heading = " ".join(w.text for w in rows[h]).strip()
        if _PERIOD_HEADING.match(heading) and not split[h][1] and max(w.x1 for w in rows[h]) < left_edge:
            # "2022:" in the labels' place, under the segment names and over the rows (not a column's header)
            section_period = column_period(heading.rstrip(":"))
            continue
        phrases = [p for p in _phrases(rows[h]) if not RUNNING_ROW.match(p.text.strip())]
        for p in phrases:  # a "Table of Contents" link printed over the header joins the phrase next to it
            p.text = re.sub(r"\s+", " ", _RUNNING.sub(" ", p.text)).strip()
        phrases = [p for p in phrases if p.text]
        in_zone = [p for p in phrases if (p.center >= left_edge - 5 or p.x1 > left_edge - 3
                                          or (_HEADER_WORD.match(p.text) and p.x0 > label_right))  # "2021" left of its numbers
                   and not _SCALE_CAPTION.search(p.text)
                   and not _TITLE.match(p.text)
                   and not (p.x0 < left_edge - 5 and len(p.text.split()) >= 6)]  # a sentence introducing the table
        corner = [p for p in phrases if p not in in_zone and p.x1 < left_edge and _PERIOD_HEADING.match(p.text)
                  and re.fullmatch(r"(19[5-9]\d|20[0-4]\d):?", p.text)]
        if corner and in_zone:
            # "2022" in the labels' place on the line of the column headers (Verizon's segment tables, one per year)
            corner_year = corner[0].text.rstrip(":")
            phrases = [p for p in phrases if p is not corner[0]]
        outside = " ".join(p.text for p in phrases if p not in in_zone)
        if outside:  # a title, or "($ in millions)" over the labels
            caption_lines.append(outside)
        if in_zone:
            below = _phrases(rows[h + 1]) if h + 1 in block["header"] else []
            _label_columns(columns, in_zone, spread=not header_text, below=below)
            header_text.append(" ".join(p.text for p in in_zone))
    for c in columns:
        c.period = column_period(c.label) or (column_period(f"{c.label} {corner_year}") if corner_year else None)
        c.percent = bool(re.search(r"%|percent|\bchange\b", c.label.lower()))
    caption = " ".join(caption_lines)
    scale_word, scale = _scale(" ".join(caption_lines + header_text))
    if scale_word == "units":
        scale_word, scale = page_scale
    lines: list[LineItem] = []
    pending: list[_Word] = []
    row_periods: dict[int, Column] = {}
    first, last = block["value_rows"][0], block["value_rows"][-1]
    for n in range(first, last + 1):
        label_words, values = split[n]
        if n not in value_rows:
            heading = " ".join(w.text for w in rows[n]).strip()
            if _PERIOD_HEADING.match(heading) and max(w.x1 for w in rows[n]) < columns[0].x0:
                # "2022:" in the labels' place, over the rows of a segments-as-columns table
                section_period, pending = column_period(heading.rstrip(":")), []
                continue
            pending = label_words if label_words and not _is_years_row(values) else []
            continue
        if not label_words and not pending and len(values) == 1:
            continue  # a page number or a stray figure, not a table row
        if RUNNING_ROW.match(" ".join(w.text for w in label_words).strip()):
            continue  # a running footer ("2023 FORM 10-K" and its page number)
        words = label_words
        if pending and (not label_words or label_words[0].text[:1].islower()):
            words = pending + label_words  # a label wrapped onto the line of its numbers
        pending = []
        cells: dict[int, tuple[int, str, float, tuple[float, float, float, float]]] = {}
        for w in values:
            col = next(k for k, c in enumerate(columns) if c.x0 <= w.center <= c.x1)
            number = parse_number(w.text)
            cells.setdefault(col, (col, w.text, number.amount, (round(w.x0, 2), round(w.top, 2), round(w.x1, 2), round(w.bottom, 2))))
        all_words = words + values
        bbox = (min(w.x0 for w in all_words), min(w.top for w in all_words), max(w.x1 for w in all_words), max(w.bottom for w in all_words))
        lines.append(LineItem(page=page_number, line_no=n + 1, bbox=tuple(round(v, 2) for v in bbox),
                              label=" ".join(w.text for w in words), raw_text=" ".join(w.text for w in rows[n]),
                              values=sorted(cells.values()), section=""))
        if section_period is not None:
            row_periods[n + 1] = section_period
    kind = classify(caption, " ".join(header_text), [ln.label for ln in lines], page_head, after_statements)
    return Table(page_number, index, kind, caption, scale_word, scale, columns, lines, row_periods)


# -- a document --------------------------------------------------------------------------------

def extract_tables(path: Path, texts: list[str], skip: set[int]) -> tuple[list[Table], list[int]]:
    """Run the cheap pass, then parse the pages it picks from their PDFium characters (``pdfium_chars``).

    Args:
        path: the PDF.
        texts: every page's PDFium text (index 0 for page 1).
        skip: 1-based pages already parsed as main statements.

    Returns:
        ``(tables, pages parsed)``.

    Raises:
        FilingError: PDFium cannot read the file.
    """
    pages = table_pages(texts, skip)
    tables: list[Table] = []
    if not pages:
        return tables, pages
    for number, found in _parse_pages(path, texts, skip, pages):
        tables.extend(found)
    return tables, pages


def _parse_pages(path: Path, texts: list[str], skip: set[int], pages: list[int]):
    """Yield ``(page, tables)`` for each of ``pages``, read with PDFium."""
    from plugins.finance.extract import open_document
    from plugins.finance.pdfium_chars import pdfium_page

    inherited = document_scales(texts)
    doc = open_document(path)
    try:
        for number in pages:
            yield number, parse_table_page(pdfium_page(doc, number), number, texts[number - 1],
                                           after_statements=bool(skip) and number > max(skip), inherited=inherited[number - 1])
    finally:
        doc.close()


def table_pass(path: Path, sha256: str, texts: list[str], skip: set[int], cache_dir: Path | None,
               version: str) -> tuple[list[dict[str, Any]], list[int], list[int]]:
    """The ``facts`` rows of every table outside the main statements, each page cached on its own.

    A page's facts are cached as JSON under ``cache_dir/pages/<sha256>-p<page>-<version>.json``
    (the PDF's content hash, the page, the parser version), so a document whose parse is
    interrupted, or re-parsed for another reason, reads again only the pages not yet cached.

    Args:
        path: the PDF; sha256: its content hash; texts: every page's PDFium text; skip: the main
            statements' pages; cache_dir: the parse cache (None: no page cache); version: the
            parser version (``ingest.PARSER_VERSION``).

    Returns:
        ``(facts, pages parsed, pages that yielded no value)``; facts carry ``doc_name`` = ``path.stem``.

    Raises:
        FilingError: PDFium cannot read the file.
    """
    import json
    import os

    name = path.stem
    pages = table_pages(texts, skip)
    folder = cache_dir / "pages" if cache_dir else None
    facts: list[dict[str, Any]] = []
    by_page: dict[int, list[dict[str, Any]]] = {}
    todo = []
    for number in pages:
        cached = folder / f"{sha256}-p{number}-{version}.json" if folder else None
        if cached is not None and cached.is_file():
            by_page[number] = json.loads(cached.read_text())
        else:
            todo.append(number)
    if todo:
        if folder:
            folder.mkdir(parents=True, exist_ok=True)
        for number, found in _parse_pages(path, texts, skip, todo):
            rows = table_facts("", sha256, found)
            by_page[number] = rows
            if folder:
                target = folder / f"{sha256}-p{number}-{version}.json"
                tmp = target.with_suffix(".tmp")
                tmp.write_text(json.dumps(rows))
                os.replace(tmp, target)
    for number in pages:
        for row in by_page[number]:
            facts.append({**row, "doc_name": name, "fact_id": f"{name}{row['fact_id']}"})
    empty = [n for n in pages if not by_page[n]]
    return facts, pages, empty


def is_count(label: str, column_label: str, caption: str, raw: str) -> bool:
    """True when a value is a count of things (stores, employees), by the rule at ``COUNT_WORDS``.

    Args:
        label: the row label; column_label: the value's column header; caption: the table's caption;
        raw: the value as printed (a count is a whole number: no decimal point, no %).
    """
    if MONEY_WORDS.search(label) or MONEY_WORDS.search(column_label) or "." in raw or "%" in raw:
        return False  # a share-repurchase table's "Total Number of Shares Purchased" and its dollar columns stay as read
    return bool(COUNT_WORDS.search(label) or COUNT_WORDS.search(column_label)
                or (COUNT_WORDS.search(caption) and not MONEY_WORDS.search(caption)))


def table_facts(doc_name: str, sha256: str, tables: list[Table]) -> list[dict[str, Any]]:
    """``facts`` rows for every value of ``tables`` (same provenance fields as the statements').

    Per-share values (``LineItem.unit``, or a price column with decimals: "Grant-Date Fair
    Value", "Exercise Price"), lengths of time (a "(years)" column: unit ``years``), percentages
    (a ``%`` token, a percentage column, or a label starting with "%") and counts (``is_count``: stores, employees; unit ``count``) are
    not scaled; other amounts take the table's scale. A column
    whose header names no year takes the year printed in the table's top-left corner, read with its
    header ("2022" over Verizon's "Consumer", "2018" over 3M's "First Quarter": a quarter of 2018), or
    the period of the row heading above the value ("2022:" in a table with segments as columns), else has no period (``period_label`` and ``fiscal_year``
    NULL); its header text is in ``column_label`` either way. Share counts captioned "(000's)" are
    in thousands (``extract.share_scale``).
    """
    facts = []
    for table in tables:
        title = table.caption or table.kind
        for line in table.lines:
            for col, raw, amount, cell in line.values:
                column = table.columns[col]
                percent = raw.rstrip(")").endswith("%") or column.percent or line.label.lstrip().startswith("%")
                per_share = bool(re.search(r"\beps\b|per (common |diluted )?share", column.label.lower()))
                unit = "percent" if percent else "USD/share" if per_share else line.unit
                if unit == "USD" and _YEARS_COLUMN.search(column.label):
                    unit = "years"  # PepsiCo's "(years)" column under "(in thousands)": 1.24 years, not $1,240
                elif unit == "USD" and "." in raw and _UNIT_PRICE.search(column.label):
                    unit = "USD/share"  # a grant-date fair value of $143.02 a unit, not $143,020
                if unit == "USD" and is_count(line.label, column.label, table.caption, raw):
                    unit = "count"
                scale_word, scale = (table.scale_word, table.scale) if unit in ("USD", "shares") else ("units", 1.0)
                if unit == "shares":  # "(shares in 000's)": Costco's share counts are in thousands
                    scale_word, scale = share_scale(f"{table.caption} {line.label} {column.label}", scale_word, scale)
                if unit == "USD/share" and re.search(r"\bcents\b", f"{column.label} {line.label}".lower()):
                    scale_word, scale = "cents", 0.01
                period = column.period or table.row_periods.get(line.line_no)
                facts.append({
                    "fact_id": f"{doc_name}:p{line.page}:l{line.line_no}:c{col}", "doc_name": doc_name, "sha256": sha256,
                    "statement": f"table:{table.kind}", "title": title, "page": line.page, "line_no": line.line_no,
                    "x0": cell[0], "top": cell[1], "x1": cell[2], "bottom": cell[3],
                    "label": line.label, "concept": None, "raw_text": line.raw_text, "raw_value": raw,
                    "amount": amount, "scale_word": scale_word, "scale": scale, "value": amount * scale, "unit": unit,
                    "currency": "USD", "period_label": period.label if period else None,
                    "fiscal_year": period.fiscal_year if period else None,
                    "period_end": period.period_end.isoformat() if period and period.period_end else None,
                    "months": period.months if period else None, "column_index": col, "column_label": column.label,
                })
    return facts
