"""Grade a repository tree that another harness left, by a task's own (hidden) tests.

For comparing harnesses on the same task (``suites/coding-hidden/COMPARISON.md``): the tree's
changes to the task's starting tree, test files left out (Horizon's grader resets a run's test
edits before it runs the task's tests, so the other harness's are left out the same way), become
the patch of a Horizon episode that replays it (the ``reference`` policy: one ``edit_file`` per
hunk, then ``run_tests`` and ``finish``). The episode is graded exactly as Horizon's own runs
are: the hidden tests written into the grader's copy, ``fail_to_pass`` and ``pass_to_pass``
run in the project's own environment.

Usage::

    .venv/bin/python suites/grade_tree.py suites/coding-hidden/TASK /path/to/final/tree

Prints the patch's size and one JSON line: ``resolved``, ``reward``, ``fail_to_pass_passed`` of
``fail_to_pass_total``, ``pass_to_pass_broken``, the run id (``agent show RUN_ID``).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from build_task import git_diff

from core.config import horizon_home
from core.eval.runner import episode_specs, run_episode
from core.eval.tasks import load_task
from plugins.coding.testing import test_files

#: Never part of what a harness changed: caches, environments, version control, and what
#: ``pip install -e .`` writes (a repository's .gitignore keeps those out of a reviewed diff;
#: an sdist's tree has no .gitignore to do it).
SKIPPED = {".git", ".venv", "venv", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".horizon", "node_modules", ".eggs"}
#: Build outputs at the tree's top.
SKIPPED_TOP = {"build", "dist"}


def changed_sources(start: Path, final: Path) -> str:
    """A git diff (``a/…``, ``b/…``) of the files ``final`` changes or adds relative to ``start``,
    test files and ``SKIPPED`` folders left out; deleted files are left out too (the replay edits only).

    Raises:
        SystemExit: git cannot compare two versions of a file (``build_task.git_diff``).
        UnicodeDecodeError: a changed file is not UTF-8 text.
    """
    tests = set(test_files(start)) | set(test_files(final))
    changed: dict[str, tuple[str | None, str]] = {}
    for path in sorted(final.rglob("*")):
        rel = path.relative_to(final)
        if (not path.is_file() or path.is_symlink() or SKIPPED & set(rel.parts) or rel.parts[0] in SKIPPED_TOP or rel.suffix == ".pyc"
                or any(part.endswith(".egg-info") for part in rel.parts) or rel.as_posix() in tests):  # fmt: skip
            continue
        old = start / rel
        new = path.read_bytes()
        if old.is_file() and old.read_bytes() == new:
            continue
        changed[rel.as_posix()] = (old.read_bytes().decode("utf-8") if old.is_file() else None, new.decode("utf-8"))
    return git_diff(changed)


def main(argv: list[str] | None = None) -> int:
    """Grade ``TREE`` as a solution of ``TASK``; exit 0 when resolved, 1 when not, 2 on bad input."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("task", type=Path, help="a task folder (task.json with fail_to_pass, and hidden_tests)")
    parser.add_argument("tree", type=Path, help="the final repository tree another harness left")
    parser.add_argument("--home", type=Path, default=None, help="Horizon home for the grading run (default: $HORIZON_HOME)")
    args = parser.parse_args(argv)
    task = load_task(args.task)
    patch = changed_sources(task.repo, args.tree.resolve())
    print(f"patch: {patch.count(chr(10))} lines, {sum(1 for line in patch.splitlines() if line.startswith('diff --git'))} files")
    if not patch:
        print(json.dumps({"resolved": False, "reward": 0.0, "why": "the tree changes no source file"}))
        return 1
    with tempfile.TemporaryDirectory(prefix="horizon-grade-tree-") as tmp:
        copy = Path(tmp) / "suite" / task.folder.name
        shutil.copytree(task.folder, copy)
        (copy / "fix.diff").write_text(patch, encoding="utf-8")
        replay = load_task(copy)
        home = args.home or horizon_home()
        [spec] = episode_specs([replay], plugin="coding", attempts=1, policy="reference", policy_config=None,
                               limits={"max_steps": 200}, pricing={}, isolated=True, home=home, scripts_dir=Path(tmp) / "scripts")  # fmt: skip
        result = run_episode(spec)
    print(json.dumps({"resolved": result.resolved, "reward": result.reward, "fail_to_pass_passed": result.fail_to_pass_passed,
                      "fail_to_pass_total": result.fail_to_pass_total, "pass_to_pass_broken": result.pass_to_pass_broken,
                      "summary": result.summary, "run_id": result.run_id}))  # fmt: skip
    return 0 if result.resolved else 1


if __name__ == "__main__":
    raise SystemExit(main())
