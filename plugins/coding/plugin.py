"""The coding plugin: fix bugs in Python, Java, JavaScript/TypeScript and Go repositories, verified by their own tests."""

from __future__ import annotations

import json
import time
from pathlib import Path

from core.api import (
    RewardComponent,
    RewardResult,
    Task,
    Tool,
    ToolContext,
    Trajectory,
    file_listing,
    record_test_outputs,
    snapshot,
)
from plugins.coding.checker_inputs import is_checker_input
from plugins.coding.environment import choose_environment, describe, horizon_environment, load_environment, save_environment
from plugins.coding.environment.node import choose_node_modules
from plugins.coding.grading import BASELINE_FILE, Graded, grading_run, save_original_tests
from plugins.coding.manifest import DESCRIPTION
from plugins.coding.repomap import build_repo_map
from plugins.coding.reward import REWARD_VERSION, file_digests, grade
from plugins.coding.suspicious import with_suspicious_changes
from plugins.coding.terminal_bench import is_terminal_bench, setup_text, terminal_bench_reward
from plugins.coding.testing import TestRun, collection_errors, detect_framework, run_test_suite, test_files
from plugins.coding.tools import CODING_TOOLS
from plugins.coding.verdict import verdict_targets

SYSTEM_PROMPT = """\
You are a careful software engineer fixing a problem in a repository. You work only through tools;
every path is relative to the repository root.

How to work:
1. Find the relevant code: the repository map below the task, repo_map (with a focus),
   search_code (regex) and find_symbol (definitions and references).
2. Read it with view_file.
3. Reproduce the problem with run_tests; read the failure. When no test fails at the start,
   first write a test that reproduces the problem (a new test function in a test_*.py file) and
   see it fail.
4. Make the smallest correct change with edit_file (old_text must match exactly once), or
   apply_patch for a change across several files. An edit that breaks a file's syntax is refused.
5. Run run_tests again (pytest/unittest, JUnit, node --test/Jest, go test), and static_check on
   what you changed. shell runs any other command
   (a fresh process each time, no network).
6. Call finish with a one-paragraph summary when the tests pass.

Do not weaken existing tests to make them pass (deleting or skipping them, removing or changing
their assertions): the grader runs the original tests, and a weakened test costs the credit.
Adding tests and assertions is welcome: a pytest test you add (in a new or an existing test file)
is run on the starting code (where it must fail) and on your change (where it must pass), and
such a reproduction test is what credits the fix; tests that already failed at the start for
reasons unrelated to the problem are then reported as pre-existing, not held against you.
"""
TERMINAL_BENCH_PROMPT = """\
You are a careful engineer doing a task in a Linux environment (a Terminal-Bench task). You work
only through tools. The task's working folder is the root of the file tools' paths, and shell
commands start in it (a fresh process each time).

How to work:
1. Read the task, then look around: shell (ls, cat, find, running the programs there) and
   view_file, search_code and find_symbol for the files of the working folder.
2. Do what the task asks: create or change files with edit_file or apply_patch, or with shell
   commands (which may write anywhere the task names, not only in the working folder).
3. Check your work by running it: run the program, the command or the script the task is about
   and read its output; fix what is wrong and run it again.
4. Call finish with a one-paragraph summary when the task is done.

The task is graded by tests you cannot see: they are run after you call finish, on the state
you leave behind (files, installed programs, outputs), and they check what the task asks for,
at the paths and in the formats it names. No reproduction test is asked of you, and a test you
write is not what earns the credit: the result on that final state is.
"""
#: Budget of the repository map in the task message, in estimated tokens (characters / 4).
SETUP_MAP_TOKENS = 1024


def _pre_existing_note(framework: str, hidden_tests: bool = False) -> str:
    """What the task message says below the tests that fail at the start (see ``reward``)."""
    if hidden_tests:
        return ("These fail before any change; the run is graded by the task's own tests, which you do not see, so "
                "tests that fail for reasons unrelated to the problem are not held against your fix.")
    if framework != "pytest":
        return "These fail before any change; the grader counts how many of them pass with your change."
    return ("These fail before any change. If they are about the reported problem, make them pass. If they fail for "
            "another reason (a missing optional dependency, file or environment variable), leave them alone: add a test "
            "that reproduces the reported problem (a test function in a new or existing test_*.py file) and run it to see "
            "it fail before you fix the code. The grader runs your test on the starting code, where it must fail, and "
            "with your change, where it must pass: that earns the credit, and the tests failing at the start are then "
            "reported as pre-existing, not counted. Without such a test, these failing tests decide.")


def _reproduce_request(framework: str, hidden_tests: bool = False) -> str:
    """What the task message asks for when no test fails at the start (see ``reward``); with
    ``hidden_tests`` the task's own tests, which the agent does not see, grade the run."""
    if hidden_tests:
        return ("No test fails now. Add a test that reproduces the problem (a test function in a new or existing "
                "test_*.py file) and run it to see it fail before you fix the code. The run is graded by the task's "
                "own tests, which you do not see, and the original tests must still pass.")
    if framework != "pytest":
        return ("No test fails now, so the suite cannot tell a fix from no change; this run will be reported "
                "as not verified.")
    return ("No test fails now, so the suite cannot tell a fix from no change. Add a test that reproduces the "
            "problem (a test function in a new or existing test_*.py file) and run it to see it fail before you "
            "fix the code: the grader runs your test on the starting code, where it must fail, and with your "
            "change, where it must pass, and the original tests must still pass. Without such a test the run is "
            "reported as not verified.")


class CodingPlugin:
    """Plugin ``coding``: tools to search, read, edit, test and check code; a test-based reward."""

    name = "coding"
    description = DESCRIPTION  # plugins/coding/manifest.py: agent plugins lists it without importing this module
    # what the embedded 135M model is offered: find, read, test, edit, finish (its grammar and prompt
    # for these five: 1,909 prompt tokens and 34 s a call, against 2,289 and 98-170 s for all ten)
    small_model_tools = ("search_code", "view_file", "run_tests", "edit_file", "finish")

    def is_checker_input(self, path: str) -> bool:
        """Whether a patch's ``path`` is a test or the test runner's configuration (the export's
        reward-hacking gate asks; ``plugins.coding.checker_inputs.is_checker_input``)."""
        return is_checker_input(path)

    def system_prompt(self, task: Task) -> str:
        """The same text for every run of a kind of task, so the model server's prefix cache can reuse
        it: ``TERMINAL_BENCH_PROMPT`` for a Terminal-Bench task (graded by hidden tests on the final
        state, ``is_terminal_bench``), else ``SYSTEM_PROMPT``."""
        return TERMINAL_BENCH_PROMPT if is_terminal_bench(task) else SYSTEM_PROMPT

    def tools(self) -> list[Tool]:
        """search_code, find_symbol, view_file, edit_file, run_tests, static_check, shell, finish."""
        return list(CODING_TOOLS)

    def setup(self, task: Task, ctx: ToolContext) -> str:
        """Run the test suite once before the agent starts, record each test's outcome, and map the repository.

        The map goes into the task message, not the system prompt, so that the system prompt
        stays byte-identical across runs (prefix caching).

        Returns:
            A paragraph for the task message naming the failing tests, then the repository map
            (``SETUP_MAP_TOKENS``, biased toward what the instruction mentions).
        """
        if is_terminal_bench(task):  # graded by its own hidden tests (plugins.coding.terminal_bench)
            return setup_text(task, ctx.workspace)
        say = ctx.progress or (lambda text: None)
        started = time.monotonic()
        say("choosing the test environment (building one with uv the first time can take minutes)")
        environment = self._environment(task, ctx)
        say(f"test environment ready in {time.monotonic() - started:.1f} s; baseline tests next")
        tests = self._baseline(ctx, runs=int(task.metadata.get("baseline_runs", 1)), hidden_tests=bool(task.metadata.get("hidden_tests")))
        if environment:
            tests = f"{environment}\n{tests}"
        built = build_repo_map(ctx.workspace, task.instruction, SETUP_MAP_TOKENS)
        if not built.text:
            return tests
        return (
            f"{tests}\n\nRepository map (the definitions nearest to the task's words, then the most used; as line│source; repo_map shows more "
            f"or focuses on other names):\n{built.text}"
        )

    def _environment(self, task: Task, ctx: ToolContext) -> str:
        """Choose where Python tests run (``plugins.coding.environment``), or which ``node_modules``
        JavaScript tests see (``environment.node``), and save it in scratch, so ``run_tests``,
        ``shell``, the grader and a resumed run use the same one.

        Returns:
            The set-up text's line about it; "" when the repository's tests are neither Python's nor JavaScript's.
        """
        framework = detect_framework(ctx.workspace)
        if framework not in ("pytest", "node"):
            return ""
        chosen = load_environment(ctx.scratch)  # a set-up interrupted after the choice: keep it
        if chosen is not None:
            return describe(chosen)
        if framework == "pytest":
            chosen = choose_environment(ctx.sandbox, ctx.workspace, ctx.scratch, repo=task.repo,
                                        as_of=str(task.metadata.get("dependencies_as_of") or ""))  # fmt: skip
        else:  # JavaScript: Python's interpreter is irrelevant; the installed packages are not
            modules = choose_node_modules(ctx.sandbox, ctx.workspace, ctx.scratch, repo=task.repo)
            chosen = horizon_environment(ctx.workspace, own=True)
            chosen.language = "javascript"
            chosen.node_modules, chosen.summary, chosen.seconds = str(modules.path or ""), modules.summary, modules.seconds
        save_environment(ctx.scratch, chosen)
        return describe(chosen)

    def _baseline(self, ctx: ToolContext, runs: int = 1, hidden_tests: bool = False) -> str:
        """Run the suite, save the baseline under scratch, and describe it in a paragraph.

        Args:
            runs: 2 runs the suite a second time on the same starting files (``Task.metadata``
                ``baseline_runs``, ``agent eval --baseline-runs 2``): tests whose outcomes differ
                are recorded as ``flaky``, named to the agent, and flag the episode for the
                export's non-determinism gate. It doubles the set-up's test time.
        """
        if ctx.baseline is None:  # a driver without a run folder: keep the starting files ourselves
            ctx.baseline = ctx.scratch / "baseline.git"
            if not (ctx.baseline / "HEAD").is_file():
                snapshot(ctx.workspace, ctx.baseline)
        run = self._test_run(ctx)
        baseline = {
            "framework": run.framework,
            "outcomes": run.outcomes,
            "build_failed": run.build_failed,
            "timed_out": run.timed_out,
            "not_run": run.not_run,
            "budget_s": run.budget_s,
            "test_files": file_digests(ctx.workspace, test_files(ctx.workspace)),
            "original_tests": save_original_tests(ctx.workspace, ctx.scratch),
        }
        flaky: list[str] = []
        if runs >= 2 and run.framework is not None:
            again = self._test_run(ctx).outcomes
            baseline["rerun_outcomes"] = again
            flaky = sorted(t for t in set(run.outcomes) | set(again) if run.outcomes.get(t) != again.get(t))
        baseline["flaky"] = flaky
        (ctx.scratch / BASELINE_FILE).write_text(json.dumps(baseline, indent=1))
        if run.framework is None:
            return "No test suite was found in this repository."
        unstable = (f"\n{len(flaky)} test(s) gave different outcomes in two runs on the same files (flaky): "
                    + ", ".join(flaky[:10])) if flaky else ""  # fmt: skip
        failing = sorted(t for t, o in run.outcomes.items() if o in ("failed", "error"))
        if run.timed_out:
            not_run = (f"{run.not_run} collected test{'' if run.not_run == 1 else 's'} did not run" if run.not_run
                       else "how many did not run is unknown")  # fmt: skip
            why = f", {run.budget_reason}" if run.budget_reason else ""
            listed = "".join(f"\n- {t}" for t in failing[:20]) + (f"\n... and {len(failing) - 20} more" if len(failing) > 20 else "")
            return (
                f"The {run.framework} test suite did not finish: it was stopped by the time limit after {run.duration_s:.0f} s "
                f"(its limit: {run.budget_s:.0f} s{why}), with {len(run.outcomes)} test results reported; {not_run}."
                + (f" {len(failing)} of the tests that ran fail now:{listed}" if failing else
                   " None of the tests that ran fails." if run.outcomes else "")
                + " A test may hang, or the suite is large; run_tests with test ids runs only those."
                + ("" if run.framework != "pytest" or hidden_tests else
                   " Add a test that reproduces the problem (a test function in a new or existing test_*.py file) and run "
                   "it to see it fail before you fix the code (run_tests with on_start runs it on the starting code too): "
                   "the grader runs your test files alone on the starting code, where the test must fail, and with your "
                   "change, where it must pass.")
            )
        if run.build_failed and not run.outcomes:
            return f"The {run.framework} test suite does not build at the moment."
        imports = collection_errors(run, ctx.workspace.resolve())
        if not run.outcomes and run.exit_code not in (0, 5):  # 5: pytest collected nothing
            said = "".join(f"\n- {path}: {why or 'see the output'}" for path, why in imports.items())
            tail = "\n".join(run.output.strip().splitlines()[-12:])
            return (f"The {run.framework} test suite reported no test results (exit code {run.exit_code}), so nothing is known "
                    f"of its tests at the start." + (f" These files could not be imported:{said}" if said else "")
                    + f"\nThe test command's output ends with:\n{tail}")  # fmt: skip

        def named(test_id: str) -> str:
            return f"- {test_id}" + (f" (could not be imported: {imports[test_id]})" if imports.get(test_id) else "")

        listed = "\n".join(named(t) for t in failing[:20])
        broken = ""
        if imports:
            broken = (f"\n{len(imports)} test module(s) could not be collected (importing them failed), so their tests are "
                      "missing from the count"
                      + "".join(f"\n- {path}: {why}" for path, why in imports.items() if path not in failing[:20])
                      + ("; a missing module is a dependency the test environment lacks" if any("No module named" in w for w in imports.values()) else ""))  # fmt: skip
        elif run.build_failed:
            broken = "\nSome test modules could not be collected or built; each is one error above."
        return (
            f"The {run.framework} test suite has {len(run.outcomes)} tests; {len(failing)} fail now"
            + (f":\n{listed}" + (f"\n... and {len(failing) - 20} more" if len(failing) > 20 else "") if failing else ".")
            + broken
            + unstable
            + ("\n" + (_pre_existing_note(run.framework, hidden_tests) if failing else _reproduce_request(run.framework, hidden_tests))
               if run.outcomes else "")
        )

    @staticmethod
    def _test_run(ctx: ToolContext) -> TestRun:
        """The whole suite in the workspace; the files it creates there (reports, artefacts) stay
        out of the patch (``record_test_outputs``). Progress lines go to ``ctx.progress``."""
        before = file_listing(ctx.workspace)
        say = ctx.progress
        progress = None if say is None else (lambda text: say(f"baseline tests: {text}"))
        # native tracebacks: pytest's short ones re-parse every frame's source file for each failing test
        # (Django's suite without its settings: 5,326 errors, most of a 5-minute baseline); the baseline keeps
        # outcomes, and a module that fails to import is reported in pytest's short style whatever --tb says
        run = run_test_suite(ctx.sandbox, ctx.workspace, ctx.scratch, progress=progress, traceback="native")
        if ctx.baseline is not None:
            record_test_outputs(ctx.workspace, ctx.baseline, before)
        if say is not None and run.framework is not None:
            stopped = f", stopped by the time limit with {run.not_run} not run" if run.timed_out else ""
            say(f"baseline tests: {len(run.outcomes):,} results, {len(run.not_passed):,} not passing, in {run.duration_s:.0f} s{stopped}")
        return run

    def reward(self, task: Task, trajectory: Trajectory) -> RewardResult:
        """The tests' verdict (``_tests_verdict``) with the suspicious-change gate's weight-0
        ``suspicious_changes`` component added (``plugins.coding.suspicious``; the export's
        ``suspicious_code`` gate reads it), found in the patch the grader judged; a Terminal-Bench
        task's verdict as it is.

        Raises:
            ValueError: the trajectory has no live ``context`` (the tests run in its sandbox).
        """
        if is_terminal_bench(task):
            return self._tests_verdict(task, trajectory)
        verdict, patch = self._graded_verdict(task, trajectory)
        return with_suspicious_changes(verdict, trajectory.require_context(self.name).workspace, patch)

    def _tests_verdict(self, task: Task, trajectory: Trajectory) -> RewardResult:
        """Run the suite again in the episode's sandbox, on a copy with the original test files,
        and grade it against the baseline (see ``plugins.coding.reward`` and ``plugins.coding.grading``).

        Returns:
            The verdict, version ``coding-tests/N``; not applicable when the repository has no
            test suite (at the start and at the end).

        Raises:
            ValueError: the trajectory has no live ``context`` (the tests run in its sandbox).
        """
        if is_terminal_bench(task):
            return terminal_bench_reward(task, trajectory)
        return self._graded_verdict(task, trajectory)[0]

    def _graded_verdict(self, task: Task, trajectory: Trajectory) -> tuple[RewardResult, str]:
        """``_tests_verdict`` for a coding task, with the text of the patch it graded (``Graded.patch``)."""
        ctx = trajectory.require_context(self.name)
        baseline = json.loads((ctx.scratch / BASELINE_FILE).read_text())
        base_db = ctx.baseline or next((p for p in (ctx.scratch / "baseline.git", ctx.scratch.parent / "baseline.git")
                                        if (p / "HEAD").is_file()), ctx.scratch / "baseline.git")  # fmt: skip
        if "original_tests" not in baseline or not (base_db / "HEAD").is_file():
            raise ValueError(f"the coding reward needs the run's starting files (set-up's {BASELINE_FILE} and the git "
                             f"database {base_db}); this episode has neither, so its patch cannot be graded")  # fmt: skip
        declared = task.metadata
        # No fail-to-pass tests declared: the run's own reproduction tests (if any fail on the starting code) decide.
        reproduce = baseline["framework"] == "pytest" and declared.get("fail_to_pass") is None
        hidden = Path(declared["hidden_tests"]) if declared.get("hidden_tests") else None
        graded = grading_run(ctx.sandbox, ctx.workspace, base_db, ctx.scratch, baseline["original_tests"], baseline["test_files"],
                             reproduce=reproduce and hidden is None, hidden_tests=hidden,
                             targets=verdict_targets(baseline["outcomes"], declared.get("fail_to_pass")))  # fmt: skip
        return self._verdict_of(task, baseline, graded, hidden), graded.patch

    @staticmethod
    def _verdict_of(task: Task, baseline: dict, graded: Graded, hidden: Path | None) -> RewardResult:
        """The reward of a ``grading_run`` (see ``_tests_verdict``)."""
        declared = task.metadata
        if graded.run is None:
            return RewardResult(
                reward=0.0, correct=False, version=REWARD_VERSION,
                summary=f"the run's patch does not apply to its starting files: {graded.patch_error}; reward 0",
                components={"patch_applies": RewardComponent(value=0.0, detail={"patch_sha256": graded.patch_sha256})},
            )  # fmt: skip
        final = graded.run
        if baseline["framework"] is None and not final.outcomes:
            return RewardResult.not_applicable(REWARD_VERSION, "the repository has no test suite: nothing to judge the change by")
        reproduction = graded.reproduction.record() if graded.reproduction else None
        reproduced = reproduction is not None and not reproduction["refused"] and not graded.weakened and any(
            o in ("failed", "error") and t not in reproduction["existing"] for t, o in reproduction["before"].items())
        if (baseline["framework"] is not None and not baseline["outcomes"] and not reproduced
                and (baseline.get("timed_out") or (final.outcomes and not baseline["build_failed"]))):
            # Nothing is known of the start: counting every test that passes now as fixed would pay a run that
            # did nothing. (No test at either end stays 0 in grade(): nothing verified.)
            why = "timed out" if baseline.get("timed_out") else "reported no test"
            return RewardResult.not_applicable(
                REWARD_VERSION, f"not verified: the test run at set-up {why}, so there is no start to compare the change with")
        before, after = baseline["outcomes"], final.outcomes
        if final.timed_out and final.outcomes and baseline.get("timed_out"):
            if not reproduced:
                return RewardResult.not_applicable(
                    REWARD_VERSION, "not verified: the test runs at set-up and at the end were both stopped by the time limit")
            # The run's own reproduction test, run alone at both ends, decides; of the stopped suites only the tests
            # that ran at both ends are compared (a test that passed at the start and fails now still counts).
            before = {t: o for t, o in before.items() if t in after}
        elif final.timed_out and final.outcomes:
            # A stopped final run reports the tests that ran (testing.TestRun.not_run); the rest are not verified,
            # and the suite finished at the start: 0, as when a stopped run reported nothing.
            return RewardResult(
                reward=0.0, correct=False, version=REWARD_VERSION,
                summary=(f"the final test run was stopped by its time limit ({final.budget_s:.0f} s) with {final.not_run} "
                         "tests not run: nothing verified, reward 0"),
                components={"fail_to_pass": RewardComponent(value=0.0, detail={"before": baseline["outcomes"], "after": final.outcomes,
                                                                                "not_run": final.not_run})},
            )  # fmt: skip
        return grade(
            before, after, graded.edited_tests,
            report_trusted=final.report_trusted, exit_code=final.exit_code, reset=graded.reset, before_rerun=baseline.get("rerun_outcomes"),
            fail_to_pass=declared.get("fail_to_pass"), pass_to_pass=declared.get("pass_to_pass"),
            checker_changes=graded.checker_changes, patch_sha256=graded.patch_sha256,
            reproduction=reproduction, own_tests_allowed=hidden is not None, verification=graded.verification,
            weakened=graded.weakened, changed=graded.changed,
        )  # fmt: skip
