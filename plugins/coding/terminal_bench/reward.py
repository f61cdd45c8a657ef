"""The reward of a Terminal-Bench task (``plugins.coding.terminal_bench.task``): its own tests, in the sandbox.

A container task is graded by its own test script in the agent's container (``verify.py``); what
follows is the bubblewrap path's grading.

Terminal-Bench grades an episode by copying the task's ``tests/`` into the container once the agent
is done and running ``tests/test.sh``, which installs pytest and writes 1 to
``/logs/verifier/reward.txt`` when every test passes, else 0. Here ``test.sh`` is not run (it
installs from the network): the task's pytest files are copied from the task folder into the run's
scratch folder (never into the workspace, and only at the end, so the agent cannot read them),
shown read-only at ``/tests`` as well (where Terminal-Bench puts them; ``TEST_DIR`` says so),
and Horizon's pytest runs them in a fresh sandbox on a copy of the final workspace, shown at the
Dockerfile's ``WORKDIR`` (``/app``; its ``.git`` folders kept: they are the task's own), from that folder, with the Dockerfile's ``ENV``, the
task's verifier environment (Terminal-Bench 1: its compose service's ``environment``) and ``TEST_DIR``,
``/tests``. The outcomes are read from pytest's JUnit XML report by the coding
plugin's own reader (``plugins.coding.testing``).

The reward is 1.0 when every test passes (skipped tests aside) and 0.0 otherwise, as in
Terminal-Bench; ``correct`` likewise. Not applicable when the task has no pytest files. The
``report`` component's detail says ``tests_outside_workspace``: the export's reward-hacking gate
then does not count test files the agent wrote (often the task itself) as edits of the checker.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from core.api import RewardComponent, RewardResult, SandboxLimits, Task, Trajectory, open_sandbox, remove_tree
from plugins.coding.terminal_bench.task import METADATA_KEY
from plugins.coding.testing import TestRun, new_run_dir, pytest_argv, read_pytest_run, sandbox_env

#: The reward's version: ``terminal-bench/2`` since container tasks are graded by their own
#: test script in the agent's container (``verify.py``); the bubblewrap path's grading is unchanged.
REWARD_VERSION = "terminal-bench/2"
#: Where the grading sandbox shows the tests' copy (read-only), as Terminal-Bench's container does.
TESTS_INSIDE = Path("/tests")


def is_terminal_bench(task: Task) -> bool:
    """Whether ``task`` is a Terminal-Bench task (its metadata carries ``terminal_bench``)."""
    return METADATA_KEY in task.metadata


#: Entries of the working folder listed in the task message.
LISTED_FILES = 40


def setup_text(task: Task, workspace: Path) -> str:
    """The paragraph for the task message: where the files are, what is there, and that the tests are hidden.

    Args:
        task: a Terminal-Bench task (``is_terminal_bench``).
        workspace: the episode's workspace (its top-level entries are listed, at most ``LISTED_FILES``).
    """
    tb = task.metadata[METADATA_KEY]
    workdir = tb["workdir"]
    container = task.metadata.get("container")
    where = (f"Sandbox: {tb['reason']}." if tb.get("reason") else "") + "".join(f" The {n[0].lower()}{n[1:]}." for n in (container or {}).get("notes", []))
    entries = sorted(p.name + ("/" if p.is_dir() else "") for p in workspace.iterdir() if p.name != ".git")
    listed = ", ".join(entries[:LISTED_FILES]) + (f" and {len(entries) - LISTED_FILES} more" if len(entries) > LISTED_FILES else "")
    if container:
        return (
            f"{where.strip()} Your shell commands run in that container (Linux, as root unless the image says otherwise); "
            f"its working folder {workdir} is this repository's root: the file tools take paths relative to it ({workdir}/x is x), "
            f"and files elsewhere in the container (e.g. /tmp) are reached with shell commands. {workdir} holds: {listed or 'nothing yet'}. "
            f"{'The network is reachable' if container.get('allow_internet') else 'There is no network'}. "
            f"The task is graded by tests you cannot see, run in this same container once you call finish."
        )
    return (
        (f"{where.strip()} " if where.strip() else "") +
        f"The task's files are in {workdir}, which is this repository's root: shell commands see them at "
        f"{workdir} (and in the current folder); the file tools take the same paths relative to the root "
        f"({workdir}/x is x). {workdir} holds: {listed or 'nothing yet'}. "
        f"The task is graded by tests you cannot see, run on {workdir} once you call finish."
    )


def run_task_tests(
    tb: dict[str, Any], workspace: Path, scratch: Path, *, isolated: bool = True, limits: SandboxLimits | None = None
) -> TestRun:
    """Run a Terminal-Bench task's pytest files against a copy of ``workspace``, shown at its ``workdir``.

    Args:
        tb: the task's ``Task.metadata["terminal_bench"]`` (``plugins.coding.terminal_bench.task_metadata``).
        workspace: the episode's final workspace (read, not changed).
        scratch: the run's scratch folder; the copy (removed once the tests ran), the tests and the report go to a fresh
            ``runs/NNN-terminal-bench`` folder in it.
        isolated: run in the bwrap sandbox (False raises: the working folder needs it).
        limits: the sandbox's limits; ``timeout_s`` is replaced by the task's test time limit.

    Returns:
        The test run: per-test outcomes (ids like ``test_outputs.py::test_x``), exit code, output.

    Raises:
        UserError: ``isolated`` is False.
        SandboxUnavailable: the sandbox cannot start.
    """
    folder = new_run_dir(scratch, "terminal-bench")
    copy, grading_scratch = folder / "workspace", folder / "scratch"
    # Every .git too: the run's baseline is kept outside the workspace, so a .git here is the task's
    # or the agent's own repository (git tasks: ``git init`` in /app or below), which the tests may read.
    shutil.copytree(workspace, copy, symlinks=True)
    tests = grading_scratch / "tests"  # read-only inside: scratch is, but for scratch/runs
    shutil.copytree(Path(tb["folder"]) / "tests", tests, symlinks=True)
    limits = (limits or SandboxLimits()).model_copy(update={"timeout_s": float(tb["test_timeout_s"])})
    # The tests at /tests too, where Terminal-Bench copies them (tests read their own files there).
    sandbox = open_sandbox(copy, grading_scratch, isolated=isolated, limits=limits, alias=tb["workdir"], binds={tests: TESTS_INSIDE})
    run_dir = new_run_dir(grading_scratch, "pytest")
    argv = pytest_argv(run_dir, tests, [str(tests / t) for t in tb["tests"]])
    test_dir = str(TESTS_INSIDE)  # Terminal-Bench 1's compose file sets TEST_DIR=${T_BENCH_TEST_DIR} (/tests there)
    test_env = {k: v.replace("${T_BENCH_TEST_DIR}", test_dir).replace("$T_BENCH_TEST_DIR", test_dir) for k, v in tb.get("test_env", {}).items()}
    env = {**sandbox_env(run_dir), **tb.get("env", {}), **test_env, "TEST_DIR": test_dir}
    try:
        result = sandbox.run(argv, cwd=copy, env=env)  # from the working folder, as test.sh runs
    finally:
        remove_tree(copy)  # graded: the copy of the workspace goes; the tests' reports in run_dir stay
    run = read_pytest_run(result, run_dir, tests)
    run.duration_s = result.duration_s
    return run


def terminal_bench_reward(task: Task, trajectory: Trajectory) -> RewardResult:
    """The reward of a Terminal-Bench task: 1.0 when every one of its tests passes, else 0.0.

    Args:
        task: the episode's task; ``task.metadata["terminal_bench"]`` says which tests, where.
        trajectory: the finished episode; its live ``context`` (sandbox kind and limits), or its
            ``workspace`` and ``scratch`` folders (then the bwrap sandbox with default limits).

    Returns:
        Version ``terminal-bench/2``; one component per test (``test:<id>``, 1.0 passed or
        skipped, 0.0 otherwise, weight 1) and ``report`` (weight 0: exit code, time-out, outcome
        counts, the output's tail); ``correct`` when the reward is 1.0. Not applicable for a task
        that is not a Terminal-Bench task or has no pytest files.

    Raises:
        ValueError: the trajectory has neither a context nor its workspace and scratch folders.
        UserError, SandboxUnavailable: see ``run_task_tests``.
    """
    tb = task.metadata.get(METADATA_KEY)
    if not tb:
        return RewardResult.not_applicable(REWARD_VERSION, "not a Terminal-Bench task")
    if task.metadata.get("container"):
        from plugins.coding.terminal_bench.verify import verify_in_container

        ctx = trajectory.require_context("coding")
        if not hasattr(ctx.sandbox, "copy_in"):
            raise ValueError("a container task is graded in its episode's container, and this episode's sandbox is not one")
        return verify_in_container(tb, ctx.sandbox, Path(ctx.scratch))
    if not tb.get("tests"):
        return RewardResult.not_applicable(REWARD_VERSION, "the task has no pytest files in tests/: nothing to grade by")
    ctx = getattr(trajectory, "context", None)
    workspace = ctx.workspace if ctx is not None else trajectory.workspace
    scratch = ctx.scratch if ctx is not None else trajectory.scratch
    if workspace is None or scratch is None:
        raise ValueError("the Terminal-Bench reward needs the episode's workspace and scratch folders (or its context)")
    sandbox = ctx.sandbox if ctx is not None else None
    run = run_task_tests(tb, Path(workspace), Path(scratch), isolated=sandbox.isolated if sandbox is not None else True,
                         limits=sandbox.limits if sandbox is not None else None)  # fmt: skip
    components = {
        f"test:{test_id}": RewardComponent(value=1.0 if outcome in ("passed", "skipped") else 0.0,
                                           detail={"outcome": outcome, **({"message": run.messages[test_id]} if test_id in run.messages else {})})
        for test_id, outcome in sorted(run.outcomes.items())
    }  # fmt: skip
    passed = bool(run.outcomes) and not run.not_passed and run.exit_code == 0 and not run.timed_out and run.report_trusted
    counts = {o: run.count(o) for o in ("passed", "failed", "error", "skipped")}
    components["report"] = RewardComponent(value=1.0 if passed else 0.0, weight=0.0, detail={
        "exit_code": run.exit_code, "timed_out": run.timed_out, "after": dict(run.outcomes), **counts,
        "output_tail": run.output[-2000:], "tests_outside_workspace": True,
    })  # fmt: skip
    if run.timed_out:
        summary = f"the tests were stopped by the time limit ({tb['test_timeout_s']:g} s)"
    elif not run.outcomes:
        summary = f"the tests reported nothing (exit code {run.exit_code})"
    else:
        summary = f"{counts['passed']}/{len(run.outcomes)} tests pass" + (f"; failing: {', '.join(run.not_passed[:5])}" if run.not_passed else "")
    return RewardResult(reward=1.0 if passed else 0.0, components=components, correct=passed, version=REWARD_VERSION, summary=summary)
