"""What the web-surface attacks share: the UI's address, a notes run whose patch writes the
answer, and the form token a page shows."""

from __future__ import annotations

import re
from pathlib import Path

UI = "http://127.0.0.1:8765"
FIX = [{"tool": "edit_file", "arguments": {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}},
       {"tool": "finish", "arguments": {"summary": "the answer is written"}}]  # fmt: skip


def finished_run(home: Path, repo: Path) -> str:
    """A finished ``notes`` run whose patch writes ``done`` into ``repo``'s ANSWER.txt; its id."""
    from core.plugin import Task
    from core.policy import ScriptedPolicy
    from core.runner import Run
    from core.state import Limits, Pricing

    run = Run.start(Task(plugin="notes", instruction="write done in ANSWER.txt", repo=repo), ScriptedPolicy(FIX, name="fix"),
                    policy_config={"kind": "scripted", "script": "fix"}, limits=Limits(max_steps=10), pricing=Pricing(), home=home)  # fmt: skip
    try:
        return run.execute().run_id
    finally:
        run.close()


def ui_token(page: str) -> str | None:
    """The form token an ``agent ui`` page embeds (None: the page has none)."""
    found = re.search(r'name="csrf" value="([^"]*)"', page)
    return found.group(1) if found and found.group(1) else None
