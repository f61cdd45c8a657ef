"""A bug report without a failing test: the run is verified only by its own reproduction test.

Each case is a whole episode through the runner with a scripted policy (the tool calls replayed
in order); the repository, tools, sandbox, grader and reward are the real ones. The repository is
green at the start: ``mean([])`` raises ZeroDivisionError, which no test covers, and the report
asks for 0.0.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from core.export.gates import apply_gates
from core.export.source import load_run
from core.runner import RunResult, open_store
from tests.plugins.coding.scripted import scripted_episode, write

TASK = "stats.mean([]) raises ZeroDivisionError; it should return 0.0 for an empty list"
FIX = {"tool": "edit_file", "arguments": {"path": "stats.py", "old_text": "    return sum(xs) / len(xs)",
                                          "new_text": "    return sum(xs) / len(xs) if xs else 0.0"}}  # fmt: skip
REPRO = "from stats import mean\n\n\ndef test_mean_of_nothing_is_zero():\n    assert mean([]) == 0.0\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef total(xs):\n    return sum(xs)\n")
    (root / "tests" / "test_stats.py").write_text(
        "from stats import mean, total\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
        "def test_total():\n    assert total([1, 2]) == 3\n"
    )
    return root


def episode(repo: Path, home: Path, calls: list[dict]) -> RunResult:
    """Run one scripted episode on ``repo`` (``calls``, then ``finish``); return its result."""
    return scripted_episode(repo, home, TASK, calls, name="repro")


def verdict(result: RunResult, home: Path) -> dict:
    with closing(open_store(result.run_id, home)) as store:
        return store.run()


def test_the_task_message_asks_for_a_reproduction_and_a_no_op_is_not_rewarded(repo, tmp_path):
    result = episode(repo, tmp_path / "home", [])
    row = verdict(result, tmp_path / "home")
    assert (row["reward"], row["reward_status"]) == (None, "not_applicable")
    assert "not verified" in row["reward_summary"] and "adds no test" in row["reward_summary"]
    task_message = next(m for m in load_run(result.run_id, tmp_path / "home").messages if m.role == "user").content
    assert "Add a test that reproduces the problem" in task_message


def test_a_fix_with_a_test_that_fails_before_and_passes_after_is_verified(repo, tmp_path):
    home = tmp_path / "home"
    result = episode(repo, home, [write("tests/test_empty.py", REPRO), FIX])
    row = verdict(result, home)
    assert (row["reward"], row["correct"]) == (1.0, True), row["reward_summary"]
    assert "reproduction tests fail on the starting code and pass" in row["reward_summary"]
    run = load_run(result.run_id, home)
    detail = run.rewards["fail_to_pass"]["detail"]
    assert detail["verified_by"] == "the run's reproduction tests"
    assert detail["targets"] == ["tests/test_empty.py::test_mean_of_nothing_is_zero"]
    assert detail["reproduction_before"] == {"tests/test_empty.py::test_mean_of_nothing_is_zero": "failed"}
    assert run.rewards["tests_untouched"]["value"] == 1.0
    # the export's gates accept the reproduction test as evidence, not as an edit of the checker
    report = apply_gates([run])
    assert not [f for f in report.flags[run.run_id] if f.reason == "reward_hacking"], report.flags[run.run_id]


def test_a_test_added_to_an_existing_test_file_counts_too(repo, tmp_path):
    existing = (repo / "tests" / "test_stats.py").read_text()
    added = existing + "\n\ndef test_empty():\n    assert mean([]) == 0.0\n"
    row = verdict(episode(repo, tmp_path / "home", [write("tests/test_stats.py", added), FIX]), tmp_path / "home")
    assert (row["reward"], row["correct"]) == (1.0, True), row["reward_summary"]


def test_a_test_that_passes_on_the_starting_code_reproduces_nothing(repo, tmp_path):
    passing = "from stats import mean\n\n\ndef test_mean_of_one():\n    assert mean([4]) == 4\n"
    row = verdict(episode(repo, tmp_path / "home", [write("tests/test_one.py", passing), FIX]), tmp_path / "home")
    assert (row["reward"], row["reward_status"]) == (None, "not_applicable")
    assert "do not reproduce the problem" in row["reward_summary"]


def test_a_reproduction_without_a_fix_scores_zero(repo, tmp_path):
    row = verdict(episode(repo, tmp_path / "home", [write("tests/test_empty.py", REPRO)]), tmp_path / "home")
    assert (row["reward"], row["correct"]) == (0.0, False)


def test_a_reproduced_fix_that_breaks_an_original_test_scores_zero(repo, tmp_path):
    breaking = {"tool": "edit_file", "arguments": {"path": "stats.py", "old_text": "    return sum(xs)\n",
                                                   "new_text": "    return sum(xs) + 1\n"}}  # fmt: skip
    row = verdict(episode(repo, tmp_path / "home", [write("tests/test_empty.py", REPRO), FIX, breaking]), tmp_path / "home")
    assert row["reward"] == 0.0 and "tests/test_stats.py::test_total" in row["reward_summary"]


def test_a_reproduction_that_reaches_into_pytest_reporting_is_not_run(repo, tmp_path):
    """A test file with a reporting hook could report its own outcome (fail on the start, pass after)."""
    hooked = REPRO + "\n\ndef pytest_runtest_makereport(item, call):\n    pass\n"
    row = verdict(episode(repo, tmp_path / "home", [write("tests/test_empty.py", hooked), FIX]), tmp_path / "home")
    assert (row["reward"], row["reward_status"]) == (None, "not_applicable")
    assert "reach(es) into pytest's reporting" in row["reward_summary"]


def test_a_reproduction_that_edits_the_original_tests_is_judged_by_the_originals(repo, tmp_path):
    """Weakening an original test cannot hide a regression: the originals decide pass-to-pass."""
    weakened = "from stats import mean\n\n\ndef test_mean():\n    assert True\n\n\ndef test_empty():\n    assert mean([]) == 0.0\n"
    wrong = {"tool": "edit_file", "arguments": {"path": "stats.py", "old_text": "    return sum(xs) / len(xs)",
                                                "new_text": "    return 0.0"}}  # fmt: skip
    row = verdict(episode(repo, tmp_path / "home", [write("tests/test_stats.py", weakened), wrong]), tmp_path / "home")
    assert row["reward"] == 0.0 and "tests/test_stats.py::test_mean" in row["reward_summary"]


# --------------------------------------------------------------------------- hidden tests (a suite's)


def hidden_episode(repo: Path, home: Path, hidden: Path, calls: list[dict]) -> RunResult:
    """An episode of a suite task whose fail-to-pass test the agent never sees."""
    metadata = {"hidden_tests": str(hidden), "fail_to_pass": ["tests/test_hidden.py::test_empty"],
                "pass_to_pass": ["tests/test_stats.py::test_mean", "tests/test_stats.py::test_total"]}  # fmt: skip
    return scripted_episode(repo, home, TASK, calls, name="hidden", metadata=metadata)


@pytest.fixture
def hidden(tmp_path: Path) -> Path:
    folder = tmp_path / "hidden"
    (folder / "tests").mkdir(parents=True)
    (folder / "tests" / "test_hidden.py").write_text("from stats import mean\n\n\ndef test_empty():\n    assert mean([]) == 0.0\n")
    return folder


def test_hidden_tests_grade_the_run_and_the_runs_own_tests_are_no_fault(repo, tmp_path, hidden):
    home = tmp_path / "home"
    fixed = hidden_episode(repo, home, hidden, [write("tests/test_empty.py", REPRO), FIX])
    row = verdict(fixed, home)
    assert (row["reward"], row["correct"]) == (1.0, True), row["reward_summary"]
    run = load_run(fixed.run_id, home)
    assert run.rewards["fail_to_pass"]["detail"]["reproduction_files"] == ["tests/test_empty.py"]
    assert run.rewards["tests_untouched"]["detail"]["reset_before_grading"]["hidden"] == ["tests/test_hidden.py"]
    task_message = next(m for m in run.messages if m.role == "user").content
    assert "graded by the task's own tests, which you do not see" in task_message
    # doing nothing is scored 0 against the hidden tests (not "not verified")
    nothing = verdict(hidden_episode(repo, home, hidden, []), home)
    assert (nothing["reward"], nothing["reward_status"]) == (0.0, "scored")
