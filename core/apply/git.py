"""git, with nothing of the user's configuration: the scrubbed environment of
``core.gitstore.git_env``, an empty database of Horizon's own instead of the repository's
(``_empty_git_dir``), no hooks and no fsmonitor. ``_git_numstat`` is git's own reading of a
patch's files, which the review is checked against."""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

from core.apply.libc import _die_with_parent
from core.errors import UserError
from core.gitstore import git_env


def _git_env(work_tree: Path, git_dir: Path) -> dict[str, str]:
    """``git_env`` (no API keys or other secrets, no system or global configuration) with git's
    database ``git_dir`` (empty, ours), its work tree ``work_tree``, and no repository discovery
    above ``work_tree``."""
    return git_env() | {
        "GIT_CEILING_DIRECTORIES": str(work_tree.parent),
        "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(work_tree),
    }


_GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.autocrlf=false",
        "-c", "core.symlinks=true", "-c", "core.filemode=true"]


def _git(args: list[str], work_tree: Path, git_dir: Path, stdin: bytes | None = None,
         lock_fd: int | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run git; with ``lock_fd`` (the transaction folder's lock) git holds the lock too and dies
    with Horizon, so a killed apply's git never writes on while the next one recovers."""
    # safe.directory names only the database git runs with, which Horizon made (as in core.gitstore)
    argv = [*_GIT, "-c", f"safe.directory={Path(git_dir).resolve()}", *args]
    if lock_fd is None:
        return subprocess.run(argv, cwd=work_tree, env=_git_env(work_tree, git_dir), input=stdin, capture_output=True, check=False)
    return subprocess.run(argv, cwd=work_tree, env=_git_env(work_tree, git_dir), input=stdin, capture_output=True, check=False,
                          pass_fds=(lock_fd,), preexec_fn=_die_with_parent)


def _empty_git_dir(path: Path) -> Path:
    """``path`` made an empty git database (once): git reads no configuration, hooks or filter
    drivers of the user's repository with it, but still the work tree's ``.gitattributes`` (line
    endings), as ``git apply`` in the repository would."""
    if not (path / "HEAD").is_file():
        tmp = path.with_name(path.name + f".tmp-{secrets.token_hex(4)}")
        env = {k: v for k, v in _git_env(path.parent, tmp).items() if k not in ("GIT_DIR", "GIT_WORK_TREE")}
        proc = subprocess.run(["git", "init", "-q", "--bare", "--template=", str(tmp)], env=env, capture_output=True, check=False)
        if proc.returncode != 0:
            raise UserError(f"git init failed: {proc.stderr.decode(errors='replace').strip()}")
        try:
            os.rename(tmp, path)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
    return path


def _git_numstat(repo: Path, data: bytes) -> list[tuple[str, int, int]]:
    proc = _git(["apply", "--numstat", "-z", "-"], repo, Path(os.devnull), stdin=data)  # reads only the patch
    if proc.returncode != 0:
        raise UserError(f"git cannot read the patch: {proc.stderr.decode(errors='replace').strip()}; it is not applied")
    out = []
    for record in proc.stdout.split(b"\0"):
        if not record:
            continue
        added, removed, name = record.split(b"\t", 2)
        out.append((name.decode("utf-8", "surrogateescape"), int(added) if added != b"-" else 0, int(removed) if removed != b"-" else 0))
    return out
