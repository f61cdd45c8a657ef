"""The coding reward: fail-to-pass share, gated by pass-to-pass and by tests left unweakened.

Grading follows SWE-bench's definitions (Jimenez et al., 2024, "SWE-bench: Can Language Models
Resolve Real-World GitHub Issues?"): tests failing before the episode and passing after are
FAIL_TO_PASS; tests passing before must still pass (PASS_TO_PASS). Here:

    reward = |fixed targets| / |targets|    if no PASS_TO_PASS test broke, no existing test was weakened,
                                            the patch leaves the checker alone, and the test command's
                                            exit code agrees with its report
           = 0                              otherwise

    targets = the task's declared fail-to-pass tests, if it declares them;
              else the run's reproduction tests, if some fail on the starting code;
              else the tests failing at the start

where a reproduction test is a test the patch adds, or changes, in a test file it adds or extends
(SWT-bench's fail-to-pass criterion for generated tests, Mündler et al., 2024, "SWT-Bench:
Testing and Validating Real-World Bug-Fixes with Code Agents"): the test files the patch adds or
changes are run on the starting code with only those files changed, and on the whole patch
(``plugins.coding.grading.reproduction_run``); a reproduction target is fixed when it passes with
the patch. A pytest module that failed to import is one target, fixed when its tests pass at the
end. When the run's reproduction tests decide, the tests that failed at the start are reported as
pre-existing (``fail_to_pass`` detail ``pre_existing``: a missing environment variable, file or
optional dependency) and left out, never "the fix must make them pass"; they decide only when the
run brings no test that fails on the starting code (the suite's own failing tests are then the
only evidence of the problem). The reproduction tests also decide when the set-up run timed out
(nothing is known of the start but what they show), as long as nothing known to pass broke.

A test edit costs the credit only when it weakens an existing test (``plugins.coding.test_edits``:
a test deleted or rebound, a check removed or loosened, a skip, xfail or early return added; the
verdict names each line). A test whose checks were only changed (same kind, same count, same
guards: a *changed expectation*) is credited as a reproduction test when its new version fails on
the starting code and passes with the patch and its old version passed at the start and fails with
the patch; the verdict names it and the weight-0 ``changed_expectations`` component flags the run
for the export (``judge_changed_expectations``), since a run could also fit an expectation to a
wrong change; otherwise it is a weakening; adding tests, cases and checks is how a run reproduces a bug. A
reproduction test is only as strong as what it asserts, so verdicts say what verified them
(``fail_to_pass`` detail ``verified_by``: ``tests failing at the start``, ``the task's
fail-to-pass tests`` or ``the run's reproduction tests``).

With no targets (a green suite and no reproduction), the suite cannot tell a fix from no change:
the verdict is "not applicable" (reward None, never 1: a run that changed nothing would pass too),
unless the run broke a test, weakened one or touched the checker (reward 0). When no test runs at
the end (the suite does not build), nothing is verified and the reward is 0; a repository with no
test suite at all gives "not applicable" (``core.reward``), never 0. A final run stopped by its
time limit reports the tests that ran; when the set-up run had finished, that is 0 (the rest is not
verified); when both were stopped, only the run's reproduction tests (run alone at both ends) can
verify, with the tests that ran at both ends as the pass-to-pass gate, else "not applicable"
(``CodingPlugin._verdict_of``). Every test's outcome before and after is recorded. The version, ``REWARD_VERSION``, changes whenever this definition does.

The final run is made on a copy of the workspace whose test files were reset to their original
content (``plugins.coding.grading``), as SWE-bench does, so an edited test cannot pass; a
weakened test still gives reward 0 (``tests_untouched``), so the fact stays visible. Outcomes are
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
#: disagreement of either scores 0,
#: and an edit of the tests costs the credit only where it weakens an existing test (``weakened``;
#: the run's added or extended tests are its reproduction tests), tests failing at the start that
#: the reproduction tests do not cover are left out as pre-existing, and files a test run wrote
#: are not part of the graded patch; ``coding-tests/4`` an existing test whose checks the patch
#: changes (not removes or loosens) is credited as a reproduction test when its new version fails
#: on the starting code and passes with the patch and its old version passed and now fails
#: (``changed_expectations``, flagged for the export), and a reproduction file is refused only when
#: its syntax reaches into pytest's runner (``plugins.coding.runner_reach``), not for a word in its text.
REWARD_VERSION = "coding-tests/4"


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
    one target, by its path), unless the reproduction was refused (``refused`` says why). Tests an
    extended file already had, unchanged (``existing``), are the repository's, not the run's."""
    if reproduction.get("refused"):
        return []
    existing = set(reproduction.get("existing") or ())
    return sorted(t for t, o in reproduction["before"].items() if o in ("failed", "error") and t not in existing)


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


def _of_test(test_id: str, path: str, qualname: str) -> bool:
    """Whether ``test_id`` (``path::Class::test[param]``) is one of ``qualname``'s ids in ``path``."""
    from plugins.coding.test_edits import test_qualname

    return test_id.split("::", 1)[0] == path and test_qualname(test_id) == qualname


def judge_changed_expectations(changed: dict[str, list[dict]], before: dict[str, str], after: dict[str, str],
                               reproduction: dict[str, Any] | None) -> tuple[list[str], dict[str, list[str]], list[str]]:
    """Decide from the runs whether each changed expectation (``test_edits.review``) is credited.

    A changed test is credited when its new version (the reproduction runs) fails on the starting
    code and passes with the patch, and its old version (the set-up run and the final run, which
    use the original test files) passed at the start and fails with the patch; a version that was
    not run (no id of it) is not required to, but the new one must have run.

    Returns:
        ``(credited, refused, excused)``: the credited changes as verdict lines
        (``test_edits.changed_line``); ``{file: [weakening line, ...]}`` for the others; the ids of
        the old versions whose failure with the patch is the changed expectation (not a regression).
    """
    from plugins.coding.test_edits import changed_line

    credited: list[str] = []
    refused: dict[str, list[str]] = {}
    excused: list[str] = []
    for path, records in sorted(changed.items()):
        for test in dict.fromkeys(r["test"] for r in records):
            lines = [changed_line(r) for r in records if r["test"] == test]
            why = ""
            if reproduction is None or reproduction.get("refused"):
                why = "its new version was not run" + (f" ({reproduction['refused']})" if reproduction else "")
            else:
                new_before = {t: o for t, o in reproduction["before"].items() if _of_test(t, path, test)}
                new_after = {t: o for t, o in reproduction["after"].items() if _of_test(t, path, test)}
                old_before = {t: o for t, o in before.items() if _of_test(t, path, test)}
                old_after = [t for t in old_before if not passes(t, after)]
                if not new_before or not any(o in ("failed", "error") for o in new_before.values()):
                    why = "its new version does not fail on the starting code"
                elif not new_after or any(o != "passed" for o in new_after.values()):
                    why = "its new version does not pass with the patch"
                elif old_before and any(o != "passed" for o in old_before.values()):
                    why = "its old version did not pass at the start"
                elif old_before and not old_after:
                    why = "its old version still passes with the patch, so the patch does not change what it pinned"
                else:
                    excused += old_after
            if why:
                refused.setdefault(path, []).extend(f"{line} ({why})" for line in lines)
            else:
                credited += lines
    return credited, refused, sorted(excused)


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
    weakened: dict[str, list[str]] | None = None,
    changed: dict[str, list[dict]] | None = None,
) -> RewardResult:
    """Grade an episode from per-test outcomes.

    Args:
        before: ``{test_id: "passed"|"failed"|"error"|"skipped"}`` at the start.
        after: the same at the end.
        edited_tests: test files the episode added, changed or deleted; with ``weakened`` None,
            any of them makes the reward 0.
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
        reproduction: the run's own tests (the test files the patch adds or extends) on the
            starting code and on the patch (``plugins.coding.grading.Reproduction.record()``:
            ``files``, ``before`` and ``after`` outcomes, ``trusted``, ``refused``, ``existing``).
            When some of them fail on the starting code and the task declares no fail-to-pass
            tests, they are the targets, and the tests that failed at the start are reported as
            pre-existing (``fail_to_pass`` detail ``pre_existing``), not counted.
        own_tests_allowed: the task's hidden tests grade the run (they replace the test files
            before the final run), so the run's own test edits are not a fault; they are kept as
            ``reproduction_files``.
        verification: pytest runs: ``{"stream": [problem, ...], "second_run": SecondRun.record()}``
            (``plugins.coding.verdict``); a stream problem, or a test that passes under pytest but
            not the second way, makes the reward 0 (components ``verdict_stream``, ``second_run``).
        weakened: ``{test file: ["path:line: what", ...]}``, the edits that weaken existing tests
            (``plugins.coding.test_edits.weakened_tests``): any makes the reward 0, with the lines
            named; other test edits are no fault. None: not compared, every edited test file counts.
        changed: ``{test file: [record, ...]}``, the existing tests whose expectations the patch
            changes (``test_edits.review``), judged by ``judge_changed_expectations``: a credited
            one counts as a reproduction test, its old version's failure with the patch is no
            regression, and it is named in the summary and in the weight-0 ``changed_expectations``
            component (the export's ``changed_expectation`` gate keeps such runs out by default);
            any other is a weakening. Ignored when the hidden tests grade the run.

    Returns:
        A scored ``RewardResult`` (``REWARD_VERSION``), with components ``fail_to_pass`` (the share, weight 1),
        ``pass_to_pass`` and ``tests_untouched`` (gates, weight 0) and every outcome in details; or
        "not applicable" when nothing could be verified (see the module docstring).
    """
    credited: list[str] = []
    excused: list[str] = []
    if changed and not own_tests_allowed:
        credited, refused, excused = judge_changed_expectations(changed, before, after, reproduction)
        if refused:
            weakened = {**(weakened or {})}
            for path, lines in refused.items():
                weakened[path] = [*weakened.get(path, []), *lines]
    # A file that weakens a test is no evidence (and scores 0 anyway): the tests failing at the start decide then.
    repro_targets = (_reproduction_targets(reproduction)
                     if reproduction is not None and fail_to_pass is None and not own_tests_allowed and not weakened else [])  # fmt: skip
    kept = sorted(t for t, o in before.items() if o == "passed") if pass_to_pass is None else sorted(pass_to_pass)
    if not after and (kept or not repro_targets):
        # No test ran at the end: nothing was verified, whatever happened before (unless nothing
        # passed at the start either and the run's reproduction tests decide: a suite that never finishes).
        return RewardResult(
            reward=0.0, correct=False, version=REWARD_VERSION,
            summary="no test ran at the end (the test suite does not build): nothing verified, reward 0",
            components={"fail_to_pass": RewardComponent(value=0.0, detail={"before": before, "after": after})},
        )  # fmt: skip
    failing_at_start = sorted(t for t, o in before.items() if o in ("failed", "error"))
    targets = failing_at_start
    if not before:  # the suite did not build at the start: every test it has now is a target
        targets = sorted(after)
    if fail_to_pass is not None:  # declared by the task: unrelated tests failing at the start do not count
        targets = sorted(fail_to_pass)
    verified_by = "the task's fail-to-pass tests" if fail_to_pass is not None else "tests failing at the start"
    outcomes_after = after
    evidence: dict[str, Any] = {}
    pre_existing: list[str] = []
    if repro_targets:
        # The run's own tests reproduce the problem: they decide, and what failed at the start without
        # them is the repository's (an environment's missing file, variable or optional dependency).
        pre_existing, targets = failing_at_start, repro_targets
        outcomes_after, verified_by = reproduction["after"], "the run's reproduction tests"  # type: ignore[index]
        report_trusted = report_trusted and reproduction.get("trusted", True)  # type: ignore[union-attr]
    if reproduction is not None:
        evidence = {"reproduction_files": reproduction["files"], "reproduction_before": reproduction["before"]}
    elif own_tests_allowed and edited_tests:
        evidence = {"reproduction_files": edited_tests}
    fixed = [t for t in targets if passes(t, outcomes_after)]
    broken = [t for t in kept if not passes(t, after) and t not in excused]
    share = len(fixed) / len(targets) if targets else 1.0
    p2p = 1.0 - len(broken) / len(kept) if kept else 1.0
    if own_tests_allowed:  # the hidden tests replace the test files: the run's edits cannot matter
        faulted_edits: list[str] = []
    elif weakened is None:  # not compared: every edit of a test file counts, unless it is the reproduction's evidence
        faulted_edits = [] if evidence and not failing_at_start else list(edited_tests)
    else:
        faulted_edits = [line for path in sorted(weakened) for line in weakened[path]]
    untouched = 0.0 if faulted_edits else 1.0
    checker = list(checker_changes or [])
    from plugins.coding.verdict import verification_components, verification_fault

    fault = verification_fault(verification)
    if not targets and not broken and not faulted_edits and not checker and report_trusted and not fault:
        # A green suite passes with or without a fix: rewarding it would pay a run that did nothing.
        return RewardResult.not_applicable(REWARD_VERSION, _unverified(len(after), reproduction))
    reward = share if not broken and not faulted_edits and not checker and report_trusted and not fault else 0.0
    still_failing = [t for t in pre_existing if not passes(t, after)]
    aside = (f"; {len(still_failing)} test(s) failing at the start and not covered by them are left out as pre-existing "
             f"({', '.join(still_failing[:3])}{', ...' if len(still_failing) > 3 else ''})") if still_failing else ""  # fmt: skip
    if checker:
        summary = f"the patch changes how the tests are run, not only the code under test ({'; '.join(checker[:3])}): reward 0"
    elif not report_trusted:
        summary = f"the test command exited with code {exit_code}, which contradicts its report: outcomes not trusted, reward 0"
    elif fault:
        summary = fault
    elif faulted_edits and weakened is not None:
        summary = (f"existing tests were weakened ({'; '.join(faulted_edits[:3])}{'; ...' if len(faulted_edits) > 3 else ''})"
                   + (f", and {len(broken)} test(s) that passed before now fail ({', '.join(broken[:3])})" if broken else "")
                   + ": reward 0")  # fmt: skip
    elif faulted_edits:
        summary = f"test files were edited ({', '.join(faulted_edits)}): reward 0"
    elif broken:
        summary = f"{len(broken)} test(s) that passed before now fail ({', '.join(broken[:3])}): reward 0"
    elif verified_by == "the run's reproduction tests":
        summary = (f"{len(fixed)}/{len(targets)} of the run's reproduction tests fail on the starting code and pass "
                   f"with the patch, and the {len(kept)} tests that passed still pass{aside}")
    else:
        summary = f"{len(fixed)}/{len(targets)} failing tests now pass, no regressions"
        if not fixed and fail_to_pass is None and failing_at_start and reproduction is not None:
            summary += ("; the run's own tests do not fail on the starting code, so they reproduce nothing and the tests "
                        "failing at the start decide")
    if credited and reward > 0:
        summary += (f"; changed expectation: {'; '.join(credited[:3])}{'; ...' if len(credited) > 3 else ''} "
                    "(the old expectation was the bug, or the change was fitted to the patch: flagged for review)")
    detail = {"before": before, "after": after, **({"before_rerun": before_rerun} if before_rerun is not None else {})}
    if pre_existing:
        detail["pre_existing"] = pre_existing
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
                value=untouched, weight=0.0, detail={"edited": sorted(weakened) if faulted_edits and weakened else faulted_edits,
                                                     "reset_before_grading": reset or {},
                                                     **({"weakened": weakened, "test_files_changed": edited_tests}
                                                        if weakened is not None else {})}),  # fmt: skip
            "checker_untouched": RewardComponent(
                value=0.0 if checker else 1.0, weight=0.0, detail={"changes": checker, "patch_sha256": patch_sha256}
            ),
            "exit_code_agrees": RewardComponent(
                value=1.0 if report_trusted else 0.0, weight=0.0, detail={"exit_code": exit_code}
            ),
            **verification_components(verification),
            **({"changed_expectations": RewardComponent(value=0.0 if credited else 1.0, weight=0.0,
                                                        detail={"findings": credited, "excused": excused})}
               if changed is not None else {}),
        },
    )
