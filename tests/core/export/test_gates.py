"""Quality gates on real runs: infrastructure failures, reward hacking, duplicates.

Issue 17: the MCP session's test runs on ``notes``, the test plugin; the gates' tests whose
evidence is the coding plugin's tests (a flaky environment, tests written in a Terminal-Bench
task) moved unchanged to tests/plugins/coding/test_coding_export.py. The rest still read the
coding runs of conftest.py's ``episodes``."""

from core.export import apply_gates, load_run
from core.export.gates import REASONS
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run, runs_dir
from core.state import Limits, Pricing


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


def _start(repo, script, home, instruction="fix NPE in user module", metadata=None, plugin="coding"):
    run = Run.start(
        Task(plugin=plugin, instruction=instruction, repo=repo, metadata=metadata or {}), ScriptedPolicy(script),
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


def test_an_mcp_session_without_its_request_is_kept_out_of_training_data(notes_plugin, notes_folder, tmp_path):
    """``agent mcp`` without ``--task`` stores a stand-in instruction (the request is in the MCP
    client's conversation); such a run, finished and judged, still fails the gates."""
    from core.cli import MCP_TASK

    script = [{"tool": "view_file", "arguments": {"path": "log.md"}}, {"tool": "finish", "arguments": {"summary": "done"}}]
    home = tmp_path / "home"
    unseen = _start(notes_folder, script, home, MCP_TASK, {"instruction_unseen": True}, plugin="notes")
    told = _start(notes_folder, script, home, "make ANSWER.txt say done", plugin="notes")
    report = apply_gates([load_run(unseen.run_id, home), load_run(told.run_id, home)])
    assert [f.reason for f in report.flags[unseen.run_id]] == ["instruction_unseen"]
    assert "an MCP session without --task" in report.flags[unseen.run_id][0].detail
    assert report.flags[told.run_id] == []