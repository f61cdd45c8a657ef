"""agent eval: pass@k, task folders, reference fixes as edits, the runner and the command.

The episodes here are real Horizon runs of ``notes``, the test plugin (tests/notes_plugin), on the
task folders of tests/notes_plugin/suite, with the scripted policies eval builds from each task.

Issue 17: core's eval tests run on ``notes``; the tests whose subject is the coding suite (its
twenty tasks, reference fixes as edits, the Must-show on real packages) moved unchanged to
tests/plugins/coding/test_coding_eval.py, and those that read the coding, 3D and finance suites
together to tests/integration/test_eval_suites.py.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from core import eval as ev
from core.errors import UserError
from core.runner import list_runs

SUITE = Path(__file__).resolve().parents[1] / "notes_plugin" / "suite"
#: The notes suite's two tasks: the reference resolves each, finish-only neither.
SUBSET = ["log-and-answer", "write-done"]


# --------------------------------------------------------------------------- pass@k


def test_pass_at_k_matches_the_binomial_formula():
    for n, c, k in [(10, 3, 1), (10, 3, 5), (20, 1, 10), (5, 0, 2), (5, 5, 1), (200, 17, 100)]:
        exact = 1.0 - math.comb(n - c, k) / math.comb(n, k)
        assert ev.pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)
    assert ev.pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert ev.pass_at_k(4, 3, 2) == 1.0  # fewer failures than draws: some draw succeeds


@pytest.mark.parametrize("n, c, k", [(0, 0, 1), (3, 4, 1), (3, 1, 4), (3, 1, 0)])
def test_pass_at_k_rejects_inconsistent_counts(n, c, k):
    with pytest.raises(ValueError, match="pass@k needs"):
        ev.pass_at_k(n, c, k)


def test_summary_averages_over_tasks():
    rows = [
        {"task": "a", "resolved": True, "reward": 1.0, "cost": 0.5},
        {"task": "a", "resolved": False, "reward": None, "cost": 0.25},
        {"task": "b", "resolved": False, "reward": 0.5, "cost": 0.0},
        {"task": "b", "resolved": False, "reward": 0.0, "cost": 0.0},
    ]
    s = ev.summarize(rows, k=2)
    assert s["tasks"]["a"]["pass@1"] == 0.5 and s["tasks"]["a"]["pass@2"] == 1.0
    assert s["pass@1"] == 0.25 and s["pass@2"] == 0.5
    assert s["mean_reward"] == pytest.approx((0.5 + 0.25) / 2)
    assert s["cost"] == 0.75 and s["resolved_tasks"] == 1 and s["episodes"] == 4


# --------------------------------------------------------------------------- task folders


def test_bad_task_folders_get_clear_errors(tmp_path):
    with pytest.raises(UserError, match="neither task.json nor task.toml"):
        ev.load_task(tmp_path)
    (tmp_path / "task.json").write_text("{not json")
    with pytest.raises(UserError, match="task.json is not a valid task file"):
        ev.load_task(tmp_path)
    (tmp_path / "task.json").write_text(json.dumps({"instruction": "x", "source": {"package": "p"}, "fail_to_pass": []}))
    with pytest.raises(UserError, match=r"source.buggy_version: Field required"):
        ev.load_task(tmp_path)
    source = {"package": "p", "buggy_version": "1.0", "fixed_version": "1.1"}
    (tmp_path / "task.json").write_text(json.dumps({"instruction": "x", "source": source, "fail_to_pass": []}))
    (tmp_path / "repo").mkdir()
    (tmp_path / "fix.diff").write_text("")
    with pytest.raises(UserError, match="fail_to_pass: a task with a fix.diff needs at least one test"):
        ev.load_task(tmp_path)
    with pytest.raises(UserError, match="no task named nope"):
        ev.load_suite(SUITE, ["nope"])
    with pytest.raises(UserError, match="no suite folder"):
        ev.load_suite(tmp_path / "missing")


def test_task_toml_is_read_too(tmp_path):
    task = tmp_path / "t"
    (task / "repo").mkdir(parents=True)
    (task / "fix.diff").write_text("")
    (task / "task.toml").write_text(
        'instruction = "fix it"\nfail_to_pass = ["tests/test_a.py::test_x"]\n[source]\npackage = "p"\n'
        'buggy_version = "1.0"\nfixed_version = "1.1"\n'
    )
    assert ev.load_task(task).spec.source.fixed_version == "1.1"


def test_diff_edits_grow_context_until_unique(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\ny = 2\nx = 1\ny = 2\nz = 3\n")
    diff = "--- a/m.py\n+++ b/m.py\n@@ -3,2 +3,2 @@\n x = 1\n-y = 2\n+y = 20\n"
    (edit,) = ev.diff_edits(diff, tmp_path)
    # "x = 1\ny = 2\n" occurs twice: one line more on each side makes it unique
    assert edit["old_text"] == "y = 2\nx = 1\ny = 2\nz = 3\n" and edit["new_text"] == "y = 2\nx = 1\ny = 20\nz = 3\n"
    with pytest.raises(UserError, match="does not match"):
        ev.diff_edits("--- a/m.py\n+++ b/m.py\n@@ -1,1 +1,1 @@\n-nothing\n+else\n", tmp_path)


# --------------------------------------------------------------------------- the runner


def test_reference_resolves_every_task_and_finish_only_none(notes_plugin, horizon_home):
    """One pool runs 2 tasks x 2 policies: the reference resolves both; finish-only neither."""
    tasks = ev.load_suite(SUITE, SUBSET)
    out_dir = ev.new_eval_dir()
    specs = []
    for policy in ("reference", "finish-only"):
        specs += ev.episode_specs(
            tasks, plugin="notes", attempts=1, policy=policy, policy_config=None, limits={"max_steps": 10},
            pricing={}, isolated=True, home=horizon_home, scripts_dir=out_dir / "scripts" / policy,
        )  # fmt: skip
    summary = ev.run_eval(specs, workers=2, k=1, out_dir=out_dir, backend="processes")
    by_policy: dict[str, list[dict]] = {}
    for r in summary["results"]:
        by_policy.setdefault(r["label"], []).append(r)
    assert {p: sorted(r["task"] for r in rs) for p, rs in by_policy.items()} == {"reference": SUBSET, "finish-only": SUBSET}
    for r in by_policy["reference"]:
        assert r["resolved"] and r["reward"] == 1.0 and r["exit_status"] == "submitted", r
    for r in by_policy["finish-only"]:
        assert r["exit_status"] == "submitted" and r["run_id"] and not r["resolved"] and r["reward"] == 0.0, r
    assert summary["pass@1"] == 0.5 and summary["resolved_tasks"] == 2
    # each episode is a normal, finished run in the run store, streamed to results.jsonl as it ended
    runs = {r["run_id"]: r for r in list_runs(horizon_home)}
    assert all(runs[r["run_id"]]["status"] == "finished" for r in summary["results"])
    assert len((out_dir / "results.jsonl").read_text().splitlines()) == 4


# --------------------------------------------------------------------------- the command


def test_eval_command_prints_table_and_json(notes_plugin, horizon_home):
    from typer.testing import CliRunner

    from core.cli import app

    result = CliRunner().invoke(app, [
        "eval", "notes", str(SUITE), "--policy", "finish-only", "--task", SUBSET[0], "--workers", "1", "--attempts", "2",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "pass@2" in result.output and SUBSET[0][:8] in result.output  # the table (a narrow terminal folds the name)
    # the JSON summary is a file the output names (no JSON dump after the table)
    assert "\n{" not in result.output
    brief = json.loads(Path(re.search(r"summary \(JSON\): (\S+)", result.output).group(1)).read_text())
    assert brief["episodes"] == 2 and brief["resolved_tasks"] == 0 and brief["tasks"][SUBSET[0]]["pass@2"] == 0.0
    assert len(list_runs(horizon_home)) == 2


def test_eval_command_bad_input_is_one_clean_line(notes_plugin, tmp_path):
    from typer.testing import CliRunner

    from core.cli import app

    result = CliRunner().invoke(app, ["eval", "notes", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "no suite folder" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["eval", "notes", str(SUITE), "--task", "no-such-task"])
    assert result.exit_code == 2 and "no task named no-such-task" in result.output
    result = CliRunner().invoke(app, ["eval", "notes", str(SUITE), "--policy", "openai"])
    assert result.exit_code == 2 and "--base-url and --model" in result.output


def test_diff_lines_that_look_like_headers_stay_in_their_hunk(tmp_path):
    """A removed line starting with "-- " (an SQL comment) reads "--- …" in the diff, and a form
    feed is no line break: the hunk's line counts decide, not the line's look."""
    (tmp_path / "q.sql").write_bytes(b"select 1;\n-- old comment\n\x0cpage\n")
    diff = "--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,3 @@\n select 1;\n--- old comment\n++++ new comment\n \x0cpage\n"
    (edit,) = ev.diff_edits(diff, tmp_path)
    assert edit == {"path": "q.sql", "old_text": "select 1;\n-- old comment\n\x0cpage\n", "new_text": "select 1;\n+++ new comment\n\x0cpage\n"}
