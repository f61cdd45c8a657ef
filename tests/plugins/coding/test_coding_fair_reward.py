"""No false zero for a real fix: tests failing at the start for the environment's reasons, a set-up
run that times out, and files the test run writes (issue 32, build item 4).

Each episode is a whole run through the runner with a scripted policy: the repository, tools,
sandbox, grader and reward are the real ones. The repository: ``stats.mean([])`` raises
ZeroDivisionError where the report asks for 0.0, which no test covers; its own tests pass, and
each case adds what made Horizon's reward say 0 or "not applicable" for a real fix before
(``coding-tests/2``): tests that fail at the start because the environment lacks a variable or a
file, a dozen tests of an optional backend that is not installed, a slow unrelated test that
stops the set-up run at its time limit, a test that writes binary artefacts under ``tests/``.
"""

from __future__ import annotations

from contextlib import closing
from pathlib import Path

import pytest

from core.export.source import load_run
from core.runner import RunResult, open_store
from plugins.coding.test_edits import weakened
from tests.plugins.coding.scripted import scripted_episode, sh, write

TASK = "stats.mean([]) raises ZeroDivisionError; it should return 0.0 for an empty list"
FIX = {"tool": "edit_file", "arguments": {"path": "stats.py", "old_text": "    return sum(xs) / len(xs)",
                                          "new_text": "    return sum(xs) / len(xs) if xs else 0.0"}}  # fmt: skip
REPRO = "from stats import mean\n\n\ndef test_mean_of_nothing_is_zero():\n    assert mean([]) == 0.0\n"
STATS_TESTS = ("from stats import mean, total\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
               "def test_total():\n    assert total([1, 2]) == 3\n")  # fmt: skip
#: Two tests that fail for the environment's reasons (a variable, a data file), not the bug's.
ENV_TESTS = ("import os\nfrom pathlib import Path\n\n\ndef test_needs_a_token():\n    assert os.environ['STATS_TOKEN']\n\n\n"
             "def test_needs_the_sample_file():\n    assert Path('data/sample.bin').read_bytes()\n")  # fmt: skip
#: A dozen tests of an optional backend that is not installed (each raises ModuleNotFoundError).
BACKEND_TESTS = ("import pytest\n\n\n@pytest.mark.parametrize('n', range(12))\ndef test_fast_mean(n):\n"
                 "    import fastmean_backend\n    assert fastmean_backend.mean([n]) == n\n")  # fmt: skip
ENV_FAILING = ["tests/test_env.py::test_needs_a_token", "tests/test_env.py::test_needs_the_sample_file"]


def make_repo(root: Path, extra: dict[str, str]) -> Path:
    (root / "tests").mkdir(parents=True)
    (root / "stats.py").write_text("def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef total(xs):\n    return sum(xs)\n")
    (root / "tests" / "test_stats.py").write_text(STATS_TESTS)
    for rel, text in extra.items():
        (root / rel).write_text(text)
    return root


def row_of(result: RunResult, home: Path) -> dict:
    with closing(open_store(result.run_id, home)) as store:
        return store.run()


def graded(repo: Path, home: Path, calls: list[dict], name: str) -> tuple[dict, object]:
    result = scripted_episode(repo, home, TASK, calls, name=name)
    return row_of(result, home), load_run(result.run_id, home)


# --------------------------------------------------------------------------- (a) the environment's failures


@pytest.fixture
def env_repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "env", {"tests/test_env.py": ENV_TESTS})


def test_a_fix_with_a_regression_test_is_credited_although_unrelated_tests_fail_at_the_start(env_repo, tmp_path):
    """coding-tests/2 said 0.000, "test files were edited": the failures at the start switched on
    the rule that no test file may change, so the regression test cost the fix its reward."""
    home = tmp_path / "home"
    row, run = graded(env_repo, home, [write("tests/test_empty.py", REPRO), FIX], "env-new-file")
    assert (row["reward"], row["correct"]) == (1.0, True), row["reward_summary"]
    detail = run.rewards["fail_to_pass"]["detail"]
    assert detail["verified_by"] == "the run's reproduction tests"
    assert detail["targets"] == ["tests/test_empty.py::test_mean_of_nothing_is_zero"]
    assert detail["pre_existing"] == ENV_FAILING
    assert "left out as pre-existing" in row["reward_summary"]
    assert run.rewards["tests_untouched"]["value"] == 1.0
    task_message = next(m for m in run.messages if m.role == "user").content
    assert "tests/test_env.py::test_needs_a_token" in task_message
    assert "add a test that reproduces the reported problem" in task_message and "pre-existing" in task_message


def test_a_regression_test_added_to_an_existing_test_file_is_credited_too(env_repo, tmp_path):
    extended = STATS_TESTS + "\n\ndef test_empty():\n    assert mean([]) == 0.0\n"
    row, run = graded(env_repo, tmp_path / "home", [write("tests/test_stats.py", extended), FIX], "env-extended")
    assert (row["reward"], row["correct"]) == (1.0, True), row["reward_summary"]
    assert run.rewards["fail_to_pass"]["detail"]["targets"] == ["tests/test_stats.py::test_empty"]


def test_the_same_fix_with_a_weakened_assertion_scores_zero_and_names_the_line(env_repo, tmp_path):
    weakened_file = STATS_TESTS.replace("assert mean([1, 2, 3]) == 2", "assert mean([1, 2, 3]) >= 0")
    weakened_file += "\n\ndef test_empty():\n    assert mean([]) == 0.0\n"
    row, run = graded(env_repo, tmp_path / "home", [write("tests/test_stats.py", weakened_file), FIX], "env-weakened")
    assert (row["reward"], row["correct"]) == (0.0, False), row["reward_summary"]
    assert "tests/test_stats.py:5" in row["reward_summary"] and "assert mean([1, 2, 3]) == 2" in row["reward_summary"]
    assert run.rewards["tests_untouched"]["detail"]["weakened"] == {
        "tests/test_stats.py": ["tests/test_stats.py:5: a check of test_mean was removed or changed: `assert mean([1, 2, 3]) == 2`"]}


def test_a_regression_test_without_a_fix_scores_zero(env_repo, tmp_path):
    row, _ = graded(env_repo, tmp_path / "home", [write("tests/test_empty.py", REPRO)], "env-no-fix")
    assert (row["reward"], row["correct"]) == (0.0, False), row["reward_summary"]


FLIP_CONFTEST = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                 "    report = (yield).get_result()\n    if report.failed:\n        report.outcome, report.longrepr = 'passed', None\n")


@pytest.mark.parametrize("extra", [{"tests/test_env.py": ENV_TESTS}, {}], ids=["failing-at-start", "green-at-start"])
def test_a_conftest_the_patch_adds_does_not_run_with_the_reproduction_test(extra, tmp_path):
    """A new tests/conftest.py that turns failures into passes, beside a reproduction test and no
    fix: the reproduction's patched side runs with the original test files but its own, so the
    test still fails there: reward 0."""
    repo = make_repo(tmp_path / "flip", extra)
    row, run = graded(repo, tmp_path / "home", [write("tests/test_empty.py", REPRO), write("tests/conftest.py", FLIP_CONFTEST)], "flip")
    assert (row["reward"], row["correct"]) == (0.0, False), row["reward_summary"]
    assert run.rewards["fail_to_pass"]["detail"]["fixed"] == []


# --------------------------------------------------------------------------- (b) an optional backend


def test_a_missing_optional_backend_failing_a_dozen_tests_does_not_zero_a_real_fix(tmp_path):
    """coding-tests/2 counted only whether the 12 backend tests now pass: any fix of the reported bug scored 0."""
    repo = make_repo(tmp_path / "backend", {"tests/test_backend.py": BACKEND_TESTS})
    row, run = graded(repo, tmp_path / "home", [{"tool": "run_tests", "arguments": {}}, write("tests/test_empty.py", REPRO), FIX,
                                                 {"tool": "run_tests", "arguments": {}}], "backend")  # fmt: skip
    assert (row["reward"], row["correct"]) == (1.0, True), row["reward_summary"]
    detail = run.rewards["fail_to_pass"]["detail"]
    assert len(detail["pre_existing"]) == 12 and all(t.startswith("tests/test_backend.py::") for t in detail["pre_existing"])
    # run_tests names the backend's tests once, as failing at the start, not as new failures
    observations = [m.content for m in run.messages if m.role == "tool" and str(m.content).startswith("pytest:")]
    assert len(observations) == 2, observations
    for text in observations:
        assert "12 of the tests not passing were failing at the start" in text, text
        failed = [line for line in text.splitlines() if line.startswith("FAILED ")]
        assert len(failed) == 12 and all(line.startswith("FAILED tests/test_backend.py::test_fast_mean[") for line in failed), text
        assert all("(failing at the start): ModuleNotFoundError: No module named 'fastmean_backend'" in line for line in failed)


# --------------------------------------------------------------------------- (c) a set-up run that times out


SLOW_TEST = "import time\n\n\ndef test_the_whole_archive():\n    time.sleep(600)\n"


@pytest.fixture
def slow_repo(tmp_path: Path, monkeypatch) -> Path:
    monkeypatch.setenv("HORIZON_TEST_TIMEOUT_S", "25")
    return make_repo(tmp_path / "slow", {"tests/test_archive.py": SLOW_TEST})


def test_when_the_set_up_run_times_out_the_reproduction_test_decides(slow_repo, tmp_path):
    """coding-tests/2: no outcome at the start (and none at the end: the slow test stops every
    whole-suite run), so the fix scored 0, "no test ran at the end"."""
    home = tmp_path / "home"
    row, run = graded(slow_repo, home, [write("tests/test_empty.py", REPRO), FIX], "slow-fix")
    assert (row["reward"], row["correct"]) == (1.0, True), row["reward_summary"]
    assert run.rewards["fail_to_pass"]["detail"]["reproduction_before"] == {"tests/test_empty.py::test_mean_of_nothing_is_zero": "failed"}
    task_message = next(m for m in run.messages if m.role == "user").content
    assert "did not finish" in task_message and "runs your test files alone" in task_message
    # the stopped suites report the tests that ran: those that ran at both ends are compared, and still pass
    assert run.rewards["pass_to_pass"]["value"] == 1.0, run.rewards["pass_to_pass"]
    idle, _ = graded(Path(slow_repo), home, [], "slow-idle")  # both suites stopped, no reproduction: no reward
    assert (idle["reward"], idle["reward_status"]) == (None, "not_applicable"), idle["reward_summary"]
    assert "not verified: the test runs at set-up and at the end were both stopped" in idle["reward_summary"]


# --------------------------------------------------------------------------- (d) what the test run writes


ARTEFACT_TEST = ("import os\nimport time\nfrom pathlib import Path\n\n\ndef test_export():\n"
                 "    out = Path(__file__).parent / 'out'\n    out.mkdir(exist_ok=True)\n"
                 "    for n in range(3):\n        (out / f'report{n}.odt').write_bytes(bytes(range(256)) * 40 + str(time.time_ns()).encode())\n"
                 "    (out / 'notes.txt').write_text('written by the test\\n')\n    assert True\n")  # fmt: skip


def test_files_a_test_run_writes_stay_out_of_the_patch(tmp_path):
    """coding-tests/2's patch.diff held every binary artefact the set-up and run_tests runs wrote."""
    repo = make_repo(tmp_path / "artefacts", {"tests/test_export.py": ARTEFACT_TEST})
    home = tmp_path / "home"
    calls = [{"tool": "run_tests", "arguments": {}}, write("tests/test_empty.py", REPRO), FIX,
             {"tool": "run_tests", "arguments": {}}, sh("echo 'kept by the agent' >> tests/out/notes.txt")]  # fmt: skip
    result = scripted_episode(repo, home, TASK, calls, name="artefacts")
    patch = result.patch_path.read_text()
    assert "b/stats.py" in patch and "b/tests/test_empty.py" in patch
    assert ".odt" not in patch and "GIT binary patch" not in patch, patch[:2000]
    assert "b/tests/out/notes.txt" in patch and "+kept by the agent" in patch  # changed by a tool call afterwards: the agent's
    row = row_of(result, home)
    assert (row["reward"], row["correct"]) == (1.0, True), row["reward_summary"]
    graded = next((home / "runs" / result.run_id).glob("**/runs/*-grading"))
    assert (graded / "patch.diff").read_text() == patch  # the grader judged the same text
    # graded: the copies of the tree are gone (issue 31: 71 MB left per grading of Django), the reports stay
    assert not (graded / "workspace").exists() and not (graded / "reproduce" / "patched").exists()
    assert not (graded / "reproduce" / "start").exists() and any((graded / "scratch").rglob("*.xml")), sorted(graded.rglob("*"))[:40]


# --------------------------------------------------------------------------- the weakened-test check itself


ORIGINAL = STATS_TESTS.replace("def test_total", "@pytest.mark.parametrize('xs, s', [([1], 1), ([1, 2], 3)])\ndef test_total") \
    .replace("def test_total():\n    assert total([1, 2]) == 3", "def test_total(xs, s):\n    assert total(xs) == s")
ORIGINAL = "import pytest\n" + ORIGINAL


@pytest.mark.parametrize("change, new, weak", [
    ("a new test", ORIGINAL + "\n\ndef test_empty():\n    assert mean([]) == 0.0\n", False),
    ("a new check in an existing test", ORIGINAL.replace("== 2\n", "== 2\n    assert mean([]) == 0.0\n"), False),
    ("a new parametrize case", ORIGINAL.replace("([1, 2], 3)]", "([1, 2], 3), ([], 0)]"), False),
    ("reformatted", ORIGINAL.replace("assert mean([1, 2, 3]) == 2", "assert (\n        mean([1, 2, 3]) == 2  # same\n    )"), False),
    ("a changed check", ORIGINAL.replace("== 2\n", "== 2.0 or True\n"), True),
    ("a removed parametrize case", ORIGINAL.replace(", ([1, 2], 3)]", "]"), True),
    ("an added skip", ORIGINAL.replace("def test_mean", "@pytest.mark.skip\ndef test_mean"), True),
    ("an added xfail call", ORIGINAL.replace("def test_mean():\n", "def test_mean():\n    pytest.xfail('later')\n"), True),
    ("a check under if False", ORIGINAL.replace("    assert mean([1, 2, 3]) == 2", "    if False:\n        assert mean([1, 2, 3]) == 2"), True),
    ("an early return", ORIGINAL.replace("def test_mean():\n", "def test_mean():\n    return\n"), True),
    ("a deleted test", ORIGINAL.replace("def test_mean", "def helper_mean"), True),
    ("a rebound test", ORIGINAL + "\ntest_mean = lambda: None\n", True),
    ("a module-level skip", ORIGINAL + "\npytest.skip('slow', allow_module_level=True)\n", True),
])  # fmt: skip
def test_only_edits_that_weaken_an_existing_test_are_faults(change, new, weak):
    found = weakened("tests/test_stats.py", ORIGINAL.encode(), new.encode())
    assert bool(found) is weak, (change, found)
    assert all(line.startswith("tests/test_stats.py:") for line in found)


def test_a_deleted_test_file_weakens_its_tests():
    assert weakened("tests/test_stats.py", ORIGINAL.encode(), None) == ["tests/test_stats.py: the test file was deleted"]
