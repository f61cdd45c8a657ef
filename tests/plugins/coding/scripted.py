"""One coding episode driven by a scripted policy: the real loop, tools, sandbox and grader."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run, RunResult
from core.state import Limits, Pricing

FINISH = {"tool": "finish", "arguments": {"summary": "done"}}


def sh(command: str) -> dict:
    """A model's ``shell`` call."""
    return {"tool": "shell", "arguments": {"command": command, "timeout_s": 60}}


def write(path: str, text: str) -> dict:
    """A ``shell`` call that writes ``text`` to ``path`` (folders made as needed): ``edit_file`` cannot create."""
    return sh(f'mkdir -p "$(dirname {shlex.quote(path)})" && printf %s {shlex.quote(text)} > {shlex.quote(path)}')


def scripted_episode(
    repo: Path, home: Path, instruction: str, calls: list[dict], *, name: str = "scripted", metadata: dict[str, Any] | None = None
) -> RunResult:
    """Run ``calls`` (tool-call dicts), then ``finish``, as a coding episode on ``repo`` with the
    task's ``metadata``; return its result."""
    run = Run.start(Task(plugin="coding", instruction=instruction, repo=repo, metadata=metadata or {}), ScriptedPolicy([*calls, FINISH], name=name),
                    policy_config={"kind": "scripted", "script": name}, limits=Limits(max_steps=len(calls) + 2),
                    pricing=Pricing(), home=home)  # fmt: skip
    try:
        return run.execute()
    finally:
        run.close()
