"""agent eval on the coding suite: its task folders, reference fixes as edits, and the Must-show on
real tasks.

The episodes here are real Horizon runs of the coding plugin on task folders of suites/coding
(real packages' buggy releases), with scripted policies built from each task; the full suite
runs through the CLI (suites/README.md, output in suites/coding/EVAL.md).

Moved unchanged from tests/core/test_eval.py (issue 17): their subject is the coding suite and the
coding plugin's grading; core's eval machinery is tested on ``notes`` there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from core import eval as ev
from core.eval.sources import sources_cache, tree_digest
from core.runner import list_runs

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "suites" / "coding"
SUITES = ROOT / "suites"
#: Small, quick test suites, so the Must-show stays within the test-time budget.
SUBSET = ["parse-1.20.2-hyphen-field-names", "pathspec-0.12.1-match-file", "xmltodict-0.14.2-whitespace-text"]


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


def test_hidden_tests_tasks_name_the_coding_plugin_in_a_suite_of_suites():
    (task,) = ev.load_suite(SUITES, ["coding-hidden/toolz-*"])  # its suite's folder name is no plugin's
    assert task.plugin("") == "coding" and task.spec.hidden_tests is not None and task.spec.dependencies_as_of
    hidden = Path(task.metadata["hidden_tests"])
    assert hidden.is_dir() and task.metadata["sandbox_hidden"] == [str(hidden)]
    for path in (p for p in hidden.rglob("*") if p.is_file()):  # the starting tree lacks the fixed release's tests
        start = task.repo / path.relative_to(hidden)
        assert not start.is_file() or start.read_bytes() != path.read_bytes(), start
