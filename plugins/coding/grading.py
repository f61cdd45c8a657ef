"""The end-of-episode test run, SWE-bench style: on a copy of the workspace with the test files reset.

SWE-bench grades a model's patch by applying it, then putting the task's own test files in
place, then running the tests (Jimenez et al., 2024, section 2.2). Here, before the agent starts,
``save_original_tests`` copies every test file (``testing.test_files``) into the run's scratch
folder, which the agent's commands cannot write. At the end, ``grading_run`` copies the
workspace (without ``.git``; files under ``node_modules`` are hard links) into scratch, writes the original test files back into the copy,
deletes test files the agent added (a new ``conftest.py`` could rewrite outcomes), and runs the
suite there in a fresh sandbox of the same kind. The workspace itself is not touched, so the
run's final diff still shows every edit the agent made, test edits included.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from core.sandbox.base import Sandbox
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


def _copy_or_link(source: str, target: str) -> None:
    """Copy a file; hard-link it instead inside ``node_modules`` (installed packages are large, and
    no test writes into them), falling back to a copy where links are not possible."""
    if "/node_modules/" in source:
        try:
            os.link(source, target, follow_symlinks=False)
            return
        except OSError:
            pass
    shutil.copy2(source, target, follow_symlinks=False)


def reset_tests(copy: Path, originals: Path, original_list: list[str]) -> dict[str, list[str]]:
    """Put the original test files back into ``copy`` and delete test files that were not there.

    Returns:
        ``{"restored": [...], "removed": [...]}``: test files rewritten to their original
        content, and test files added during the episode that were deleted.
    """
    restored, removed = [], []
    for rel in original_list:
        saved, target = originals / rel, copy / rel
        if not saved.is_file():
            continue
        if target.is_symlink() or target.is_dir():
            shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
        if not target.is_file() or target.read_bytes() != saved.read_bytes():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(saved, target)
            restored.append(rel)
    known = set(original_list)
    for rel in test_files(copy):
        if rel not in known:
            (copy / rel).unlink(missing_ok=True)
            removed.append(rel)
    return {"restored": sorted(restored), "removed": sorted(removed)}


def grading_run(sandbox: Sandbox, workspace: Path, scratch: Path, original_list: list[str]) -> tuple[TestRun, dict[str, list[str]]]:
    """Run the whole suite on a copy of ``workspace`` whose test files are the originals.

    Args:
        sandbox: the episode's sandbox (its kind and limits are reused).
        workspace: the workspace at the end of the episode (left unchanged).
        scratch: the run's scratch folder holding ``original_tests``.
        original_list: the test files saved at the start (``save_original_tests``).

    Returns:
        ``(run, reset)``: the test run on the copy, and what ``reset_tests`` changed.
    """
    folder = new_run_dir(scratch, "grading")
    copy = folder / "workspace"
    shutil.copytree(workspace, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"), copy_function=_copy_or_link)
    reset = reset_tests(copy, scratch / ORIGINAL_TESTS_DIR, original_list)
    grading_scratch = folder / "scratch"
    run = run_test_suite(_sandbox_like(sandbox, copy, grading_scratch), copy, grading_scratch)
    return run, reset
