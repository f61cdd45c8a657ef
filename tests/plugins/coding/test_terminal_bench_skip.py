"""``agent eval --policy reference`` over a suite where one Terminal-Bench task has no solution
script: that task is skipped with a line saying which and why, the rest run, the table and the
summary count it as skipped, and the evaluation does not fail."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from core import eval as ev
from core.errors import NoReference

SUITE = Path(__file__).resolve().parents[3] / "suites" / "terminal-bench"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")


def two_task_suite(root: Path) -> Path:
    """fix-calc as published, and a copy of it without ``solution/`` (``no-solution``)."""
    suite = root / "suite"
    shutil.copytree(SUITE / "fix-calc", suite / "fix-calc")
    shutil.copytree(SUITE / "fix-calc", suite / "no-solution")
    shutil.rmtree(suite / "no-solution" / "solution")
    return suite


def test_episode_specs_skips_a_task_without_solution_and_says_why(horizon_home, tmp_path):
    tasks = ev.load_suite(two_task_suite(tmp_path))
    told: list[tuple[str, str]] = []
    specs = ev.episode_specs(tasks, plugin="coding", attempts=2, policy="reference", policy_config=None, limits={}, pricing={},
                             isolated=True, home=horizon_home, scripts_dir=tmp_path / "scripts", on_skip=lambda *a: told.append(a))  # fmt: skip
    assert [(s.task, s.attempt) for s in specs] == [("fix-calc", 0), ("fix-calc", 1)]
    assert [name for name, _ in told] == ["no-solution"] and "no solution script" in told[0][1]
    with pytest.raises(NoReference, match="no-solution has no solution script"):  # without on_skip: the caller decides
        ev.episode_specs(tasks, plugin="coding", attempts=1, policy="reference", policy_config=None, limits={}, pricing={},
                         isolated=True, home=horizon_home, scripts_dir=tmp_path / "scripts2")  # fmt: skip
    # finish-only needs no solution: both tasks run
    both = ev.episode_specs(tasks, plugin="coding", attempts=1, policy="finish-only", policy_config=None, limits={}, pricing={},
                            isolated=True, home=horizon_home, scripts_dir=tmp_path / "scripts3")  # fmt: skip
    assert sorted(s.task for s in both) == ["fix-calc", "no-solution"]


@needs_bwrap
def test_eval_command_skips_it_runs_the_rest_and_counts_it(horizon_home, tmp_path):
    from typer.testing import CliRunner

    from core.cli import app

    result = CliRunner().invoke(app, ["eval", "coding", str(two_task_suite(tmp_path)), "--policy", "reference", "--workers", "1",
                                      "--backend", "processes"])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert re.search(r"skipped no-solution: task no-solution has no solution script", result.output), result.output
    assert "1 tasks of" in result.output and "(1 skipped)" in result.output
    assert re.search(r"no-solutio\S*\s*│\s*0\s*│\s*skipped\s*│", result.output), result.output  # its row (the name may fold)
    assert "1/1 tasks, 1 skipped" in result.output
    brief = json.loads(Path(re.search(r"summary \(JSON\): (\S+)", result.output).group(1)).read_text())
    assert (brief["episodes"], brief["resolved_tasks"], brief["tasks_total"]) == (1, 1, 1), brief
    assert list(brief["skipped"]) == ["no-solution"] and "no solution script" in brief["skipped"]["no-solution"]
    assert [r["task"] for r in brief["results"]] == ["fix-calc"] and brief["results"][0]["resolved"]
