"""Company reports: several filings per company as a trend, peers side by side, ratios, segment and
geography revenue (``plugins.finance.segments``: only tables whose rows add up to the income
statement's revenue), a DCF to equity value per share with a sensitivity table, narrative, and
sources linked to page images.

A script writes::

    from plugins.finance.company_report import Company, CompanyReport, PeerGroup
    nike = Company("Nike", "NKE", [".../NIKE_2021_10K.pdf", ".../NIKE_2023_10K.pdf"])
    msft = Company("Microsoft", "MSFT", [".../MICROSOFT_2016_10K.pdf", ".../MICROSOFT_2023_10K.pdf"])
    CompanyReport([nike, msft], peers=[PeerGroup("Large caps", ["NKE", "MSFT"])]).generate("out/")

and gets ``out/report.md``, ``report.html``, ``charts/*.png``, ``pages/*.png`` (the cited PDF
pages) and ``figures.json``. As in ``plugins.finance.report``, every number printed is a
*figure*: a stored fact, a formula over fact ids, or a stated assumption (a constant formula),
re-checked by ``verify_figures``; the narrative paragraphs are filled from those figures and pass
``plugins.finance.narrative.untraced_prose_numbers``. A concept a company's filings lack prints
``n/a`` in tables and "not available" in prose, never an estimate.

Per fiscal year a company's values come from the latest filing that prints that year (a later
10-K's comparative columns, restated or not, win over the earlier 10-K). Ratios are the textbook
ones (CFA Institute, "Financial Reporting and Analysis"): margins over revenue, growth over the
prior fiscal year, ROE and ROA on year-end equity and assets, leverage = liabilities / equity,
cash conversion = operating cash flow / net income, free cash flow = operating cash flow +
capital expenditure (negative as printed, as in ``plugins.finance.model``).
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import matplotlib

from core.api import make_dirs, write_new
from plugins.finance.checks import run_checks
from plugins.finance.ingest import INGESTED, ingest
from plugins.finance.market import MarketDataError
from plugins.finance.model import DCFAssumptions, create_views, discounted_cash_flow
from plugins.finance.narrative import UntracedNarrativeError, untraced_prose_numbers
from plugins.finance.page_images import page_image_name, render_pages
from plugins.finance.report import Figures, _table, render_html
from plugins.finance.segments import CompanyBreakdown, company_breakdowns, normal_label
from plugins.finance.store import connect

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after choosing the non-interactive back end

PRIMARY = ("income_statement", "balance_sheet", "cash_flow")
#: Borrowings due within one year, by the head of their balance-sheet label (normalised, before a comma, colon or
#: parenthesis: "Short-term borrowings, including current portion of long-term debt: 2021-$1,636" is "short-term borrowings").
CURRENT_DEBT = re.compile(r"^(short-term (debt|borrowings)( obligations)?|commercial paper|(loans and )?notes payable|bank (loans|overdrafts)"
                          r"|current (portion|maturities) of (long-term )?(debt|borrowings)|debt (maturing|due) within one year|current debt)"
                          r"( and (short-term (debt|borrowings)|current (portion|maturities) of long-term debt|commercial paper))?$")
#: Borrowings due after one year ("Long-term debt, net", "Long-term debt, excluding current portion").
LONG_TERM_DEBT = re.compile(r"^(long-term (debt|borrowings)( obligations)?|long-term debt and capital lease obligations)$")
#: A label that says debt but not when it is due ("Debt" printed under both current and non-current liabilities):
#: its place on the balance sheet decides (above total current liabilities: current).
DEBT = re.compile(r"^(debt( obligations)?|debt and capital lease obligations|borrowings|senior notes)$")
#: A balance-sheet page's words for debt due within one year, to check a claim that none is printed.
CURRENT_DEBT_WORDS = re.compile(r"short-term (debt|borrowings)|current (portion|maturities) of long-term debt|debt maturing within one year"
                                r"|debt due within one year|commercial paper|notes payable", re.IGNORECASE)
#: The income statement's diluted weighted-average share count ("Diluted", "Weighted average diluted shares outstanding",
#: "Basic and diluted" when the two are the same).
DILUTED_SHARES_LABEL = re.compile(r"\bdiluted\b")
#: Words that say a page prints a diluted share count, to check a claim that it is not printed: "diluted" and a count
#: of shares within three printed lines ("Diluted Earnings Per Common Share" / "Net income ... $ 5.06" /
#: "Weighted-average shares outstanding (in millions)  4,204"), the count's line quoted.
DILUTED_SHARES_WORDS = re.compile(r"\bdiluted\b.*\bshares\b(?! *(repurchased|issued))|\bshares\b.*\bdiluted\b", re.IGNORECASE | re.DOTALL)


def debt_kind(label: str | None) -> str | None:
    """``"current"``, ``"long-term"`` or ``"debt"`` (due date not in the label) for a balance-sheet borrowing line, else None.

    Leases, accrued interest, debt securities held and loans receivable are not borrowings here.
    """
    head = re.split(r"\s*[,:(]", _normal_label(label))[0].strip()
    if CURRENT_DEBT.match(head):
        return "current"
    if LONG_TERM_DEBT.match(head):
        return "long-term"
    return "debt" if DEBT.match(head) else None


#: (label, unit, templates tried in order); {concept} is the year's fact, {concept@prev} the prior year's.
LINES = [("Revenue", ["{revenue}"]), ("Gross profit", ["{gross_profit}", "{revenue} - {cost_of_revenue}"]),
         ("Operating income", ["{operating_income}"]), ("Net income", ["{net_income}"]),
         ("Operating cash flow", ["{operating_cash_flow}"]), ("Capital expenditure", ["{capital_expenditure}"]),
         ("Free cash flow", ["{operating_cash_flow} + {capital_expenditure}"]), ("Total assets", ["{total_assets}"]),
         ("Total equity", ["{total_equity}"]), ("Borrowings", ["{debt}"]), ("Cash and equivalents", ["{cash_and_equivalents}"])]
RATIOS = [("Revenue growth", ["{revenue} / {revenue@prev} - 1"]),
          ("Gross margin", ["{gross_profit} / {revenue}", "({revenue} - {cost_of_revenue}) / {revenue}"]),
          ("Operating margin", ["{operating_income} / {revenue}"]), ("Net margin", ["{net_income} / {revenue}"]),
          ("Net income growth", ["{net_income} / {net_income@prev} - 1"]),
          ("Free cash flow margin", ["({operating_cash_flow} + {capital_expenditure}) / {revenue}"]),
          ("Return on equity", ["{net_income} / {total_equity}"]), ("Return on assets", ["{net_income} / {total_assets}"]),
          ("Liabilities / equity", ["{total_liabilities} / {total_equity}",
                                    "({total_liabilities_and_equity} - {total_equity}) / {total_equity}"]),
          ("Cash conversion", ["{operating_cash_flow} / {net_income}"])]
RATIO_NOTE = ("Margins over revenue; growth over the prior fiscal year (n/a where that year is not in the filings read); "
              "ROE and ROA on year-end equity and assets; cash conversion = operating cash flow / net income (times); "
              "liabilities / equity (times). n/a = not available in the statements read.")
_TIMES = {"Liabilities / equity", "Cash conversion"}
_REF = re.compile(r"\{([a-z_]+)(@prev)?\}")


@dataclass
class Company:
    """A company and its filings.

    Attributes:
        name: the name printed ("Nike").
        ticker: its ticker symbol (for market data and peer groups).
        filings: PDF paths, any order; each becomes a document named by its file stem.
        note: a sentence printed under the company's heading (e.g. a fiscal-year caveat).
    """

    name: str
    ticker: str
    filings: list[str | Path]
    note: str = ""


@dataclass
class PeerGroup:
    """Companies compared side by side on their latest fiscal year.

    Attributes:
        name: the group's heading.
        tickers: tickers of companies in the report.
        note: printed under the heading (say when fiscal years differ).
    """

    name: str
    tickers: list[str]
    note: str = ""


@dataclass
class CompanyData:
    """What the database holds for one company, by fiscal year.

    Attributes:
        facts: ``{fiscal_year: {concept: [fact_id, ...]}}`` (one id, or several summed for ``debt``).
        year_end: ``{fiscal_year: "YYYY-MM-DD"}`` from the heading of the income statement's column of that year,
            else of the balance sheet's (a statement headed "Fiscal Year 2022" alone gives no date).
        docs: the company's documents that were ingested with status ``ok``, oldest first.
        debt_lines: ``{fact_id: (kind, label, page)}`` of the lines summed as borrowings, kind ``current`` or ``long-term``.
        shares_source: ``{fiscal_year: "income statement" | "notes p.N"}``, where the diluted share count was read.
    """

    facts: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    year_end: dict[int, str] = field(default_factory=dict)
    docs: list[str] = field(default_factory=list)
    debt_lines: dict[str, tuple[str, str, int]] = field(default_factory=dict)
    shares_source: dict[int, str] = field(default_factory=dict)

    def years(self) -> list[int]:
        """Fiscal years with a stored revenue, ascending."""
        return sorted(y for y, f in self.facts.items() if "revenue" in f)


class _Missing(LookupError):
    """A template names a concept the filings do not hold for that year."""


def company_data(con: duckdb.DuckDBPyConnection, docs: list[str]) -> CompanyData:
    """Collect a company's annual facts from its documents (later fiscal coverage wins per year).

    Args:
        con: the filings database (``facts`` and ``documents`` tables).
        docs: document names of one company.

    Returns:
        A ``CompanyData``; documents whose values were not stored (``ingest.INGESTED``) contribute nothing.
    """
    # ordered by the latest year of their primary statements: other tables print future years (debt maturities)
    ok = [r[0] for r in con.execute(
        "SELECT d.doc_name FROM documents d LEFT JOIN facts f ON f.doc_name = d.doc_name AND f.statement IN (SELECT unnest(?)) "
        "WHERE d.doc_name IN (SELECT unnest(?)) AND d.status IN (SELECT unnest(?)) GROUP BY d.doc_name "
        "ORDER BY max(f.fiscal_year), d.doc_name", [list(PRIMARY), docs, list(INGESTED)]).fetchall()]
    data = CompanyData(docs=ok)
    for doc in ok:  # oldest first: a later filing overwrites a year it also prints
        found: dict[int, dict[str, list[str]]] = {}
        rows = con.execute(
            "SELECT fiscal_year, concept, fact_id, statement, label, unit, months, period_end, page, line_no FROM facts "
            "WHERE doc_name = ? AND statement IN (SELECT unnest(?)) AND fiscal_year IS NOT NULL "
            "AND (months = 12 OR (months IS NULL AND statement = 'balance_sheet')) ORDER BY page, line_no", [doc, list(PRIMARY)]).fetchall()
        current_end = {y: (p, n) for y, c, _, _, _, _, _, _, p, n in rows if c == "total_current_liabilities"}
        eps_diluted = {y: (p, n) for y, c, _, _, _, _, _, _, p, n in rows if c == "eps_diluted"}
        balance_end: dict[int, str] = {}
        for year, concept, fact_id, statement, label, unit, months, period_end, page, line_no in rows:
            text = _normal_label(label)
            if statement == "balance_sheet" and period_end is not None:
                balance_end.setdefault(year, str(period_end))
            kind = debt_kind(label) if concept is None and statement == "balance_sheet" and unit == "USD" else None
            if kind:
                if kind == "debt":  # "Debt" under current liabilities is due within one year
                    kind = "current" if year in current_end and (page, line_no) < current_end[year] else "long-term"
                found.setdefault(year, {}).setdefault("debt", []).append(fact_id)
                data.debt_lines[fact_id] = (kind, label or "", page)
                continue
            if concept is None and statement == "income_statement" and unit == "shares":
                # "Diluted", "Weighted average diluted shares"; or a count that names neither basic nor diluted printed
                # after the diluted earnings per share (Verizon: "Diluted Earnings Per Common Share" over
                # "Net income ... $ 5.06" and "Weighted-average shares outstanding (in millions)  4,204")
                plain = not re.search(r"\b(basic|diluted)\b", text)
                if DILUTED_SHARES_LABEL.search(text) or (plain and year in eps_diluted and (page, line_no) > eps_diluted[year]):
                    concept = "diluted_shares"
            if concept is None:
                continue
            found.setdefault(year, {}).setdefault(concept, [fact_id])  # the first printed line of a concept wins
            if concept == "revenue" and period_end is not None:
                data.year_end[year] = str(period_end)
        for year, concepts in found.items():
            if "revenue" in concepts and year not in data.year_end and year in balance_end:
                data.year_end[year] = balance_end[year]
            if "diluted_shares" in concepts:
                data.shares_source[year] = "income statement"
            elif (noted := _diluted_shares_in_notes(con, doc, year)) is not None:
                concepts["diluted_shares"] = [noted[0]]
                data.shares_source[year] = f"notes, p.{noted[1]}"
            data.facts.setdefault(year, {}).update(concepts)
    return data


def _diluted_shares_in_notes(con: duckdb.DuckDBPyConnection, doc: str, year: int) -> tuple[str, int] | None:
    """The diluted weighted-average share count of ``year`` from a notes table (the earnings-per-share note), when the
    income statement prints none: ``(fact_id, page)`` of the first such line, else None.

    Only a row whose columns each name a different fiscal year is used (a row with two columns of one year is
    ambiguous); MD&A and non-GAAP tables are not notes.
    """
    row = con.execute(
        "SELECT f.fact_id, f.page FROM facts f WHERE f.doc_name = ? AND f.statement IN ('table:note', 'table:per_share') "
        "AND f.unit = 'shares' AND f.fiscal_year = ? AND (f.months = 12 OR f.months IS NULL) AND f.value > 0 "
        "AND regexp_matches(lower(f.label), '\\bdiluted\\b') "
        "AND NOT regexp_matches(lower(f.label), 'anti-?dilutive|effect of|dilutive (securities|effect|shares|stock)|excluded') "
        "AND (SELECT count(*) FROM facts g WHERE g.doc_name = f.doc_name AND g.page = f.page AND g.line_no = f.line_no "
        "     AND g.fiscal_year = f.fiscal_year) = 1 "
        "ORDER BY f.page, f.line_no LIMIT 1", [doc, year]).fetchone()
    return (row[0], row[1]) if row else None


def _words(line: str) -> str:
    """A printed line's label without its amounts ("Debt maturing within one year $ 9,963 $ 7,443" ->
    "Debt maturing within one year"), so a quotation states no number that is not a figure."""
    return re.split(r"[:;]|\s[$(]|\s[-—–]?\d|\s[—–]\s", line, maxsplit=1)[0].strip(" ,")


def _normal_label(label: str | None) -> str:
    text = (label or "").lower().replace("—", "-").replace("–", "-")
    text = re.sub(r"\(\d\)|\(note \d+\)|\*", " ", text)
    return re.sub(r"\s+", " ", text).strip(" :.$")


def resolve(template: str, data: CompanyData, year: int) -> str:
    """Turn a template over concepts into a formula over fact ids for ``year``.

    Raises:
        LookupError: a concept (or the prior year's) is not stored for the company.
    """
    def sub(match: re.Match[str]) -> str:
        ids = data.facts.get(year - 1 if match[2] else year, {}).get(match[1])
        if not ids:
            raise _Missing(f"{match[1]}@{year - 1 if match[2] else year}")
        return "{" + ids[0] + "}" if len(ids) == 1 else "(" + " + ".join("{" + i + "}" for i in ids) + ")"

    return _REF.sub(sub, template)


def first_formula(templates: list[str], data: CompanyData, year: int) -> str | None:
    """The first template that resolves for ``year``, as a formula over fact ids; None when none does."""
    for template in templates:
        try:
            return resolve(template, data, year)
        except _Missing:
            continue
    return None


def dcf_formulas(ocf_id: str, capex_id: str, a: DCFAssumptions) -> dict[str, str]:
    """Formulas over fact ids for the DCF of ``plugins.finance.model.discounted_cash_flow``.

    FCF_0 = OCF + capex; PV of explicit years = sum FCF_0 (1+g)^t / (1+r)^t, t = 1..N; PV of the
    Gordon terminal value = FCF_0 (1+g)^N (1+g_T) / (r - g_T) / (1+r)^N (powers written out: the
    formula language has + - * / only).

    Returns:
        ``{"fcf": ..., "pv": ..., "tv": ..., "ev": ...}``.
    """
    fcf = f"({{{ocf_id}}} + {{{capex_id}}})"
    g, r, gt = _num(a.growth), _num(a.discount_rate), _num(a.terminal_growth)
    pv = " + ".join(fcf + f" * (1 + {g})" * t + f" / (1 + {r})" * t for t in range(1, a.years + 1))
    tv = fcf + f" * (1 + {g})" * a.years + f" * (1 + {gt}) / ({r} - {gt})" + f" / (1 + {r})" * a.years
    return {"fcf": fcf, "pv": pv, "tv": tv, "ev": f"{pv} + {tv}"}


def _num(x: float) -> str:
    return format(round(x, 10), "g")


@dataclass
class CompanyReportResult:
    """What ``CompanyReport.generate`` wrote."""

    markdown: Path
    html: Path
    charts: list[Path]
    page_images: list[Path]
    figures: list[Any]
    narrative_problems: list[str]


class CompanyReport:
    """A multi-company, multi-year research report.

    Args:
        companies: the companies, each with one or more filings.
        peers: groups compared side by side (tickers of ``companies``).
        title: the report's title.
        as_of: the report date (``YYYY-MM-DD``; today when None).
        dcf: the DCF assumptions, the same for every company (``DCFAssumptions()`` when None).
        market: an optional ``plugins.finance.market.MarketData``; multiples use the last close
            in the 14 days to ``as_of`` from a snapshot no older than its staleness limit, and
            print "not available" without one.
        db: an existing filings database holding the filings (skips ingestion).
        page_scale: pixels per PDF point of the page images.
        notes: ``{ticker: paragraph}`` written by an analyst or an agent, printed under "Analyst's
            note" after the company's own narrative. Its numbers must be figures of this report
            shown as listed (``9.6% [F55]``; generating once without notes gives the figure
            numbers, which do not change when notes are added).

    Raises:
        ValueError: no companies, a company without filings, duplicate tickers, or a peer
            group naming a ticker that is not a company of the report, or a note for an
            unknown ticker. ``generate`` raises ``UntracedNarrativeError`` for a note with a number
            that is not a figure of the report, before writing report.md, report.html or figures.json.
    """

    def __init__(self, companies: list[Company], peers: list[PeerGroup] | None = None, title: str = "Company report",
                 as_of: str | None = None, dcf: DCFAssumptions | None = None, market: Any = None, db: Path | None = None,
                 page_scale: float = 1.0, notes: dict[str, str] | None = None) -> None:
        if not companies:
            raise ValueError("CompanyReport needs at least one Company(name, ticker, filings)")
        tickers = [c.ticker for c in companies]
        if len(set(tickers)) != len(tickers):
            raise ValueError(f"duplicate tickers in {tickers}: each company once, with all its filings")
        for c in companies:
            if not c.filings:
                raise ValueError(f"{c.name} has no filings: give at least one PDF path")
        for group in peers or []:
            unknown = [t for t in group.tickers if t not in tickers]
            if unknown:
                raise ValueError(f"peer group {group.name!r} names {unknown}, not companies of this report ({tickers})")
        unknown_notes = sorted(set(notes or {}) - set(tickers))
        if unknown_notes:
            raise ValueError(f"notes for {unknown_notes}, not companies of this report ({tickers})")
        self.companies = companies
        self.notes = notes or {}
        self.peers = peers or []
        self.title = title
        self.as_of = as_of
        self.dcf = dcf or DCFAssumptions()
        self.market = market
        self.db = db
        self.page_scale = page_scale
        self.pdfs = {Path(p).stem: Path(p) for c in companies for p in c.filings}

    def generate(self, out: str | Path, db_path: str | Path | None = None) -> CompanyReportResult:
        """Ingest the filings (unless ``db`` was given) and write the report into ``out``.

        Returns:
            The files written, the figures and any narrative problems (empty when every
            number in the prose is a traced figure).
        """
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        for sub in ("charts", "pages"):
            make_dirs(out / sub, out)
        db = self.db or Path(db_path or out / "filings.duckdb")
        if self.db is None:
            con = connect(db)
            ingest(con, list(self.pdfs.values()))
            create_views(con)
            con.close()
        con = connect(db, read_only=True)
        try:
            return _Writer(self, con, out).write()
        finally:
            con.close()


class _Writer:
    """One generation of a ``CompanyReport``: the figures registry, the Markdown and the charts."""

    def __init__(self, spec: CompanyReport, con: duckdb.DuckDBPyConnection, out: Path) -> None:
        self.spec, self.con, self.out = spec, con, out
        self.figures = Figures(con)
        self.charts: list[Path] = []
        self.prose: list[str] = []
        self.data = {c.ticker: company_data(con, [Path(p).stem for p in c.filings]) for c in spec.companies}

    def add(self, formula: str | None, kind: str) -> tuple[str, float | None]:
        """Register a figure; ``kind`` is ``musd`` ($ millions), ``pct``, ``times``, ``usd`` (per share), ``mshares``,
        ``count`` (a plain whole number such as forecast years).

        Returns ``(cell text, value)``; ``("n/a", None)`` for a missing formula.
        """
        if formula is None:
            return "n/a", None
        if kind == "pct":
            cell = self.figures.add(formula, "ratio", 1.0, decimals=1, percent=True)
        elif kind == "times":
            cell = self.figures.add(formula, "ratio", 1.0, decimals=2)
        elif kind == "usd":
            cell = self.figures.add(formula, "USD/share", 1.0, decimals=2)
        elif kind == "count":
            cell = self.figures.add(formula, "count", 1.0)
        elif kind == "mshares":
            cell = self.figures.add(formula, "shares", 1e6, decimals=1)
        else:
            cell = self.figures.add(formula, "USD", 1e6)
        return cell, self.figures.items[-1].value

    def paragraph(self, text: str) -> list[str]:
        """A narrative paragraph (kept for the prose check)."""
        self.prose.append(text)
        return [text, ""]

    def write(self) -> CompanyReportResult:
        spec = self.spec
        generated = spec.as_of or datetime.now(UTC).strftime("%Y-%m-%d")
        md = [f"# {spec.title}", "",
              (f"Report date {generated}. Every number carries a figure reference [F*n*]: a value read from a filing, "
              "a formula over such values, or a stated assumption; `figures.json` lists each with its formula, and the "
              "Sources section links every value to an image of the page it was printed on."), ""]
        md += self._documents()
        for company in spec.companies:
            md += self._company(company)
        for group in spec.peers:
            md += self._peer_group(group)
        md += self._sources()
        manifest = [f.__dict__ for f in self.figures.items]
        documents = [Path(p).stem for c in spec.companies for p in c.filings]
        problems = [p for text in self.prose for p in untraced_prose_numbers(text, manifest, documents)]
        for ticker, note in spec.notes.items():
            untraced = untraced_prose_numbers(note, manifest, documents)
            if untraced:
                raise UntracedNarrativeError(
                    f"the note on {ticker} states numbers that are not figures of this report: {', '.join(untraced[:10])}; "
                    "write each number as a figure's display and reference exactly as in report.md (e.g. 9.6% [F55]) "
                    "or leave it out")
        write_new(self.out / "figures.json", json.dumps(manifest, indent=1))
        text = "\n".join(md) + "\n"
        write_new(self.out / "report.md", text)
        write_new(self.out / "report.html", render_html(text, spec.title))
        pages = {(d, p) for d, p in self._cited_pages()}
        images = render_pages(spec.pdfs, pages, self.out / "pages", spec.page_scale)
        return CompanyReportResult(self.out / "report.md", self.out / "report.html", self.charts, images, self.figures.items, problems)

    def _documents(self) -> list[str]:
        rows = []
        for company in self.spec.companies:
            names = [Path(p).stem for p in company.filings]
            for doc, pages, status, error in self.con.execute(
                    "SELECT doc_name, pages, status, error FROM documents WHERE doc_name IN (SELECT unnest(?)) ORDER BY doc_name",
                    [names]).fetchall():
                checks = run_checks(self.con, [doc]).status if status in INGESTED else "not run"
                shown = "ok" if status == "ok" else f"{status}: {error.split(':', 1)[-1].strip()}"
                rows.append([company.name, doc, str(pages), shown.replace("|", "/"), checks])
        return ["## Documents", "", *_table(["Company", "Document", "Pages", "Status", "Accounting identities"], rows)]

    def _company(self, company: Company) -> list[str]:
        data = self.data[company.ticker]
        md = [f"## {company.name} ({company.ticker})", ""]
        if company.note:
            md += [company.note, ""]
        years = data.years()[-6:]
        if not years:
            return md + [("Not available: no annual income statement was read from these filings "
                         f"({', '.join(Path(p).stem for p in company.filings)}); no figures are shown for {company.name}."), ""]
        ends = ", ".join(f"FY{y} ended {data.year_end[y]}" for y in years if y in data.year_end)
        md += [f"Fiscal years: {ends}. Sources: {', '.join(data.docs)} (a later filing's figures win for a year both print).", ""]
        header = [f"FY{y}" for y in years]
        cells: dict[str, list[tuple[str, float | None]]] = {}
        rows = []
        for label, templates in LINES:
            cells[label] = [self.add(first_formula(templates, data, y), "musd") for y in years]
            rows.append([label] + [c for c, _ in cells[label]])
        cells["Diluted shares"] = [self.add(first_formula(["{diluted_shares}"], data, y), "mshares") for y in years]
        rows.append(["Diluted shares (millions)"] + [c for c, _ in cells["Diluted shares"]])
        md += ["### Trend ($ millions)", "", *_table(["Line item"] + header, rows)]
        rows = []
        for label, templates in RATIOS:
            cells[label] = [self.add(first_formula(templates, data, y), "times" if label in _TIMES else "pct") for y in years]
            rows.append([label] + [c for c, _ in cells[label]])
        md += ["### Ratios", "", RATIO_NOTE, "", *_table(["Metric"] + header, rows)]
        chart = self._trend_chart(company, years, cells)
        if chart:
            md += [f"![{company.name}: margins and growth by fiscal year]({chart.relative_to(self.out).as_posix()})", ""]
        md += self.paragraph(_trend_story(company.name, years, cells))
        md += self._segments(company, data)
        md += self._dcf(company, data)
        if company.ticker in self.spec.notes:
            md += ["#### Analyst's note", "", self.spec.notes[company.ticker].strip(), ""]
        md += self._multiples(company, data)
        return md

    def _segments(self, company: Company, data: CompanyData) -> list[str]:
        """Segment and geography revenue (and segment profit where printed), each value a stored fact.

        The rows come from ``plugins.finance.segments``: a table is used only when its rows sum to the
        income statement's revenue of the year (the identity is shown as two rows of the table).
        """
        revenue = {y: f["revenue"][0] for y, f in data.facts.items() if "revenue" in f}
        income = {y: f["operating_income"][0] for y, f in data.facts.items() if "operating_income" in f}
        found = company_breakdowns(self.con, data.docs, revenue, income)
        md = ["### Segments and geography", ""]
        if not found:
            return md + [(f"Not available: none of the tables read from {company.name}'s filings ({', '.join(data.docs)}) "
                          "has rows that add up to the income statement's revenue of a year, so no segment or geography "
                          "breakdown is shown (none is estimated)."), ""]
        shares: dict[str, dict[int, dict[str, float | None]]] = {}
        for kind, title in (("segment", "Revenue by reportable segment"), ("geography", "Revenue by geography")):
            if kind not in found:
                what = "reportable segment" if kind == "segment" else "geographic area"
                md += [f"{title}: not available (no table of revenue by {what} whose rows add up to revenue was read).", ""]
                continue
            md += self._breakdown_table(title, found[kind], shares.setdefault(kind, {}))
            md += self._mix_story(company, found[kind])
        chart = self._segment_chart(company, found, shares)
        if chart:
            md += [f"![{company.name}: segment mix and growth]({chart.relative_to(self.out).as_posix()})", ""]
        return md

    def _breakdown_table(self, title: str, breakdown: CompanyBreakdown, shares: dict[int, dict[str, float | None]]) -> list[str]:
        years = sorted(breakdown.years)[-6:]
        header = ["Line item"] + [f"FY{y}" for y in years]
        rows = []
        for key, shown in breakdown.labels:
            row = [shown.replace("|", "/")]
            for y in years:
                fact = next((r.fact_id for r in breakdown.years[y].revenue.rows if _seg_key(r.label) == key), None)
                cell, value = self.add("{" + fact + "}" if fact else None, "musd")
                shares.setdefault(y, {})[shown] = value
                row.append(cell)
            rows.append(row)
        rows.append(["Sum of the rows above"] + [self.add(" + ".join("{" + r.fact_id + "}" for r in breakdown.years[y].revenue.rows),
                                                          "musd")[0] for y in years])
        rows.append(["Revenue (income statement)"] + [self.add("{" + breakdown.years[y].revenue_fact + "}", "musd")[0] for y in years])
        ids = [r.fact_id for b in breakdown.years.values() for r in b.revenue.rows + [x for x in b.reportable or ()]]
        page = dict(self.con.execute("SELECT fact_id, page FROM facts WHERE fact_id IN (SELECT unnest(?))", [ids]).fetchall())
        where = sorted({(b.revenue.doc_name, page.get(r.fact_id, b.revenue.page)) for b in breakdown.years.values()
                        for r in b.revenue.rows})
        reconciling = [shown for key, shown in breakdown.labels if re.search(r"corporate|elimination|reconcil", key)]
        note = f"; {' and '.join(reconciling)} are reconciling rows printed in the table" if reconciling else ""
        md = [f"#### {title} ($ millions)", "",
              ("Rows as printed in " + "; ".join(f"{d} p.{p}" for d, p in where) + ". The identity holds: in every year shown the "
               f"rows add up to the income statement's revenue within rounding (that is how the table was recognised{note})."),
              ""]
        two_step = sorted((y, b) for y, b in breakdown.years.items() if b.reportable and y in years)
        if two_step:  # segments.py, module docstring 6: the segments add up to a total the reconciliation starts from
            y, b = two_step[-1]
            segments, recon = b.reportable
            named = [r.label for r in b.revenue.rows if not re.search(r"corporate|elimination|reconcil", _seg_key(r.label))]
            md += [(f"The segment table prints the reportable segments apart from the reconciliation, so each year was checked in "
                    f"two steps: in FY{y} {' + '.join(named)} add up to its \"{segments.label}\", "
                    f"{self.add('{' + segments.fact_id + '}', 'musd')[0]} (p.{page.get(segments.fact_id)}), printed again as "
                    f"\"{recon.label}\", {self.add('{' + recon.fact_id + '}', 'musd')[0]}, in the reconciliation "
                    f"(p.{page.get(recon.fact_id)}), where {' and '.join(reconciling) or 'its reconciling lines'} take it to "
                    "revenue."), ""]
        md += [*_table(header, rows)]
        if breakdown.measure:
            md += self._profit_table(breakdown, years)
        elif breakdown.kind == "segment":
            md += ["Segment operating income or EBIT: not available (no table printing it by these segments was recognised).", ""]
        return md

    def _mix_story(self, company: Company, breakdown: CompanyBreakdown) -> list[str]:
        """A sentence on the latest year's largest row and its share of revenue, from figures only."""
        year = max(breakdown.years)
        b = breakdown.years[year]
        top = max(b.revenue.rows, key=lambda r: r.value)
        share, _ = self.add(f"{{{top.fact_id}}} / {{{b.revenue_fact}}}", "pct")
        what = "segment" if breakdown.kind == "segment" else "region"
        text = f"In FY{year} {company.name}'s largest {what} by revenue was {re.sub(r'[(][a-z0-9][)]', '', top.label).strip()}, {share} of revenue"
        prior = breakdown.years.get(year - 1)
        before = next((r for r in prior.revenue.rows if _seg_key(r.label) == _seg_key(top.label)), None) if prior else None
        if before is not None and before.value > 0:
            growth, _ = self.add(f"{{{top.fact_id}}} / {{{before.fact_id}}} - 1", "pct")
            text += f", its revenue growing {growth} over FY{year - 1}"
        return self.paragraph(text + ".")

    def _profit_table(self, breakdown: CompanyBreakdown, years: list[int]) -> list[str]:
        measure = breakdown.measure
        header = ["Line item"] + [f"FY{y}" for y in years]
        rows, margins = [], []
        for key, shown in breakdown.labels:
            row, margin = [shown.replace("|", "/")], [shown.replace("|", "/")]
            for y in years:
                b = breakdown.years[y]
                profit = next((r.fact_id for r in b.profit[1].rows if _seg_key(r.label) == key), None) if b.profit and b.profit[0] == measure else None
                sales = next((r.fact_id for r in b.revenue.rows if _seg_key(r.label) == key), None)
                row.append(self.add("{" + profit + "}" if profit else None, "musd")[0])
                share = _value_share(b.revenue.rows, sales)
                # a margin on a sliver of revenue (Global Brand Divisions, Corporate) means nothing: n/a under 2%
                margin.append(self.add(f"{{{profit}}} / {{{sales}}}" if profit and sales and share >= 0.02 else None, "pct")[0])
            if any(c != "n/a" for c in row[1:]):
                rows.append(row)
                margins.append(margin)
        what = ("operating income" if measure == "operating income" else
                "EBIT (earnings before interest and taxes; the table's total is income before income taxes)")
        return [f"#### Segment {what} ($ millions) and margin on segment revenue", "", *_table(header, rows),
                ("Segment margin = the segment's profit / its revenue; n/a where the row's revenue is under 2% of the "
                "rows' total (reconciling rows such as Corporate)."), "", *_table(["Segment margin"] + header[1:], margins)]

    def _segment_chart(self, company: Company, found: dict[str, CompanyBreakdown],
                       shares: dict[str, dict[int, dict[str, float | None]]]) -> Path | None:
        """Left: each segment's share of revenue by year (stacked; negative rows left out). Right: growth by segment."""
        kind = "segment" if "segment" in shares else "geography"
        by_year = shares[kind]
        years = sorted(by_year)
        labels = [shown for _, shown in found[kind].labels]
        fig, (left, right) = plt.subplots(1, 2, figsize=(9, 4.0), dpi=100)
        bottom = [0.0] * len(years)
        for k, name in enumerate(labels):
            heights = []
            for i, y in enumerate(years):
                value, total = by_year[y].get(name), sum(v for v in by_year[y].values() if v and v > 0)
                heights.append(value / total * 100 if value and value > 0 and total else 0.0)
            left.bar(range(len(years)), heights, 0.6, bottom=bottom, label=name, color=f"C{k % 10}")
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        left.set_xticks(range(len(years)), [str(y) for y in years])
        left.set_title(f"Revenue mix by {kind} (% of the positive rows)", fontsize=9)
        fig.legend(fontsize=7, loc="lower center", ncol=min(len(labels), 4), frameon=False)
        # growth of rows under 5% of revenue (Global Brand Divisions, Corporate) swamps the scale: left out
        big = [name for name in labels if all((by_year[y].get(name) or 0) >= 0.05 * sum(v for v in by_year[y].values() if v and v > 0)
                                              for y in years if by_year[y].get(name) is not None)]
        width = 0.8 / max(len(big), 1)
        for k, name in enumerate(labels):
            if name not in big:
                continue
            points = [(i, (by_year[y][name] / by_year[years[i - 1]][name] - 1) * 100) for i, y in enumerate(years)
                      if i and years[i - 1] == y - 1 and by_year[y].get(name) and by_year[years[i - 1]].get(name)
                      and by_year[years[i - 1]][name] > 0 and by_year[y][name] > 0]
            j = big.index(name)
            right.bar([i + (j - (len(big) - 1) / 2) * width for i, _ in points], [v for _, v in points], width, color=f"C{k % 10}")
        right.set_xticks(range(len(years)), [str(y) for y in years])
        right.axhline(0, color="black", linewidth=0.6)
        right.set_title("Growth over the prior year (%; rows under 5% of revenue left out)", fontsize=8)
        right.grid(axis="y", alpha=0.3)
        fig.suptitle(f"{company.name}: {kind} revenue from the filings' tables", fontsize=9)
        fig.tight_layout(rect=(0, 0.12 if len(labels) <= 4 else 0.17, 1, 1))
        return self._save(fig, f"{company.ticker}-{kind}s.png")

    def _trend_chart(self, company: Company, years: list[int], cells: dict[str, list[tuple[str, float | None]]]) -> Path | None:
        margins = [m for m in ("Gross margin", "Operating margin", "Net margin", "Free cash flow margin")
                   if any(v is not None for _, v in cells[m])]
        if not margins:
            return None
        fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2), dpi=100)
        for k, m in enumerate(margins):
            points = [(years.index(y), v * 100) for y, (_, v) in zip(years, cells[m], strict=True) if v is not None]
            for n, run in enumerate(_runs(points, years)):  # no line across fiscal years that are not in the filings
                left.plot([x for x, _ in run], [v for _, v in run], marker="o", color=f"C{k}", label=m if n == 0 else None)
        left.set_xticks(range(len(years)), [str(y) for y in years])
        left.set_title("Margins (% of revenue)", fontsize=10)
        left.legend(fontsize=7)
        left.grid(alpha=0.3)
        for name, color in (("Revenue growth", "tab:blue"), ("Net income growth", "tab:orange")):
            points = [(y, v * 100) for y, (_, v) in zip(years, cells[name], strict=True) if v is not None]
            offset = -0.2 if name == "Revenue growth" else 0.2
            right.bar([years.index(y) + offset for y, _ in points], [v for _, v in points], 0.4, label=name, color=color)
        right.set_xticks(range(len(years)), [str(y) for y in years])
        right.axhline(0, color="black", linewidth=0.6)
        right.set_title("Growth over the prior fiscal year (%)", fontsize=10)
        right.legend(fontsize=7)
        right.grid(axis="y", alpha=0.3)
        for i in range(1, len(years)):
            if years[i] != years[i - 1] + 1:  # a dotted line where fiscal years are missing between two shown
                for ax in (left, right):
                    ax.axvline(i - 0.5, color="grey", linestyle=":", linewidth=1)
        fig.suptitle(f"{company.name} ({company.ticker}), fiscal years; dotted line = years not in the filings read", fontsize=9)
        fig.tight_layout()
        return self._save(fig, f"{company.ticker}-trend.png")

    def _save(self, fig: Any, name: str) -> Path:
        png = io.BytesIO()
        fig.savefig(png, format="png")
        plt.close(fig)
        path = self.out / "charts" / name
        write_new(path, png.getvalue())
        self.charts.append(path)
        return path

    def _dcf(self, company: Company, data: CompanyData) -> list[str]:
        a = self.spec.dcf
        md = ["### Discounted cash flow to equity value per share", ""]
        try:
            base = discounted_cash_flow(self.con, data.docs[-1], a)
        except ValueError as exc:
            return md + [f"Not available: {exc}.", ""]
        year = base.fiscal_year
        ocf, capex = base.fact_ids
        f = dcf_formulas(ocf, capex, a)
        need = {c: data.facts.get(year, {}).get(c) for c in ("debt", "cash_and_equivalents", "diluted_shares")}
        r_cell, _ = self.add(_num(a.discount_rate), "pct")
        g_cell, _ = self.add(_num(a.growth), "pct")
        t_cell, _ = self.add(_num(a.terminal_growth), "pct")
        n_cell, _ = self.add(str(a.years), "count")
        md += [(f"Assumptions (stated, not estimated): free cash flow grows {g_cell} a year for {n_cell} explicit years, "
               f"discounted at {r_cell}, then grows {t_cell} a year for ever (Gordon growth); base year FY{year} from "
               f"{base.doc_name}. Net debt = borrowings - cash and equivalents at the end of FY{year} (short-term investments are "
               "not netted, which is conservative for cash-rich companies; leases are not borrowings here); per share on the "
               f"diluted weighted-average share count of FY{year}{self._shares_where(data, year)}."), ""]
        md += [self._borrowings_note(data, year, need["debt"] or []), ""]
        rows = [["Base free cash flow (operating cash flow + capital expenditure)", self.add(f["fcf"], "musd")[0]],
                ["Present value of the explicit years", self.add(f["pv"], "musd")[0]],
                ["Present value of the terminal value", self.add(f["tv"], "musd")[0]],
                ["Enterprise value", self.add(f["ev"], "musd")[0]]]
        net_debt = None
        if need["debt"] and need["cash_and_equivalents"]:
            net_debt = "(" + " + ".join("{" + i + "}" for i in need["debt"]) + f" - {{{need['cash_and_equivalents'][0]}}})"
        rows.append(["Net debt (borrowings - cash)", self.add(net_debt, "musd")[0]])
        equity = f"{f['ev']} - {net_debt}" if net_debt else None
        rows.append(["Equity value", self.add(equity, "musd")[0]])
        shares = need["diluted_shares"][0] if need["diluted_shares"] else None
        rows.append(["Diluted shares (millions)", self.add("{" + shares + "}" if shares else None, "mshares")[0]])
        per_share, _ = self.add(f"({equity}) / {{{shares}}}" if equity and shares else None, "usd")
        rows.append(["Equity value per diluted share ($)", per_share])
        md += _table(["Item", "$ millions"], rows)
        if per_share == "n/a":
            missing = [n for n, c in (("borrowings", "debt"), ("cash and equivalents", "cash_and_equivalents"),
                                      ("the diluted share count", "diluted_shares")) if not need[c]]
            return md + self.paragraph(f"Equity value per share is not available for {company.name}: "
                                       + self._not_printed(data.docs[-1], year, missing) + ".")
        md += ["Sensitivity of equity value per diluted share ($) to the discount rate (rows) and terminal growth (columns):", ""]
        rates = [a.discount_rate + d for d in (-0.01, -0.005, 0, 0.005, 0.01)]
        growths = [a.terminal_growth + d for d in (-0.01, -0.005, 0, 0.005, 0.01)]
        header = ["Discount rate"] + [self.add(_num(g), "pct")[0] for g in growths]
        rows, values = [], []
        for r in rates:
            row = [self.add(_num(r), "pct")[0]]
            for g in growths:
                if g >= r:
                    row.append("n/a")
                    continue
                ev = dcf_formulas(ocf, capex, DCFAssumptions(a.growth, r, g, a.years))["ev"]
                cell, value = self.add(f"({ev} - {net_debt}) / {{{shares}}}", "usd")
                row.append(cell)
                values.append((value, cell))
            rows.append(row)
        md += _table(header, rows)
        return md + self.paragraph(
            f"On these assumptions {company.name}'s equity is worth {per_share} per diluted share; over discount rates from "
            f"{rows[0][0]} to {rows[-1][0]} and terminal growth from {header[1]} to {header[-1]} the value ranges from "
            f"{min(values)[1]} to {max(values)[1]}. A DCF on one year's free cash flow "
            "is only as good as that year is typical: compare the free cash flow margin trend above.")

    def _statement_pages(self, doc: str, statement: str) -> list[int]:
        """The pages a primary statement of ``doc`` was read from (those its facts cite)."""
        return [p for (p,) in self.con.execute("SELECT DISTINCT page FROM facts WHERE doc_name = ? AND statement = ? ORDER BY page",
                                               [doc, statement]).fetchall()]

    def _printed(self, doc: str, pages: list[int], words: re.Pattern[str], window: int = 1) -> list[tuple[int, str]]:
        """``[(page, line)]``: where ``words`` finds a match in ``window`` consecutive lines of ``pages`` (their stored
        text); the line quoted is the window's last line that holds a number (its first line when none does)."""
        found = []
        for page, text in self.con.execute("SELECT page, text FROM pages WHERE doc_name = ? AND page IN (SELECT unnest(?)) ORDER BY page",
                                           [doc, pages]).fetchall():
            lines = [re.sub(r"\s+", " ", line).strip() for line in (text or "").splitlines()]
            for i in range(len(lines)):
                chunk = lines[i:i + window]
                if words.search("\n".join(chunk)) and (window == 1 or words.search("\n".join(chunk[:-1])) is None):
                    numbered = [x for x in chunk if re.search(r"\d", x)]
                    counts = [x for x in numbered if re.search(r"\bshares\b", x, re.IGNORECASE)]
                    found.append((page, (counts or numbered or chunk)[-1]))
        return found

    def _borrowings_note(self, data: CompanyData, year: int, ids: list[str]) -> str:
        """Which balance-sheet lines make up borrowings (current + long-term debt); a claim that no debt due within one
        year is printed is checked against the balance-sheet pages, and said otherwise."""
        lines = [data.debt_lines[i] for i in ids if i in data.debt_lines]
        shown = "; ".join(f"{kind}: \"{_words(label)}\" (p.{page})" for kind, label, page in lines)
        text = (f"Borrowings at the end of FY{year} = current + long-term debt, the balance-sheet lines {shown}" if lines else
                f"Borrowings at the end of FY{year}: no balance-sheet line of debt was read")
        if not any(kind == "current" for kind, _, _ in lines):
            pages = self._statement_pages(data.docs[-1], "balance_sheet")
            printed = self._printed(data.docs[-1], pages, CURRENT_DEBT_WORDS)
            where = ", ".join(f"p.{p}" for p in pages) or "none read"
            text += ("; no debt due within one year is printed on the balance sheet (" + where + ", checked)" if not printed else
                     f"; the balance sheet prints \"{_words(printed[0][1])}\" (p.{printed[0][0]}), which was not read as a value, "
                     "so borrowings may be understated")
        return text + "."

    def _shares_where(self, data: CompanyData, year: int) -> str:
        source = data.shares_source.get(year)
        return f" (read from the {source})" if source == "income statement" else f" (read from the {source}: the income statement prints none)" if source else ""

    def _not_printed(self, doc: str, year: int, missing: list[str]) -> str:
        """Why the inputs are missing, each claim checked against the pages cited: "do not print" only where the
        statement pages read do not print it; else where it is printed and that it was not read."""
        said, unread = [], []
        pages = {"borrowings": self._statement_pages(doc, "balance_sheet"),
                 "cash and equivalents": self._statement_pages(doc, "balance_sheet"),
                 "the diluted share count": self._statement_pages(doc, "income_statement")}
        words = {"borrowings": re.compile(r"\bdebt\b|borrowings", re.IGNORECASE),
                 "cash and equivalents": re.compile(r"\bcash\b", re.IGNORECASE), "the diluted share count": DILUTED_SHARES_WORDS}
        for name in missing:
            printed = self._printed(doc, pages[name], words[name], 3 if name == "the diluted share count" else 1)
            if printed:
                unread.append(f"{name} is printed on p.{printed[0][0]} (\"{_words(printed[0][1])}\") but was not read as a value")
            else:
                said.append(f"{name} ({', '.join(f'p.{p}' for p in pages[name]) or 'no page'} checked)")
        parts = ([f"the primary statements read for FY{year} do not print {' or '.join(said)}"] if said else []) + unread
        return "; ".join(parts)

    def _multiples(self, company: Company, data: CompanyData) -> list[str]:
        """Price multiples on the last close of the 14 days to the report date, from a market snapshot only."""
        md = ["### Multiples", ""]
        price = None
        if self.spec.market is None:
            reason = "no market data source was given to the report"
        else:
            day = date.fromisoformat(self.spec.as_of) if self.spec.as_of else datetime.now(UTC).date()
            try:
                answer = self.spec.market.prices(company.ticker, day - timedelta(days=14), day + timedelta(days=1), as_of=day)
                price = answer.data[-1] if answer.data else None
                reason = f"the snapshot {answer.snapshot.name} has no {company.ticker} close in the 14 days to {day}"
            except MarketDataError as exc:
                reason = str(exc).replace(str(self.spec.market.store.root), "market/")
        if price is None:
            return md + [(f"Price multiples (P/E, EV/EBITDA, EV/revenue, price/book) are not available: they need a share "
                          f"price from a dated market snapshot ({reason.rstrip('.')}). No price is estimated."), ""]
        year = data.years()[-1]
        close = _num(price["close"])
        value = f"{close} * {{{data.facts[year]['diluted_shares'][0]}}}" if "diluted_shares" in data.facts.get(year, {}) else None
        net_debt = first_formula(["{debt} - {cash_and_equivalents}"], data, year)
        ev = f"{value} + ({net_debt})" if value and net_debt else None

        def over(numerator: str | None, templates: list[str]) -> str | None:
            denominator = first_formula(templates, data, year)
            return f"({numerator}) / ({denominator})" if numerator and denominator else None

        rows = [[f"Share price ($, close on {price['date']}, {answer.snapshot.name})", self.add(close, "usd")[0]],
                [f"P/E (price / diluted EPS of FY{year})", self.add(over(close, ["{eps_diluted}"]), "times")[0]],
                [f"Market value of equity ($m, price x FY{year} diluted shares)", self.add(value, "musd")[0]],
                ["Enterprise value ($m, market value + net debt)", self.add(ev, "musd")[0]],
                [f"EV / revenue (FY{year})", self.add(over(ev, ["{revenue}"]), "times")[0]],
                [f"EV / EBITDA (operating income + depreciation and amortisation, FY{year})",
                 self.add(over(ev, ["{operating_income} + {depreciation_amortization}"]), "times")[0]],
                [f"Price / book (equity at the end of FY{year})", self.add(over(value, ["{total_equity}"]), "times")[0]]]
        note = (f"The price is market data (Yahoo Finance via a dated snapshot fetched {answer.fetched_at:%Y-%m-%d}), shown as a "
                "constant figure; everything else comes from the filings. n/a = an input the statements read do not print.")
        return md + [note, "", *_table(["Multiple", "Value"], rows)]

    def _peer_group(self, group: PeerGroup) -> list[str]:
        md = [f"## Peers: {group.name}", ""]
        if group.note:
            md += [group.note, ""]
        companies = [c for c in self.spec.companies if c.ticker in group.tickers]
        header, columns = ["Metric"], []
        for c in companies:
            years = self.data[c.ticker].years()
            year = years[-1] if years else None
            end = self.data[c.ticker].year_end.get(year) if year else None
            header.append(f"{c.name} FY{year}" + (f" (to {end})" if end else "") if year else f"{c.name} (no annual statements)")
            columns.append((c, year))
        rows, values = [], {}
        specs = [(label, templates, "musd") for label, templates in LINES[:1] + LINES[3:4] + LINES[6:7]]
        specs += [(label, templates, "times" if label in _TIMES else "pct") for label, templates in RATIOS]
        for label, templates, kind in specs:
            row = [label + (" ($m)" if kind == "musd" else "")]
            for c, year in columns:
                cell = self.add(first_formula(templates, self.data[c.ticker], year), kind) if year else ("n/a", None)
                row.append(cell[0])
                values[(label, c.ticker)] = cell
            rows.append(row)
        md += _table(header, rows)
        chart = self._peer_chart(group, columns, values)
        if chart:
            md += [f"![{group.name}: margins and growth side by side]({chart.relative_to(self.out).as_posix()})", ""]
        return md + self.paragraph(_peer_story(columns, values))

    def _peer_chart(self, group: PeerGroup, columns: list[tuple[Company, int | None]], values: dict) -> Path | None:
        metrics = ["Revenue growth", "Gross margin", "Operating margin", "Net margin", "Free cash flow margin", "Return on equity"]
        shown = [(c, y) for c, y in columns if y]
        if not shown:
            return None
        fig, ax = plt.subplots(figsize=(9, 3.2), dpi=100)
        width = 0.8 / len(shown)
        for k, (c, year) in enumerate(shown):
            heights = [(values[(m, c.ticker)][1] or 0) * 100 for m in metrics]
            ax.bar([i + k * width for i in range(len(metrics))], heights, width, label=f"{c.name} FY{year}")
        ax.set_xticks([i + width * (len(shown) - 1) / 2 for i in range(len(metrics))], metrics, fontsize=8)
        ax.axhline(0, color="black", linewidth=0.6)
        ax.set_ylabel("% (missing = not available)", fontsize=8)
        ax.set_title(f"{group.name}: latest fiscal year of each company", fontsize=10)
        ax.legend(fontsize=8)
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        return self._save(fig, "peers-" + re.sub(r"[^a-z0-9]+", "-", group.name.lower()).strip("-") + ".png")

    def _cited_pages(self) -> set[tuple[str, int]]:
        ids = sorted({i for f in self.figures.items for i in f.fact_ids})
        return {(d, p) for d, p in self.con.execute(
            "SELECT doc_name, page FROM facts WHERE fact_id IN (SELECT unnest(?))", [ids]).fetchall()}

    def _sources(self) -> list[str]:
        ids = sorted({i for f in self.figures.items for i in f.fact_ids})
        facts = self.con.execute(
            "SELECT f.fact_id, f.doc_name, substr(d.sha256, 1, 12), f.page, f.line_no, f.period_label, f.label, f.raw_value "
            "FROM facts f JOIN documents d USING (doc_name) WHERE fact_id IN (SELECT unnest(?)) ORDER BY f.fact_id", [ids]).fetchall()
        note = ("Each value: document (first 12 hex digits of its SHA-256), page (a link to the page image), line, column "
                "(period) and the number as printed. Assumptions are figures whose formula is a constant.")
        md = ["## Sources", "", note, ""]
        md += _table(["Fact", "Document (sha256)", "Page", "Line", "Period", "Label", "As printed"], [
            [f"`{fid}`", f"{doc} ({sha})", f"[{page}](pages/{page_image_name(doc, page)})", str(line), period,
             (label or "").replace("|", "/"), f"`{raw}`"] for fid, doc, sha, page, line, period, label, raw in facts])
        md += ["Figures (each a stored value, a derivation from stored values, or a stated assumption):", ""]
        md += [f"- F{f.ref}: `{f.formula}`" for f in self.figures.items]
        return md + [""]


def _value_share(rows: list[Any], fact_id: str | None) -> float:
    """A row's share of the positive rows' total (0 when the row is missing or not positive)."""
    total = sum(r.value for r in rows if r.value > 0)
    value = next((r.value for r in rows if r.fact_id == fact_id), 0.0)
    return value / total if total and value > 0 else 0.0


def _seg_key(label: str) -> str:
    return normal_label(label)


def _runs(points: list[tuple[int, float]], years: list[int]) -> list[list[tuple[int, float]]]:
    """Split chart points (x = index into ``years``) where the fiscal years are not consecutive."""
    runs: list[list[tuple[int, float]]] = []
    for x, v in points:
        if runs and x == runs[-1][-1][0] + 1 and years[x] == years[x - 1] + 1:
            runs[-1].append((x, v))
        else:
            runs.append([(x, v)])
    return runs


def _say(cell: tuple[str, float | None]) -> str:
    return "not available" if cell[1] is None else cell[0]


def _change(label: str, series: list[tuple[str, float | None]], first: int, last: int) -> str:
    """``"<label> went from A to B"``, or as much of it as the figures allow."""
    start, end = series[0], series[-1]
    if start[1] is None and end[1] is None:
        return f"{label} is not available"
    if start[1] is None:
        return f"{label} was {end[0]} in FY{last}"
    if end[1] is None:
        return f"{label} was {start[0]} in FY{first} (not available for FY{last})"
    return f"{label} went from {start[0]} to {end[0]}"


def _trend_story(name: str, years: list[int], cells: dict[str, list[tuple[str, float | None]]]) -> str:
    """A paragraph on the trend, from the figures only (first and last year shown)."""
    first, last = years[0], years[-1]
    rev, growth = cells["Revenue"], cells["Revenue growth"]
    margins = "; ".join(_change(m.lower(), cells[m], first, last) for m in ("Gross margin", "Operating margin", "Net margin"))
    return (f"{name}'s revenue was {_say(rev[0])} ($m) in FY{first} and {_say(rev[-1])} in FY{last}; growth in FY{last} "
            f"was {_say(growth[-1])}. Between FY{first} and FY{last}: {margins}. In FY{last} operating "
            f"cash flow was {_say(cells['Cash conversion'][-1])} times net income, free cash flow {_say(cells['Free cash flow margin'][-1])} "
            f"of revenue, and liabilities {_say(cells['Liabilities / equity'][-1])} times equity.")


def _peer_story(columns: list[tuple[Company, int | None]], values: dict) -> str:
    """A paragraph comparing the peers' latest years, from the figures only."""
    parts = []
    for c, year in columns:
        if year is None:
            parts.append(f"{c.name}: not available (no annual statements were read from its filings)")
            continue
        parts.append(f"{c.name} (FY{year}) revenue growth {_say(values[('Revenue growth', c.ticker)])}, operating margin "
                     f"{_say(values[('Operating margin', c.ticker)])}, net margin {_say(values[('Net margin', c.ticker)])}, "
                     f"return on equity {_say(values[('Return on equity', c.ticker)])}")
    return "Side by side on each company's latest fiscal year: " + "; ".join(parts) + "."
