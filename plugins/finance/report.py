"""Research reports from filings: Markdown and HTML with tables, charts, sources and checks.

A script writes::

    from plugins.finance.report import FinanceReport
    FinanceReport(filings=["../shared/data/filings/3M_2018_10K.pdf"], ticker="MMM",
                  questions=[{"question": "FY2018 capital expenditure", "document": "3M_2018_10K",
                              "formula": "-{capital_expenditure@FY2018}", "unit": "USD", "scale": "millions"}],
                  ).generate("out/")

and gets ``out/report.md``, ``out/report.html``, ``out/charts/*.png``, ``out/figures.json`` and the
database the figures came from (``out/filings.duckdb``). A question's formula names concepts
by period (``{concept@period_label}``); they resolve to stored facts, so each answer is a
recorded derivation like any other figure.

Every number printed in a table is a *figure*: a stored fact, or a derivation (a formula over
fact ids, see ``plugins.finance.formula``). ``figures.json`` lists them with their sources, and
the Sources section gives document, page, line, column and the text as printed for each fact.
``verify_figures`` re-checks a manifest against the database.
"""

from __future__ import annotations

import html
import io
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import matplotlib
from markdown_it import MarkdownIt

from core.api import make_dirs, write_new
from plugins.finance.checks import run_checks
from plugins.finance.formula import FormulaError, evaluate, fact_ids
from plugins.finance.ingest import INGESTED, ingest
from plugins.finance.model import DCFAssumptions, create_views, discounted_cash_flow
from plugins.finance.narrative import check_narrative
from plugins.finance.numbers import SCALES
from plugins.finance.store import connect

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # after choosing the non-interactive back end

KEY_LINES = [("revenue", "Revenue"), ("gross_profit", "Gross profit"), ("operating_income", "Operating income"),
             ("net_income", "Net income"), ("operating_cash_flow", "Operating cash flow"),
             ("capital_expenditure", "Capital expenditure"), ("total_assets", "Total assets"),
             ("total_liabilities", "Total liabilities"), ("total_equity", "Total equity")]
METRICS = [("gross_margin", "Gross margin", "{gross_profit} / {revenue}"),
           ("gross_margin", "Gross margin", "({revenue} - {cost_of_revenue}) / {revenue}"),
           ("operating_margin", "Operating margin", "{operating_income} / {revenue}"),
           ("net_margin", "Net margin", "{net_income} / {revenue}"),
           ("fcf", "Free cash flow ($m)", "{operating_cash_flow} - {capital_expenditure}"),
           ("roe", "Return on equity", "{net_income} / {total_equity}"),
           ("roa", "Return on assets", "{net_income} / {total_assets}"),
           ("current_ratio", "Current ratio", "{total_current_assets} / {total_current_liabilities}")]
_CONCEPT_REF = re.compile(r"\{([a-z_]+)(?:@([^{}]+))?\}")


@dataclass
class Figure:
    """One number printed in a report.

    Attributes:
        ref: its number in the report (``[F12]``).
        display: the text printed.
        value: the value in base units (USD, or a plain ratio).
        unit: ``USD``, ``USD/share``, ``ratio``, ``percent``.
        scale: the multiplier of the displayed number (1e6 for "$ millions").
        formula: ``{fact_id}`` for a stored value, arithmetic over fact ids for a derivation.
        fact_ids: the facts it rests on.
    """

    ref: int
    display: str
    value: float
    unit: str
    scale: float
    formula: str
    fact_ids: list[str] = field(default_factory=list)


class Figures:
    """The registry of a report's figures; every table cell with a number goes through it."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self.con = con
        self.items: list[Figure] = []
        self._facts: dict[str, tuple[float, str]] = {}

    def fact_values(self, ids: list[str]) -> dict[str, float]:
        """Stored values of ``ids`` (cached)."""
        missing = [i for i in ids if i not in self._facts]
        if missing:
            for fid, value, unit in self.con.execute(
                    "SELECT fact_id, value, unit FROM facts WHERE fact_id IN (SELECT unnest(?))", [missing]).fetchall():
                self._facts[fid] = (value, unit)
        return {i: self._facts[i][0] for i in ids if i in self._facts}

    def add(self, formula: str, unit: str, scale: float, decimals: int = 0, percent: bool = False) -> str:
        """Compute ``formula`` over stored facts, register it, and return the cell text (``32,765 [F3]``)."""
        ids = fact_ids(formula)
        value = evaluate(formula, self.fact_values(ids))
        shown = value * 100 if percent else value / scale
        display = f"{shown:,.{decimals}f}" + ("%" if percent else "")
        figure = Figure(len(self.items) + 1, display, value, "percent" if percent else unit, 0.01 if percent else scale, formula, ids)
        self.items.append(figure)
        return f"{display} [F{figure.ref}]"


def verify_figures(con: duckdb.DuckDBPyConnection, manifest: list[dict[str, Any]]) -> tuple[int, list[str]]:
    """Re-check a report's figures against the database.

    A figure traces when its formula, evaluated on the stored facts, gives its value and its
    display text rounds from that value.

    Returns:
        ``(figures that trace, problems)``; a problem names the figure and what failed.
    """
    ok, problems = 0, []
    for number, item in enumerate(manifest, 1):
        # the manifest is a file in the workspace: any shape, any content
        if not _well_formed_figure(item):
            problems.append(f"figure {number}: not a figure (needs ref, formula, display, unit, scale, value of the right types)")
            continue
        ids = fact_ids(item["formula"])
        values = {r[0]: r[1] for r in con.execute("SELECT fact_id, value FROM facts WHERE fact_id IN (SELECT unnest(?))", [ids]).fetchall()}
        try:
            computed = evaluate(item["formula"], values)
            shown = float(item["display"].rstrip("%").replace(",", ""))
            decimals = len(item["display"].rstrip("%").split(".")[1]) if "." in item["display"] else 0
            expected = computed * 100 if item["unit"] == "percent" else computed / item["scale"]
            wrong = abs(computed - item["value"]) > 1e-9 * max(1.0, abs(computed)) or abs(round(expected, decimals) - shown) > 10 ** -decimals / 2 + 1e-9
        except FormulaError as exc:
            problems.append(f"F{item['ref']}: {exc}")
            continue
        except (ValueError, ArithmeticError) as exc:  # a display that is no number, a zero scale, an overflow
            problems.append(f"F{item['ref']}: cannot be checked ({type(exc).__name__}: {str(exc)[:100]})")
            continue
        if wrong:
            problems.append(f"F{item['ref']}: shows {item['display']} but the stored facts give {expected:,.4f}")
            continue
        ok += 1
    return ok, problems


def _well_formed_figure(item: Any) -> bool:
    """True when ``item`` has the keys and value types ``Figure`` writes (numbers not booleans)."""
    def number(value: Any) -> bool:
        return isinstance(value, (int, float)) and not isinstance(value, bool)

    return (isinstance(item, dict) and isinstance(item.get("formula"), str) and isinstance(item.get("display"), str)
            and isinstance(item.get("unit"), str) and number(item.get("scale")) and number(item.get("value"))
            and isinstance(item.get("ref"), (int, str)) and not isinstance(item.get("ref"), bool))


def _resolve_concepts(con: duckdb.DuckDBPyConnection, doc: str, formula: str, period: str | None = None) -> str:
    """Replace ``{concept@period}`` (or ``{concept}`` with ``period``) by the fact id holding it.

    Raises:
        FormulaError: no stored fact for a concept and period.
    """
    def fact_for(match: re.Match[str]) -> str:
        concept, at = match[1], match[2] or period
        row = con.execute("SELECT fact_id FROM facts WHERE doc_name = ? AND concept = ? AND period_label = ?",
                          [doc, concept, at]).fetchone()
        if row is None:
            raise FormulaError(f"{doc} has no stored {concept} for {at}")
        return "{" + row[0] + "}"

    return _CONCEPT_REF.sub(fact_for, formula)


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table; columns whose cells are all numbers (or n/a) are right-aligned."""
    numeric = [i > 0 and all(re.fullmatch(r"-?[\d,.]+%?( \[F\d+\])?|n/a", r[i]) for r in rows) for i in range(len(header))]
    out = ["| " + " | ".join(header) + " |", "|" + "|".join("---:" if n else "---" for n in numeric) + "|"]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return out + [""]


@dataclass
class ReportResult:
    """What ``generate`` wrote: the Markdown and HTML files, the charts, the figures and the checks' status."""

    markdown: Path
    html: Path
    charts: list[Path]
    figures: list[Figure]
    checks_status: str


class FinanceReport:
    """A research report on filings.

    Args:
        filings: PDF paths (str or Path).
        ticker: the ticker symbol, shown in the title (and used for market data when snapshots exist).
        questions: ``{"question", "document", "formula", "unit", "scale", "decimals"}`` dicts; the
            formula names concepts as ``{concept@period_label}`` (``{revenue@FY2017}``).
        title: the report's title (default from the ticker or the first filing).
        db: an existing filings database to use instead of ingesting into the output folder.
        dcf: the DCF assumptions (``DCFAssumptions()`` when None).
        market: an optional ``plugins.finance.market.MarketData`` whose snapshots add a market section.

    Raises:
        ValueError: no filings.
        as_of: the report date (``YYYY-MM-DD``; today when None); market data after it is not used.
        answers: answers recorded by an agent run (``answer_question`` records: question, document,
            page, formula over fact ids, unit, scale, text), shown with their derivations.
        narrative: Markdown paragraphs (an analyst's or the agent's) printed under "Narrative" after the
            introduction; every number in it must be a figure of the report shown as the report shows
            it (``9.6% [F12]``); figure numbers do not depend on the narrative, so a report generated
            without it gives the refs. ``generate`` raises ``narrative.UntracedNarrativeError`` otherwise,
            before writing report.md, report.html or figures.json.
    """

    def __init__(self, filings: list[str | Path], ticker: str | None = None, questions: list[dict[str, Any]] | None = None,
                 title: str | None = None, db: Path | None = None, dcf: DCFAssumptions | None = None,
                 market: Any = None, as_of: str | None = None, answers: list[dict[str, Any]] | None = None,
                 narrative: str | None = None) -> None:
        self.filings = [Path(p) for p in filings]
        if not self.filings:
            raise ValueError("FinanceReport needs at least one filing (a PDF path)")
        self.ticker = ticker
        self.questions = questions or []
        self.title = title or f"Research report: {ticker or self.filings[0].stem}"
        self.db = db
        self.dcf = dcf or DCFAssumptions()
        self.market = market
        self.as_of = as_of
        self.answers = answers or []
        self.narrative = (narrative or "").strip()

    def generate(self, out: str | Path, db_path: str | Path | None = None) -> ReportResult:
        """Ingest the filings (unless ``db`` was given) and write the report into ``out``.

        Args:
            out: the output folder (created).
            db_path: where to put the filings database when ingesting (``out/filings.duckdb``
                by default).

        Returns:
            The paths written and the figures printed.

        Raises:
            FormulaError: a question's formula names a concept that was not extracted.
        """
        out = Path(out)
        out.mkdir(parents=True, exist_ok=True)
        make_dirs(out / "charts", out)  # a link planted as charts/ (a copied task folder) is replaced, not followed
        db = self.db or Path(db_path or out / "filings.duckdb")
        statuses = None
        if self.db is None:
            con = connect(db)
            statuses = ingest(con, self.filings)
            create_views(con)
            con.close()
        con = connect(db, read_only=True)
        try:
            return self._write(con, out, statuses)
        finally:
            con.close()

    def _write(self, con: duckdb.DuckDBPyConnection, out: Path, statuses: Any) -> ReportResult:
        figures = Figures(con)
        names = [p.stem for p in self.filings]
        docs = con.execute("SELECT doc_name, pages, status, error, sha256 FROM documents WHERE doc_name IN (SELECT unnest(?)) "
                           "ORDER BY doc_name", [names]).fetchall()
        generated = self.as_of or datetime.now(UTC).strftime("%Y-%m-%d")
        intro = (f"Report date {generated}; {len(docs)} filing(s), read by Horizon's finance plugin. Every number in a table "
                 "carries a figure reference [F*n*]; the Sources section gives the page, line and column it was read from, "
                 "or the formula that derives it.")
        md = [f"# {self.title}", "", intro, ""]
        md += ["## Documents", ""] + _table(["Document", "Pages", "Status"], [
            [d[0], str(d[1]), "ok" if d[2] == "ok" else f"{d[2]}: {d[3]}"] for d in docs])
        charts: list[Path] = []
        ok_docs = [d[0] for d in docs if d[2] in INGESTED]
        for doc in ok_docs:
            md += self._document_section(con, doc, figures, out, charts)
        if self.questions:
            md += self._questions_section(con, figures)
        if self.answers:
            md += self._answers_section(figures)
        if self.market is not None and self.ticker:
            md += self.market.report_section(self.ticker, self.as_of)
        summary = run_checks(con, ok_docs)
        held = sum(r.passed for r in summary.results)
        status = f"Status: **{summary.status}** ({held} of {len(summary.results)} identities hold; tolerance: one printed unit or 0.1%)."
        md += ["## Accounting checks", "", status, ""]
        md += _table(["Document", "Period", "Identity", "Left side ($m)", "Right side ($m)", "Result"], [
            [r.doc_name, r.period_label, r.name,
             figures.add(r.lhs_formula, "USD", 1e6), figures.add(r.rhs_formula, "USD", 1e6),
             "holds" if r.passed else "FAILS"] for r in summary.results])
        md += self._sources(con, figures)
        manifest = [f.__dict__ for f in figures.items]
        if self.narrative:  # checked against the finished figures, placed after the introduction
            check_narrative(self.narrative, manifest, documents=[d[0] for d in docs])
            md[4:4] = ["## Narrative", "", self.narrative, ""]
        # write_new: never through a link a copied task folder may hold at these names
        write_new(out / "figures.json", json.dumps(manifest, indent=1))
        text = "\n".join(md) + "\n"
        write_new(out / "report.md", text)
        write_new(out / "report.html", render_html(text, self.title))
        return ReportResult(out / "report.md", out / "report.html", charts, figures.items, summary.status)

    def _document_section(self, con: duckdb.DuckDBPyConnection, doc: str, figures: Figures, out: Path, charts: list[Path]) -> list[str]:
        periods = [r[0] for r in con.execute(
            "SELECT DISTINCT period_label FROM facts WHERE doc_name = ? AND statement = 'income_statement' AND months = 12 "
            "ORDER BY period_label", [doc]).fetchall()]
        md = [f"## {doc}", ""]
        if not periods:
            return md + ["No 12-month income statement was extracted; see the statements in the database.", ""]
        bs_for = dict(con.execute(
            "SELECT i.period_label, b.period_label FROM income_statement i JOIN balance_sheet b ON b.doc_name = i.doc_name "
            "AND b.months IS NULL AND (b.period_end = i.period_end OR (i.period_end IS NULL AND b.fiscal_year = i.fiscal_year)) "
            "WHERE i.doc_name = ? AND i.months = 12", [doc]).fetchall())
        facts, signs = {}, {}
        for c, p, fid, sign in con.execute(
                "SELECT concept, period_label, fact_id, sign FROM facts WHERE doc_name = ? AND concept IS NOT NULL", [doc]).fetchall():
            facts[(c, p)], signs[fid] = fid, sign

        def term(fid: str) -> str:  # the fact's normalised value over its printed one (a cost printed "(3,115)" is -{id})
            return ("(-{" if signs.get(fid) == -1 else "{") + fid + ("})" if signs.get(fid) == -1 else "}")

        def ref(concept: str, period: str) -> str | None:
            balance = concept in ("total_assets", "total_liabilities", "total_equity", "total_current_assets", "total_current_liabilities")
            key = (concept, bs_for.get(period) if balance else period)
            return facts.get(key)

        rows = []
        for concept, label in KEY_LINES:
            cells = [figures.add(term(f), "USD", 1e6) if (f := ref(concept, p)) else "n/a" for p in periods]
            if any(c != "n/a" for c in cells):
                rows.append([label] + cells)
        md += ["### Key figures ($ millions)", ""] + _table(["Line item"] + periods, rows)
        rows = []
        for _, label, template in METRICS:
            cells = []
            for p in periods:
                needed = re.findall(r"\{([a-z_]+)\}", template)
                ids = {c: ref(c, p) for c in needed}
                if not all(ids.values()):
                    cells.append("n/a")
                    continue
                formula = template.format(**{c: term(ids[c]) for c in needed})
                is_money = label.endswith("($m)")
                cells.append(figures.add(formula, "USD" if is_money else "ratio", 1e6 if is_money else 1.0,
                                         decimals=0 if is_money else 1, percent=not is_money and label != "Current ratio")
                             if label != "Current ratio" else figures.add(formula, "ratio", 1.0, decimals=2))
            if any(c != "n/a" for c in cells) and not any(r[0] == label for r in rows):
                rows.append([label] + cells)
        note = ("Margins = line / revenue; free cash flow = operating cash flow - capital expenditure; each line in its concept's polarity (costs and payments positive, whichever way printed); "
                "ROE and ROA on year-end equity and assets; current ratio = current assets / current liabilities.")
        md += ["### Derived metrics", "", note, ""]
        md += _table(["Metric"] + periods, rows)
        chart = self._chart(doc, periods, [(label, [ref(c, p) for p in periods]) for c, label in KEY_LINES[:4] if c != "gross_profit"],
                            figures, out)
        if chart:
            charts.append(chart)
            md += [f"![{doc}: revenue, operating income and net income]({chart.relative_to(out).as_posix()})", ""]
        try:
            dcf = discounted_cash_flow(con, doc, self.dcf)
        except ValueError as exc:
            md += [f"DCF not computed: {exc}.", ""]
        else:
            a = dcf.assumptions
            base = figures.add(dcf.base_formula, "USD", 1e6)
            growth = "".join(f" * (1 + {a.growth})" for _ in range(a.years))
            last = f"({dcf.base_formula}){growth}"
            pv = " + ".join(f"({dcf.base_formula})" + f" * (1 + {a.growth})" * t + f" / (1 + {a.discount_rate})" * t
                            for t in range(1, a.years + 1))
            tv = f"{last} * (1 + {a.terminal_growth}) / ({a.discount_rate} - {a.terminal_growth})" + f" / (1 + {a.discount_rate})" * a.years
            stated = (f"Assumptions (stated, not estimated): free cash flow grows {a.growth:.1%} a year for {a.years} years, "
                      f"discount rate {a.discount_rate:.1%}, terminal growth {a.terminal_growth:.1%} (Gordon growth).")
            md += ["### Discounted cash flow (illustrative)", "", stated, ""]
            md += _table(["Item", "$ millions"], [[f"Base free cash flow (FY{dcf.fiscal_year})", base],
                                                  ["Present value of explicit years", figures.add(pv, "USD", 1e6)],
                                                  ["Present value of terminal value", figures.add(tv, "USD", 1e6)],
                                                  ["Enterprise value", figures.add(f"{pv} + {tv}", "USD", 1e6)]])
        return md

    def _chart(self, doc: str, periods: list[str], series: list[tuple[str, list[str | None]]], figures: Figures, out: Path) -> Path | None:
        usable = [(label, ids) for label, ids in series if all(ids)]
        if not usable:
            return None
        fig, ax = plt.subplots(figsize=(7, 3.6), dpi=110)
        width = 0.8 / len(usable)
        for k, (label, ids) in enumerate(usable):
            values = figures.fact_values(ids)
            ax.bar([i + k * width for i in range(len(periods))], [values[i] / 1e6 for i in ids], width, label=label)
        ax.set_xticks([i + width * (len(usable) - 1) / 2 for i in range(len(periods))], periods)
        ax.set_ylabel("$ millions")
        ax.set_title(f"{doc}: stored values by fiscal year")
        ax.margins(y=0.18)  # room for the legend above the tallest bar
        ax.legend(fontsize=8, loc="upper left", ncol=len(usable))
        ax.grid(axis="y", alpha=0.3)
        fig.tight_layout()
        path = out / "charts" / f"{doc}.png"
        png = io.BytesIO()
        fig.savefig(png, format="png")
        plt.close(fig)
        write_new(path, png.getvalue())
        return path

    def _questions_section(self, con: duckdb.DuckDBPyConnection, figures: Figures) -> list[str]:
        rows = []
        for q in self.questions:
            formula = _resolve_concepts(con, q["document"], q["formula"])
            scale = SCALES[q.get("scale", "units")]
            # a percent formula gives percent points (100 * ...): shown as computed
            unit = "ratio" if q.get("unit") in ("percent", "ratio") else q.get("unit", "USD")
            cell = figures.add(formula, unit, scale, decimals=q.get("decimals", 0 if scale > 1 else 2))
            shown = q.get("unit", "USD") + (f" ({q['scale']})" if q.get("scale", "units") != "units" else "")
            rows.append([q["question"], q["document"], cell, shown])
        return ["## Questions", "", *_table(["Question", "Document", "Answer", "Unit"], rows)]

    def _answers_section(self, figures: Figures) -> list[str]:
        rows = []
        for a in self.answers:
            if a.get("formula") and a.get("value") is not None:
                scale = SCALES[a.get("scale", "units")]
                decimals = len(repr(float(a["value"])).split(".")[1]) if not float(a["value"]).is_integer() else 0
                # a percent answer's formula already gives percent points: shown as computed
                cell = figures.add(a["formula"], "ratio" if a["unit"] == "percent" else a["unit"], scale, decimals=decimals)
                unit = f"{a['unit']}" + (f" ({a['scale']})" if a.get("scale", "units") != "units" else "")
            else:
                cell, unit = (a.get("text") or "").replace("|", "/").replace("\n", " "), "text"
            rows.append([a.get("question", a["question_id"]).replace("|", "/")[:160], cell, unit, f"{a['document']} p.{a['page']}"])
        note = "Answers recorded during the run, each with its evidence page; numbers are derivations from stored facts."
        return ["## Answers", "", note, "", *_table(["Question", "Answer", "Unit", "Evidence"], rows)]

    def _sources(self, con: duckdb.DuckDBPyConnection, figures: Figures) -> list[str]:
        ids = sorted({i for f in figures.items for i in f.fact_ids})
        facts = {r[0]: r[1:] for r in con.execute(
            "SELECT f.fact_id, f.doc_name, f.page, f.line_no, f.column_index, f.period_label, f.label, f.raw_value, f.x0, f.top, "
            "substr(d.sha256, 1, 12) FROM facts f JOIN documents d USING (doc_name) WHERE fact_id IN (SELECT unnest(?))", [ids]).fetchall()}
        note = ("Stored values: document (first 12 hex digits of its SHA-256), page, line and column as printed, and the "
                "printed number's position (x, y of its top-left corner in PDF points from the page's top-left corner).")
        md = ["## Sources", "", note, ""]
        md += _table(["Fact", "Document (sha256)", "Page", "Line", "Column", "Label", "As printed"], [
            [f"`{i}`", f"{facts[i][0]} ({facts[i][9]})", str(facts[i][1]), str(facts[i][2]), f"{facts[i][3]} ({facts[i][4]})",
             facts[i][5].replace("|", "/"), f"`{facts[i][6]}` at ({facts[i][7]:.0f}, {facts[i][8]:.0f})"] for i in ids])
        md += ["Figures (each a stored value or a derivation from stored values):", ""]
        for f in figures.items:
            md.append(f"- F{f.ref}: `{f.formula}`")
        return md + [""]


def render_html(markdown_text: str, title: str) -> str:
    """Markdown to a standalone HTML page (markdown-it-py, CommonMark plus tables)."""
    body = MarkdownIt("commonmark").enable("table").render(markdown_text)
    style = ("body{font-family:system-ui,sans-serif;max-width:1100px;margin:2em auto;padding:0 1em;color:#222}"
             "table{border-collapse:collapse;margin:1em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 8px}"
             "th{background:#f3f3f3}img{max-width:100%}code{font-size:12px}")
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>{body}</body></html>\n")
