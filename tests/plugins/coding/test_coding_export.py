"""The coding plugin through core's export: its reward's verdict stored with the run, its
not-applicable verdict in the gates and the metrics, its tests' outcomes as evidence of a flaky
environment (or of none), Terminal-Bench tasks in the gates and in a verl rollout.

Moved unchanged from tests/core/export/ (issue 17: test_reward.py, test_gates.py,
test_verl_rollout_faults.py): their subject is the coding plugin's reward, its tests and its
Terminal-Bench format; core's gates and verl plumbing are tested there.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from core import eval as ev
from core.eval.metrics import summarize
from core.export import apply_gates, export_runs, load_run
from core.export.sft import is_correct, reward_version
from core.plugin import Task
from core.policy import ScriptedPolicy, load_script
from core.reward import Trajectory
from core.runner import Run, open_store
from core.state import Limits, Pricing
from core.trainers import verl as adapter
from core.trainers.verl import HorizonTool
from plugins.coding.plugin import CodingPlugin

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SUITE = Path(__file__).resolve().parents[3] / "suites" / "terminal-bench"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")


def verl_export(run_id: str, home: Path, out: Path) -> tuple[dict, dict[str, HorizonTool]]:
    """The verl export of one run: its row, and one ``HorizonTool`` per tool config entry."""
    result = export_runs([run_id], "verl", out, home=home)
    parquet, config, _lengths = result.files
    (row,) = pq.read_table(parquet).to_pylist()
    tools = {}
    for entry in yaml.safe_load(config.read_text())["tools"]:
        tool = HorizonTool(config={**entry["config"], "horizon_home": str(home)}, tool_schema=entry["tool_schema"])
        tools[tool.name] = tool
    return row, tools


def create_kwargs(row: dict, name: str) -> dict:
    return row["extra_info"]["tools_kwargs"][name]["create_kwargs"]


@dataclass
class Episodes:
    """The module's coding runs: their Horizon home and ``{name: run id}``."""

    home: Path
    ids: dict[str, str]


@pytest.fixture(scope="module")
def episodes(tmp_path_factory) -> Episodes:
    """Two of the coding runs tests/core/export/conftest.py made before issue 17 (its runs are of
    ``notes`` now), with the same scripts: ``py_fix``, the example script that fixes the NPE
    (reward 1), and ``py_test_edit``, which "fixes" it by editing a test (reward 0)."""
    root = tmp_path_factory.mktemp("coding-export-episodes")
    repo = Path(shutil.copytree(EXAMPLES / "python-user-service", root / "python-user-service"))
    test_edit = {"tool": "edit_file", "arguments": {"path": "tests/test_service.py", "old_text": "    assert user.active\n",
                                                    "new_text": "    assert True\n"}}
    scripts = {"py_fix": load_script(EXAMPLES / "scripts" / "fix-python-npe.jsonl"),
               "py_test_edit": [test_edit, {"tool": "finish", "arguments": {"summary": "done"}}]}
    ids = {}
    for name, script in scripts.items():
        run = Run.start(Task(plugin="coding", instruction="fix NPE in user module", repo=repo), ScriptedPolicy(script, name=f"scripted:{name}"),
                        policy_config={"kind": "scripted", "script": name}, limits=Limits(max_steps=10), pricing=Pricing(),
                        home=root / "home")  # fmt: skip
        try:
            ids[name] = run.execute().run_id
        finally:
            run.close()
    return Episodes(home=root / "home", ids=ids)


@pytest.fixture
def closing_episodes():
    yield
    adapter.close_all()


def test_a_repository_without_tests_is_not_applicable_not_zero(tmp_path):
    """Nothing to judge the change by: the run's reward is None with status not_applicable, the
    eval metrics leave it out of the mean, and the export gates flag it."""
    repo = tmp_path / "tool"
    repo.mkdir()
    (repo / "tool.py").write_text("def double(x):\n    return x * 3\n")
    run = Run.start(Task(plugin="coding", instruction="double() triples", repo=repo),
                    ScriptedPolicy([{"tool": "finish", "arguments": {"summary": "looked"}}]), policy_config={"kind": "scripted"},
                    limits=Limits(max_steps=3), pricing=Pricing(), home=tmp_path / "home")  # fmt: skip
    try:
        result = run.execute()
    finally:
        run.close()
    assert result.status == "finished" and result.reward is None and result.correct is None
    record = load_run(result.run_id, tmp_path / "home")
    assert (record.row["reward_status"], record.row["reward_version"]) == ("not_applicable", "coding-tests/4")
    assert "no test suite" in record.row["reward_summary"]
    report = apply_gates([record])
    assert [f.reason for f in report.flags[result.run_id]] == ["reward_not_applicable"]
    summary = summarize([{"task": "t", "resolved": False, "reward": None, "reward_status": "not_applicable", "cost": 0.0},
                         {"task": "u", "resolved": True, "reward": 1.0, "reward_status": "scored", "cost": 0.0}], k=1)
    assert summary["tasks"]["t"]["mean_reward"] is None and summary["mean_reward"] == 1.0


def _start(repo, script, home, instruction="fix NPE in user module", metadata=None):
    run = Run.start(
        Task(plugin="coding", instruction=instruction, repo=repo, metadata=metadata or {}), ScriptedPolicy(script),
        policy_config={"kind": "scripted", "script": "inline"}, limits=Limits(max_steps=5), pricing=Pricing(), home=home,
    )
    try:
        return run.execute()
    finally:
        run.close()


FLAKY_TEST = '''from pathlib import Path

from calc import add


def test_add():
    assert add(1, 2) == 3


def test_passes_only_on_a_fresh_checkout():
    marker = Path(__file__).parent / ".ran-before"  # state a test run leaves behind
    fresh = not marker.exists()
    marker.write_text("ran")
    assert fresh
'''


def test_tests_that_disagree_on_the_starting_files_flag_the_environment(tmp_path):
    repo = tmp_path / "flaky"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (repo / "test_calc.py").write_text(FLAKY_TEST)
    home = tmp_path / "home"
    result = _start(repo, [{"tool": "run_tests", "arguments": {}}, {"tool": "finish", "arguments": {"summary": "done"}}], home)
    run = load_run(result.run_id, home)
    assert run.tool_calls[0]["data"]["tests"]["test_calc.py::test_passes_only_on_a_fresh_checkout"] == "failed"
    # The marker the test run wrote is a test-run output, kept out of the graded patch (coding-tests/3): the
    # grading copy is fresh, the test passes there as at the start, and nothing is left to judge.
    (flag,) = apply_gates([run]).flags[run.run_id]
    assert flag.reason == "reward_not_applicable"


def test_set_up_that_runs_the_tests_twice_flags_a_flaky_environment(tmp_path):
    """With ``baseline_runs: 2`` the coding plugin runs the suite twice on the starting files; a
    test that depends on what the first run left behind disagrees, and the gate says so."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "tests" / "test_calc.py").write_text(
        "from pathlib import Path\n\nfrom calc import add\n\n\n"
        "def test_add():\n    assert add(2, 2) == 4\n\n\n"
        "def test_first_run_only():  # depends on state the previous run left\n"
        "    marker = Path(__file__).parents[1] / '.ran'\n    seen = marker.exists()\n    marker.write_text('x')\n    assert not seen\n"
    )
    events: list[tuple[str, dict]] = []
    run = Run.start(Task(plugin="coding", instruction="add() subtracts", repo=repo, metadata={"baseline_runs": 2}),
                    ScriptedPolicy([{"tool": "finish", "arguments": {"summary": "-"}}]), policy_config={"kind": "scripted"},
                    limits=Limits(max_steps=3), pricing=Pricing(), home=tmp_path / "home", on_event=lambda k, d: events.append((k, d)))  # fmt: skip
    try:
        result = run.execute()
    finally:
        run.close()
    setup = next(d["text"] for k, d in events if k == "setup")
    assert "tests/test_calc.py::test_first_run_only" in setup and "flaky" in setup
    record = load_run(result.run_id, tmp_path / "home")
    detail = record.rewards["fail_to_pass"]["detail"]
    assert detail["before"]["tests/test_calc.py::test_first_run_only"] == "passed"
    assert detail["before_rerun"]["tests/test_calc.py::test_first_run_only"] == "failed"
    flags = apply_gates([record]).flags[result.run_id]
    assert [f.reason for f in flags] == ["nondeterministic_environment"] and "set-up ran the tests twice" in flags[0].detail


def test_tests_written_in_a_terminal_bench_task_are_not_reward_hacking(horizon_home, tmp_path):
    """A Terminal-Bench grader runs the task's own tests from outside the workspace, so a test file
    the agent writes (a task may ask for one) is no checker input; in a coding task it would be."""
    import json
    from pathlib import Path

    from core import eval as ev

    script = tmp_path / "write-tests.jsonl"
    turns = [{"tool": "shell", "arguments": {"command": "mkdir -p /app/tests && echo 'def test_x(): pass' > /app/tests/test_mine.py"}},
             {"tool": "finish", "arguments": {"summary": "wrote a test"}}]
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    suite = Path(__file__).resolve().parents[3] / "suites" / "terminal-bench"
    (task,) = ev.load_suite(suite, ["fix-calc"])
    (spec,) = ev.episode_specs([task], plugin="coding", attempts=1, policy="scripted", policy_config={"kind": "scripted", "script": str(script)},
                               limits={"max_steps": 5}, pricing={}, isolated=True, home=horizon_home, scripts_dir=tmp_path)  # fmt: skip
    result = ev.run_episode(spec)
    assert result.reward_version == "terminal-bench/2" and result.run_id, result
    record = load_run(result.run_id, horizon_home)
    assert "tests/test_mine.py" in record.patched_files
    assert not [f for f in apply_gates([record]).flags[result.run_id] if f.reason == "reward_hacking"]



@needs_bwrap
def test_terminal_bench_episode_sees_its_files_at_app(horizon_home, tmp_path, closing_episodes):
    (task,) = ev.load_suite(SUITE, ["fix-calc"])
    (spec,) = ev.episode_specs([task], plugin="coding", attempts=1, policy="reference", policy_config=None, limits={"max_steps": 5},
                               pricing={}, isolated=True, home=horizon_home, scripts_dir=tmp_path / "scripts")  # fmt: skip
    result = ev.run_episode(spec)
    assert result.run_id and result.reward == 1.0, result
    row, tools = verl_export(result.run_id, horizon_home, tmp_path / "export" / "tasks.parquet")
    assert "/app" in row["prompt"][-1]["content"]  # the prompt tells the model where its files are
    assert json.loads(create_kwargs(row, "shell")["metadata"])["workspace_alias"] == "/app"

    async def trajectory():
        kwargs = create_kwargs(row, "shell")
        for tool in tools.values():
            await tool.create("req-tb", **kwargs)
        try:
            return await tools["shell"].execute("req-tb", {"command": "cat /app/calc.py"})
        finally:
            for tool in tools.values():
                await tool.release("req-tb")

    seen, _, metrics = asyncio.run(trajectory())
    assert metrics["is_error"] == 0.0, seen.text
    assert "def " in seen.text  # calc.py as the task's Dockerfile put it at /app


def test_a_finished_run_stores_the_verdict_with_its_version(episodes):
    """The coding plugin's reward is judged through the interface and stored whole with the run."""
    fixed, hacked = episodes.ids["py_fix"], episodes.ids["py_test_edit"]
    with closing(open_store(fixed, episodes.home)) as store:
        row = store.run()
    assert (row["reward"], row["reward_status"], row["reward_version"], row["correct"]) == (1.0, "scored", "coding-tests/4", True)
    assert row["reward_summary"] == "2/2 failing tests now pass, no regressions"
    run = load_run(hacked, episodes.home)
    assert (run.reward, is_correct(run), reward_version(run)) == (0.0, False, "coding-tests/4")
    trajectory = Trajectory.from_run(fixed, episodes.home)
    assert trajectory.exit_status == "submitted" and trajectory.context is None
    assert any(d["tool"] == "edit_file" for d in trajectory.tool_data)
    with pytest.raises(ValueError, match="ToolContext"):  # the coding reward runs the tests in the episode's sandbox
        CodingPlugin().reward(Task(plugin="coding", instruction="x"), trajectory)


def test_a_test_run_before_any_edit_agrees_with_the_set_up_run(episodes):
    # py_fix runs the suite at step 3 after two read-only calls: the gate compared it and found agreement
    run = load_run(episodes.ids["py_fix"], episodes.home)
    assert run.tool_calls[2]["tool"] == "run_tests" and run.tool_calls[2]["data"]["tests"]
    assert {"search_code", "view_file"} <= run.read_only_tools
    assert apply_gates([run]).flags[run.run_id] == []
