"""Running given tests on the starting code: the agent's reproduction check in one ``run_tests`` call.

A test the agent writes must fail on the starting code and pass with the fix; the grader checks
exactly that (``grading.reproduction_run``). ``run_on_start`` lets the agent see it before it
finishes: the starting files are rebuilt from the run's git database (``core.workspace.materialize``)
in a fresh folder of the run's scratch, the repository's test files that differ now (added or
edited, ``conftest.py`` included) are copied in as they are, and the named tests run there in a
sandbox of the same kind as the episode's (``sandbox_like``), in the test environment chosen at
set-up. The workspace is not touched; the copy is removed afterwards.
"""

from __future__ import annotations

from pathlib import Path

from core.api import Sandbox, ToolError, make_parents, materialize, read_regular, remove_tree, sandbox_like, write_new
from plugins.coding.environment import load_environment
from plugins.coding.testing import TestRun, new_run_dir, run_test_suite, test_files


def changed_test_files(workspace: Path, start: Path) -> list[str]:
    """The workspace's test files (``testing.test_files``) that the start tree ``start`` lacks or
    holds with other bytes, sorted; links and files that cannot be read are left out."""
    changed = []
    for rel in test_files(workspace):
        path = workspace / rel
        if path.is_symlink() or not path.is_file():
            continue
        try:
            data = read_regular(path)
        except OSError:
            continue
        old = start / rel
        try:
            same = old.is_file() and not old.is_symlink() and read_regular(old) == data
        except OSError:
            same = False
        if not same:
            changed.append(rel)
    return changed


def run_on_start(sandbox: Sandbox, workspace: Path, baseline: Path | None, scratch: Path, tests: list[str]) -> tuple[TestRun, list[str]]:
    """Run ``tests`` on the starting code with the test files as they are now.

    Args:
        sandbox: the episode's sandbox (its kind, limits and hidden folders are reused).
        workspace: the episode's workspace (only read).
        baseline: the run's git database of its starting files (``ToolContext.baseline``).
        scratch: the run's scratch folder; the copy is made in a fresh ``runs/NNN-start`` there.
        tests: test ids or paths, as ``run_test_suite`` takes them; at least one.

    Returns:
        ``(the run on the starting code, the test files copied in from the workspace)``.

    Raises:
        ToolError: no tests were named, or the run has no starting files to rebuild.
    """
    if not [t for t in tests if t.strip()]:
        raise ToolError("on_start needs the tests to run (ids or paths); the whole suite's outcomes at the start are "
                        "in the set-up message")  # fmt: skip
    if baseline is None or not (baseline / "HEAD").is_file():
        raise ToolError("this run keeps no starting files, so nothing can run on the starting code; run the tests without on_start")
    folder = new_run_dir(scratch, "start")
    tree = folder / "tree"
    try:
        materialize(baseline, tree, "")
        copied = changed_test_files(workspace, tree)
        for rel in copied:
            write_new(make_parents(tree, rel), read_regular(workspace / rel))  # never through a link the start tree holds
        run_scratch = folder / "scratch"
        run_scratch.mkdir()
        run = run_test_suite(sandbox_like(sandbox, tree, run_scratch), tree, run_scratch, tests,
                             environment=load_environment(scratch))  # fmt: skip
    finally:
        remove_tree(tree)
    return run, copied
