"""The coding reward: fail-to-pass share, gated by pass-to-pass and untouched test files.

Grading follows SWE-bench's definitions (Jimenez et al., 2024, "SWE-bench: Can Language Models
Resolve Real-World GitHub Issues?"): tests failing before the episode and passing after are
FAIL_TO_PASS; tests passing before must still pass (PASS_TO_PASS). Here:

    reward = |fixed targets| / |targets|    if no PASS_TO_PASS test broke, no test file changed,
                                            and the test command's exit code agrees with its report
           = 0                              otherwise

where the targets are the tests that did not pass at the start (a pytest module that failed to
import is one target, fixed when its tests pass at the end). With no targets (the suite was
green), the suite cannot tell a fix from no change, so the run must bring its own evidence: a
reproduction test (SWT-bench's fail-to-pass criterion for generated tests, Mündler et al., 2024,
"SWT-Bench: Testing and Validating Real-World Bug-Fixes with Code Agents"). The tests the patch
adds or changes are run on the starting code with only those test files changed, and on the whole
patch (``plugins.coding.grading.reproduction_run``); the targets are the ones that fail on the
starting code, fixed when they pass with the patch, and the same formula applies, with the
original tests (reset) as PASS_TO_PASS. Edited test files are then the evidence, not a fault.
Without a test that fails on the starting code, nothing is verified: the verdict is "not
applicable" (reward None, never 1: a run that changed nothing would pass too), unless the run
broke a test or touched the checker (reward 0). A reproduction test is only as strong as what it
asserts, so such verdicts say so (``fail_to_pass`` detail ``verified_by``: ``tests failing at the
start``, ``the task's fail-to-pass tests`` or ``the run's reproduction tests``).
When no test runs at the end (the suite does not build), nothing is verified and the reward is 0; a repository with no test suite at all gives
"not applicable" (``core.reward``), never 0. Every test's outcome before and after is recorded.
The version, ``REWARD_VERSION``, changes whenever this definition does.

The final run is made on a copy of the workspace whose test files were reset to their original
content (``plugins.coding.grading``), as SWE-bench does, so an edited test cannot pass; editing
a test file still gives reward 0 (``tests_untouched``), so the fact stays visible. Outcomes are
read from the runner's report, and a report that contradicts the command's exit code (only
passes from a failing command) is not believed: printed "PASSED" text cannot fake a result.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from core.api import RewardComponent, RewardResult

#: The version of this reward, stored with every verdict (``RewardResult.version``). History:
#: ``coding-tests/1`` the formula above; ``coding-tests/2`` a patch that changes how pytest is
#: configured or loaded scores 0 (``checker_untouched``); ``coding-tests/3`` pytest outcomes count
#: only as they reached the grader over the verdict stream (``verdict_stream``), and the
#: fail-to-pass tests that pass are run a second way, without pytest (``second_run``): a
#: disagreement of either scores 0.
REWARD_VERSION = "coding-tests/3"


def file_digests(workspace: Path, paths: list[str]) -> dict[str, str]:
    """SHA-256 of each file in ``paths`` (relative to ``workspace``)."""
    return {p: hashlib.sha256((workspace / p).read_bytes()).hexdigest() for p in paths if (workspace / p).is_file()}


def edited_test_files(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Test files changed, deleted or added between two ``file_digests`` results."""
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def passes(test_id: str, after: dict[str, str]) -> bool:
    """Whether ``test_id`` passes in ``after``. A pytest module that failed to import has its path
    as its id (``tests/test_a.py``); once it imports, its tests have their own ids
    (``tests/test_a.py::test_x``), so it passes when some of them pass and none fails."""
    if test_id in after:
        return after[test_id] == "passed"
    inside = [o for t, o in after.items() if t.startswith(test_id + "::")]
    return "passed" in inside and not any(o in ("failed", "error") for o in inside)


def _reproduction_targets(reproduction: dict[str, Any]) -> list[str]:
    """The run's own tests that fail on the starting code (a module that failed to import there is
    one target, by its path), unless the reproduction was refused (``refused`` says why)."""
    if reproduction.get("refused"):
        return []
    return sorted(t for t, o in reproduction["before"].items() if o in ("failed", "error"))


def _unverified(tests: int, reproduction: dict[str, Any] | None) -> str:
    """Why a run whose suite was green at the start is not verified (the "not applicable" reason)."""
    why = f"not verified: no test failed at the start, so the {tests} tests cannot tell a fix from no change"
    if reproduction is None:
        return why + " (a test that reproduces the problem would)"
    if reproduction.get("refused"):
        return f"{why}, and the run's own tests were not run: {reproduction['refused']}"
    if not reproduction["files"]:
        return why + ", and the patch adds no test that reproduces the problem"
    return (f"{why}, and none of the run's own tests ({', '.join(reproduction['files'][:3])}) fails on the starting "
            "code, so they do not reproduce the problem")


def grade(
    before: dict[str, str],
    after: dict[str, str],
    edited_tests: list[str],
    *,
    report_trusted: bool = True,
    exit_code: int | None = None,
    reset: dict[str, list[str]] | None = None,
    fail_to_pass: list[str] | None = None,
    pass_to_pass: list[str] | None = None,
    before_rerun: dict[str, str] | None = None,
    checker_changes: list[str] | None = None,
    patch_sha256: str = "",
    reproduction: dict[str, Any] | None = None,
    own_tests_allowed: bool = False,
    verification: dict[str, Any] | None = None,
) -> RewardResult:
    """Grade an episode from per-test outcomes.

    Args:
        before: ``{test_id: "passed"|"failed"|"error"|"skipped"}`` at the start.
        after: the same at the end.
        edited_tests: test files the episode changed (any makes the reward 0).
        report_trusted: False when the final test command's exit code contradicts its report
            (``TestRun.report_trusted``); the reward is then 0.
        exit_code: the final test command's exit code, for the record.
        reset: what was reset before the final run (``{"restored": [...], "removed": [...]}``),
            for the record.
        fail_to_pass, pass_to_pass: the task's declared test ids (a task suite's, SWE-bench
            style); when given they are the targets and the tests that must keep passing,
            instead of "every test failing / passing at the start".
        before_rerun: a second set-up run's outcomes on the same starting files, when set-up
            ran twice; kept in the ``fail_to_pass`` detail (``before_rerun``) for the export's
            non-determinism gate. It does not change the reward.
        checker_changes: why the patch changes the test runner's configuration or what it
            loads (``plugins.coding.checker_inputs``); any makes the reward 0.
        patch_sha256: the SHA-256 of the graded patch, for the record.
        reproduction: the run's own tests on the starting code and on the patch, when no test
            failed at the start (``plugins.coding.grading.Reproduction.record()``: ``files``,
            ``before`` and ``after`` outcomes, ``trusted``, ``refused``); used only when there are no
            other targets. Its test-file edits are then allowed (the original tests still decide
            PASS_TO_PASS).
        own_tests_allowed: the task's hidden tests grade the run (they replace the test files
            before the final run), so the run's own test edits are not a fault; they are kept as
            ``reproduction_files``.
        verification: pytest runs: ``{"stream": [problem, ...], "second_run": SecondRun.record()}``
            (``plugins.coding.verdict``); a stream problem, or a test that passes under pytest but
            not the second way, makes the reward 0 (components ``verdict_stream``, ``second_run``).

    Returns:
        A scored ``RewardResult`` (``REWARD_VERSION``), with components ``fail_to_pass`` (the share, weight 1),
        ``pass_to_pass`` and ``tests_untouched`` (gates, weight 0) and every outcome in details; or
        "not applicable" when nothing could be verified (see the module docstring).
    """
    if not after:  # no test ran at the end: nothing was verified, whatever happened before
        return RewardResult(
            reward=0.0, correct=False, version=REWARD_VERSION,
            summary="no test ran at the end (the test suite does not build): nothing verified, reward 0",
            components={"fail_to_pass": RewardComponent(value=0.0, detail={"before": before, "after": after})},
        )  # fmt: skip
    targets = sorted(t for t, o in before.items() if o in ("failed", "error"))
    if not before:  # the suite did not build at the start: every test it has now is a target
        targets = sorted(after)
    kept = sorted(t for t, o in before.items() if o == "passed")
    if fail_to_pass is not None:  # declared by the task: unrelated tests failing at the start do not count
        targets = sorted(fail_to_pass)
    if pass_to_pass is not None:
        kept = sorted(pass_to_pass)
    verified_by = "the task's fail-to-pass tests" if fail_to_pass is not None else "tests failing at the start"
    outcomes_after = after
    evidence: dict[str, Any] = {}
    if not targets and reproduction is not None:
        # No test failed at the start: the run's own tests are the only evidence (module docstring).
        targets, outcomes_after, verified_by = _reproduction_targets(reproduction), reproduction["after"], "the run's reproduction tests"
        evidence = {"reproduction_files": reproduction["files"], "reproduction_before": reproduction["before"]}
        report_trusted = report_trusted and reproduction.get("trusted", True)
    elif own_tests_allowed and edited_tests:
        evidence = {"reproduction_files": edited_tests}
    fixed = [t for t in targets if passes(t, outcomes_after)]
    broken = [t for t in kept if not passes(t, after)]
    share = len(fixed) / len(targets) if targets else 1.0
    p2p = 1.0 - len(broken) / len(kept) if kept else 1.0
    faulted_edits = [] if evidence else edited_tests  # a reproduction's test edits are its evidence
    untouched = 0.0 if faulted_edits else 1.0
    checker = list(checker_changes or [])
    from plugins.coding.verdict import verification_components, verification_fault

    fault = verification_fault(verification)
    if not targets and not broken and not faulted_edits and not checker and report_trusted and not fault:
        # A green suite passes with or without a fix: rewarding it would pay a run that did nothing.
        return RewardResult.not_applicable(REWARD_VERSION, _unverified(len(after), reproduction))
    reward = share if not broken and not faulted_edits and not checker and report_trusted and not fault else 0.0
    if checker:
        summary = f"the patch changes how the tests are run, not only the code under test ({'; '.join(checker[:3])}): reward 0"
    elif not report_trusted:
        summary = f"the test command exited with code {exit_code}, which contradicts its report: outcomes not trusted, reward 0"
    elif fault:
        summary = fault
    elif faulted_edits:
        summary = f"test files were edited ({', '.join(faulted_edits)}): reward 0"
    elif broken:
        summary = f"{len(broken)} test(s) that passed before now fail ({', '.join(broken[:3])}): reward 0"
    elif verified_by == "the run's reproduction tests":
        summary = (f"{len(fixed)}/{len(targets)} of the run's reproduction tests fail on the starting code and pass "
                   f"with the patch, and the {len(kept)} tests that passed still pass")
    else:
        summary = f"{len(fixed)}/{len(targets)} failing tests now pass, no regressions"
    detail = {"before": before, "after": after, **({"before_rerun": before_rerun} if before_rerun is not None else {})}
    return RewardResult(
        reward=reward,
        correct=bool(targets) and reward == 1.0,
        version=REWARD_VERSION,
        summary=summary,
        components={
            "fail_to_pass": RewardComponent(value=share, weight=1.0, detail={
                "targets": targets, "fixed": fixed, "verified_by": verified_by, **detail, **evidence}),
            "pass_to_pass": RewardComponent(value=p2p, weight=0.0, detail={"kept": len(kept), "broken": broken}),
            "tests_untouched": RewardComponent(
                value=untouched, weight=0.0, detail={"edited": faulted_edits, "reset_before_grading": reset or {}}
            ),
            "checker_untouched": RewardComponent(
                value=0.0 if checker else 1.0, weight=0.0, detail={"changes": checker, "patch_sha256": patch_sha256}
            ),
            "exit_code_agrees": RewardComponent(
                value=1.0 if report_trusted else 0.0, weight=0.0, detail={"exit_code": exit_code}
            ),
            **verification_components(verification),
        },
    )
