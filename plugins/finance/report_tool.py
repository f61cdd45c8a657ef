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
from plugins.finance.report import FinanceReport, verify_figures

REPORT_DIR = "report"


class WriteReportArgs(BaseModel):
    title: str = Field(min_length=1, max_length=200, description="the report's title")
    documents: list[str] = Field(default_factory=list, description="documents to cover (names from list_documents); empty for all that were ingested")


@tool
def write_report(args: WriteReportArgs, ctx: ToolContext) -> ToolResult:
    """Write the research report (Markdown and HTML with tables, charts, the recorded answers, accounting checks and a sources section) to report/ in the workspace. Every figure in it is a stored value or a derivation from stored values.

    Returns a result whose ``data`` is ``{"figures": n, "checks": status, "files": [...]}``.
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
    report = FinanceReport(filings=[names[d] for d in chosen], ticker=spec.ticker, title=args.title, db=files.db, answers=answers)
    try:
        result = report.generate(out)
    except (FormulaError, duckdb.Error) as exc:
        raise ToolError(f"the report could not be written: {exc}") from None
    written = [p.relative_to(ctx.workspace).as_posix() for p in [result.markdown, result.html, *result.charts, out / "figures.json"]]
    return ToolResult(output=f"Wrote {', '.join(written)}: {len(result.figures)} figures, accounting checks {result.checks_status}.",
                      data={"figures": len(result.figures), "checks": result.checks_status, "files": written})


def report_traceability(con: duckdb.DuckDBPyConnection, workspace: Path) -> tuple[float, dict[str, Any]]:
    """The share of the workspace report's figures that trace to stored values (0 when there is no report).

    Every number in a table of ``report.md`` must be a listed figure (``[Fn]``) and every figure
    must re-compute from the database (``verify_figures``). Both files are in the workspace, so
    they are read only as regular files (never through a link, a FIFO or a device) and any
    content scores, never crashes: a manifest that is not a list of figures, or nested past
    the JSON parser's limit, scores 0 with the reason.

    Returns:
        ``(share in [0, 1], detail)``; ``detail["why"]`` says why the share is 0 when no figure
        could be checked.
    """
    folder = workspace / REPORT_DIR
    try:
        if folder.is_symlink():
            raise OSError(f"{REPORT_DIR}/ is a symbolic link")
        manifest_bytes = read_regular(folder / "figures.json")
        markdown_text = read_regular(folder / "report.md").decode("utf-8", "replace")
    except OSError as exc:
        return 0.0, {"why": f"no report was written (report/report.md and report/figures.json as regular files): {exc}"}
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
    untraced = untraced_numbers(markdown_text, manifest)
    share = traced / (len(manifest) + len(untraced))
    return share, {"figures": len(manifest), "traced": traced, "problems": problems[:20], "numbers_without_figure": untraced[:20]}


def untraced_numbers(markdown: str, manifest: list[dict[str, Any]]) -> list[str]:
    """Table cells of the report's figure tables that show a number without a matching figure reference.

    Cells of the Sources tables (page, line, column numbers) and period headers are not figures.
    """
    displays = {f"F{f['ref']}": f["display"] for f in manifest if isinstance(f, dict) and "ref" in f and "display" in f}
    bad = []
    in_sources = False
    for line in markdown.splitlines():
        if line.startswith("## "):
            in_sources = line.strip() in ("## Sources", "## Documents")
        if in_sources or not line.startswith("|") or line.startswith("|---") or "| Line item |" in line or "| Metric |" in line:
            continue
        for cell in [c.strip() for c in line.strip("|").split("|")][1:]:
            match = re.fullmatch(r"(-?[\d,]+(?:\.\d+)?%?) \[(F\d+)\]", cell)
            if match:
                if displays.get(match[2]) != match[1]:
                    bad.append(cell)
            elif re.fullmatch(r"-?[\d,]+(?:\.\d+)?%?", cell):
                bad.append(cell)
    return bad
