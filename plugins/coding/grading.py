"""The end-of-episode test run, SWE-bench style: the starting files plus the patch, test files reset.

SWE-bench grades a model's patch by applying it to a clean checkout, then putting the task's
own test files in place, then running the tests (Jimenez et al., 2024, section 2.2). Here the
clean checkout is the run's start tree (``core.workspace.materialize``: every file the workspace
held at the start, installed packages and build outputs included, caches left out), and the
patch is the run's final diff, the same text a reviewer reads and ``agent apply`` applies. So
what the agent left in the workspace outside the patch (bytecode, pytest's rewrite caches,
edits to ignored files, nested ``.git`` folders) never reaches the grader.

Before the agent starts, ``save_original_tests`` copies every test file (``testing.test_files``)
into the run's scratch folder, which the agent's commands cannot write. At the end,
``grading_run`` builds the patched copy in scratch, writes the original test files back into
it, deletes test files the patch added (a new ``conftest.py`` could rewrite outcomes), and runs
the suite there in a fresh sandbox of the same kind, with bytecode caches redirected to an
empty folder. The workspace itself is not touched.
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from core import workspace as ws
from core.errors import UserError
from core.safe_io import remove_tree, write_new
from core.sandbox.base import Sandbox
from plugins.coding.checker_inputs import checker_changes
from plugins.coding.environment import load_environment
from plugins.coding.reward import edited_test_files, file_digests
from plugins.coding.testing import TestRun, new_run_dir, run_test_suite, test_files

ORIGINAL_TESTS_DIR = "original_tests"


def save_original_tests(workspace: Path, scratch: Path) -> list[str]:
    """Copy the repository's test files into ``scratch/original_tests``.

    Args:
        workspace: repository root before the episode.
        scratch: the run's scratch folder (read-only to the agent's commands).

    Returns:
        The saved paths, relative to the repository root.
    """
    saved = test_files(workspace)
    target = scratch / ORIGINAL_TESTS_DIR
    for rel in saved:
        source = workspace / rel
        if source.is_symlink() or not source.is_file():
            continue
        (target / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target / rel)
    return saved


def _sandbox_like(sandbox: Sandbox, workspace: Path, scratch: Path) -> Sandbox:
    """A sandbox of the same kind and limits as ``sandbox``, on another workspace."""
    from core.sandbox.bwrap import BwrapSandbox
    from core.sandbox.unconfined import UnconfinedSandbox

    if isinstance(sandbox, BwrapSandbox):
        return BwrapSandbox(
            workspace, scratch, limits=sandbox.limits, allow_network=sandbox.allow_network,
            readonly=sandbox.readonly, use_cgroups=sandbox.use_cgroups,
        )  # fmt: skip
    if isinstance(sandbox, UnconfinedSandbox):
        return UnconfinedSandbox(workspace, scratch, limits=sandbox.limits)
    return type(sandbox)(workspace, scratch, limits=sandbox.limits)  # another Sandbox implementation


def reset_tests(copy: Path, originals: Path, original_list: list[str], present: list[str] | None = None) -> dict[str, list[str]]:
    """Put the original test files back into ``copy`` and delete test files that were not there.

    Args:
        present: ``test_files(copy)`` when the caller has it already (else it is listed here).

    Returns:
        ``{"restored": [...], "removed": [...]}``: test files rewritten to their original
        content, and test files added during the episode that were deleted.
    """
    restored, removed = [], []
    for rel in original_list:
        saved = originals / rel
        if not saved.is_file():
            continue
        # The patch may have made a folder on the way a link to a host folder: Horizon, not
        # sandboxed, must never write or delete through it (make_parents replaces such links).
        target = ws.make_parents(copy, rel)
        original = saved.read_bytes()
        if target.is_dir() and not target.is_symlink():
            remove_tree(target)  # a real folder: links inside are removed, never followed; any depth
        if target.is_symlink() or not target.is_file() or target.read_bytes() != original:
            write_new(target, original)  # removes a link or special file there, never follows it
            restored.append(rel)
    known = set(original_list)
    for rel in test_files(copy) if present is None else present:
        if rel not in known:
            ws.make_parents(copy, rel).unlink(missing_ok=True)
            removed.append(rel)
    return {"restored": sorted(restored), "removed": sorted(removed)}


@dataclass
class Graded:
    """The end-of-episode grading run.

    Attributes:
        run: the test run on the patched copy (None when the patch did not apply).
        reset: what ``reset_tests`` changed (``{"restored": [...], "removed": [...]}``).
        edited_tests: test files the patch changes, adds or deletes.
        checker_changes: why the patch changes the test runner's configuration or loading
            (``plugins.coding.checker_inputs``); empty when it does not.
        patch_sha256: SHA-256 of the graded patch's bytes (UTF-8, surrogate escapes kept), so
            the verdict names the exact text it judged.
        patch_error: why the patch did not apply to the starting files ("" when it did).
    """

    run: TestRun | None
    reset: dict[str, list[str]] = field(default_factory=dict)
    edited_tests: list[str] = field(default_factory=list)
    checker_changes: list[str] = field(default_factory=list)
    patch_sha256: str = ""
    patch_error: str = ""


def grading_run(sandbox: Sandbox, workspace: Path, baseline: Path, scratch: Path, original_list: list[str],
                original_digests: dict[str, str]) -> Graded:  # fmt: skip
    """Run the whole suite on the starting files plus the run's patch, test files reset.

    Args:
        sandbox: the episode's sandbox (its kind and limits are reused).
        workspace: the workspace at the end of the episode (only its patch is taken).
        baseline: the run's git database (``core.workspace.snapshot``).
        scratch: the run's scratch folder holding ``original_tests``.
        original_list: the test files saved at the start (``save_original_tests``).
        original_digests: ``{test file: sha256}`` at the start (``reward.file_digests``).

    Returns:
        A ``Graded`` record.
    """
    tree = ws.save_tree(workspace, baseline)
    patch = ws.diff_trees(baseline, "HEAD^{tree}", tree)
    digest = hashlib.sha256(patch.encode("utf-8", "surrogateescape")).hexdigest()
    folder = new_run_dir(scratch, "grading")
    (folder / "patch.diff").write_text(patch, errors="surrogateescape")
    copy = folder / "workspace"
    try:
        ws.materialize(baseline, copy, patch)
    except UserError as exc:
        return Graded(run=None, patch_sha256=digest, patch_error=str(exc))
    tests_now = test_files(copy)
    edited = edited_test_files(original_digests, file_digests(copy, tests_now))
    changed = ws.changed_paths(baseline, "HEAD^{tree}", tree)
    reasons = checker_changes(ws.start_files(baseline, changed), copy, changed, set(original_list) | set(tests_now))
    reset = reset_tests(copy, scratch / ORIGINAL_TESTS_DIR, original_list, present=tests_now)
    grading_scratch = folder / "scratch"
    # The episode's test environment (saved in its scratch at set-up), with the copy's own source roots.
    run = run_test_suite(_sandbox_like(sandbox, copy, grading_scratch), copy, grading_scratch, environment=load_environment(scratch))
    return Graded(run=run, reset=reset, edited_tests=edited, checker_changes=reasons, patch_sha256=digest)
