"""From a filing PDF to line items with provenance.

Two passes keep ingestion fast: PDFium (``pypdfium2``, already a dependency of pdfplumber) reads
every page's text, which is cheap, to index the document and find the pages that hold the main
statements; only those pages then go through ``pdfplumber`` for positioned words, with
duplicated characters removed (``dedupe_chars``: bold text drawn twice otherwise reads
"TToottaall"), and for tables found by ruling lines (their cell text is kept as drawn).

Statements in SEC filings are mostly drawn without ruling lines, so the table finder is not
relied on for values: a label-and-numbers line parser groups words into lines by their vertical
position, takes the numeric tokens aligned under the column headers (years or dates) as values
and the rest as the label, and joins a label that wraps onto the next line with its numbers.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import pdfplumber
import pypdfium2
from pdfplumber.utils import extract_words

from plugins.finance.concepts import (
    STATEMENTS,
    Canonical,
    canonical,
    concept_priority,
    match_label,
    polarity_sign,
    statement_kind,
)
from plugins.finance.locate import locate
from plugins.finance.numbers import detect_scale, parse_number

MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"], 1)}
MONTHS.update({k[:3]: v for k, v in list(MONTHS.items())})
MONTHS["sept"] = 9
_YEAR = re.compile(r"^(19[5-9]\d|20[0-4]\d)[,.]?$")
_DURATION = re.compile(
    r"(?P<count>\d{1,2}|three|six|nine|twelve|thirteen|fourteen|twenty-?six|thirty-?nine|fifty-?two|fifty-?three)(?P<unit>months|weeks)"
    r"|(?P<quarter>(?:first|second|third|fourth)quarter|quarterended|quartersended)|(?P<year>fiscalyear|years?ended)"
    r"|(?P<half>firsthalf|halfyear)")
#: A column header word naming a quarter or a half by itself: "Q1", "Q2'23", "1Q23", "H1".
_PERIOD_WORD = re.compile(r"^(?:(?P<q>q[1-4]|[1-4]q)|(?P<h>h[12]|[12]h))(?:['’]?\d{2}|\d{4})?$")
#: A date printed as digits in a column header: "3/25/2023", "03/25/23".
_NUMERIC_DATE = re.compile(r"^(?P<m>\d{1,2})/(?P<d>\d{1,2})/(?P<y>\d{4}|\d{2})$")
_WORD_NUMBERS = {"three": 3, "six": 6, "nine": 9, "twelve": 12, "thirteen": 13, "fourteen": 14, "twentysix": 26,
                 "thirtynine": 39, "fiftytwo": 52, "fiftythree": 53}


class FilingError(Exception):
    """A document could not be ingested; the message says why and what to do."""


@dataclass
class Column:
    """A value column of a statement: where it sits and which period it reports.

    Attributes:
        center: x of the header's centre, in PDF points from the page's left edge.
        fiscal_year: the year printed in the header (the year the period ends).
        period_end: the period's end date when the header or caption gives month and day.
        months: the period's length for flows (12 for a fiscal year, 3 for a quarter), None for
            balance-sheet instants.
        name: the period's own name when the header gives one instead of a date ("Q1", "H1").
        basis: ``"restated"`` or ``"as reported"`` when the header says the column is restated
            (recast, as adjusted) or as previously reported; empty otherwise.
    """

    center: float
    fiscal_year: int
    period_end: date | None = None
    months: int | None = None
    name: str = ""
    basis: str = ""

    @property
    def label(self) -> str:
        """``FY2018`` for a fiscal year (or a balance sheet at a date only the year names),
        ``2023-07-29`` for a balance sheet at that date, ``3M 2023-07-29`` for a quarter,
        ``Q2 2023`` for a quarter the header names without a date; `` (restated)`` or
        `` (as reported)`` is appended for such columns, so both stay apart."""
        suffix = f" ({self.basis})" if self.basis else ""
        if self.months is None:
            return (self.period_end.isoformat() if self.period_end else f"FY{self.fiscal_year}") + suffix
        if self.name and self.period_end is None:
            return f"{self.name} {self.fiscal_year}{suffix}"
        if self.months == 12:
            return f"FY{self.fiscal_year}{suffix}"
        return f"{self.months}M {self.period_end.isoformat() if self.period_end else self.fiscal_year}{suffix}"


#: A label or caption that counts shares even when it says "per share": "Shares used in per share calculation",
#: "Shares used to compute diluted net income per share", "Weighted-average shares outstanding".
SHARE_COUNT = re.compile(r"\bshares used\b|\b(weighted[- ]average|average) (number of )?(common |ordinary )?shares\b"
                         r"|\bnumber of (common |ordinary )?shares\b|\bshares outstanding\b")
#: A share count printed in thousands whatever the statement's "(in millions)": Costco's "Shares used in
#: calculation (000's)", "(shares in 000's)", "shares in thousands".
SHARES_IN_THOUSANDS = re.compile(r"\(0{3}['’]?s\)|\bin 0{3}['’]?s\b|\bshares in thousands\b|\(in thousands(?: of shares)?\)", re.IGNORECASE)


def share_scale(text: str, scale_word: str, scale: float) -> tuple[str, float]:
    """The scale of a share count: thousands when ``text`` (its label, the caption over it) says
    "(000's)" or "shares in thousands" (``SHARES_IN_THOUSANDS``), else ``(scale_word, scale)``."""
    return ("thousands", 1e3) if SHARES_IN_THOUSANDS.search(text) else (scale_word, scale)


@dataclass
class LineItem:
    """One parsed statement line.

    Attributes:
        page: 1-based page number in the PDF.
        line_no: 1-based line number among the page's text lines (top to bottom).
        bbox: ``(x0, top, x1, bottom)`` in PDF points, top measured from the page's top edge.
        label: the label as printed (wrapped labels joined with a space).
        raw_text: the whole line as printed, label and numbers.
        values: ``[(column index, raw token, amount as printed, the token's bbox)]``.
    """

    page: int
    line_no: int
    bbox: tuple[float, float, float, float]
    label: str
    raw_text: str
    values: list[tuple[int, str, float, tuple[float, float, float, float]]] = field(default_factory=list)
    section: str = ""

    @property
    def unit(self) -> str:
        """``USD/share`` for per-share amounts, ``shares`` for share counts, else ``USD``.

        Read from the label and the caption line above it ("Earnings per share:", "Weighted
        average shares outstanding:"), as statements print "Basic" and "Diluted" under both.
        """
        text = f"{self.section} {self.label}".lower()
        if SHARE_COUNT.search(self.label.lower()) and not re.search(r"\$|in dollars", self.label.lower()):
            return "shares"  # "Shares used to compute diluted net income per share" counts shares
        if re.search(r"per (common |ordinary )?share|per diluted share|in dollars per share", self.label.lower()):
            return "USD/share"
        if re.search(r"\bshares?\b", self.label.lower()) and not re.search(r"\$|par value|stock|capital|repurchase|treasury", self.label.lower()):
            return "shares"
        if re.match(r"^(basic|diluted|basic and diluted)\b", self.label.lower()):  # the caption above decides
            if SHARE_COUNT.search(self.section.lower()):
                return "shares"  # "Shares used in per share calculation:" over "Diluted  783"
            if re.search(r"per (common |ordinary )?share|per diluted share", text):
                return "USD/share"
            if re.search(r"\bshares\b", text) and re.search(r"weighted|outstanding|used in", text):
                return "shares"
        section = self.section.lower()
        if re.search(r"\bper (common |ordinary )?share\b", section) and re.search(r"\b(basic|diluted)\b", section):
            return "USD/share"  # "Diluted earnings per share:" over "Net income attributable to CVS Health  3.14"
        return "USD"


@dataclass
class Statement:
    """A recognised statement on one or more pages, with its columns and lines."""

    kind: str
    pages: list[int]
    title: str
    scale_word: str
    scale: float
    currency: str
    columns: list[Column]
    lines: list[LineItem]


def open_document(path: Path) -> pypdfium2.PdfDocument:
    """Open a PDF with PDFium.

    Raises:
        FilingError: missing, encrypted, truncated or otherwise unreadable (with what to do).
    """
    if not path.is_file():
        raise FilingError(f"{path}: no such file; give a path relative to the task folder or the repository root")
    try:
        return pypdfium2.PdfDocument(path)
    except pypdfium2.PdfiumError as exc:
        text = str(exc)
        if "password" in text.lower():
            raise FilingError(f"{path.name}: the PDF is encrypted (password-protected); save an unencrypted copy and ingest that") from None
        raise FilingError(f"{path.name}: not a readable PDF ({text}); the file may be truncated or corrupt, download it again") from None


#: A running page footer or header printed in a table's rows ("2023 FORM 10-K" and the page number, "Table of Contents"):
#: never a line item.
RUNNING_ROW = re.compile(r"^(table of contents|(\d{4}\s+)?(annual report on )?form 10-[kq]|page \d+|\d{4} annual report)$", re.IGNORECASE)


def damage_signs(path: Path, doc: pypdfium2.PdfDocument) -> list[str]:
    """Signs that a PDF PDFium opened is damaged (PDFium repairs silently, so text may be missing or misplaced).

    Checked: the file ends in ``%%EOF`` (else truncated); ``startxref`` points at a cross-reference
    table or stream (else PDFium rebuilt it); every page's MediaBox has positive width and height
    as written (an inverted or empty box puts text off the page). The PDF 1.7 specification
    (ISO 32000-1, 7.5.5 and 14.11.2) defines these.

    Returns:
        One phrase per sign found, empty for a sound file.
    """
    data = path.read_bytes()
    signs = []
    if b"%%EOF" not in data[-1024:]:
        signs.append("it does not end in %%EOF (truncated)")
    found = re.findall(rb"startxref\s+(\d+)", data[-2048:])
    if found:
        offset = int(found[-1])
        if not re.match(rb"\s*(xref|\d+\s+\d+\s+obj)", data[offset:offset + 40]):
            signs.append("its cross-reference offset is wrong (rebuilt by the reader)")
    elif b"%%EOF" in data[-1024:]:
        signs.append("it has no startxref")
    bad = []
    for i in range(len(doc)):
        page = doc[i]
        left, bottom, right, top = page.get_mediabox()
        page.close()
        if right <= left or top <= bottom:
            bad.append(i + 1)
    if bad:
        signs.append(f"page box inverted or empty on page(s) {', '.join(map(str, bad[:10]))}")
    return signs


def page_texts(doc: pypdfium2.PdfDocument) -> list[str]:
    """Every page's text in reading order (PDFium), index 0 for page 1."""
    texts = []
    for i in range(len(doc)):
        page = doc[i]
        textpage = page.get_textpage()
        texts.append(textpage.get_text_range().replace("\r\n", "\n").replace("\r", "\n"))
        textpage.close()
        page.close()
    return texts


def locate_statements(texts: list[str]) -> dict[str, list[int]]:
    """Find the pages of the main statements (``plugins.finance.locate.locate``, pages only).

    Args:
        texts: page texts, index 0 for page 1.

    Returns:
        ``{statement kind: [1-based page numbers]}`` for the statements found.
    """
    return {kind: where.pages for kind, where in locate(texts).items() if where.pages}


# -- positioned lines -------------------------------------------------------------------------

@dataclass
class _Word:
    text: str
    x0: float
    x1: float
    top: float
    bottom: float

    @property
    def center(self) -> float:
        return (self.x0 + self.x1) / 2


def dedupe_chars(chars: list[dict[str, Any]], tolerance: float = 1.0) -> list[dict[str, Any]]:
    """Drop characters drawn again at (almost) the same place.

    Same rule as pdfplumber's ``Page.dedupe_chars`` with ``extra_attrs=()``: a character whose
    text equals an earlier one within ``tolerance`` points in x and in top is a duplicate,
    whatever its font (fake bold is often the same glyph drawn twice, sometimes in a second
    font). Characters are hashed on a grid of ``tolerance``-sized cells, so this is linear in
    the number of characters; pdfplumber's version sorts and groups, which cost a statement
    page about a third of its parse time here.

    Args:
        chars: pdfplumber character dicts (``text``, ``x0``, ``top``, ...).
        tolerance: in PDF points.

    Returns:
        The characters kept, in their original order.
    """
    grid: dict[tuple[str, int, int], list[dict[str, Any]]] = {}  # keyed by text too: most cells hold no same character
    kept = []
    for c in chars:
        text, x0, top = c["text"], c["x0"], c["top"]
        kx, ky = int(x0 // tolerance), int(top // tolerance)
        duplicate = False
        for dx in (-1, 0, 1):
            for dy in (-1, 0, 1):
                for o in grid.get((text, kx + dx, ky + dy), ()):
                    if abs(o["x0"] - x0) <= tolerance and abs(o["top"] - top) <= tolerance:
                        duplicate = True
                        break
        if duplicate:
            continue
        grid.setdefault((text, kx, ky), []).append(c)
        kept.append(c)
    return kept


def _lines(page: Any) -> list[list[_Word]]:
    """De-duplicated words grouped into lines by vertical position (3 pt tolerance), left to right."""
    words = extract_words(dedupe_chars(page.chars), keep_blank_chars=False, x_tolerance=1.5, y_tolerance=3)
    rows: list[list[_Word]] = []
    for w in sorted(words, key=lambda w: (round(w["top"]), w["x0"])):
        word = _Word(w["text"], w["x0"], w["x1"], w["top"], w["bottom"])
        if rows and abs(rows[-1][0].top - word.top) <= 3:
            rows[-1].append(word)
        else:
            rows.append([word])
    return [sorted(r, key=lambda w: w.x0) for r in rows]


def _merge_parentheses(words: list[_Word]) -> list[_Word]:
    """Join ``(`` ``1,234`` ``)`` and ``$`` ``1,234`` split into separate words."""
    out: list[_Word] = []
    for w in words:
        if out and (out[-1].text in ("(", "$", "$(", "($") or w.text in (")", "%", ")%")) and w.x0 - out[-1].x1 < 4:
            prev = out.pop()
            out.append(_Word(prev.text + w.text, prev.x0, w.x1, min(prev.top, w.top), max(prev.bottom, w.bottom)))
        else:
            out.append(w)
    return out


def _header_columns(rows: list[list[_Word]], page_width: float) -> tuple[int, list[Column]]:
    """Find the header line of years and build the columns from it.

    Returns:
        ``(row index of the header, columns)``; ``(-1, [])`` when no header is found.
    """
    for r, row in enumerate(rows[:30]):
        years = [w for w in row if (_YEAR.match(w.text) or _NUMERIC_DATE.match(w.text)) and w.x0 > page_width * 0.35]
        numeric = [w for w in row if parse_number(w.text) is not None and w not in years]
        if not years or numeric and not all(_is_day(w.text) for w in numeric):
            continue
        if any(_YEAR.match(w.text) for w in row if w.x0 <= page_width * 0.35):
            continue  # a caption sentence naming the years ("Fiscal years ended December 31, 2022, ..."), not the column header
        columns = []
        for w in years:
            # a date printed on one line ("January 28, 2023"): centre the column on the whole date
            i = row.index(w)
            x0 = w.x0
            month_day = None
            adjacent = i >= 2 and w.x0 - row[i - 1].x1 < 8 and row[i - 1].x0 - row[i - 2].x1 < 8
            if adjacent and row[i - 2].text.lower().rstrip(".") in MONTHS and _is_day(row[i - 1].text):
                x0 = row[i - 2].x0
                month_day = (MONTHS[row[i - 2].text.lower().rstrip(".")], int(row[i - 1].text.rstrip(",")))
            columns.append((x0, w, month_day))
        cols = []
        for x0, w, month_day in columns:
            if numeric := _NUMERIC_DATE.match(w.text):  # "3/25/2023": year, month and day in one word
                year = int(numeric["y"]) + (2000 if len(numeric["y"]) == 2 else 0)
                month_day = (int(numeric["m"]), int(numeric["d"]))
            else:
                year = int(w.text.rstrip(",."))
            end = None
            if month_day:
                try:
                    end = date(year, *month_day)
                except ValueError:
                    end = None
            cols.append(Column(center=(x0 + w.x1) / 2, fiscal_year=year, period_end=end))
        _dates_from_row_above(rows[r - 1] if r else [], cols)
        cols = _named_period_columns(rows, r, cols, page_width) or cols
        _restated(rows, r, cols)
        return r, cols
    return -1, []


def _named_period_columns(rows: list[list[_Word]], header: int, columns: list[Column], page_width: float) -> list[Column] | None:
    """Columns from period names when they outnumber the years ("Q1  Q2  Six Months" over one "2023").

    Returns:
        One column per named period, each with the year printed nearest it, or None when no row
        near the header names more periods than there are year columns.
    """
    for row in rows[max(0, header - 3):header + 2]:
        spans = [sp for sp in _caption_spans(row) if sp[0] > page_width * 0.35]
        if len(spans) > len(columns):
            named = []
            for center, months, name in sorted(spans):
                year = min(columns, key=lambda c: abs(c.center - center))
                named.append(Column(center=center, fiscal_year=year.fiscal_year, months=months, name=name,
                                    period_end=year.period_end if len(columns) == len(spans) else None))
            return named
    return None


def _restated(rows: list[list[_Word]], header: int, columns: list[Column]) -> None:
    """Mark columns headed "Restated" / "As Adjusted" / "Recast" or "As Reported" / "As Previously Reported"."""
    for row in rows[max(0, header - 3):header + 2]:
        for i, w in enumerate(row):
            text = w.text.lower().strip("()*")
            after_as = i > 0 and row[i - 1].text.lower().strip("(") == "as"
            basis = ("restated" if text in ("restated", "recast") or (text == "adjusted" and after_as) else
                     "as reported" if text == "reported" else "")
            if basis:
                col = min(columns, key=lambda c: abs(c.center - w.center))
                if abs(col.center - w.center) < 60:
                    col.basis = basis


def _dates_from_row_above(row: list[_Word], columns: list[Column]) -> None:
    """Give each column the "Month dd," printed above its year ("January 28, January 29," over "2023 2022")."""
    for i in range(len(row) - 1):
        month, day = row[i].text.lower().rstrip("."), row[i + 1].text
        if month in MONTHS and _is_day(day):
            center = (row[i].x0 + row[i + 1].x1) / 2
            col = min(columns, key=lambda c: abs(c.center - center))
            if col.period_end is None and abs(col.center - center) < 60:
                try:
                    col.period_end = date(col.fiscal_year, MONTHS[month], int(day.rstrip(",")))
                except ValueError:
                    pass


def _is_day(text: str) -> bool:
    t = text.rstrip(",")
    return t.isdigit() and 1 <= int(t) <= 31


_CAPTION_DATE = re.compile(r"\b(january|february|march|april|may|june|july|august|september|october|november|december)\.?\s+(\d{1,2})\b,?"
                           r"((?:\s*(?:,|and|&)?\s*(?:19[5-9]\d|20[0-4]\d)\b)*)", re.IGNORECASE)


def caption_ends(head_text: str) -> tuple[dict[int, tuple[int, int]], tuple[int, int] | None]:
    """The period ends a statement's caption prints, per fiscal year.

    "Fiscal years ended December 31, 2022, December 25, 2021 and December 26, 2020" gives each
    year its own month and day; "Years ended December 31, 2022, 2021 and 2020" gives December 31
    to the three years; "Years ended December 31" or "At January 28" names no year.

    Returns:
        ``({fiscal year: (month, day)}, fallback)``: the fallback (month, day) is for a column whose
        year the caption does not list, given only when every date of the caption has the same month
        and day (a 52/53-week filer's years end on different days, so none is guessed); None when
        the caption prints no date.
    """
    by_year: dict[int, tuple[int, int]] = {}
    days = []
    for m in _CAPTION_DATE.finditer(head_text):
        month_day = (MONTHS[m[1].lower()], int(m[2]))
        days.append(month_day)
        for year in re.findall(r"\d{4}", m[3]):
            by_year.setdefault(int(year), month_day)
    return by_year, days[0] if days and len(set(days)) == 1 else None


def _durations(rows: list[list[_Word]], header: int, columns: list[Column]) -> None:
    """Set each column's months from the period captions above or on the header row.

    "Three Months Ended" / "13 Weeks Ended" / "Twelve Months" give their length (weeks / 4.33,
    so 12, 13 or 14 weeks are a quarter and 52 or 53 a year), "Fourth Quarter" / "Quarter
    Ended" / "Q2" / "1Q23" a quarter, "First Half" / "H1" six months, "Year Ended" / "Fiscal
    Year" twelve; each column takes the caption nearest its centre. Captions are matched on the
    row's text with spaces removed, since kerned headers often come out of the PDF as
    fragments ("Three M on t hs").
    """
    spans = [sp for row in rows[max(0, header - 4):header + 1] for sp in _caption_spans(row)]
    if spans:
        for col in columns:
            nearest = min(spans, key=lambda s: abs(s[0] - col.center))
            col.months = nearest[1]
            col.name = col.name or nearest[2]


def _caption_spans(row: list[_Word]) -> list[tuple[float, int, str]]:
    """The period captions of one header row: ``[(x centre, months, name)]``, name "Q1" / "H1" for
    a period named by itself, else empty ("Three Months Ended" has a date below it)."""
    spans = []
    starts, text = [], ""
    for w in row:
        starts.append(len(text))
        text += w.text.lower()
    for m in _DURATION.finditer(text):
        inside = [w for w, at in zip(row, starts) if m.start() <= at < m.end()] or [row[0]]
        months = duration_of(m)
        name = ""
        if m["quarter"] and m["quarter"][0] in "fst" and not m["quarter"].startswith("quarters"):
            name = "Q" + str(["first", "second", "third", "fourth"].index(re.match(r"[a-z]+?(?=quarter)", m["quarter"])[0]) + 1)
        spans.append(((inside[0].x0 + inside[-1].x1) / 2, months, name))
    for w in row:
        if word := _PERIOD_WORD.match(w.text.lower()):
            digit = re.search(r"[1-4]", word["q"] or word["h"])[0]
            spans.append((w.center, 3 if word["q"] else 6, ("Q" if word["q"] else "H") + digit))
    return spans


def duration_of(match: re.Match[str]) -> int:
    """Months of a ``_DURATION`` match (searched in squeezed, lower-case text): "threemonths" 3,
    "13weeks" 3, a quarter 3, a half 6, a fiscal year or "years ended" 12."""
    if match["count"]:
        return _duration_months(match["count"], match["unit"])
    return 3 if match["quarter"] else 6 if match["half"] else 12


def _duration_months(count: str, unit: str) -> int:
    """Months in "three months" or "13 weeks" (a 52/53-week year is 12 months, 13 weeks 3)."""
    n = int(count) if count.isdigit() else _WORD_NUMBERS[count.replace("-", "")]
    return n if unit == "months" else max(1, round(n / 4.33))


def parse_statement_page(page: Any, page_number: int, kind: str) -> tuple[list[Column], list[LineItem], list[list[_Word]]]:
    """Parse one statement page with the label-and-numbers line parser.

    Args:
        page: a pdfplumber page (its characters are de-duplicated here).
        page_number: its 1-based number.
        kind: the statement kind (sets whether columns are instants or periods).

    Returns:
        ``(columns, line items, positioned rows)``; no columns means no header of years was found.
    """
    page_rows = [_merge_parentheses(r) for r in _lines(page)]
    start, end = _statement_span(page_rows, kind)
    rows = page_rows[start:end]
    header, columns = _header_columns(rows, float(page.width))
    if not columns:
        return [], [], page_rows
    head_text = " ".join(w.text for row in rows[: header + 1] for w in row)
    by_year, fallback = caption_ends(head_text)
    for col in columns:
        md = by_year.get(col.fiscal_year, fallback)
        if col.period_end is None and md:  # each column its own heading's date, never another year's
            try:
                col.period_end = date(col.fiscal_year, *md)
            except ValueError:
                pass
        col.months = None if kind == "balance_sheet" else col.months or 12  # named columns ("Q1") know theirs
    if kind != "balance_sheet":
        _durations(rows, header, columns)
    spacing = min((b.center - a.center for a, b in itertools.pairwise(columns)), default=80.0)
    reach = max(24.0, 0.6 * abs(spacing))
    left_edge = min(c.center for c in columns) - reach
    items: list[LineItem] = []
    pending: list[_Word] = []  # a label line with no numbers, kept in case it wraps
    section = ""  # the last caption ("Earnings per share:"), for the unit of what follows
    caption: list[_Word] = []
    in_caption = False
    for n, row in enumerate(rows[header + 1:], start + header + 2):  # line numbers count from the page's top
        values, label_words = [], []
        for w in row:
            number = parse_number(w.text) if w.center >= left_edge else None
            if number is not None and number.is_percent:
                continue  # "% of net sales" columns beside the amounts are not stored
            if number is not None:
                col = min(range(len(columns)), key=lambda i: abs(columns[i].center - w.center))
                if abs(columns[col].center - w.center) <= reach * 1.6:
                    values.append((col, w.text, number.amount, w))
                    continue
            if w.text == "$" or (w.center >= left_edge and w.text in ("(", ")")):
                continue
            label_words.append(w)
        if not values:
            if label_words:  # a caption may wrap over several label-only lines
                caption = caption + label_words if in_caption else label_words
                section = " ".join(w.text for w in caption)
                in_caption = True
            pending = label_words
            continue
        in_caption = False
        words = label_words
        if not label_words and pending:  # numbers on their own line finish the label above
            words = pending
        elif pending and label_words and label_words[0].text[:1].islower():
            words = pending + label_words
        pending = []
        label = " ".join(w.text for w in words)
        if RUNNING_ROW.match(label.strip()):
            continue  # Nike's "2023 FORM 10-K 57" footer under its income statement
        all_words = words + [v[3] for v in values]
        bbox = (min(w.x0 for w in all_words), min(w.top for w in all_words), max(w.x1 for w in all_words), max(w.bottom for w in all_words))
        seen: dict[int, tuple[int, str, float, tuple[float, float, float, float]]] = {}
        for col, raw, amount, w in values:
            seen.setdefault(col, (col, raw, amount, (round(w.x0, 2), round(w.top, 2), round(w.x1, 2), round(w.bottom, 2))))
        items.append(LineItem(page=page_number, line_no=n, bbox=tuple(round(v, 2) for v in bbox), label=label,
                              raw_text=" ".join(w.text for w in row), values=list(seen.values()), section=section))
    return columns, items, page_rows


def _statement_span(rows: list[list[_Word]], kind: str) -> tuple[int, int]:
    """The rows of a page that belong to the ``kind`` statement: ``(first, end)``, end exclusive.

    Earnings releases print two statements on one page (Amcor's cash flows, then its balance
    sheet under its own title): the statement starts at its own title row when that row is
    below the top, and ends where another statement's title begins.
    """
    titles = [(i, statement_kind(" ".join(w.text for w in row), 1)) for i, row in enumerate(rows)]
    own = [i for i, k in titles if k == kind]
    first = own[0] if own else 0
    end = next((i for i, k in titles if k is not None and k != kind and i > first), len(rows))
    return first, end


def extract_statements(path: Path, pages: dict[str, list[int]], texts: list[str]) -> tuple[list[Statement], list[dict[str, Any]]]:
    """Run pdfplumber on the statement pages only and parse each statement.

    Args:
        path: the PDF.
        pages: ``{kind: [1-based pages]}`` from ``locate_statements``.
        texts: every page's PDFium text (index 0 for page 1), for titles and scale captions.

    Returns:
        ``(statements, table cells)``; a cell is ``{"page", "table", "row", "col", "text"}`` from
        pdfplumber's ruling-line table finder on the same pages.

    Raises:
        FilingError: pdfplumber cannot read the file.
    """
    statements, cells = [], []
    try:
        pdf = pdfplumber.open(path)
    except Exception as exc:  # noqa: BLE001 - pdfminer raises many types for broken files
        raise FilingError(f"{path.name}: pdfplumber cannot read it ({type(exc).__name__}: {exc}); the file may be damaged") from None
    with pdf:
        for kind in STATEMENTS:
            if kind not in pages:
                continue
            columns: list[Column] = []
            lines: list[LineItem] = []
            title, scale_word, scale, currency = "", "units", 1.0, "USD"
            for number in pages[kind]:
                page = pdf.pages[number - 1]  # words are de-duplicated in _lines; tables use the page as drawn
                text = texts[number - 1]
                if not columns:
                    title = next((ln.strip() for ln in text.splitlines() if statement_kind(ln, 1) == kind), kind)
                    scale_word, scale = detect_scale(text)
                    currency = "USD"
                cols, items, _ = parse_statement_page(page, number, kind)
                if cols and not columns:
                    columns = cols
                elif cols and len(cols) != len(columns):
                    continue  # a continuation page whose columns differ is not the same statement
                lines.extend(items)
                for t, table in enumerate(page.extract_tables()):
                    for r, row in enumerate(table):
                        for c, cell in enumerate(row):
                            if cell:
                                cells.append({"page": number, "table": t, "row": r, "col": c, "text": cell})
            if columns and lines:
                statements.append(Statement(kind, pages[kind], title, scale_word, scale, currency, columns, lines))
    return statements, cells


#: Concepts a line may take from the caption above it (``LineItem.section``) when its own label says too little.
_SECTION_CONCEPTS = {"revenue", "cash_beginning_of_period", "cash_end_of_period", "net_change_in_cash", "fx_effect_on_cash"}


def best_concepts(statement: Statement) -> dict[int, str]:
    """Choose, per concept, the one line of a statement that carries it.

    Labels are matched by meaning (``concepts.match_label``); among several lines of one concept
    the lowest ``concept_priority`` wins, the first printed on a tie. The statement's structure
    settles attribution: when a profit line attributable to the parent is printed, the plain
    "Net income" above it is the consolidated figure including non-controlling interests
    (``net_income_including_nci``); when "Total equity" is printed, a "Total stockholders'
    equity" above it is the parent's share (``equity_parent``); when only the parent's equity is
    printed and no non-controlling interest, it is the total equity.

    Returns:
        ``{index in statement.lines: concept}``.
    """
    found: dict[str, list[tuple[int, int, Canonical]]] = {}
    for i, line in enumerate(statement.lines):
        match = match_label(line.label, statement.kind)
        if match is None and line.section and not line.label.lower().startswith("total"):
            # the caption above is evidence: "Balance at end of year" under "Cash and cash equivalents",
            # an unlabelled total under "Revenues"; only for those lines (a caption "Diluted:" above
            # "Dividends declared per share" must not make it earnings per share)
            match = match_label(f"{line.section} {line.label}", statement.kind)
            match = match if match and match[0] in _SECTION_CONCEPTS else None
        rank = None
        if line.unit == "USD/share" and re.search(r"\bdiluted\b", line.section.lower()) and (match is None or match[0] != "eps_diluted"):
            # a line under the "Diluted earnings per share:" caption; its net income line, not the
            # continuing or discontinued operations' share, is the figure
            match = ("eps_diluted", canonical(line.label))
            rank = 0 if match[1].text == "income" else 2
        if match is None or (match[0] == "eps_diluted") != (line.unit == "USD/share"):
            continue
        concept, form = match
        found.setdefault(concept, []).append((concept_priority(line.label, concept) if rank is None else rank, i, form))
    if any(f.attribution == "parent" for _, _, f in found.get("net_income", [])):
        plain = [c for c in found["net_income"] if c[2].attribution == ""]
        found["net_income"] = [c for c in found["net_income"] if c[2].attribution == "parent"]
        found.setdefault("net_income_including_nci", []).extend(plain)
    equity = sorted(found.get("total_equity", []), key=lambda c: (c[0], c[1]))
    if equity and equity[0][0] == 0:  # "Total equity": another total equity line above it is the parent's
        demoted = [c for c in equity[1:] if c[1] < equity[0][1] and c[0] == 1]
        found["total_equity"] = [c for c in equity if c not in demoted]
        found.setdefault("equity_parent", []).extend(demoted)
    elif not equity and found.get("equity_parent") and not found.get("equity_nci"):
        found["total_equity"] = found["equity_parent"]
        del found["equity_parent"]
    chosen: dict[int, str] = {}
    for concept, candidates in found.items():
        for _, i, _ in sorted(candidates, key=lambda c: (c[0], c[1])):
            if i not in chosen:
                chosen[i] = concept
                break
    return chosen


def concept_signs(statement: Statement, chosen: dict[int, str]) -> dict[int, int]:
    """The sign (+1 or -1) that normalises each chosen line's printed amounts to its concept's polarity.

    Args:
        statement: the parsed statement.
        chosen: ``best_concepts(statement)``.

    Returns:
        ``{index in statement.lines: sign}`` for the lines in ``chosen`` (see ``concepts.polarity_sign``).
    """
    signs = {}
    for i, concept in chosen.items():
        line = statement.lines[i]
        form = canonical(line.label)
        signs[i] = polarity_sign(concept, form, [amount for _, _, amount, _ in line.values])
    # The non-controlling share of profit is printed either as a deduction "(2)" or as a plain
    # figure; the subtotal decides: consolidated - share = parent's share.
    where = {c: i for i, c in chosen.items()}
    if {"net_income_nci", "net_income", "net_income_including_nci"} <= where.keys():
        first = {c: next((a for col, _, a, _ in statement.lines[where[c]].values if col == 0), None) for c in where}
        whole, part, parent = first["net_income_including_nci"], first["net_income_nci"], first["net_income"]
        if None not in (whole, part, parent) and part:
            signs[where["net_income_nci"]] = 1 if abs(whole - part - parent) <= abs(whole + part - parent) else -1
    return signs


def deduped_page_text(path: Path, page_number: int) -> str:
    """One page's text through pdfplumber with duplicated characters removed.

    ``dedupe_chars`` drops a character drawn again at (almost) the same place, whatever its
    font (bold is often faked by drawing twice, sometimes in a second font).

    Args:
        path: the PDF.
        page_number: 1-based.

    Raises:
        FilingError: unreadable file or no such page.
    """
    try:
        pdf = pdfplumber.open(path)
    except Exception as exc:  # noqa: BLE001 - pdfminer raises many types for broken files
        raise FilingError(f"{path.name}: pdfplumber cannot read it ({type(exc).__name__}: {exc})") from None
    with pdf:
        if not 1 <= page_number <= len(pdf.pages):
            raise FilingError(f"{path.name} has pages 1-{len(pdf.pages)}, not {page_number}")
        return pdf.pages[page_number - 1].dedupe_chars(tolerance=1, extra_attrs=()).extract_text() or ""
