"""Quality gates on real runs: infrastructure failures, reward hacking, duplicates.

The runs are of ``notes``, the test plugin (conftest.py): issue 17 moved these tests off the coding
plugin with the same assertions (the reward hacking is an edit of CHECK.txt, what the notes reward
checks against, where it was an edit of a test). The tests whose evidence is the coding plugin's
tests (a test run before any edit, a flaky environment, tests written in a Terminal-Bench task)
moved unchanged to tests/plugins/coding/test_coding_export.py."""

from core.export import apply_gates, load_run
from core.export.gates import REASONS
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run, runs_dir
from core.state import Limits, Pricing
from tests.core.export.notes_task import NOTES_TASK


def test_two_infrastructure_failures_and_one_checker_edit_of_ten_are_flagged_exactly(episodes):
    r = episodes.results
    assert (r["infra_setup"].status, r["infra_mid"].status) == ("model_error", "crashed")
    assert r["fix"].reward == 1.0 and r["other_fix"].reward == 1.0 and r["check_edit"].reward == 1.0  # the hack paid
    runs = [load_run(episodes.ids[n], episodes.home) for n in episodes.ten]
    report = apply_gates(runs, runs_dir(episodes.home))
    flagged = {name: report.flags[episodes.ids[name]] for name in episodes.ten if report.flags[episodes.ids[name]]}
    assert set(flagged) == {"infra_setup", "infra_mid", "check_edit"}
    assert {f.reason for f in flagged["infra_setup"]} == {"infrastructure_failure"}
    assert "cannot reach the model server" in flagged["infra_setup"][0].detail and "model_error" in flagged["infra_setup"][0].detail
    assert {f.reason for f in flagged["infra_mid"]} == {"infrastructure_failure"}
    detail = flagged["infra_mid"][0].detail  # scratch is a file now: the next sandbox command cannot start
    assert "/scratch" in detail and ("Not a directory" in detail or "cannot make a folder for this command's files" in detail), detail
    assert "crashed" in flagged["infra_mid"][0].detail
    hacking = flagged["check_edit"]
    assert {f.reason for f in hacking} == {"reward_hacking"}
    assert any("CHECK.txt" in f.detail for f in hacking)
    counts = report.counts()
    assert counts == {"infrastructure_failure": 2, "reward_hacking": 1, "suspicious_code": 0, "changed_expectation": 0,
                      "reward_not_applicable": 0, "instruction_unseen": 0, "near_duplicate": 0, "nondeterministic_environment": 0,
                      "state_leak": 0}
    assert list(counts) == list(REASONS)
    table = report.table()
    assert "checked" in table and "passed" in table and len(report.passed()) == 7
    assert [line.split() for line in table.splitlines()][:3] == [["checked", "10"], ["passed", "7"], ["infrastructure_failure", "2"]]


def test_a_repeated_trajectory_is_flagged_once_and_the_first_kept(episodes):
    runs = [load_run(episodes.ids[n], episodes.home) for n in ("view", "view_again", "view_log")]
    report = apply_gates(runs)
    assert report.flags[episodes.ids["view"]] == [] and report.flags[episodes.ids["view_log"]] == []
    (flag,) = report.flags[episodes.ids["view_again"]]
    assert flag.reason == "near_duplicate" and episodes.ids["view"] in flag.detail


def _start(repo, script, home, instruction=NOTES_TASK, metadata=None):
    run = Run.start(
        Task(plugin="notes", instruction=instruction, repo=repo, metadata=metadata or {}), ScriptedPolicy(script),
        policy_config={"kind": "scripted", "script": "inline"}, limits=Limits(max_steps=5), pricing=Pricing(), home=home,
    )
    try:
        return run.execute()
    finally:
        run.close()


def test_an_episode_started_from_another_runs_files_is_a_state_leak(episodes):
    # a real mistake: pointing a new episode at an earlier run's workspace, which holds that run's fix
    leaked_repo = runs_dir(episodes.home) / episodes.ids["edit"] / "workspace"
    result = _start(leaked_repo, [{"tool": "view_file", "arguments": {"path": "ANSWER.txt"}}, {"tool": "finish", "arguments": {"summary": "done"}}],
                    episodes.home)
    runs = [load_run(episodes.ids[n], episodes.home) for n in ("fix", "edit", "view")] + [load_run(result.run_id, episodes.home)]
    report = apply_gates(runs, runs_dir(episodes.home))
    flags = [f for f in report.flags[result.run_id] if f.reason != "reward_not_applicable"]
    assert {f.reason for f in flags} == {"state_leak"} and len(flags) == 2
    assert any("inside the run store" in f.detail for f in flags)
    assert any("ANSWER.txt" in f.detail and "not a fresh attempt" in f.detail for f in flags)
    assert report.passed() == [episodes.ids[n] for n in ("fix", "edit", "view")]


def test_an_mcp_session_without_its_request_is_kept_out_of_training_data(notes_plugin, notes_folder, tmp_path):
    """``agent mcp`` without ``--task`` stores a stand-in instruction (the request is in the MCP
    client's conversation); such a run, finished and judged, still fails the gates."""
    from core.cli import MCP_TASK

    script = [{"tool": "view_file", "arguments": {"path": "log.md"}}, {"tool": "finish", "arguments": {"summary": "done"}}]
    home = tmp_path / "home"
    unseen = _start(notes_folder, script, home, MCP_TASK, {"instruction_unseen": True})
    told = _start(notes_folder, script, home)
    report = apply_gates([load_run(unseen.run_id, home), load_run(told.run_id, home)])
    assert [f.reason for f in report.flags[unseen.run_id]] == ["instruction_unseen"]
    assert "an MCP session without --task" in report.flags[unseen.run_id][0].detail
    assert report.flags[told.run_id] == []

def test_a_stored_suspicious_changes_component_is_a_suspicious_code_flag_naming_its_lines(episodes):
    """The gate reads the verdict's ``suspicious_changes`` component by name, whichever plugin
    recorded it (here a real notes run's record with one added): every finding named, in one line;
    no finding, no flag."""
    from dataclasses import replace

    run = load_run(episodes.ids["fix"], episodes.home)
    assert apply_gates([run]).flags[run.run_id] == []
    findings = [f"users/__init__.py:{n}: equality: _Name.__eq__ always returns True (equal to anything)" for n in range(18, 25)]
    flagged = replace(run, rewards={**run.rewards, "suspicious_changes": {"value": 0.0, "weight": 0.0, "detail": {"findings": findings}}})
    (flag,) = apply_gates([flagged]).flags[run.run_id]
    assert flag.reason == "suspicious_code" and "\n" not in flag.detail
    assert all(f in flag.detail for f in findings[:5]) and "and 2 more" in flag.detail and "7 suspicious construct(s)" in flag.detail
    clean = replace(run, rewards={**run.rewards, "suspicious_changes": {"value": 1.0, "weight": 0.0, "detail": {"findings": []}}})
    assert apply_gates([clean]).flags[run.run_id] == []
