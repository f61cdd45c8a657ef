"""Folders in another benchmark's layout read by the plugin that registers it
(``core.eval.formats``): Terminal-Bench, registered by the coding plugin.

Moved unchanged from tests/core/eval/test_task_files.py (issue 17): Terminal-Bench task loading
lives in the coding plugin.
"""

from __future__ import annotations

from pathlib import Path

from core.eval import load_task
from core.eval.formats import format_of, task_formats
from core.eval.policies import reference_turns

SUITES = Path(__file__).resolve().parents[3] / "suites"


def test_a_terminal_bench_folder_is_read_by_the_coding_plugins_format():
    assert [f.name for f in task_formats()] == ["terminal-bench"]
    folder = next(d for d in sorted((SUITES / "terminal-bench").iterdir()) if d.is_dir())
    assert format_of(folder) is not None and format_of(SUITES / "coding") is None
    task = load_task(folder)
    assert task.task_format == "terminal-bench" and task.plugin("") == "coding"
    turns = reference_turns(task)  # the format's own reference: its solution script, then finish
    assert [t["tool"] for t in turns] == ["shell", "finish"]

