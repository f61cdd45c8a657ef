"""Episode workspaces: a private copy of the user's repository, and the patch that leaves it.

The user's files are never touched during a run. The workspace is a copy; a snapshot of it is
stored at the start in a git database kept outside the workspace (``baseline.git``), so the
agent can neither see nor rewrite the baseline, and the patch is the diff from that snapshot.
The user's files change only through ``core.apply`` (``agent run --apply`` or ``agent apply``).

No git process ever looks at the workspace (``core.gitstore``): Horizon reads its files itself
and git only stores and compares the bytes. Two trees are kept at the start:

- the **baseline** (``HEAD``): the files a patch may change: everything but ``.gitignore``-d
  files and ``ALWAYS_EXCLUDED`` (build outputs, caches, installed environments);
- the **start** (``START_REF``): everything the workspace held but caches (``CACHES``), so that
  a grader can rebuild the starting files exactly, installed packages and build outputs
  included, and put the patch on top (``materialize``).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from core import gitstore
from core.errors import UserError
from core.gitstore import Entry
from core.safe_io import make_dirs

#: Files that never count as content: caches a program writes for itself (bytecode, test-runner
#: caches, compiled classes) and Horizon's own folder. They are not carried into a grading copy.
CACHES = [".horizon/", "__pycache__/", "*.pyc", "*.pyo", ".pytest_cache/", ".ruff_cache/", ".mypy_cache/", "*.class"]
# Build outputs and caches never belong in a patch, whatever the repository's .gitignore says.
ALWAYS_EXCLUDED = [*CACHES, "target/", ".venv/", "node_modules/"]
#: The ref of the start tree in ``baseline.git``.
START_REF = "refs/horizon/start"
_IDENTITY = ("-c", "user.name=horizon", "-c", "user.email=horizon@localhost")


def _user_git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    """Run git in the user's own repository (content the user chose to work on), with what could
    run a program switched off: no hooks, no fsmonitor, no submodule recursion, no pager."""
    hardening = ["-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "submodule.recurse=false",
                 "-c", "core.untrackedCache=false", "-c", "diff.external="]  # fmt: skip
    env = {**gitstore.git_env(), "HOME": os.environ.get("HOME", "/nonexistent")}
    env.pop("GIT_CONFIG_GLOBAL")  # the user's own ignore rules (core.excludesFile) still apply
    env["GIT_CEILING_DIRECTORIES"] = str(repo.resolve().parent)
    try:
        return subprocess.run(["git", *hardening, *args], cwd=repo, capture_output=True, env=env, check=False)
    except FileNotFoundError:
        raise UserError("git is not installed; install it (Debian: apt-get install git)") from None


def _repository_kind(path: Path) -> str:
    """``work tree`` when ``path`` is the top of a git work tree, ``bare`` for a bare repository,
    else ``plain``."""
    if not (path / ".git").exists():
        if (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir():
            return "bare"
        return "plain"
    proc = _user_git(path, "rev-parse", "--show-toplevel")
    top = proc.stdout.decode(errors="surrogateescape").strip()
    return "work tree" if proc.returncode == 0 and top and Path(top).resolve() == path.resolve() else "plain"


def copy_repository(repo: Path, dest: Path) -> list[str]:
    """Copy ``repo`` to ``dest`` (which must not exist).

    In a git work tree, the tracked and untracked-but-not-ignored files are copied, submodules
    and nested repositories as plain folders (their files, and their ``.git`` as data), plus
    ``.git`` (the sandbox mounts it read-only); elsewhere everything but ``ALWAYS_EXCLUDED``.
    Nothing is followed out of ``repo``: links are copied as links.

    A ``.git`` file (a linked worktree's or a submodule checkout's) is copied as a file. FIFOs,
    sockets and devices are not content and are left out.

    Returns:
        The paths git tracks in ``repo`` (for ``snapshot``: a tracked file stays in the baseline
        even where ``.gitignore`` names it); empty for a folder that is not a git work tree.

    Raises:
        UserError: ``repo`` is not a folder, or it is a bare repository (no files to work on).
    """
    if not repo.is_dir():
        raise UserError(f"{repo} is not a folder; pass --repo PATH to a repository")
    kind = _repository_kind(repo)
    if kind == "bare":
        raise UserError(f"{repo} is a bare git repository (no working files); clone it first: git clone {repo} DIR, then --repo DIR")
    patterns = [p.rstrip("/") for p in ALWAYS_EXCLUDED]
    if kind == "plain":
        shutil.copytree(repo, dest, symlinks=True, ignore=content_only(patterns))
        return []
    tracked = _listed(repo, "--cached")
    dest.mkdir(parents=True)
    for rel in dict.fromkeys(tracked + _listed(repo, "--others", "--exclude-standard")):
        src, target = repo / rel, dest / rel
        try:
            info = os.lstat(src)
        except OSError:
            continue  # deleted in the working tree but still in the index
        target.parent.mkdir(parents=True, exist_ok=True)
        if stat.S_ISDIR(info.st_mode):  # a submodule or a nested repository: its files as data
            shutil.copytree(src, target, symlinks=True, dirs_exist_ok=True, ignore=content_only(patterns))
        elif stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode):
            shutil.copy2(src, target, follow_symlinks=False)
    git_path = repo / ".git"
    if git_path.is_dir() and not git_path.is_symlink():
        shutil.copytree(git_path, dest / ".git", symlinks=True, ignore=content_only([]))
    else:  # a linked worktree or a submodule checkout: ".git" is a file naming the real database
        shutil.copy2(git_path, dest / ".git", follow_symlinks=False)
    return tracked


def _listed(repo: Path, *options: str) -> list[str]:
    """``git ls-files -z OPTIONS`` in the user's repository, as paths.

    Raises:
        UserError: git failed (its message is in the text).
    """
    proc = _user_git(repo, "ls-files", "-z", *options)
    if proc.returncode != 0:
        raise UserError(f"git ls-files failed in {repo}: {proc.stderr.decode(errors='replace').strip()}")
    return [p for p in os.fsdecode(proc.stdout).split("\0") if p]


def content_only(patterns: list[str]) -> Callable[[str, list[str]], set[str]]:
    """``copytree``'s ignore: the names matching ``patterns``, and FIFOs, sockets and devices
    (copying one would block or fail; they are not content)."""
    by_name = shutil.ignore_patterns(*patterns)

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = set(by_name(folder, names))
        for name in names:
            try:
                mode = os.lstat(os.path.join(folder, name)).st_mode
            except OSError:
                continue
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
                skipped.add(name)
        return skipped

    return ignore


#: The stat cache's file in the baseline database (``gitstore.StatCache``).
STAT_CACHE = "horizon-stat.cache"
#: The kinds of tree a workspace is stored as (``gitstore.store_tree``'s labels): the start tree
#: (caches left out, ``.gitignore`` not read) and the baseline and every later save.
_START, _WORK = "start", "work"


def _stat_cache(baseline: Path) -> gitstore.StatCache:
    return gitstore.StatCache.open(baseline / STAT_CACHE, persisted=(_WORK,))


_TRACKED: dict[tuple[str, str], gitstore.Tracked] = {}  # (database, baseline commit) -> its paths


def _tracked(baseline: Path) -> gitstore.Tracked:
    """Paths in the baseline tree: git ignores no tracked file, and neither does a snapshot.
    The baseline commit never changes after ``snapshot``, so its listing is read once per process
    (the last few databases are kept)."""
    try:
        ref = (baseline / "HEAD").read_text().strip().removeprefix("ref: ")
        commit = (baseline / ref).read_text().strip()
    except OSError:  # a packed ref, or no commit yet
        try:
            commit = gitstore.git(baseline, "rev-parse", "--verify", "-q", "HEAD").decode().strip()
        except UserError:
            return gitstore.Tracked()
    key = (str(baseline.resolve()), commit)
    if key not in _TRACKED:
        while len(_TRACKED) >= 8:
            _TRACKED.pop(next(iter(_TRACKED)))
        _TRACKED[key] = gitstore.Tracked(e.path for e in gitstore.list_tree(baseline, key[1]))
    return _TRACKED[key]


def _store(workspace: Path, baseline: Path, *, start: bool = False, tracked: gitstore.Tracked | list[str] | tuple[str, ...] = (),
           leave_out: dict[str, str] | None = None) -> gitstore.StoredTree:  # fmt: skip
    """Store the workspace's files as a tree in ``baseline`` (``gitstore.store_tree``, reading only
    the files whose stat changed since the last save), and save the stat cache."""
    cache = _stat_cache(baseline)
    if start:
        stored = gitstore.store_tree(workspace, baseline, cache, label=_START, always_excluded=CACHES, read_gitignore=False)
    else:
        stored = gitstore.store_tree(workspace, baseline, cache, label=_WORK, always_excluded=ALWAYS_EXCLUDED, tracked=tracked,
                                     read_gitignore=True, leave_out=leave_out)  # fmt: skip
        try:  # the last saved tree (``last_saved_tree``), read back by the export's gates; a save is not lost without it
            tmp = baseline / (LAST_TREE + ".tmp")
            tmp.write_text(stored.sha + "\n")
            os.replace(tmp, baseline / LAST_TREE)
        except OSError:
            pass
    cache.save()
    return stored


def snapshot(workspace: Path, baseline: Path, tracked: list[str] | tuple[str, ...] = ()) -> None:
    """Store the workspace as it is now in a new git database ``baseline`` (outside it): the
    baseline tree as ``HEAD``'s commit and the start tree (caches left out) at ``START_REF``.
    Each file is read once (the second tree finds it in the stat cache).

    Args:
        tracked: paths the user's repository tracks (``copy_repository``'s answer): kept in the
            baseline even where ``.gitignore`` names them, as git would.
    """
    gitstore.init(baseline)
    start = _store(workspace, baseline, start=True).sha
    tree = _store(workspace, baseline, tracked=list(tracked)).sha
    commit = gitstore.git(baseline, *_IDENTITY, "commit-tree", tree, "-m", "baseline").decode().strip()
    gitstore.git(baseline, "update-ref", "HEAD", commit)
    gitstore.git(baseline, "update-ref", START_REF, start)


def save_tree(workspace: Path, baseline: Path, *, patch: bool = False) -> str:
    """Store the workspace's current files in the baseline database; return the tree's hash.

    Files that ``ALWAYS_EXCLUDED`` or the repository's .gitignore exclude are not saved, unless
    they are in the baseline tree (tracked). Only files whose ``lstat`` (inode, size, mtime,
    ctime, mode) changed since the last save are read, and only the trees of the folders they
    are in are written again (``gitstore.store_tree``).

    Args:
        patch: the tree a patch is taken from: files a test run wrote and nothing changed since
            (``record_test_outputs``) are left out too.
    """
    return _store(workspace, baseline, tracked=_tracked(baseline), leave_out=_test_outputs(baseline) if patch else None).sha


#: The hash of the tree the last save stored (``snapshot``'s baseline, then each ``save_tree``), in
#: the baseline database (the agent's commands cannot write it): the files a run ended with.
LAST_TREE = "horizon-last-tree"


def last_saved_tree(baseline: Path) -> str:
    """The tree hash the last save into ``baseline`` stored (``LAST_TREE``); "" when none is
    recorded (a run made before the record existed)."""
    try:
        sha = (baseline / LAST_TREE).read_text().strip()
    except OSError:
        return ""
    return sha if len(sha) in (40, 64) and all(c in "0123456789abcdef" for c in sha) else ""


#: ``{path: blob sha}`` of files a test run created (``record_test_outputs``), in the baseline
#: database, which the agent's commands cannot write.
TEST_OUTPUTS = "horizon-test-outputs.json"


def _test_outputs(baseline: Path) -> dict[str, str]:
    try:
        recorded = json.loads((baseline / TEST_OUTPUTS).read_text())
    except (OSError, ValueError):
        return {}
    return recorded if isinstance(recorded, dict) else {}


def file_listing(workspace: Path) -> dict[str, tuple[int, int]]:
    """``{path: (size, mtime in ns)}`` of every file and link under ``workspace`` that a snapshot
    would see (``ALWAYS_EXCLUDED`` and ``.git`` left out; ``.gitignore`` not read), taken before
    and after a test run to find the files it created (``record_test_outputs``)."""
    return {rel: (info.st_size, info.st_mtime_ns) for rel, info in gitstore.scan(workspace, always_excluded=ALWAYS_EXCLUDED,
                                                                                 read_gitignore=False) if info is not None}  # fmt: skip


def record_test_outputs(workspace: Path, baseline: Path, before: dict[str, tuple[int, int]]) -> list[str]:
    """Record the files a test run created (reports, artefacts, outputs) as they are now, so that
    the patch leaves them out (``save_tree(patch=True)``, ``diff``) for as long as their content
    stays what a test run wrote; a tool call that rewrites one afterwards puts it back in.

    Args:
        workspace: the episode's workspace, just after the test run.
        baseline: the run's baseline database (the record is kept there, out of the agent's reach).
        before: ``file_listing(workspace)`` taken just before the test run. Files not in it are
            the run's; files in it that an earlier test run wrote (recorded) and this one rewrote
            are recorded again. Paths of the baseline tree (files the patch may change) never are.

    Returns:
        The paths recorded, sorted.
    """
    now = file_listing(workspace)
    tracked = _tracked(baseline).paths
    recorded = _test_outputs(baseline)
    wanted = [rel for rel, seen in now.items() if rel not in tracked and (rel not in before or (rel in recorded and before[rel] != seen))]
    added = []
    for rel in sorted(wanted):
        try:
            info = os.lstat(workspace / rel)
            recorded[rel] = gitstore.write_blob(baseline, gitstore.read_file_bytes(workspace / rel, info))
        except OSError:
            continue  # gone again, or not a file: nothing to leave out
        added.append(rel)
    if added:
        tmp = baseline / (TEST_OUTPUTS + ".tmp")
        tmp.write_text(json.dumps(recorded, indent=0, sort_keys=True))
        os.replace(tmp, baseline / TEST_OUTPUTS)
    return added


def diff_trees(baseline: Path, old: str, new: str) -> str:
    """The unified diff (git format, binary-safe, renames detected) from tree ``old`` to ``new``.
    Bytes that are not UTF-8 survive as surrogate escapes, so writing the text back with the same
    handler is byte-exact."""
    out = gitstore.git(baseline, "diff-tree", "-r", "-p", "-M", "--binary", "--no-textconv", "--no-ext-diff", "--no-color", old, new)
    return out.decode("utf-8", "surrogateescape")


def changed_paths(baseline: Path, old: str, new: str) -> list[str]:
    """Every path that differs between trees ``old`` and ``new`` (added, deleted, modified, or
    either side of a rename), sorted."""
    out = gitstore.git(baseline, "diff-tree", "-r", "--name-only", "--no-renames", "-z", old, new)
    return sorted({os.fsdecode(p) for p in out.split(b"\0") if p})


def diff(workspace: Path, baseline: Path) -> str:
    """Return the unified diff (git format, binary-safe) from the baseline to the workspace now
    (files a test run wrote left out: ``record_test_outputs``)."""
    return diff_trees(baseline, "HEAD^{tree}", save_tree(workspace, baseline, patch=True))


def make_parents(root: Path, rel: str) -> Path:
    """Make the folders above ``root/rel`` as real folders, replacing any file or link in the way
    (a link there could lead a write out of ``root``: ``core.safe_io.make_dirs``); return
    ``root/rel``. What is then done at that path stays inside ``root`` as long as it does not
    follow a link at the path itself."""
    target = root / rel
    make_dirs(target.parent, root)
    return target


def write_entries(root: Path, baseline: Path, entries: list[Entry]) -> None:
    """Write ``entries`` (blobs in ``baseline``) under ``root``, replacing what is at each path,
    never following a link that is there."""
    blobs = gitstore.read_blobs(baseline, (e.sha for e in entries))
    for entry in entries:
        target = make_parents(root, entry.path)
        if target.is_symlink() or target.exists():
            shutil.rmtree(target) if target.is_dir() and not target.is_symlink() else target.unlink()
        data = blobs[entry.sha]
        if entry.mode == "120000":
            os.symlink(os.fsdecode(data), target)
            continue
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755 if entry.mode == "100755" else 0o644)
        with os.fdopen(fd, "wb") as out:
            out.write(data)


def restore_tree(workspace: Path, baseline: Path, tree: str) -> None:
    """Make the workspace's files exactly those of ``tree`` (from ``save_tree``).

    Changed and deleted files are restored and files the tree lacks are removed (and folders
    left empty by that); ignored files (build outputs, caches) are left alone, as are ``.git``
    and ``.horizon``. Horizon writes the files itself, never through a link in the workspace.
    """
    wanted = {e.path: e for e in gitstore.list_tree(baseline, tree)}
    now = {e.path: e for e in _store(workspace, baseline, tracked=list(wanted)).entries()}
    for rel in sorted(set(now) - set(wanted), reverse=True):
        (workspace / rel).unlink(missing_ok=True)
        parent = (workspace / rel).parent
        while parent != workspace and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
    write_entries(workspace, baseline, [e for p, e in wanted.items() if now.get(p) != e])


def start_tree(baseline: Path) -> list[gitstore.Entry]:
    """The run's starting files as ``gitstore.Entry`` (``path``, git ``mode``, blob ``sha``), read
    from the baseline database (``START_REF``) in git's order; a link's mode is ``120000``."""
    return gitstore.list_tree(baseline, START_REF)


def start_files(baseline: Path, paths: list[str]) -> dict[str, tuple[str, bytes]]:
    """``{path: (git mode, bytes)}`` of those of ``paths`` that the start tree holds (a link's
    bytes are its target), read from the database without writing any file."""
    wanted = set(paths)
    entries = [e for e in gitstore.list_tree(baseline, START_REF) if e.path in wanted]
    blobs = gitstore.read_blobs(baseline, (e.sha for e in entries))
    return {e.path: (e.mode, blobs[e.sha]) for e in entries}


def materialize(baseline: Path, dest: Path, patch: str) -> None:
    """Rebuild the run's starting files (the start tree, caches left out) in ``dest`` (which must
    not exist) and apply ``patch`` there: the files a reviewer of the patch would get.

    Raises:
        UserError: the patch does not apply to the starting files (git's reason in the text).
    """
    dest.mkdir(parents=True)
    write_entries(dest, baseline, gitstore.list_tree(baseline, START_REF))
    if patch.strip():
        gitstore.git(baseline, "apply", "--whitespace=nowarn", "-", input=patch.encode("utf-8", "surrogateescape"), cwd=dest)


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
