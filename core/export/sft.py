"""Multi-turn SFT rows: the conversation with its tool calls, and the tools as OpenAI function schemas.

One row per run::

    {"messages": [{"role", "content", "tool_calls", "tool_call_id", "name"}, ...],
     "tools": [{"type": "function", "function": {"name", "description", "parameters"}}, ...],
     "run_id", "plugin", "task", "reward", "correct", "reward_version", "exit_status", "quality_flags"}

Messages are in the OpenAI chat-completions format (assistant ``tool_calls``; ``tool`` messages
with ``tool_call_id``), the conversational format Hugging Face TRL's ``SFTTrainer`` takes with a
``tools`` column (https://huggingface.co/docs/trl/dataset_formats, "Tool calling"). In JSONL a
call's ``arguments`` is a dict, as TRL's docs write it (``datasets`` 5 loads the differing
argument shapes as its ``Json`` type, not as one struct padded with nulls); a template that
always applies ``tojson`` to ``arguments`` (TRL's Qwen2.5 copy) would encode JSON text twice. In
Parquet it is JSON text, and so is ``tools``: each tool's ``parameters`` and each call's arguments
have shapes of their own, which no single Arrow struct type can hold; Qwen3's template (the
default training template, ``core.export.lengths``) renders either form the same. Every message
carries all five keys (null where unused), so the Parquet file has one fixed schema
(``SFT_SCHEMA``). ``tools`` are ``core.export.schemas.portable_schema`` of the plugin's, as every
format's are.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from core.export.source import RunRecord

MESSAGE_TYPE = pa.struct([
    ("role", pa.string()),
    ("content", pa.string()),
    ("tool_calls", pa.list_(pa.struct([
        ("id", pa.string()), ("type", pa.string()),
        ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())])),
    ]))),
    ("tool_call_id", pa.string()),
    ("name", pa.string()),
])

SFT_SCHEMA = pa.schema([
    ("messages", pa.list_(MESSAGE_TYPE)),
    ("tools", pa.string()),
    ("run_id", pa.string()),
    ("plugin", pa.string()),
    ("task", pa.string()),
    ("reward", pa.float64()),
    ("correct", pa.bool_()),
    ("reward_version", pa.string()),
    ("exit_status", pa.string()),
    ("quality_flags", pa.list_(pa.string())),
])


def reward_version(run: RunRecord) -> str:
    """The version of the reward that judged the run (``RewardResult.version``, kept in the run
    store), or ``"<plugin>:unversioned"`` for a run judged before versions were stored."""
    return run.row.get("reward_version") or f"{run.plugin}:unversioned"


def is_correct(run: RunRecord) -> bool | None:
    """Whether the plugin's reward counted the task as solved (``RewardResult.correct``); None when
    the run was not judged or the reward was not applicable. A run judged before ``correct`` was
    stored counts as solved at reward 1.0."""
    if run.reward is None:
        return None
    correct = run.row.get("correct")
    return bool(correct) if correct is not None else run.reward >= 1.0


def _arguments_dict(call: dict[str, Any]) -> dict[str, Any]:
    """A tool call with its JSON-text ``arguments`` as a dict (text that is no JSON object stays text)."""
    try:
        args = json.loads(call["function"]["arguments"])
    except (json.JSONDecodeError, TypeError):
        return call
    return {**call, "function": {**call["function"], "arguments": args}} if isinstance(args, dict) else call


def full_message(m: dict[str, Any], *, arguments_as_dict: bool = False) -> dict[str, Any]:
    """A chat message with all five keys, null where unused (a fixed schema for Arrow); tool-call
    ``arguments`` as a dict with ``arguments_as_dict``, else JSON text."""
    calls = m.get("tool_calls") or None
    if calls and arguments_as_dict:
        calls = [_arguments_dict(c) for c in calls]
    return {
        "role": m["role"], "content": m.get("content"), "tool_calls": calls,
        "tool_call_id": m.get("tool_call_id"), "name": m.get("name"),
    }


def sft_row(run: RunRecord, flags: list[str] | None = None, *, tools_as_json: bool = False) -> dict[str, Any]:
    """One SFT row for ``run`` (see the module docstring); ``flags`` are the quality-gate reasons kept.
    ``tools_as_json`` (Parquet): ``tools`` and call ``arguments`` as JSON text; else a list and dicts."""
    return {
        "messages": [full_message(m, arguments_as_dict=not tools_as_json) for m in run.openai_messages()],
        "tools": json.dumps(run.tools) if tools_as_json else run.tools,
        "run_id": run.run_id, "plugin": run.plugin, "task": run.instruction, "reward": run.reward,
        "correct": is_correct(run), "reward_version": reward_version(run), "exit_status": run.row.get("exit_status"),
        "quality_flags": list(flags or []),
    }


def write_jsonl(rows: list[dict[str, Any]], out: Path) -> None:
    """Write one JSON object per line (UTF-8, no ASCII escaping)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_sft_jsonl(runs: list[RunRecord], out: Path, flags: dict[str, list[str]] | None = None) -> int:
    """Write SFT rows as JSON Lines; return the number of rows."""
    rows = [sft_row(r, (flags or {}).get(r.run_id)) for r in runs]
    write_jsonl(rows, out)
    return len(rows)


def write_sft_parquet(runs: list[RunRecord], out: Path, flags: dict[str, list[str]] | None = None) -> int:
    """Write SFT rows as Parquet with ``SFT_SCHEMA``; return the number of rows."""
    rows = [sft_row(r, (flags or {}).get(r.run_id), tools_as_json=True) for r in runs]
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=SFT_SCHEMA), out)
    return len(rows)
