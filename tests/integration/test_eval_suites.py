"""agent eval across plugins: suites of suites, each task's plugin, a plugin's reference.jsonl.

Moved unchanged from tests/core/test_eval.py (issue 17): they read the coding, 3D and finance
suites together, so they are integration tests, not core's.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core import eval as ev
from core.errors import UserError

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "coding"
SUITES = ROOT / "suites"


def test_suite_of_suites_names_tasks_by_suite_and_takes_patterns():
    tasks = ev.load_suite(SUITES, ["threed/*", "finance/*", "coding/parse-*"])
    names = [t.name for t in tasks]
    assert {n.split("/")[0] for n in names} == {"coding", "threed", "finance"}
    assert sum(n.startswith("coding/") for n in names) == 2 and sum(n.startswith("threed/") for n in names) == 3
    assert {t.plugin("coding") for t in tasks if t.name.startswith("finance/")} == {"finance"}
    assert {t.plugin("") for t in tasks if t.name.startswith("coding/")} == {"coding"}  # the suite's folder name
    with pytest.raises(UserError, match="no task named threed/nothing-\\*"):
        ev.load_suite(SUITES, ["threed/nothing-*"])


def test_reference_of_a_task_without_fix_diff_is_its_reference_jsonl(tmp_path):
    (task,) = ev.load_suite(SUITES / "threed", ["low-table"])
    turns = ev.SCRIPTED["reference"](task)
    assert turns == [json.loads(line) for line in (task.folder / "reference.jsonl").read_text().splitlines()]
    assert ev.SCRIPTED["finish-only"](task) == [{"tool": "finish", "arguments": {"summary": "finished without changing anything"}}]
    with pytest.raises(UserError, match="edit-tests needs a coding task"):
        ev.SCRIPTED["edit-tests"](task)
    # a plugin's task folder: no fix.diff and no reference.jsonl is refused, a broken script too
    bad = tmp_path / "scene"
    (bad / "repo").mkdir(parents=True)
    (bad / "task.json").write_text(json.dumps({"plugin": "threed", "instruction": "a cube"}))
    with pytest.raises(UserError, match="reference.jsonl"):
        ev.load_task(bad)
    (bad / "reference.jsonl").write_text('{"tool": "finish", "arguments": {}}\n[1, 2]\n')
    with pytest.raises(UserError, match="reference.jsonl:2 is not a JSON object"):
        ev.SCRIPTED["reference"](ev.load_task(bad))


def test_episode_specs_take_each_tasks_plugin(tmp_path):
    tasks = ev.load_suite(SUITES, ["threed/low-table", "finance/financebench-bestbuy", "coding/parse-1.20.2-hyphen-field-names"])
    specs = ev.episode_specs(tasks, plugin="auto", attempts=1, policy="reference", policy_config=None, limits={"max_steps": 5, "max_wall_s": 100},
                             pricing={}, isolated=True, home=tmp_path, scripts_dir=tmp_path / "scripts")  # fmt: skip
    assert {s.task: s.plugin for s in specs} == {t.name: t.name.split("/")[0] for t in tasks}
    assert all(s.hard_timeout_s == 400 for s in specs)
    threed = next(s for s in specs if s.plugin == "threed")
    assert threed.limits["max_steps"] == len((SUITES / "threed" / "low-table" / "reference.jsonl").read_text().splitlines()) + 1
    with pytest.raises(UserError, match="is a threed task, not coding"):
        ev.episode_specs([t for t in tasks if t.name.startswith("threed/")], plugin="coding", attempts=1, policy="reference", policy_config=None, limits={}, pricing={},
                         isolated=True, home=tmp_path, scripts_dir=tmp_path / "s")  # fmt: skip
    with pytest.raises(UserError, match="names no plugin"):
        ev.episode_specs(ev.load_suite(SUITE, ["parse-1.20.2-hyphen-field-names"]), plugin="auto", attempts=1, policy="reference",
                         policy_config=None, limits={}, pricing={}, isolated=True, home=tmp_path, scripts_dir=tmp_path / "s")  # fmt: skip

