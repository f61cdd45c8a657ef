"""Reading task folders: what any task with a reference fix must state, whatever its plugin.

Issue 17: the test of a folder in another benchmark's layout (Terminal-Bench, read by the coding
plugin's format) moved unchanged to tests/plugins/coding/test_coding_task_files.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import UserError
from core.eval import load_task


def _task(folder: Path, spec: dict, *, fix: bool = False, reference: bool = False) -> Path:
    (folder / "repo").mkdir(parents=True)
    (folder / "task.json").write_text(json.dumps(spec))
    if fix:
        (folder / "fix.diff").write_text("--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n")
    if reference:
        (folder / "reference.jsonl").write_text('{"tool": "finish", "arguments": {"summary": "done"}}\n')
    return folder


def test_a_task_with_a_reference_fix_names_its_failing_tests_and_its_source_whatever_its_plugin(tmp_path):
    with pytest.raises(UserError, match=r"fail_to_pass: a task with a fix.diff needs at least one test that fails before the fix"):
        load_task(_task(tmp_path / "a", {"instruction": "fix it", "plugin": "notes"}, fix=True))
    with pytest.raises(UserError, match=r"source: a task with a fix.diff names the package and releases"):
        load_task(_task(tmp_path / "b", {"instruction": "fix it", "fail_to_pass": ["test_x.py::test_a"]}, fix=True))
    graded_by_its_reward = load_task(_task(tmp_path / "c", {"instruction": "build a chair", "plugin": "notes"}, reference=True))
    assert graded_by_its_reward.spec.fail_to_pass == [] and graded_by_its_reward.task_format == ""