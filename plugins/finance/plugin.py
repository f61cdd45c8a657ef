"""The finance plugin: answer questions about filings from extracted, checked statements, and write reports."""

from __future__ import annotations

from pathlib import Path

from core.api import RewardResult, Task, Tool, ToolContext, Trajectory, UserError
from plugins.finance.checks import run_checks
from plugins.finance.episode import EpisodeFiles
from plugins.finance.ingest import INGESTED, ingest
from plugins.finance.manifest import DESCRIPTION
from plugins.finance.model import create_views
from plugins.finance.questions import load_questions
from plugins.finance.reward import REWARD_VERSION, grade
from plugins.finance.store import connect
from plugins.finance.task import FinanceTask, TaskSpecError, load_task
from plugins.finance.tools import FINANCE_TOOLS, finish

SYSTEM_PROMPT = """\
You are a careful financial analyst. The filings of this task (annual and quarterly reports as
PDF) have been parsed into a database: every value printed in the income statement, balance
sheet and cash-flow statement, and in the other tables (segments, geography, notes, non-GAAP
reconciliations, MD&A, earnings releases), is stored with its document, page, line and column
(a fact id such as 3M_2018_10K:p60:l24:c0), its amount as printed, scale, period and column header.

How to work:
1. list_documents shows the filings and where their statements are.
2. get_statement shows a statement with fact ids; get_table shows the values of any page's
   tables with fact ids; get_metrics shows derived ratios; sql runs read-only queries (tables
   facts, pages, documents; views income_statement, balance_sheet, cash_flow, metrics,
   table_values).
   search_filing and read_page find evidence in the text and say which pages hold stored values.
3. answer_question records each answer with its evidence page. A number must come from
   stored facts: give a formula over {fact_id}s (or one fact id); the tool recomputes it.
   State unit and scale explicitly (1577 with scale 'millions' is $1,577 million).
4. When asked for a report, write_report builds it from the stored values; its reply lists the
   main figures with their refs. Add your analysis as `narrative` (paragraphs) in a second call:
   every number in it must be a figure written exactly as the report shows it ("9.6% [F12]"),
   numbers in words ("ninety-five", "a third", "twice") included; FY2023, 10-K, Q3, "in 2023",
   "page 61" and "Note 7" are names, not numbers.
5. finish with a short summary.

Pages are 1-based. Amounts in parentheses are negative (cash outflows such as capital
expenditure are stored negative: answer "capex" as -{fact_id}).
"""


class FinancePlugin:
    """Plugin ``finance``: filings into DuckDB with provenance; scored answers, checks and reports."""

    name = "finance"
    description = DESCRIPTION  # plugins/finance/manifest.py: agent plugins lists it without importing this module

    def system_prompt(self, task: Task) -> str:
        """The same text for every run (prefix caching)."""
        return SYSTEM_PROMPT

    def tools(self) -> list[Tool]:
        """The finance tools, then market data, the report tool and finish."""
        from plugins.finance.market_tool import market_data
        from plugins.finance.report_tool import write_report  # the report stack (matplotlib) loads lazily

        return [*FINANCE_TOOLS, market_data, write_report, finish]

    def validate(self, task: Task) -> None:
        """Refuse, before a run is made, a task folder whose ``task.json`` does not parse or names
        filings or a questions file that do not exist (an unreadable or encrypted PDF is no reason:
        it becomes that document's error, and the others are ingested).

        Raises:
            UserError: what is wrong, naming the user's ``task.json``.
        """
        if task.repo is None:
            raise UserError("the finance plugin needs --repo: a task folder with a task.json naming the filings")
        try:
            spec = load_task(Path(task.repo).resolve())
            if spec.questions_file:
                load_questions(spec.questions_file, spec.question_ids)
        except (TaskSpecError, ValueError, OSError) as exc:
            raise UserError(f"the finance task cannot be set up: {exc}") from None
        if spec.missing:
            raise UserError(
                f"{Path(task.repo) / 'task.json'} names filings that do not exist: {', '.join(spec.missing)}; paths are "
                "relative to the task folder or the repository root (the examples read ../shared/data/filings, "
                "next to the repository)"
            )

    def setup(self, task: Task, ctx: ToolContext) -> str:
        """Resolve ``task.json``, ingest the filings into the episode's database and list the questions.

        Returns:
            Text for the task message: the documents (with per-document errors) and the questions.
            A task folder without a valid ``task.json`` is reported there, not raised: the tools
            then answer with the same reason and the reward is 0.
        """
        files = EpisodeFiles(ctx)
        files.root.mkdir(parents=True, exist_ok=True)
        try:
            if task.repo is None:
                raise TaskSpecError("the finance plugin needs --repo: a task folder with a task.json naming the filings")
            spec = load_task(Path(task.repo).resolve())
            questions = load_questions(spec.questions_file, spec.question_ids) if spec.questions_file else []
        except (TaskSpecError, ValueError, OSError) as exc:
            files.task_error.write_text(str(exc))
            return f"The task could not be set up: {exc}"
        names = {p.stem for p in spec.filings}
        if spec.question_ids is None:
            questions = [q for q in questions if q.doc_name in names]
        con = connect(files.db)
        try:
            statuses = ingest(con, spec.filings)
            create_views(con)
        finally:
            con.close()
        files.write_json(files.task, spec.to_json())
        files.write_json(files.questions, [{"qid": q.qid, "doc_name": q.doc_name, "question": q.text} for q in questions])
        lines = ["Filings:"]
        for s in statuses:
            lines.append((f"- {s.doc_name}: {s.pages} pages, {s.facts} values extracted" if s.status == "ok"
                          else f"- {s.doc_name}: {s.pages} pages, {s.facts} values extracted; WARNING: {s.error}" if s.status in INGESTED
                          else f"- {s.doc_name}: {s.status.upper()}: {s.error}") + (f" ({s.note})" if s.note else ""))
        if questions:
            lines.append(f"\nQuestions ({len(questions)}; answer each with answer_question):")
            lines.extend(f"- {q.qid} [{q.doc_name}]: {q.text}" for q in questions)
        if spec.report:
            lines.append("\nWrite a research report with write_report before finishing.")
        return "\n".join(lines)

    def reward(self, task: Task, trajectory: Trajectory) -> RewardResult:
        """Score the recorded answers, run the accounting checks, and check the report (see ``plugins.finance.reward``).

        Returns:
            The verdict, version ``finance-qa/N``; not applicable when set-up failed (the task
            file could not be read) or no filing of the task could be read (each ingested with
            status ``error``), since the agent had nothing to work on.

        Raises:
            ValueError: the trajectory has no live ``context`` (the episode's files are read through it).
        """
        from plugins.finance.report_tool import report_traceability

        ctx = trajectory.require_context(self.name)
        files = EpisodeFiles(ctx)
        if files.task_error.is_file() or not files.task.is_file():
            reason = files.task_error.read_text() if files.task_error.is_file() else "set-up did not finish"
            return RewardResult.not_applicable(REWARD_VERSION, f"nothing to judge: {reason}")
        spec = FinanceTask.from_json(files.read_json(files.task, {}))
        questions = load_questions(spec.questions_file, [q["qid"] for q in files.read_json(files.questions, [])]) if spec.questions_file else []
        con = connect(files.db, read_only=True)
        try:
            errors = con.execute("SELECT doc_name, error FROM documents WHERE doc_name IN (SELECT unnest(?)) AND status = 'error' "
                                 "ORDER BY doc_name", [[p.stem for p in spec.filings]]).fetchall()
            if spec.filings and len(errors) == len(spec.filings):  # nothing the agent could have read
                shown = "; ".join(f"{name}: {error}" for name, error in errors[:3])
                return RewardResult.not_applicable(REWARD_VERSION, f"none of the task's filings could be read ({shown})")
            checks = run_checks(con, [p.stem for p in spec.filings])
            report = report_traceability(con, ctx.workspace) if spec.report else None
        finally:
            con.close()
        return grade(questions, files.read_json(files.answers, {}), checks, spec.value_tolerance, report)
