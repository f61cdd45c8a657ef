"""The ``notes`` task of the export tests' notes run (conftest.py's ``notes_run``): its instruction,
the one edit that makes its reward 1, and the test plugin's folder (tests/notes_plugin), for the
session- and module-scoped fixtures that install it for a moment."""

from pathlib import Path

NOTES_PLUGIN = Path(__file__).resolve().parents[2] / "notes_plugin"
NOTES_TASK = "ANSWER.txt says todo; make it say done"
NOTES_FIX = {"tool": "edit_file", "arguments": {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}}
