"""Quality gates on real runs: infrastructure failures, reward hacking, duplicates."""

import shutil
from pathlib import Path

from core.export import apply_gates, load_run
from core.export.gates import REASONS
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run, runs_dir
from core.state import Limits, Pricing

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_two_infrastructure_failures_and_one_test_edit_of_ten_are_flagged_exactly(episodes):
    r = episodes.results
    assert (r["infra_setup"].status, r["infra_mid"].status) == ("crashed", "crashed")
    assert r["py_fix"].reward == 1.0 and r["java_fix"].reward == 1.0 and r["py_test_edit"].reward == 0.0
    runs = [load_run(episodes.ids[n], episodes.home) for n in episodes.ten]
    report = apply_gates(runs, runs_dir(episodes.home))
    flagged = {name: report.flags[episodes.ids[name]] for name in episodes.ten if report.flags[episodes.ids[name]]}
    assert set(flagged) == {"infra_setup", "infra_mid", "py_test_edit"}
    assert {f.reason for f in flagged["infra_setup"]} == {"infrastructure_failure"}
    detail = flagged["infra_setup"][0].detail  # scratch is a file now: the set-up's first sandbox command cannot start
    assert "/scratch" in detail and ("Not a directory" in detail or "cannot make a folder for this command's files" in detail), detail
    assert "crashed" in flagged["infra_setup"][0].detail
    assert {f.reason for f in flagged["infra_mid"]} == {"infrastructure_failure"}
    hacking = flagged["py_test_edit"]
    assert {f.reason for f in hacking} == {"reward_hacking"}
    assert any("tests/test_service.py" in f.detail for f in hacking)
    counts = report.counts()
    assert counts == {"infrastructure_failure": 2, "reward_hacking": 1, "reward_not_applicable": 0, "instruction_unseen": 0, "near_duplicate": 0,
                      "nondeterministic_environment": 0, "state_leak": 0}
    assert list(counts) == list(REASONS)
    table = report.table()
    assert "checked" in table and "passed" in table and len(report.passed()) == 7
    assert [line.split() for line in table.splitlines()][:3] == [["checked", "10"], ["passed", "7"], ["infrastructure_failure", "2"]]


def test_a_repeated_trajectory_is_flagged_once_and_the_first_kept(episodes):
    runs = [load_run(episodes.ids[n], episodes.home) for n in ("py_view", "py_view_again", "py_view_mid")]
    report = apply_gates(runs)
    assert report.flags[episodes.ids["py_view"]] == [] and report.flags[episodes.ids["py_view_mid"]] == []
    (flag,) = report.flags[episodes.ids["py_view_again"]]
    assert flag.reason == "near_duplicate" and episodes.ids["py_view"] in flag.detail


def test_a_test_run_before_any_edit_agrees_with_the_set_up_run(episodes):
    # py_fix runs the suite at step 3 after two read-only calls: the gate compared it and found agreement
    run = load_run(episodes.ids["py_fix"], episodes.home)
    assert run.tool_calls[2]["tool"] == "run_tests" and run.tool_calls[2]["data"]["tests"]
    assert {"search_code", "view_file"} <= run.read_only_tools
    assert apply_gates([run]).flags[run.run_id] == []


def _start(repo, script, home, instruction="fix NPE in user module", metadata=None):
    run = Run.start(
        Task(plugin="coding", instruction=instruction, repo=repo, metadata=metadata or {}), ScriptedPolicy(script),
        policy_config={"kind": "scripted", "script": "inline"}, limits=Limits(max_steps=5), pricing=Pricing(), home=home,
    )
    try:
        return run.execute()
    finally:
        run.close()


def test_an_episode_started_from_another_runs_files_is_a_state_leak(episodes):
    # a real mistake: pointing a new episode at an earlier run's workspace, which holds that run's fix
    leaked_repo = runs_dir(episodes.home) / episodes.ids["py_edit"] / "workspace"
    result = _start(leaked_repo, [{"tool": "view_file", "arguments": {"path": "users/service.py"}}, {"tool": "finish", "arguments": {"summary": "done"}}],
                    episodes.home)
    runs = [load_run(episodes.ids[n], episodes.home) for n in ("py_fix", "py_edit", "py_view")] + [load_run(result.run_id, episodes.home)]
    report = apply_gates(runs, runs_dir(episodes.home))
    flags = [f for f in report.flags[result.run_id] if f.reason != "reward_not_applicable"]  # its tests all pass at the start
    assert {f.reason for f in flags} == {"state_leak"} and len(flags) == 2
    assert any("inside the run store" in f.detail for f in flags)
    assert any("users/service.py" in f.detail and "not a fresh attempt" in f.detail for f in flags)
    assert report.passed() == [episodes.ids[n] for n in ("py_fix", "py_edit", "py_view")]


def test_an_mcp_session_without_its_request_is_kept_out_of_training_data(tmp_path):
    """``agent mcp`` without ``--task`` stores a stand-in instruction (the request is in the MCP
    client's conversation); such a run, finished and judged, still fails the gates."""
    from core.cli import MCP_TASK

    repo = Path(shutil.copytree(EXAMPLES / "python-user-service", tmp_path / "repo"))
    script = [{"tool": "view_file", "arguments": {"path": "users/service.py"}}, {"tool": "finish", "arguments": {"summary": "done"}}]
    home = tmp_path / "home"
    unseen = _start(repo, script, home, MCP_TASK, {"instruction_unseen": True})
    told = _start(repo, script, home)
    report = apply_gates([load_run(unseen.run_id, home), load_run(told.run_id, home)])
    assert [f.reason for f in report.flags[unseen.run_id]] == ["instruction_unseen"]
    assert "an MCP session without --task" in report.flags[unseen.run_id][0].detail
    assert report.flags[told.run_id] == []


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
    (flag,) = apply_gates([run]).flags[run.run_id]
    assert flag.reason == "nondeterministic_environment"
    assert "test_passes_only_on_a_fresh_checkout: passed then failed" in flag.detail


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
    assert result.reward_version == "terminal-bench/1" and result.run_id, result
    record = load_run(result.run_id, horizon_home)
    assert "tests/test_mine.py" in record.patched_files
    assert not [f for f in apply_gates([record]).flags[result.run_id] if f.reason == "reward_hacking"]
