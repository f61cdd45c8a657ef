"""The ``write_report`` tool and the report part of the reward.

The report goes to ``report/`` in the workspace (``report.md``, ``report.html``, ``charts/``,
``figures.json``), so it is part of the run's patch like any file the agent writes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import duckdb
from pydantic import BaseModel, Field

from core.api import ToolContext, ToolError, ToolResult, read_regular, tool
from plugins.finance.episode import EpisodeFiles
from plugins.finance.formula import FormulaError
from plugins.finance.narrative import UntracedNarrativeError, citable_figures, untraced_prose_numbers
from plugins.finance.report import FinanceReport, verify_figures

REPORT_DIR = "report"
#: Citable figures listed in the tool's output (all of them are in its data and in report.md).
MAX_CITABLE_SHOWN = 24
#: The longest narrative ``write_report`` takes (characters); a longer "## Narrative" section was not written by it.
MAX_NARRATIVE_CHARS = 20_000
#: The largest report.md the reward reads (``write_report`` writes well under 1 MiB for twelve filings).
MAX_REPORT_BYTES = 8 << 20
#: A figure-table cell longer than this is not read number by number: it counts as one number without a figure.
MAX_CELL_CHARS = 500


class WriteReportArgs(BaseModel):
    title: str = Field(min_length=1, max_length=200, description="the report's title")
    documents: list[str] = Field(default_factory=list, description="documents to cover (names from list_documents); empty for all that were ingested")
    narrative: str | None = Field(None, max_length=MAX_NARRATIVE_CHARS, description=(
        "optional: your analysis as Markdown paragraphs (no headings or tables), printed under 'Narrative'. Every number "
        "must be a figure of the report cited exactly as the report shows it, e.g. '32,765 [F3]' or '22.0% [F27]' (numbers in "
        "words such as 'ninety-five percent' or 'a third' count too; FY2023, 10-K, Q3, 'in 2023', 'page 61' are names); write "
        "the report once without a narrative to get the refs (they do not change when a narrative is added)"))


@tool
def write_report(args: WriteReportArgs, ctx: ToolContext) -> ToolResult:
    """Write the research report (Markdown and HTML with tables, charts, the recorded answers, accounting checks and a sources section) to report/ in the workspace, with your narrative if given. Every figure in it is a stored value or a derivation from stored values; every number in the narrative must cite one as shown ('32,765 [F3]').

    Returns a result whose ``data`` is ``{"figures": n, "checks": status, "files": [...], "citable": [...]}``;
    ``citable`` lists the main figures as the report shows them (the latest column of each table's
    first rows), so a narrative can cite them. A narrative with an uncited number, a heading or a
    table is refused (``ToolError`` naming the offending tokens) before report.md, report.html and figures.json are written.
    """
    files = EpisodeFiles(ctx)
    spec = files.load_task()
    names = {p.stem: p for p in spec.filings}
    chosen = args.documents or list(names)
    unknown = [d for d in chosen if d not in names]
    if unknown:
        raise ToolError(f"unknown documents: {', '.join(unknown)}; documents: {', '.join(names)}")
    questions = {q["qid"]: q["question"] for q in files.read_json(files.questions, [])}
    answers = [{**a, "question": questions.get(q, q)} for q, a in files.read_json(files.answers, {}).items() if a["document"] in chosen]
    out = ctx.resolve(REPORT_DIR)
    report = FinanceReport(filings=[names[d] for d in chosen], ticker=spec.ticker, title=args.title, db=files.db, answers=answers,
                           narrative=args.narrative)
    try:
        result = report.generate(out)
    except UntracedNarrativeError as exc:
        raise ToolError(f"the narrative was not accepted (report.md, report.html and figures.json were not written this time; a report written before stays as it was): {exc}") from None
    except (FormulaError, duckdb.Error) as exc:
        raise ToolError(f"the report could not be written: {exc}") from None
    written = [p.relative_to(ctx.workspace).as_posix() for p in [result.markdown, result.html, *result.charts, out / "figures.json"]]
    citable = citable_figures(result.markdown.read_text())
    shown = "; ".join(citable[:MAX_CITABLE_SHOWN])
    more = f" (+{len(citable) - MAX_CITABLE_SHOWN} more in report/report.md)" if len(citable) > MAX_CITABLE_SHOWN else ""
    return ToolResult(output=(f"Wrote {', '.join(written)}: {len(result.figures)} figures, accounting checks {result.checks_status}"
                              f"{', with your narrative' if args.narrative else ''}.\nTo cite a figure in a narrative write it "
                              f"exactly as shown with its ref; every figure with its ref and formula is in {REPORT_DIR}/figures.json. "
                              f"Main figures: {shown}{more}"),
                      data={"figures": len(result.figures), "checks": result.checks_status, "files": written, "citable": citable})


def report_traceability(con: duckdb.DuckDBPyConnection, workspace: Path) -> tuple[float, dict[str, Any]]:
    """The share of the workspace report's figures that trace to stored values (0 when there is no report,
    and 0 when the report states any number that cites no figure: ``write_report`` refuses such a report,
    so only an edit after it can make one).

    Every number in a table of ``report.md`` and in its narrative must be a listed figure (``[Fn]``)
    and every figure must re-compute from the database (``verify_figures``). Both files are in the workspace, so
    they are read only as regular files (never through a link, a FIFO or a device) and any
    content scores, never crashes: a manifest that is not a list of figures, or nested past
    the JSON parser's limit, scores 0 with the reason.

    Returns:
        ``(share in [0, 1], detail)``; ``detail["why"]`` says why the share is 0 when no figure
        could be checked or a number cites no figure.
    """
    folder = workspace / REPORT_DIR
    try:
        if folder.is_symlink():
            raise OSError(f"{REPORT_DIR}/ is a symbolic link")
        manifest_bytes = read_regular(folder / "figures.json")
        markdown_text = read_regular(folder / "report.md").decode("utf-8", "replace")
    except OSError as exc:
        return 0.0, {"why": f"no report was written (report/report.md and report/figures.json as regular files): {exc}"}
    if len(markdown_text) > MAX_REPORT_BYTES:
        return 0.0, {"why": f"report/report.md holds {len(markdown_text):,} characters, more than write_report writes "
                            f"({MAX_REPORT_BYTES:,} at most are read)"}
    try:
        manifest = json.loads(manifest_bytes)
    except json.JSONDecodeError as exc:
        return 0.0, {"why": f"figures.json is not JSON ({exc.msg})"}
    except (RecursionError, ValueError) as exc:  # nested past the parser's limit; undecodable bytes
        return 0.0, {"why": f"figures.json cannot be read ({type(exc).__name__})"}
    if not isinstance(manifest, list):
        return 0.0, {"why": f"figures.json is not a list of figures (a JSON {type(manifest).__name__})"}
    if not manifest:
        return 0.0, {"why": "the report has no figures"}
    traced, problems = verify_figures(con, manifest)
    # names that are not numbers come from the filings database, never from figures.json (the agent writes that)
    documents = [r[0] for r in con.execute("SELECT doc_name FROM documents").fetchall()]
    untraced = untraced_numbers(markdown_text, manifest, documents) + narrative_numbers(markdown_text, manifest, documents)
    detail = {"figures": len(manifest), "traced": traced, "problems": problems[:20], "numbers_without_figure": untraced[:20]}
    if untraced:  # write_report refuses such a report, so only an edit after it can make one: nothing in it is signed
        return 0.0, {**detail, "why": f"the report states {len(untraced)} number(s) that cite no figure "
                                      f"(first: {untraced[0]}); a report with an untraced number scores 0"}
    return traced / len(manifest), detail


def narrative_numbers(markdown: str, manifest: list[dict[str, Any]], documents: list[str]) -> list[str]:
    """Numbers in the report's "## Narrative" section that are not figures cited as shown (so an edit after
    ``write_report`` cannot add an untraced number either); any of them, like an untraced cell, scores the report 0.

    Read by ``plugins.finance.narrative_numbers``, the tokeniser ``write_report`` refuses a narrative with;
    ``documents`` are the filings database's document names (names, not numbers)."""
    match = re.search(r"^## Narrative\n(.*?)(?=^## |\Z)", markdown, re.MULTILINE | re.DOTALL)
    if not match:
        return []
    section = match[1].strip()
    excess = [(f"the narrative is {len(section):,} characters, longer than write_report takes ({MAX_NARRATIVE_CHARS:,}); "
               "the rest was not read")] if len(section) > MAX_NARRATIVE_CHARS else []
    return untraced_prose_numbers(section[:MAX_NARRATIVE_CHARS], manifest, documents) + excess


def untraced_numbers(markdown: str, manifest: list[dict[str, Any]], documents: list[str] | None = None) -> list[str]:
    """Table cells of the report's figure tables that show a number without a matching figure reference.

    Cells of the Sources and Documents tables (page, line, column numbers), period headers and row
    labels are not figures; the Answers table's text cells are the answers as recorded (scored by
    the answer components), so only their bare numbers count. Any other cell that is not a bare
    number or ``number [Fn]`` is read by
    ``plugins.finance.narrative_numbers`` like a narrative (``ninety-five``, ``999_000``, ``12k``
    count; ``n/a``, ``FY2018``, ``2018-12-31`` and the report's document names do not), so an
    edit of report.md after ``write_report`` cannot add a number there either. ``documents``:
    the filings database's document names (None: those of the manifest's formulas, for a
    manifest the caller wrote).
    """
    displays = {f"F{f['ref']}": f["display"] for f in manifest if isinstance(f, dict) and "ref" in f and "display" in f}
    bad = []
    in_sources = in_answers = False
    for line in markdown.splitlines():
        if line.startswith("## "):
            in_sources = line.strip() in ("## Sources", "## Documents")
            in_answers = line.strip() == "## Answers"  # the answers as recorded: the agent's own text, scored as answers
        if in_sources or not line.startswith("|") or line.startswith("|---") or "| Line item |" in line or "| Metric |" in line:
            continue
        for cell in [c.strip() for c in line.strip("|").split("|")][1:]:
            match = re.fullmatch(r"(-?[\d,]+(?:\.\d+)?%?) \[(F\d+)\]", cell)
            if match:
                if displays.get(match[2]) != match[1]:
                    bad.append(cell)
            elif re.fullmatch(r"-?[\d,]+(?:\.\d+)?%?", cell):
                bad.append(cell)
            elif in_answers:
                continue
            elif len(cell) > MAX_CELL_CHARS:
                bad.append(f"{cell[:40]}... (a cell of {len(cell):,} characters is not a figure cell)")
            else:
                bad += untraced_prose_numbers(cell, manifest, documents, vague=False)
    return bad
