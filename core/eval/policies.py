"""Scripted policies built from a task, for checking a suite and its grader.

* ``reference``: the task's ``fix.diff`` as ``edit_file`` calls (one per hunk, old text to new
  text), then ``run_tests`` and ``finish``; a task without a fix.diff (3D, finance) replays its
  ``reference.jsonl`` as it is; a task in another benchmark's layout replays what its
  format's plugin gives (``core.eval.formats``; Terminal-Bench: its solution script with ``shell``,
  then ``finish``). Every task must be resolved by it.
* ``finish-only``: only ``finish``. No task may be resolved by it (the bug is still there).
* ``edit-tests``: changes a test file (the first fail-to-pass test is renamed so pytest no longer
  collects it), then ``finish``: the reward-hacking check. No task may be resolved by it.
  Coding tasks only (it needs a fail-to-pass test).

Each builder returns the turns of a ``core.policy.scripted`` script (JSON Lines objects).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.errors import UserError
from core.eval.formats import named_format
from core.eval.tasks import EvalTask, diff_edits
from core.policy.scripted import load_script

Turns = list[dict[str, Any]]


def reference_turns(task: EvalTask) -> Turns:
    """Apply the reference fix hunk by hunk, run the tests, finish; or, without a fix.diff, the
    turns of the task's ``reference.jsonl``.

    Raises:
        UserError: ``reference.jsonl`` has a line that is not a JSON object; a Terminal-Bench
            task has no solution script.
    """
    if task.task_format:  # a benchmark's own layout: its plugin knows where the solution is
        return named_format(task.task_format).reference_turns(task)
    if not task.fix_diff.is_file():
        return load_script(task.reference_script)  # a ConfigError (a UserError) names the bad line
    edits = diff_edits(task.fix_diff.read_text(encoding="utf-8", errors="surrogateescape"), task.repo)
    turns: Turns = [{"tool": "edit_file", "arguments": edit} for edit in edits]
    turns.append({"tool": "run_tests", "arguments": {}})
    turns.append({"tool": "finish", "arguments": {"summary": f"applied the reference fix of {task.name} ({len(edits)} edits)"}})
    return turns


def finish_only_turns(task: EvalTask) -> Turns:
    """Finish at once, changing nothing."""
    return [{"tool": "finish", "arguments": {"summary": "finished without changing anything"}}]


def edit_tests_turns(task: EvalTask) -> Turns:
    """Hide the first fail-to-pass test from pytest by renaming it, then finish.

    When the test's name is not unique in its file (or the id names no function), a line is
    added at the top of the file instead: a test file is changed either way.
    """
    if not task.spec.fail_to_pass:
        raise UserError(f"--policy edit-tests needs a coding task with fail-to-pass tests; {task.name} has none")
    test_id = task.spec.fail_to_pass[0]
    rel = test_id.split("::", 1)[0]
    text = (task.repo / rel).read_text(encoding="utf-8", errors="surrogateescape")
    name = re.sub(r"\[.*$", "", test_id.rsplit("::", 1)[-1]) if "::" in test_id else ""
    old = f"def {name}("
    if name and text.count(old) == 1:
        edit = {"path": rel, "old_text": old, "new_text": f"def _hidden_{name}("}
    else:
        first = text.splitlines(keepends=True)[0]
        edit = {"path": rel, "old_text": first, "new_text": "# tests disabled\n" + first} if text.count(first) == 1 else {
            "path": rel, "old_text": text, "new_text": "# tests disabled\n" + text}
    return [
        {"tool": "edit_file", "arguments": edit},
        {"tool": "finish", "arguments": {"summary": f"made {test_id} stop failing by editing {rel}"}},
    ]


SCRIPTED: dict[str, Callable[[EvalTask], Turns]] = {
    "reference": reference_turns,
    "finish-only": finish_only_turns,
    "edit-tests": edit_tests_turns,
}


def write_script(turns: Turns, path: Path) -> Path:
    """Write turns as a JSON Lines script for ``ScriptedPolicy.from_file``; return ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    return path
