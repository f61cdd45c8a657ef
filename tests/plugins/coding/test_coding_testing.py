"""Detecting and running the example repositories' tests in the real sandbox (testing.py, run_tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from plugins.coding.testing import TestRun, detect_framework, format_test_run, run_test_suite, test_files
from plugins.coding.tools import run_tests

JAVA_REPO, PYTHON_REPO = "java-user-service", "python-user-service"


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` with its content, to check that nothing was written there."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def baselines(tmp_path_factory, copy_example) -> dict[str, tuple[TestRun, dict[str, bytes], dict[str, bytes], Path]]:
    """One full run per example repository before the fix: (run, workspace before, after, scratch)."""
    runs = {}
    for name in (JAVA_REPO, PYTHON_REPO):
        repo = copy_example(name, tmp_path_factory.mktemp(name))
        before = snapshot(repo.root)
        run = run_test_suite(repo.ctx.sandbox, repo.root, repo.ctx.scratch)
        runs[name] = (run, before, snapshot(repo.root), repo.ctx.scratch)
    return runs


def test_detect_framework_and_test_files(tmp_path, examples_dir):
    EXAMPLES = examples_dir
    assert detect_framework(EXAMPLES / JAVA_REPO) == "junit"
    assert detect_framework(EXAMPLES / PYTHON_REPO) == "pytest"
    assert detect_framework(tmp_path) is None
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    assert detect_framework(tmp_path) == "pytest"

    assert test_files(EXAMPLES / JAVA_REPO) == [
        "src/test/java/com/example/users/EmailValidatorTest.java",
        "src/test/java/com/example/users/InMemoryUserRepositoryTest.java",
        "src/test/java/com/example/users/UserServiceTest.java",
    ]
    assert test_files(EXAMPLES / PYTHON_REPO) == ["tests/test_repository.py", "tests/test_service.py", "tests/test_validation.py"]


@pytest.mark.parametrize("name, framework", [(JAVA_REPO, "junit"), (PYTHON_REPO, "pytest")])
def test_baseline_reports_exactly_the_two_known_failures(baselines, name, framework):
    run, *_ = baselines[name]
    repo_failing = {
        JAVA_REPO: {
            "com.example.users.UserServiceTest#displayNameFallsBackToFullNameWhenNicknameMissing",
            "com.example.users.UserServiceTest#listActiveDisplayNamesIncludesUsersWithoutNickname",
        },
        PYTHON_REPO: {
            "tests/test_service.py::test_display_name_falls_back_to_full_name_when_nickname_missing",
            "tests/test_service.py::test_list_active_display_names_includes_users_without_nickname",
        },
    }[name]
    assert run.framework == framework
    assert not run.build_failed and not run.timed_out
    assert run.exit_code == 1
    assert set(run.not_passed) == repo_failing
    assert {t for t, o in run.outcomes.items() if o != "passed"} == repo_failing
    assert len(run.outcomes) == {JAVA_REPO: 19, PYTHON_REPO: 26}[name]
    assert all(run.outcomes[t] == "failed" for t in repo_failing)
    assert run.duration_s > 0
    for test_id in repo_failing:
        assert ("NullPointerException" if name == JAVA_REPO else "AttributeError") in run.messages[test_id]


def test_baseline_ids_have_the_expected_shapes(baselines):
    java, *_ = baselines[JAVA_REPO]
    python, *_ = baselines[PYTHON_REPO]
    assert java.outcomes["com.example.users.EmailValidatorTest#rejectsNullAndBlank"] == "passed"
    assert python.outcomes["tests/test_validation.py::test_rejects_none_and_blank[None]"] == "passed"
    assert python.outcomes["tests/test_repository.py::test_find_all_is_ordered_by_id"] == "passed"


@pytest.mark.parametrize("name", [JAVA_REPO, PYTHON_REPO])
def test_running_tests_writes_nothing_into_the_workspace(baselines, name):
    run, before, after, scratch = baselines[name]
    assert before == after
    run_dir = Path(run.run_dir)
    assert run_dir.is_relative_to(scratch)
    assert (run_dir / "output.txt").read_text().strip()
    assert list(run_dir.glob("**/*.xml"))


def test_run_tests_tool_output_and_data(repo):
    result = run_tests({}, repo.ctx)
    assert not result.is_error, result.output
    first = result.output.splitlines()[0]
    framework = "junit" if repo.name == JAVA_REPO else "pytest"
    assert first.startswith(f"{framework}: {repo.test_count} tests: {repo.test_count - 2} passed, 2 failed (exit code 1, ")
    for test_id in repo.known_failing:
        assert f"FAILED {test_id}" in result.output
    assert {t for t, o in result.data["tests"].items() if o != "passed"} == repo.known_failing
    assert result.data["exit_code"] == 1 and result.data["build_failed"] is False

    repo.apply_fix()
    fixed = run_tests({}, repo.ctx)
    assert fixed.output.splitlines()[0].startswith(
        f"{framework}: {repo.test_count} tests: {repo.test_count} passed (exit code 0, "
    )
    assert set(fixed.data["tests"]) == set(result.data["tests"])
    assert set(fixed.data["tests"].values()) == {"passed"}
    assert fixed.data["exit_code"] == 0
    assert "FAILED" not in fixed.output


def test_selected_tests_only(repo):
    if repo.name == JAVA_REPO:
        selectors = [
            "com.example.users.UserServiceTest#displayNameFallsBackToFullNameWhenNicknameMissing",
            "com.example.users.EmailValidatorTest",
        ]
        expected = {
            "com.example.users.UserServiceTest#displayNameFallsBackToFullNameWhenNicknameMissing": "failed",
            "com.example.users.EmailValidatorTest#acceptsWellFormedAddresses": "passed",
            "com.example.users.EmailValidatorTest#rejectsMalformedAddresses": "passed",
            "com.example.users.EmailValidatorTest#rejectsNullAndBlank": "passed",
        }
    else:
        selectors = [
            "tests/test_service.py::test_display_name_falls_back_to_full_name_when_nickname_missing",
            "tests/test_repository.py",
        ]
        expected = {"tests/test_service.py::test_display_name_falls_back_to_full_name_when_nickname_missing": "failed"}
        expected.update({f"tests/test_repository.py::{n}": "passed" for n in (
            "test_find_by_id_returns_saved_user", "test_find_by_id_returns_none_for_unknown_id",
            "test_save_replaces_user_with_same_id", "test_find_by_email_ignores_case", "test_find_all_is_ordered_by_id",
        )})  # fmt: skip
    run = run_test_suite(repo.ctx.sandbox, repo.root, repo.ctx.scratch, selectors)
    assert run.outcomes == expected


def test_java_compile_error_is_a_failed_build_not_an_exception(java_repo):
    path = java_repo.root / "src/main/java/com/example/users/UserService.java"
    path.write_text(path.read_text().replace("return nickname;", "return nickname"))
    result = run_tests({}, java_repo.ctx)
    assert not result.is_error
    assert result.data["build_failed"] is True and result.data["tests"] == {}
    assert result.data["exit_code"] != 0
    assert result.output.startswith("junit: BUILD FAILED, no tests ran (javac exit code")
    assert "src/main/java/com/example/users/UserService.java:46: error: ';' expected" in result.output
    assert not list(java_repo.root.rglob("*.class"))


def test_python_import_error_is_reported_as_errors(python_repo):
    path = python_repo.root / "users" / "service.py"
    path.write_text(
        path.read_text().replace("def deactivate(self, user_id: int) -> User:", "def deactivate(self, user_id: int) -> User")
    )
    run = run_test_suite(python_repo.ctx.sandbox, python_repo.root, python_repo.ctx.scratch)
    assert run.build_failed
    assert run.exit_code == 1  # --continue-on-collection-errors: the run goes on, and fails
    assert not any(o == "passed" for o in run.outcomes.values())
    assert run.outcomes["tests/test_service.py"] == "error"
    text = format_test_run(run)
    assert "could not be collected" in text and "ERROR tests/test_service.py" in text
    assert "SyntaxError" in text


def test_bad_selector_and_no_tests(python_repo, tmp_path, copy_example):
    flag = run_tests({"tests": ["--co"]}, python_repo.ctx)
    assert flag.is_error and "looks like an option" in flag.output

    empty = copy_example(PYTHON_REPO, tmp_path / "empty")
    for test_file in (empty.root / "tests").iterdir():
        test_file.unlink()
    (empty.root / "pyproject.toml").unlink()
    none = run_tests({}, empty.ctx)
    assert none.is_error and "no tests found" in none.output
    run = run_test_suite(empty.ctx.sandbox, empty.root, empty.ctx.scratch)
    assert run.framework is None and run.outcomes == {} and run.exit_code == -1
