"""Where a finance episode keeps its state: the run's scratch folder (survives a resume).

    scratch/finance/filings.duckdb    the filings database (see ``plugins.finance.store``)
    scratch/finance/task.json         the resolved task (``FinanceTask.to_json``)
    scratch/finance/task_error.txt    why the task could not be set up, when it could not
    scratch/finance/questions.json    the questions the agent sees (no gold answers)
    scratch/finance/answers.json      the answers recorded by ``answer_question``, by question id
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb

from core.api import ToolContext, ToolError
from plugins.finance.store import connect
from plugins.finance.task import FinanceTask


class EpisodeFiles:
    """The paths of one episode's finance state under ``ctx.scratch``."""

    def __init__(self, ctx: ToolContext) -> None:
        self.root = ctx.scratch / "finance"
        self.db = self.root / "filings.duckdb"
        self.task = self.root / "task.json"
        self.task_error = self.root / "task_error.txt"
        self.questions = self.root / "questions.json"
        self.answers = self.root / "answers.json"

    def load_task(self) -> FinanceTask:
        """The resolved task.

        Raises:
            ToolError: set-up failed (the reason is repeated) or has not run.
        """
        if self.task_error.is_file():
            raise ToolError(f"the task could not be set up: {self.task_error.read_text()}")
        if not self.task.is_file():
            raise ToolError("no filings were ingested for this episode (the task was not set up)")
        return FinanceTask.from_json(json.loads(self.task.read_text()))

    def read_json(self, path: Path, default: Any) -> Any:
        """A JSON file's content, or ``default`` when it does not exist."""
        return json.loads(path.read_text()) if path.is_file() else default

    def write_json(self, path: Path, data: Any) -> None:
        """Write JSON atomically (a crash leaves the old or the new file, never half of one)."""
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(data, indent=1, default=str))
        tmp.replace(path)

    @contextmanager
    def read_only(self) -> Iterator[duckdb.DuckDBPyConnection]:
        """A read-only connection with file access disabled (no ``read_csv('/etc/...')``, no ``ATTACH``).

        Raises:
            ToolError: the database does not exist (set-up failed).
        """
        self.load_task()
        if not self.db.is_file():
            raise ToolError("the filings database is missing; the task set-up did not finish")
        con = connect(self.db, read_only=True, locked=True)
        try:
            yield con
        finally:
            con.close()
