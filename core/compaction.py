"""History compaction: when the context nears its budget, old turns become one summary block.

What the model is sent (the "wire") is the opening (system prompt and task), then, after a
compaction, one summary message, then the recent turns verbatim. Between compactions the wire only
grows at its end, so the engine's prefix cache keeps hitting; a compaction changes the prefix once.

The summary is extractive and deterministic (no model call): every action of the summarised steps
on one line with its outcome, the files changed, and the model's own words from those steps,
shortened. It is the same after a resume, costs nothing, and keeps file paths and decisions, which
is what a long-horizon agent needs back (a model-written summary can replace ``summarize`` later).

The history in the run store stays complete: the summary is stored as one more ``user`` message
named ``compaction`` whose record says from which message on the turns were kept.
"""

from __future__ import annotations

import json
from typing import Any

from core.state import Message

COMPACTION_NAME = "compaction"
HEADER = "[Compacted: steps 1-{last} are summarised here; the recent steps follow verbatim.]"
CHARS_PER_TOKEN = 4  # a stated approximation: English text and code average about 4 characters a token


def estimate_tokens(wire: list[dict[str, Any]]) -> int:
    """Approximate prompt tokens of a chat request: serialised characters / ``CHARS_PER_TOKEN``."""
    return len(json.dumps(wire, ensure_ascii=False)) // CHARS_PER_TOKEN


def is_compaction(message: Message) -> bool:
    """Whether ``message`` is a stored compaction summary."""
    return message.role == "user" and message.name == COMPACTION_NAME


def keep_from(history: list[Message], keep_steps: int, previous: int) -> int | None:
    """Index of the first message kept verbatim: the ``keep_steps``-th last assistant turn.

    Args:
        history: the whole history (opening first).
        keep_steps: recent steps (assistant turns with their observations) to keep.
        previous: the last compaction's keep-from index (2 when there was none).

    Returns:
        The index, or None when compacting would drop nothing (too few turns since ``previous``).
    """
    turns = [i for i, m in enumerate(history) if m.role == "assistant" and i >= previous]
    if len(turns) <= keep_steps:
        return None
    return turns[-keep_steps] if keep_steps > 0 else len(history)


def summarize(history: list[Message], until: int, max_chars: int) -> str:
    """The summary of ``history[2:until]`` (everything after the opening, before the kept turns).

    Args:
        history: the whole history; compaction messages in it are skipped (the summary is
            rebuilt from the original turns each time, so it never summarises a summary).
        until: index of the first kept message.
        max_chars: the summary's size bound; the oldest action lines go first when over.

    Returns:
        Text that starts with ``HEADER`` naming the last summarised step.
    """
    calls: dict[str, tuple[int, str, str]] = {}  # call id -> (step, tool, short arguments)
    actions: list[str] = []
    notes: list[str] = []
    changed: list[str] = []
    step = 0
    for message in history[2:until]:
        if is_compaction(message):
            continue
        if message.role == "assistant":
            step += 1
            if message.content and message.content.strip():
                notes.append(f"- step {step}: {_shorten(message.content, 300)}")
            for call in message.tool_calls:
                calls[call.id] = (step, call.name, _short_arguments(call.arguments))
                path = _argument(call.arguments, "path")
                if call.name in ("edit_file", "write_file", "apply_patch") and path and path not in changed:
                    changed.append(path)
        elif message.role == "tool" and message.tool_call_id in calls:
            at, name, args = calls[message.tool_call_id]
            actions.append(f"- step {at}: {name}({args}) -> {_shorten(message.content or '', 160)}")
        elif message.role == "user":
            actions.append(f"- step {step}: (no tool call) -> {_shorten(message.content or '', 160)}")
    head = [HEADER.format(last=step)]
    if changed:
        head.append("Files changed so far: " + ", ".join(changed))
    tail = ["Your notes from those steps:", *notes] if notes else []
    body = ["Actions and their results (full outputs are in the run store):", *actions]
    text = "\n".join(head + body + tail)
    while len(text) > max_chars and len(body) > 2:
        body.pop(1)  # the oldest action first: the recent ones matter most
        body[0] = "Actions and their results (oldest omitted; full outputs are in the run store):"
        text = "\n".join(head + body + tail)
    while len(text) > max_chars and len(tail) > 1:
        tail.pop(1)
        text = "\n".join(head + body + tail)
    return text[:max_chars]


def compacted_steps(content: str) -> int:
    """The last step a compaction summary covers (0 if ``content`` is no summary)."""
    prefix = HEADER.split("{last}")[0]
    if not content.startswith(prefix):
        return 0
    number = content[len(prefix):].split(" ", 1)[0]
    return int(number) if number.isdigit() else 0


def _shorten(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def _json_object(raw: str) -> dict[str, Any] | None:
    """The tool call's arguments as a dict, or None for anything else (they are the model's text)."""
    try:
        args = json.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: "[[[[..." nested thousands deep
        return None
    return args if isinstance(args, dict) else None


def _short_arguments(raw: str) -> str:
    args = _json_object(raw)
    if args is None:
        return _shorten(raw, 80)
    return ", ".join(f"{k}={_shorten(json.dumps(v, ensure_ascii=False), 60)}" for k, v in args.items())


def _argument(raw: str, key: str) -> str | None:
    value = (_json_object(raw) or {}).get(key)
    return value if isinstance(value, str) else None
