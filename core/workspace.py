"""Episode workspaces: a private copy of the user's repository, and the patch that leaves it.

The user's files are never touched during a run. The workspace is a copy; a snapshot of it is
committed at the start into a git database kept outside the workspace (``baseline.git``), so
the agent can neither see nor rewrite the baseline, and the patch is ``git diff`` against it.
The user's files change only through ``apply_patch`` (``agent run --apply`` or ``agent apply``).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from core.errors import UserError

# Build outputs and caches never belong in a patch, whatever the repository's .gitignore says.
ALWAYS_EXCLUDED = [".horizon/", "__pycache__/", "*.pyc", ".pytest_cache/", ".ruff_cache/", "target/", "*.class", ".venv/", "node_modules/"]


def _git(*args: str, cwd: Path | None = None, git_dir: Path | None = None, work_tree: Path | None = None) -> str:
    """Run git and return its output; bytes that are not UTF-8 (a Latin-1 source file in a diff)
    survive as surrogate escapes, so writing the text back with the same handler is byte-exact."""
    cmd = ["git", "-c", "safe.directory=*", "-c", "core.autocrlf=false"]
    if git_dir is not None:
        cmd += [f"--git-dir={git_dir}"]
    if work_tree is not None:
        cmd += [f"--work-tree={work_tree}"]
    proc = subprocess.run(cmd + list(args), cwd=cwd, capture_output=True, text=True, errors="surrogateescape")
    if proc.returncode != 0:
        raise UserError(f"git {' '.join(args[:2])} failed: {proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def _is_git_repo(path: Path) -> bool:
    proc = subprocess.run(
        ["git", "-c", "safe.directory=*", "rev-parse", "--show-toplevel"], cwd=path, capture_output=True, text=True
    )
    return proc.returncode == 0 and Path(proc.stdout.strip()).resolve() == path.resolve()


def copy_repository(repo: Path, dest: Path) -> None:
    """Copy ``repo`` to ``dest`` (which must not exist).

    In a git repository, the tracked and untracked-but-not-ignored files are copied, plus
    ``.git`` (the sandbox mounts it read-only); elsewhere everything but ``ALWAYS_EXCLUDED``.

    Raises:
        UserError: ``repo`` is not a folder.
    """
    if not repo.is_dir():
        raise UserError(f"{repo} is not a folder; pass --repo PATH to a repository")
    if _is_git_repo(repo):
        listed = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=repo).split("\0")
        dest.mkdir(parents=True)
        for rel in filter(None, listed):
            src = repo / rel
            if not src.exists() and not src.is_symlink():
                continue  # deleted in the working tree but still in the index
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target, follow_symlinks=False)
        shutil.copytree(repo / ".git", dest / ".git", symlinks=True)
    else:
        patterns = [p.rstrip("/") for p in ALWAYS_EXCLUDED]
        shutil.copytree(repo, dest, symlinks=True, ignore=shutil.ignore_patterns(*patterns))


def snapshot(workspace: Path, baseline: Path) -> None:
    """Commit the workspace as it is now into the git database ``baseline`` (outside it)."""
    _git("init", "-q", "--bare", str(baseline))
    (baseline / "info").mkdir(exist_ok=True)
    (baseline / "info" / "exclude").write_text("\n".join(ALWAYS_EXCLUDED) + "\n")
    _git("add", "-A", git_dir=baseline, work_tree=workspace)
    _git(
        "-c", "user.name=horizon", "-c", "user.email=horizon@localhost", "commit", "-q", "--allow-empty",
        "-m", "baseline", git_dir=baseline, work_tree=workspace,
    )


def diff(workspace: Path, baseline: Path) -> str:
    """Return the unified diff (git format, binary-safe) from the baseline to the workspace now."""
    _git("add", "-A", git_dir=baseline, work_tree=workspace)
    return _git("diff", "--cached", "--binary", "HEAD", git_dir=baseline, work_tree=workspace)


def save_tree(workspace: Path, baseline: Path) -> str:
    """Store the workspace's current files in the baseline database; return the tree's hash.

    Files that ``ALWAYS_EXCLUDED`` or the repository's .gitignore exclude are not saved.
    """
    _git("add", "-A", git_dir=baseline, work_tree=workspace)
    return _git("write-tree", git_dir=baseline, work_tree=workspace).strip()


def restore_tree(workspace: Path, baseline: Path, tree: str) -> None:
    """Make the workspace's files exactly those of ``tree`` (from ``save_tree``).

    Changed and deleted files are restored and files the tree lacks are removed; ignored files
    (build outputs, caches) are left alone, as are ``.git`` and ``.horizon``.
    """
    _git("read-tree", tree, git_dir=baseline, work_tree=workspace)
    _git("checkout-index", "-a", "-f", git_dir=baseline, work_tree=workspace)
    _git("clean", "-f", "-d", "-q", git_dir=baseline, work_tree=workspace)


class CallJournal:
    """Undo for tool calls that a crash cut short, so a resumed run re-runs them on clean files.

    Before each call that may change the workspace, ``before(call_id)`` saves the files (a git
    tree in the baseline database) and names the call in ``path``, replaced atomically. When a
    resumed run meets the same call again, its observation was never stored: the call did not
    finish, so the workspace goes back to the saved tree before the call runs again.

    Args:
        workspace: the episode's workspace.
        baseline: the run's baseline git database (see ``snapshot``).
        path: the journal file, outside the workspace (the run's folder).
    """

    def __init__(self, workspace: Path, baseline: Path, path: Path) -> None:
        self.workspace, self.baseline, self.path = workspace, baseline, path

    def before(self, call_id: str) -> bool:
        """Prepare the workspace for ``call_id``; return True when a cut-short attempt was undone."""
        if self.path.exists():
            entry = json.loads(self.path.read_text())
            if entry["call_id"] == call_id:
                restore_tree(self.workspace, self.baseline, entry["tree"])
                return True
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"call_id": call_id, "tree": save_tree(self.workspace, self.baseline)}))
        os.replace(tmp, self.path)
        return False


def apply_patch(repo: Path, patch: Path) -> None:
    """Apply ``patch`` to the user's ``repo``, all or nothing.

    Raises:
        UserError: the patch is empty, already applied, or does not apply (the repository
            changed since the run started); nothing is changed in those cases.
    """
    if not patch.is_file():
        raise UserError(f"no patch at {patch}")
    if not patch.read_text().strip():
        raise UserError("the run's patch is empty: the agent changed nothing, so there is nothing to apply")
    # A ceiling stops git from finding an enclosing repository, whose root it would otherwise
    # take as the base of the patch's paths (and silently skip every file).
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(repo.resolve().parent)}
    proc = subprocess.run(["git", "apply", "--check", str(patch)], cwd=repo, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        reverse = subprocess.run(["git", "apply", "--reverse", "--check", str(patch)], cwd=repo, capture_output=True, env=env)
        if reverse.returncode == 0:
            raise UserError(f"the patch is already applied to {repo}; nothing changed")
        raise UserError(
            f"the patch does not apply to {repo}: {proc.stderr.strip()}; your files are unchanged. "
            f"Inspect it with: git apply --stat {patch}"
        )
    subprocess.run(["git", "apply", str(patch)], cwd=repo, check=True, capture_output=True, env=env)
