"""The 3D and finance plugins refuse a task that cannot work before a run is created (their
``validate`` hooks; core's side, on the notes plugin, is in ``tests/core/test_plugin.py``)."""

import json

import pytest

from core.errors import UserError
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run
from core.state import Limits, Pricing

FINISH = [{"tool": "finish", "arguments": {"summary": "done"}}]


def start(tmp_path, plugin: str, folder):
    return Run.start(Task(plugin=plugin, instruction="x", repo=folder), ScriptedPolicy(FINISH), policy_config={"kind": "scripted"},
                     limits=Limits(), pricing=Pricing(), home=tmp_path / "home")


def test_a_3d_task_file_that_does_not_parse_is_refused_naming_the_users_file(tmp_path):
    folder = tmp_path / "scene"
    folder.mkdir()
    (folder / "task.json").write_text(json.dumps({"objects": [{"name": "Table", "face_budget": 100}]}))
    with pytest.raises(UserError, match=f"{folder / 'task.json'}.*face_budget"):
        start(tmp_path, "threed", folder)
    assert not (tmp_path / "home" / "runs").exists() or not any((tmp_path / "home" / "runs").iterdir())


def test_a_finance_task_naming_missing_filings_is_refused(tmp_path):
    folder = tmp_path / "filings-task"
    folder.mkdir()
    (folder / "task.json").write_text(json.dumps({"filings": ["nowhere/10K.pdf"]}))
    with pytest.raises(UserError, match="nowhere/10K.pdf.*do not exist|do not exist.*nowhere/10K.pdf"):
        start(tmp_path, "finance", folder)
    (folder / "task.json").write_text("{not json")
    with pytest.raises(UserError, match="not valid JSON"):
        start(tmp_path, "finance", folder)
    assert not (tmp_path / "home" / "runs").exists() or not any((tmp_path / "home" / "runs").iterdir())
