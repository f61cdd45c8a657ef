"""What the MCP tests of core and of each plugin share: a session whose runs start as a stored
run, the text of a tool result, and the text the workspace guard refuses a path with."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.errors import ToolError
from core.mcp import McpSession
from core.plugin import Task
from core.runner import Run
from core.state import Limits, Pricing
from core.tools import ToolContext


def mcp_session(task: Task, home: Path, max_steps: int = 10) -> McpSession:
    """An ``McpSession`` whose runs of ``task`` are stored under ``home`` (at most ``max_steps`` steps, no compaction)."""

    def start(policy):
        return Run.start(task, policy, policy_config={"kind": "mcp"}, limits=Limits(max_steps=max_steps, compact_at_tokens=0),
                         pricing=Pricing(), home=home)  # fmt: skip

    return McpSession(start, plugin=task.plugin)


def result_text(result) -> str:
    """The one text part of an MCP tool result (asserted to be the only part)."""
    assert len(result.content) == 1 and result.content[0].type == "text"
    return result.content[0].text


def refusal(path: str, workspace: Path) -> str:
    """The text the workspace guard (``ToolContext.resolve``) refuses ``path`` with: what a model reads."""
    with pytest.raises(ToolError) as caught:
        ToolContext(workspace=workspace, sandbox=None, scratch=workspace).resolve(path)  # type: ignore[arg-type]
    return str(caught.value)
