"""The task folder of a finance run: ``task.json`` naming filings, ticker and questions.

Format (paths relative to the task folder or to the Horizon repository root; ``*`` globs allowed)::

    {
      "ticker": "MMM",                                    optional, for market data and the report
      "filings": ["../shared/data/filings/3M_2018_10K.pdf"],
      "questions": "../shared/data/filings/questions.jsonl",   optional, FinanceBench format
      "question_ids": ["financebench_id_03029"],          optional; default: every question about a filing
      "value_tolerance": 0.01,                            optional relative tolerance for answer values
      "report": true,                                     optional: the run must write a report
      "market": {"snapshots": "market", "offline": true, "max_age_days": 7}
                                                          optional market-data settings (snapshot folder
                                                          relative to the task folder, as copied into the
                                                          workspace; offline: snapshots only)
    }

Gold answers stay outside the workspace (the questions file is read on the host at setup and
verification); the agent sees only the questions.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[2]
TASK_FILE = "task.json"


class TaskSpecError(ValueError):
    """``task.json`` is missing or invalid; the message says what to fix."""


@dataclass
class FinanceTask:
    """A resolved task.

    Attributes:
        filings: absolute PDF paths, in the order given.
        ticker: the ticker symbol, or None.
        questions_file: the FinanceBench-format questions file, or None.
        question_ids: the questions to answer (None: every question about a listed filing).
        value_tolerance: relative tolerance for scoring answer values.
        report: whether the run must write a report.
    """

    filings: list[Path]
    ticker: str | None = None
    questions_file: Path | None = None
    question_ids: list[str] | None = None
    value_tolerance: float = 0.01
    report: bool = False
    missing: list[str] = field(default_factory=list)
    market: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready form (stored in the run's scratch folder so a resumed run reads the same)."""
        return {"filings": [str(p) for p in self.filings], "ticker": self.ticker,
                "questions_file": str(self.questions_file) if self.questions_file else None,
                "question_ids": self.question_ids, "value_tolerance": self.value_tolerance, "report": self.report,
                "missing": self.missing, "market": self.market}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> FinanceTask:
        """The inverse of ``to_json``."""
        return cls([Path(p) for p in data["filings"]], data.get("ticker"),
                   Path(data["questions_file"]) if data.get("questions_file") else None, data.get("question_ids"),
                   data.get("value_tolerance", 0.01), data.get("report", False), data.get("missing", []), data.get("market", {}))


def _resolve(entry: str, bases: list[Path]) -> list[Path]:
    for base in bases:
        if any(ch in entry for ch in "*?["):
            found = sorted(p.resolve() for p in base.glob(entry) if p.is_file())
            if found:
                return found
        elif (base / entry).exists():
            return [(base / entry).resolve()]
    return []


def load_task(folder: Path) -> FinanceTask:
    """Read and resolve ``folder/task.json``.

    A filing that is not found is kept (it becomes a per-document error at ingestion), and
    listed in ``missing``.

    Raises:
        TaskSpecError: no task.json, not JSON, or wrong field types (the message names the field).
    """
    path = folder / TASK_FILE
    if not path.is_file():
        raise TaskSpecError(f"{path} not found; a finance task folder needs a task.json naming the filings "
                            '(e.g. {"filings": ["../shared/data/filings/3M_2018_10K.pdf"]})')
    try:
        spec = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise TaskSpecError(f"{path} is not valid JSON ({exc})") from None
    if not isinstance(spec, dict) or not isinstance(spec.get("filings"), list) or not spec["filings"]:
        raise TaskSpecError(f"{path}: 'filings' must be a non-empty list of PDF paths")
    bases = [folder.resolve(), REPO_ROOT]
    filings, missing = [], []
    for entry in spec["filings"]:
        if not isinstance(entry, str):
            raise TaskSpecError(f"{path}: every entry of 'filings' must be a path string, got {entry!r}")
        found = _resolve(entry, bases)
        if not found:
            missing.append(entry)
            found = [(folder / entry).resolve()]
        filings.extend(found)
    questions = None
    if spec.get("questions"):
        found = _resolve(spec["questions"], bases)
        if not found:
            raise TaskSpecError(f"{path}: questions file {spec['questions']!r} not found relative to the task folder or {REPO_ROOT}")
        questions = found[0]
    ids = spec.get("question_ids")
    if ids is not None and not (isinstance(ids, list) and all(isinstance(i, str) for i in ids)):
        raise TaskSpecError(f"{path}: 'question_ids' must be a list of strings")
    tolerance = spec.get("value_tolerance", 0.01)
    if not isinstance(tolerance, (int, float)) or not 0 <= tolerance < 1:
        raise TaskSpecError(f"{path}: 'value_tolerance' must be a number in [0, 1), e.g. 0.01 for 1%")
    market = spec.get("market", {})
    if not isinstance(market, dict):
        raise TaskSpecError(f"{path}: 'market' must be an object such as {{\"snapshots\": \"market\", \"offline\": true}}")
    return FinanceTask(filings, spec.get("ticker"), questions, ids, float(tolerance), bool(spec.get("report", False)), missing,
                       market)
