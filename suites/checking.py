"""Running a task's tests before and after its reference fix, in Horizon's sandbox.

Shared by ``build_task.py`` (which records the fail-to-pass and pass-to-pass tests) and
``validate.py`` (which checks them). Tests run exactly as an episode runs them: the repository is
copied to a fresh workspace, the sandbox is ``core.sandbox.open_sandbox`` and the runner is the
coding plugin's ``run_test_suite``; the fix is applied with ``git apply``. A task with hidden
tests has them written into the copy first (as the grader does), and its tests run in the
project's own environment (``plugins.coding.environment.choose_environment``, as an episode's
set-up chooses it); other tasks run with Horizon's interpreter, as they were built.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from anywhere
    sys.path.insert(0, str(ROOT))

from core import gitstore
from core.sandbox import open_sandbox
from plugins.coding.environment import TestEnvironment, choose_environment, horizon_environment
from plugins.coding.grading import put_hidden_tests
from plugins.coding.testing import TestRun, run_test_suite


@dataclass
class FixCheck:
    """Outcomes of one before/after pair of test runs.

    Attributes:
        before, after: ``{test_id: outcome}`` without and with the fix.
        before_run, after_run: the full test runs (exit codes, output).
        seconds: wall-clock time of both runs, set-up included.
        environment: where the tests ran (its ``summary`` says which and how it was made).
    """

    before: dict[str, str]
    after: dict[str, str]
    before_run: TestRun
    after_run: TestRun
    seconds: float
    environment: TestEnvironment


def run_before_after(
    repo: Path, fix_diff: Path, *, hidden_tests: Path | None = None, dependencies_as_of: str = "", isolated: bool = True
) -> FixCheck:
    """Run the whole test suite of ``repo``, apply ``fix_diff`` and run it again.

    Args:
        repo: the task's repository state (not changed: a copy is used).
        fix_diff: the reference fix.
        hidden_tests: the task's hidden tests (a folder of files at their repository paths),
            written into the copy before both runs; the tests then run in the project's own
            environment, built as of ``dependencies_as_of`` (an ISO date; empty: the newest).
            None: Horizon's interpreter, as the suites without hidden tests were built.
        isolated: run under bubblewrap (False only where bwrap cannot start).

    Raises:
        SandboxUnavailable: isolation was asked for and bwrap cannot start here.
        UserError: the fix does not apply.
    """
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="horizon-task-check-") as tmp:
        workspace, scratch = Path(tmp) / "workspace", Path(tmp) / "scratch"
        shutil.copytree(repo, workspace, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"))
        scratch.mkdir()
        sandbox = open_sandbox(workspace, scratch, isolated=isolated)
        if hidden_tests is not None:
            environment = choose_environment(sandbox, workspace, scratch, as_of=dependencies_as_of)
            put_hidden_tests(hidden_tests, workspace)
        else:
            environment = horizon_environment(workspace, "the task has no hidden tests (built before test environments)")
        before = run_test_suite(sandbox, workspace, scratch, environment=environment)
        gitstore.init(Path(tmp) / "apply.git")  # an empty database: git applies the diff to the copy as plain files
        gitstore.git(Path(tmp) / "apply.git", "apply", "--whitespace=nowarn", str(fix_diff.resolve()), cwd=workspace)
        after = run_test_suite(sandbox, workspace, scratch, environment=environment)
    return FixCheck(dict(before.outcomes), dict(after.outcomes), before, after, time.monotonic() - started, environment)


def failed_before(test_id: str, before: dict[str, str]) -> bool:
    """Whether ``test_id`` did not pass before: it failed, errored, or its module failed to import
    (pytest then reports the module's path as one errored id) or it did not exist yet."""
    if test_id in before:
        return before[test_id] in ("failed", "error")
    module = test_id.split("::", 1)[0]
    return before.get(module) in ("failed", "error") or not any(t.startswith(module + "::") for t in before)


def classify(check: FixCheck) -> tuple[list[str], list[str], list[str], list[str]]:
    """Split the tests of a before/after pair.

    Returns:
        ``(fail_to_pass, pass_to_pass, broken, still_failing)``: tests that pass only with the fix;
        that pass with and without it; that passed before and not after; that fail with the fix. Skipped tests are in none of them.
    """
    f2p = sorted(t for t, o in check.after.items() if o == "passed" and failed_before(t, check.before))
    p2p = sorted(t for t, o in check.after.items() if o == "passed" and check.before.get(t) == "passed")
    broken = sorted(t for t, o in check.before.items() if o == "passed" and check.after.get(t) != "passed")
    still = sorted(t for t, o in check.after.items() if o in ("failed", "error"))
    return f2p, p2p, broken, still
