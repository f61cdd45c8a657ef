"""Build suites/finance/ from examples/finance/financebench (run from the repository root).

The 24 FinanceBench questions about the 12 filings in ``../shared/data/filings`` are split by
company into three tasks (``GROUPS``). Each task folder::

    suites/finance/<group>/
        task.json         {"plugin": "finance", "instruction": ...}
        repo/task.json    the finance task (plugins/finance/task.py): its filings, by path from the
                          repository root, and its question ids; no report
        reference.jsonl   the turns of examples/finance/scripts/financebench.jsonl that concern
                          the group's filings (tool calls naming another filing dropped), then finish

Usage: .venv/bin/python suites/finance/build.py
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
QUESTIONS = "../shared/data/filings/questions.jsonl"
SCRIPT = ROOT / "examples" / "finance" / "scripts" / "financebench.jsonl"
GROUPS = {
    "financebench-3m-activision-amazon": ["3M_2018_10K", "ACTIVISIONBLIZZARD_2019_10K", "AMAZON_2017_10K"],
    "financebench-bestbuy": ["BESTBUY_2023_10K", "BESTBUY_2024Q2_10Q"],
    "financebench-block-to-ulta": ["BLOCK_2020_10K", "COSTCO_2021_10K", "GENERALMILLS_2020_10K", "MICROSOFT_2016_10K",
                                   "NETFLIX_2017_10K", "NIKE_2021_10K", "ULTABEAUTY_2023Q4_EARNINGS"],
}


def _documents(call: dict[str, Any]) -> set[str]:
    """The filings a tool call names: its ``document`` argument, or those quoted in an SQL query."""
    args = call["arguments"]
    if "document" in args:
        return {args["document"]}
    query = args.get("query", "")
    return {doc for docs in GROUPS.values() for doc in docs if f"'{doc}'" in query}


def reference_turns(documents: list[str]) -> list[dict[str, Any]]:
    """The example trajectory's tool calls that concern ``documents`` (calls naming no filing, such
    as list_documents, are kept; write_report and finish are replaced by one finish)."""
    turns = []
    for line in SCRIPT.read_text(encoding="utf-8").splitlines():
        turn = json.loads(line)
        calls = turn.get("tool_calls") or [turn]
        kept = [c for c in calls if c["tool"] not in ("write_report", "finish")
                and (not _documents(c) or _documents(c) & set(documents))]
        if kept:
            turns.append({"tool_calls": kept} if len(kept) > 1 else kept[0])
    turns.append({"tool": "finish", "arguments": {"summary": f"answered the questions about {', '.join(documents)}"}})
    return turns


def build(name: str, documents: list[str], out: Path) -> Path:
    """Write one task folder under ``out``; return it."""
    folder = out / name
    shutil.rmtree(folder, ignore_errors=True)
    (folder / "repo").mkdir(parents=True)
    data = ROOT / QUESTIONS
    ids = [q["financebench_id"] for q in map(json.loads, data.read_text(encoding="utf-8").splitlines()) if q["doc_name"] in documents]
    spec = {"filings": [f"../shared/data/filings/{d}.pdf" for d in documents], "questions": QUESTIONS,
            "question_ids": ids, "value_tolerance": 0.01, "report": False}
    (folder / "repo" / "task.json").write_text(json.dumps(spec, indent=1) + "\n", encoding="utf-8")
    instruction = f"Answer the {len(ids)} FinanceBench questions about these filings with answer_question, citing the page of each value."
    (folder / "task.json").write_text(json.dumps({"plugin": "finance", "instruction": instruction}, indent=1) + "\n", encoding="utf-8")
    (folder / "reference.jsonl").write_text("".join(json.dumps(t) + "\n" for t in reference_turns(documents)), encoding="utf-8")
    return folder


if __name__ == "__main__":
    for group, docs in GROUPS.items():
        print(build(group, docs, Path(__file__).resolve().parent))
