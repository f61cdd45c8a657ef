"""OpenAI fine-tuning JSONL: chat-format training examples with function calling.

Format (OpenAI, "Supervised fine-tuning", https://platform.openai.com/docs/guides/supervised-fine-tuning,
and "Fine-tuning with function calling" in the same guide's data-preparation section): one JSON
object per line, ``{"messages": [...], "tools": [...], "parallel_tool_calls": bool}``, where

- ``messages`` are chat-completions messages with roles ``system``, ``user``, ``assistant``,
  ``tool``; an assistant message has ``content`` and/or ``tool_calls``
  (``[{"id", "type": "function", "function": {"name", "arguments": <JSON text>}}]``) and may carry
  ``weight`` 0 or 1 (whether to train on it); a ``tool`` message has ``tool_call_id`` and ``content``;
- ``tools`` are ``{"type": "function", "function": {"name", "description", "parameters": <JSON schema>}}``.

``validate_line`` checks a line against those rules; the tests check every exported line with it.
Horizon writes only fields the format defines (no ``name`` on tool messages, no run metadata:
each line's run and ``quality_flags`` are in the length report beside the file,
``core.export.lengths``). A line ends with the assistant's last turn: the tool result that
answered ``finish`` (or any message after the model's last turn) teaches nothing and is left out.
``arguments`` stay JSON text, as the format defines them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.export.sft import write_jsonl
from core.export.source import RunRecord

ROLES = {"system", "user", "assistant", "tool"}


def openai_message(m: dict[str, Any]) -> dict[str, Any]:
    """A stored chat message in the fine-tuning format (only the fields that format defines)."""
    if m["role"] == "assistant":
        out: dict[str, Any] = {"role": "assistant"}
        if m.get("content"):
            out["content"] = m["content"]
        if m.get("tool_calls"):
            out["tool_calls"] = [
                {"id": c["id"], "type": "function", "function": {"name": c["function"]["name"], "arguments": c["function"]["arguments"]}}
                for c in m["tool_calls"]
            ]
        if "content" not in out and "tool_calls" not in out:
            out["content"] = ""
        return out
    if m["role"] == "tool":
        return {"role": "tool", "tool_call_id": m["tool_call_id"], "content": m.get("content") or ""}
    return {"role": m["role"], "content": m.get("content") or ""}


def openai_messages(run: RunRecord) -> list[dict[str, Any]]:
    """The run's messages in the fine-tuning format, up to and including the model's last turn."""
    messages = [openai_message(m) for m in run.openai_messages()]
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=len(messages) - 1)
    return messages[: last + 1]


def openai_line(run: RunRecord) -> dict[str, Any]:
    """One training example for ``run``. Horizon's loop runs one tool call at a time in the model's
    order, so ``parallel_tool_calls`` is False unless some assistant turn made several calls."""
    messages = openai_messages(run)
    parallel = any(len(m.get("tool_calls", [])) > 1 for m in messages)
    return {"messages": messages, "tools": run.tools, "parallel_tool_calls": parallel}


def validate_line(line: dict[str, Any]) -> list[str]:
    """Problems of one fine-tuning example against the documented format (empty list: valid)."""
    problems: list[str] = []
    messages = line.get("messages")
    if not isinstance(messages, list) or not messages:
        return ["messages must be a non-empty list"]
    tool_names = set()
    for i, spec in enumerate(line.get("tools") or []):
        fn = spec.get("function") if isinstance(spec, dict) else None
        if spec.get("type") != "function" or not isinstance(fn, dict) or not isinstance(fn.get("name"), str):
            problems.append(f"tools[{i}] must be {{'type': 'function', 'function': {{'name', ...}}}}")
            continue
        if not isinstance(fn.get("parameters", {}), dict) or fn.get("parameters", {}).get("type", "object") != "object":
            problems.append(f"tools[{i}].function.parameters must be a JSON schema of type object")
        tool_names.add(fn["name"])
    open_calls: set[str] = set()
    assistants = 0
    for i, m in enumerate(messages):
        role = m.get("role")
        extra = set(m) - {"role", "content", "tool_calls", "tool_call_id", "weight", "name"}
        if role not in ROLES:
            problems.append(f"messages[{i}].role {role!r} is not one of {sorted(ROLES)}")
        if extra:
            problems.append(f"messages[{i}] has fields the format does not define: {sorted(extra)}")
        if role == "assistant":
            assistants += 1
            if m.get("content") is None and not m.get("tool_calls"):
                problems.append(f"messages[{i}]: an assistant message needs content or tool_calls")
            if "weight" in m and m["weight"] not in (0, 1):
                problems.append(f"messages[{i}].weight must be 0 or 1")
            for c in m.get("tool_calls", []):
                fn = c.get("function") or {}
                if c.get("type") != "function" or not isinstance(c.get("id"), str) or not isinstance(fn.get("arguments"), str):
                    problems.append(f"messages[{i}]: tool call {c!r} needs id, type 'function' and JSON-text arguments")
                elif tool_names and fn.get("name") not in tool_names:
                    problems.append(f"messages[{i}]: tool call names {fn.get('name')!r}, which is not in tools")
                open_calls.add(c.get("id"))
        elif role == "tool":
            if m.get("tool_call_id") not in open_calls:
                problems.append(f"messages[{i}]: tool_call_id {m.get('tool_call_id')!r} answers no earlier assistant tool call")
            if not isinstance(m.get("content"), str):
                problems.append(f"messages[{i}]: a tool message needs string content")
        elif not isinstance(m.get("content"), str):
            problems.append(f"messages[{i}]: a {role} message needs string content")
    if not assistants:
        problems.append("no assistant message: nothing to train on")
    return problems


def write_openai_jsonl(runs: list[RunRecord], out: Path) -> int:
    """Write one fine-tuning example per run; return the number written."""
    lines = [openai_line(r) for r in runs]
    write_jsonl(lines, out)
    return len(lines)
