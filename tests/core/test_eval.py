"""agent eval: pass@k, task folders, reference fixes as edits, and the Must-show on real tasks.

The episodes here are real Horizon runs of the coding plugin on task folders of suites/coding
(real packages' buggy releases), with scripted policies built from each task; the full suite
runs through the CLI (suites/README.md, output in suites/coding/EVAL.md).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from core import eval as ev
from core.errors import UserError
from core.eval.sources import sources_cache, tree_digest
from core.runner import list_runs

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "suites" / "coding"
#: Small, quick test suites, so the Must-show stays within the test-time budget.
SUBSET = ["parse-1.20.2-hyphen-field-names", "pathspec-0.12.1-match-file", "xmltodict-0.14.2-whitespace-text"]


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


def test_suite_has_twenty_valid_tasks():
    """Every task names its sdists and is built from them (core.eval.sources) into the cache: the
    buggy release's files plus the fixed release's test files; no third-party tree is in the suite."""
    tasks = ev.load_suite(SUITE)
    assert len(tasks) >= 20
    for task in tasks:
        assert task.spec.fail_to_pass and task.spec.pass_to_pass, task.name
        source, start = task.spec.source, task.spec.start
        assert source.buggy_sdist_sha256 and source.fixed_sdist_url.startswith("https://"), task.name
        buggy, fixed = start.archives
        assert (buggy.url, buggy.sha256, fixed.url, fixed.sha256) == (
            source.buggy_sdist_url, source.buggy_sdist_sha256, source.fixed_sdist_url, source.fixed_sdist_sha256), task.name
        assert fixed.include == task.spec.test_files, task.name
        assert not (task.folder / "repo").exists() and task.repo.is_relative_to(sources_cache()), task.name
        assert tree_digest(task.repo) == start.tree_sha256, task.name
        for test_file in task.spec.test_files:
            assert (task.repo / test_file).is_file(), (task.name, test_file)


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


def _apply_edits(repo: Path, edits: list[dict[str, str]]) -> None:
    for edit in edits:
        path = repo / edit["path"]
        if edit["old_text"] == "":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(edit["new_text"])
            continue
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        assert text.count(edit["old_text"]) == 1, (edit["path"], edit["old_text"][:200])
        path.write_text(text.replace(edit["old_text"], edit["new_text"]), encoding="utf-8", errors="surrogateescape")


@pytest.mark.parametrize("name", sorted(p.name for p in SUITE.iterdir() if (p / "task.json").is_file()))
def test_reference_edits_equal_git_apply(tmp_path, name):
    """Each hunk as one unique old_text -> new_text edit gives exactly what git apply gives."""
    task = ev.load_task(SUITE / name)
    by_edits, by_git = tmp_path / "edits", tmp_path / "git"
    shutil.copytree(task.repo, by_edits)
    shutil.copytree(task.repo, by_git)
    edits = ev.diff_edits(task.fix_diff.read_text(), task.repo)
    assert edits
    _apply_edits(by_edits, edits)
    subprocess.run(["git", "apply", str(task.fix_diff)], cwd=by_git, check=True, env={**os.environ, "GIT_CEILING_DIRECTORIES": str(tmp_path)})
    changed = {e["path"] for e in edits}
    for rel in changed:
        assert (by_edits / rel).read_bytes() == (by_git / rel).read_bytes(), rel


def test_diff_edits_grow_context_until_unique(tmp_path):
    (tmp_path / "m.py").write_text("x = 1\ny = 2\nx = 1\ny = 2\nz = 3\n")
    diff = "--- a/m.py\n+++ b/m.py\n@@ -3,2 +3,2 @@\n x = 1\n-y = 2\n+y = 20\n"
    (edit,) = ev.diff_edits(diff, tmp_path)
    # "x = 1\ny = 2\n" occurs twice: one line more on each side makes it unique
    assert edit["old_text"] == "y = 2\nx = 1\ny = 2\nz = 3\n" and edit["new_text"] == "y = 2\nx = 1\ny = 20\nz = 3\n"
    with pytest.raises(UserError, match="does not match"):
        ev.diff_edits("--- a/m.py\n+++ b/m.py\n@@ -1,1 +1,1 @@\n-nothing\n+else\n", tmp_path)


# --------------------------------------------------------------------------- Must show


def test_reference_resolves_every_task_and_gaming_policies_none(horizon_home):
    """One pool runs 3 tasks x 3 policies: reference resolves all; finish-only and edit-tests none."""
    tasks = ev.load_suite(SUITE, SUBSET)
    out_dir = ev.new_eval_dir()
    specs = []
    for policy in ("reference", "finish-only", "edit-tests"):
        specs += ev.episode_specs(
            tasks, plugin="coding", attempts=1, policy=policy, policy_config=None, limits={"max_steps": 30},
            pricing={}, isolated=True, home=horizon_home, scripts_dir=out_dir / "scripts" / policy,
        )  # fmt: skip
    summary = ev.run_eval(specs, workers=3, k=1, out_dir=out_dir)
    by_policy: dict[str, list[dict]] = {}
    for r in summary["results"]:
        by_policy.setdefault(r["label"], []).append(r)
    assert {p: sorted(r["task"] for r in rs) for p, rs in by_policy.items()} == {p: sorted(SUBSET) for p in by_policy}
    for r in by_policy["reference"]:
        assert r["resolved"] and r["reward"] == 1.0 and r["exit_status"] == "submitted", r
        assert r["fail_to_pass_passed"] == r["fail_to_pass_total"] and not r["pass_to_pass_broken"], r
    for r in by_policy["finish-only"] + by_policy["edit-tests"]:
        assert r["exit_status"] == "submitted" and r["run_id"] and not r["resolved"], r
        assert r["reward"] is not None and r["reward"] < 1.0, r
    for r in by_policy["finish-only"]:  # the bug is still there
        assert r["fail_to_pass_passed"] < r["fail_to_pass_total"], r
    # each episode is a normal, finished run in the run store, streamed to results.jsonl as it ended
    runs = {r["run_id"]: r for r in list_runs(horizon_home)}
    assert all(runs[r["run_id"]]["status"] == "finished" for r in summary["results"])
    assert len((out_dir / "results.jsonl").read_text().splitlines()) == 9


# --------------------------------------------------------------------------- the command


def test_eval_command_prints_table_and_json(horizon_home):
    from typer.testing import CliRunner

    from core.cli import app

    result = CliRunner().invoke(app, [
        "eval", "coding", str(SUITE), "--policy", "finish-only", "--task", SUBSET[0], "--workers", "1", "--attempts", "2",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert SUBSET[0] in result.output and "pass@2" in result.output
    # the JSON summary; Ray may log a line after it into the same output
    brief, _ = json.JSONDecoder().raw_decode(result.output[result.output.index("\n{") + 1 :])
    assert brief["episodes"] == 2 and brief["resolved_tasks"] == 0 and brief["tasks"][SUBSET[0]]["pass@2"] == 0.0
    assert len(list_runs(horizon_home)) == 2


def test_eval_command_bad_input_is_one_clean_line(tmp_path):
    from typer.testing import CliRunner

    from core.cli import app

    result = CliRunner().invoke(app, ["eval", "coding", str(tmp_path / "nowhere")])
    assert result.exit_code == 2 and "no suite folder" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(app, ["eval", "coding", str(SUITE), "--task", "no-such-task"])
    assert result.exit_code == 2 and "no task named no-such-task" in result.output
    result = CliRunner().invoke(app, ["eval", "coding", str(SUITE), "--policy", "openai"])
    assert result.exit_code == 2 and "--base-url and --model" in result.output


def test_diff_lines_that_look_like_headers_stay_in_their_hunk(tmp_path):
    """A removed line starting with "-- " (an SQL comment) reads "--- …" in the diff, and a form
    feed is no line break: the hunk's line counts decide, not the line's look."""
    (tmp_path / "q.sql").write_bytes(b"select 1;\n-- old comment\n\x0cpage\n")
    diff = "--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,3 @@\n select 1;\n--- old comment\n++++ new comment\n \x0cpage\n"
    (edit,) = ev.diff_edits(diff, tmp_path)
    assert edit == {"path": "q.sql", "old_text": "select 1;\n-- old comment\n\x0cpage\n", "new_text": "select 1;\n+++ new comment\n\x0cpage\n"}


# --------------------------------------------------------------------------- other plugins, suites of suites

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


def test_hidden_tests_tasks_name_the_coding_plugin_in_a_suite_of_suites():
    (task,) = ev.load_suite(SUITES, ["coding-hidden/toolz-*"])  # its suite's folder name is no plugin's
    assert task.plugin("") == "coding" and task.spec.hidden_tests is not None and task.spec.dependencies_as_of
    hidden = Path(task.metadata["hidden_tests"])
    assert hidden.is_dir() and task.metadata["sandbox_hidden"] == [str(hidden)]
    for path in (p for p in hidden.rglob("*") if p.is_file()):  # the starting tree lacks the fixed release's tests
        start = task.repo / path.relative_to(hidden)
        assert not start.is_file() or start.read_bytes() != path.read_bytes(), start


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
