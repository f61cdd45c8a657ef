"""A policy that replays a file of tool calls, for tests and demos.

Script format: JSON Lines, one assistant turn per line, any of::

    {"tool": "view_file", "arguments": {"path": "a.py"}}       one tool call
    {"tool_calls": [{"tool": ..., "arguments": ...}, ...]}      several calls in one turn
    {"tool": "edit_file", "raw_arguments": "{not json"}         arguments sent verbatim (malformed)
    {"content": "I think..."}                                   a text reply with no tool call

Any line may add ``"content"`` (the assistant's text) and ``"usage"`` (token counts to report,
``{"prompt_tokens": ..., "completion_tokens": ...}``). Blank lines and lines starting with ``#``
are skipped.

The turn replayed is the number of assistant messages already in the history, so a resumed
episode continues where it stopped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from core.compaction import compacted_steps
from core.errors import ConfigError, ModelUnavailable
from core.policy.base import PolicyResponse
from core.state import Message, ToolCall, Usage


def load_script(path: Path) -> list[dict[str, Any]]:
    """Read a script file.

    Raises:
        ConfigError: the file is missing or empty, or a line is not a JSON object (the line
            number is given).
    """
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise ConfigError(f"cannot read script {path}: {exc.strerror}") from None
    turns = []
    for n, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        try:
            turn = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}:{n} is not JSON ({exc.msg}); each line is one turn, a tool call") from None
        if not isinstance(turn, dict):
            raise ConfigError(f"{path}:{n} is not a JSON object like {{\"tool\": ..., \"arguments\": {{...}}}}")
        turns.append(turn)
    if not turns:
        raise ConfigError(f"{path} has no turns; write one JSON object a line, e.g. {{\"tool\": \"finish\", \"arguments\": {{\"summary\": \"done\"}}}}")
    return turns


class ScriptedPolicy:
    """Replays scripted assistant turns in order.

    Args:
        turns: parsed script lines (see the module docstring), or use ``from_file``.
        name: shown in run listings.
    """

    def __init__(self, turns: list[dict[str, Any]], name: str = "scripted") -> None:
        self.turns = turns
        self.name = name

    @classmethod
    def from_file(cls, path: Path) -> ScriptedPolicy:
        """Load a script from a JSON Lines file (see ``load_script``)."""
        return cls(load_script(path), name=f"scripted:{path.name}")

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """Return the next scripted turn.

        Raises:
            ModelUnavailable: the script has no more turns.
        """
        # the turn number: assistant turns sent, plus those a compaction summary stands in for
        index = sum(1 for m in messages if m["role"] == "assistant")
        if len(messages) > 2 and messages[2]["role"] == "user":  # a summary follows the opening (core.compaction)
            index += compacted_steps(messages[2].get("content") or "")
        if index >= len(self.turns):
            raise ModelUnavailable(f"the script has no turn {index + 1} (it has {len(self.turns)})")
        turn = self.turns[index]
        specs = turn.get("tool_calls") or ([turn] if "tool" in turn else [])
        calls = [
            ToolCall(
                id=f"call_{index}_{i}",
                name=spec["tool"],
                arguments=spec["raw_arguments"] if "raw_arguments" in spec else json.dumps(spec.get("arguments", {})),
            )
            for i, spec in enumerate(specs)
        ]
        return PolicyResponse(
            message=Message(role="assistant", content=turn.get("content"), tool_calls=calls),
            usage=Usage(**turn.get("usage", {})),
            model=self.name,
            finish_reason="tool_calls" if calls else "stop",
        )
