"""A run's git object database, used as a content store that git never reads a work tree from.

Horizon keeps each run's starting files and every saved state of its workspace in a bare git
database (``baseline.git``, outside the workspace), so that patches are ``git diff-tree`` output
that ``git apply`` and reviewers understand. The workspace is written by the model and by the
repository's own code, so git must never interpret it: a nested ``.git`` folder with
``core.fsmonitor`` or a hook, a ``.gitattributes`` filter or a submodule would make a git that
looks at the workspace run a program on the host, outside the sandbox.

So git never gets a work tree here. Horizon's own process walks the workspace (``scan``), reads
each file's bytes without following links, and writes them as loose objects in git's own format
(zlib-deflated ``"blob <size>\\0" + bytes``, see Pro Git, "Git Internals - Git Objects"); git
then only builds trees from a listing on standard input (``update-index --index-info`` on an index
file outside the workspace, ``write-tree``) and diffs or reads trees of the database. Every git
process starts with a scrubbed environment (``git_env``): no system or global configuration, no
hooks, no fsmonitor, no attributes, no external diff or text conversion, and no secrets.

Folders named ``.git`` (any case) are never stored: the workspace's own repository and nested ones
are plain data that stays out of snapshots and patches.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import tempfile
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pathspec

from core.errors import UserError

#: The empty tree's hash (SHA-1 object format): attributes are read from it, i.e. from nowhere.
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

#: Configuration given to every git process (``-c``), above anything a database could hold.
_HARDENING = (
    "core.hooksPath=/dev/null", "core.fsmonitor=false", "core.untrackedCache=false", "core.attributesFile=/dev/null",
    f"attr.tree={EMPTY_TREE}", "core.protectNTFS=false", "core.protectHFS=false", "core.autocrlf=false",
    "core.symlinks=true", "diff.external=", "submodule.recurse=false", "protocol.allow=never", "gc.auto=0",
)  # fmt: skip


def git_env() -> dict[str, str]:
    """The whole environment of a git process: nothing from the user's, so no ``GIT_*`` variable,
    no configuration file outside the database, no pager or editor, and no API key can reach git."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LANG": "C",
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_OPTIONAL_LOCKS": "0",
    }


def git(git_dir: Path, *args: str, input: bytes | None = None, index: Path | None = None, cwd: Path | None = None) -> bytes:
    """Run git on the database ``git_dir`` with no work tree; return its standard output.

    Args:
        git_dir: a bare database (``git init --bare``), or where ``init`` should make one.
        args: git's command and arguments.
        input: bytes for its standard input.
        index: an index file to use (``GIT_INDEX_FILE``), outside any workspace.
        cwd: the working folder (only ``apply`` needs one; it is never a workspace).

    Raises:
        UserError: git is not installed, or it failed (its message is in the text).
    """
    env = git_env()
    if index is not None:
        env["GIT_INDEX_FILE"] = str(index)
    if cwd is not None:  # git must not find an enclosing repository above the folder it works in
        env["GIT_CEILING_DIRECTORIES"] = str(Path(cwd).resolve().parent)
    # safe.directory names only this database, which Horizon made (a run exported by another user)
    hardening = (*_HARDENING, f"safe.directory={Path(git_dir).resolve()}")
    argv = ["git", f"--git-dir={git_dir}", *(item for pair in (("-c", h) for h in hardening) for item in pair), *args]
    try:
        proc = subprocess.run(argv, input=input, capture_output=True, env=env, cwd=cwd or git_dir.parent, check=False)
    except FileNotFoundError:
        raise UserError("git is not installed; install it (Debian: apt-get install git)") from None
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip() or proc.stdout.decode(errors="replace").strip()
        raise UserError(f"git {' '.join(args[:2])} failed: {message}")
    return proc.stdout


def init(git_dir: Path) -> None:
    """Make an empty bare database at ``git_dir``."""
    git_dir.parent.mkdir(parents=True, exist_ok=True)
    git(git_dir, "init", "-q", "--bare", str(git_dir))


# ------------------------------------------------------------------------------------------
# the walk


@dataclass(frozen=True)
class Entry:
    """One file of a tree: ``path`` (relative, ``/``-separated, surrogate-escaped), git ``mode``
    (``100644``, ``100755`` or ``120000`` for a symbolic link) and the blob's SHA-1 ``sha``."""

    path: str
    mode: str
    sha: str


def is_git_dir_name(name: str) -> bool:
    """Whether a file name is ``.git`` in any letter case (git refuses such paths in trees)."""
    return name.lower() == ".git"


class _Ignores:
    """``.gitignore`` rules as git applies them: patterns of the repository-wide list and of each
    folder's ``.gitignore`` (relative to that folder); the last rule that matches decides, deeper
    files after shallower ones; an ignored folder is not entered. Paths in ``tracked`` are never
    ignored (git ignores only untracked files), nor the folders above them."""

    Rules = tuple[tuple[str, pathspec.PathSpec], ...]

    def __init__(self, always: list[str], tracked: set[str], read_gitignore: bool) -> None:
        self.read_gitignore = read_gitignore
        self.tracked = tracked
        self.tracked_dirs = {p.rsplit("/", i)[0] for p in tracked for i in range(1, p.count("/") + 1)}
        self.root_rules: _Ignores.Rules = (("", pathspec.GitIgnoreSpec.from_lines(always)),)

    def enter(self, rules: Rules, rel_dir: str, folder: Path) -> Rules:
        """The rules that hold inside ``folder``: ``rules`` plus its own ``.gitignore``, if any."""
        if not self.read_gitignore:
            return rules
        path = folder / ".gitignore"
        try:
            if path.is_file() and not path.is_symlink():
                lines = path.read_bytes()[:1_000_000].decode("utf-8", "replace").splitlines()
                return (*rules, (rel_dir, pathspec.GitIgnoreSpec.from_lines(lines)))
        except (OSError, ValueError):
            pass  # an unreadable or malformed .gitignore ignores nothing
        return rules

    def ignored(self, rules: Rules, rel: str, is_dir: bool) -> bool:
        if rel in self.tracked or (is_dir and rel in self.tracked_dirs):
            return False
        verdict = False
        for base, spec in rules:
            sub = rel[len(base) + 1 :] if base else rel
            result = spec.check_file(sub + ("/" if is_dir else ""))
            if result.include is not None:
                verdict = result.include
        return verdict


def scan(root: Path, *, always_excluded: list[str], tracked: Iterable[str] = (), read_gitignore: bool = True) -> Iterator[tuple[str, os.stat_result | None]]:
    """Walk ``root`` without following links; yield ``(relative path, lstat)`` of each regular
    file and symbolic link that a snapshot keeps, and ``(folder, None)`` for a folder that cannot
    be listed (no permission: its files are unknown, not deleted).

    Skipped: anything named ``.git`` (any case) at any depth; paths matched by
    ``always_excluded`` (gitignore patterns) or, with ``read_gitignore``, by the ``.gitignore``
    files on the way, unless the path is in ``tracked``; FIFOs, sockets and devices. The walk is
    iterative (a 10,000-deep tree is fine).
    """
    ignores = _Ignores(always_excluded, set(tracked), read_gitignore)
    stack: list[tuple[str, Path, _Ignores.Rules]] = [("", root, ignores.root_rules)]
    while stack:
        rel_dir, folder, rules = stack.pop()
        rules = ignores.enter(rules, rel_dir, folder)
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except PermissionError:
            yield rel_dir, None  # a folder Horizon may not list: the caller keeps what it knew of it
            continue
        except OSError:
            continue  # vanished: nothing to keep
        for entry in entries:
            if is_git_dir_name(entry.name):
                continue
            rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(info.st_mode):
                if not ignores.ignored(rules, rel, True):
                    stack.append((rel, Path(entry.path), rules))
            elif (stat.S_ISREG(info.st_mode) or stat.S_ISLNK(info.st_mode)) and not ignores.ignored(rules, rel, False):
                yield rel, info


# ------------------------------------------------------------------------------------------
# objects


def _object_path(git_dir: Path, sha: str) -> Path:
    return git_dir / "objects" / sha[:2] / sha[2:]


def write_blob(git_dir: Path, data: bytes) -> str:
    """Store ``data`` as a loose blob (git's object format); return its SHA-1. Idempotent."""
    header = f"blob {len(data)}\0".encode()
    sha = hashlib.sha1(header + data).hexdigest()  # git names objects by SHA-1; not a security hash
    path = _object_path(git_dir, sha)
    if not path.exists():
        path.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix="tmp_obj_")
        with os.fdopen(fd, "wb") as out:
            out.write(zlib.compress(header + data, 1))
        os.chmod(tmp, 0o444)
        os.replace(tmp, path)
    return sha


def read_file_bytes(path: Path, info: os.stat_result) -> bytes:
    """A file's bytes, or a symbolic link's target, read without following any link.

    Raises:
        OSError: it changed type or vanished since ``info`` was taken.
    """
    if stat.S_ISLNK(info.st_mode):
        return os.fsencode(os.readlink(path))
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is no longer a regular file")
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read()
    finally:
        os.close(fd)


def git_mode(info: os.stat_result | int) -> str:
    """git's mode for a file (its ``lstat`` or ``st_mode``): ``120000`` for a link, ``100755`` when
    its owner may execute it, else ``100644``."""
    mode = info if isinstance(info, int) else info.st_mode
    if stat.S_ISLNK(mode):
        return "120000"
    return "100755" if mode & stat.S_IXUSR else "100644"


class StatCache:
    """Blob hashes of files by their ``lstat`` (inode, size, mtime and ctime in nanoseconds), kept in
    a JSON file in the database, so saving a tree re-reads only files that changed. ctime cannot be
    set by a program (``touch`` sets it to now), so a file rewritten with its old size and mtime is
    still read again."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.entries: dict[str, list] = json.loads(path.read_text())
        except (OSError, ValueError):
            self.entries = {}

    @staticmethod
    def key(info: os.stat_result) -> list:
        return [info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns, info.st_mode]

    def lookup(self, rel: str, info: os.stat_result) -> str | None:
        hit = self.entries.get(rel)
        return hit[1] if hit and hit[0] == self.key(info) else None

    def save(self, fresh: dict[str, list]) -> None:
        self.entries = fresh
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(fresh, separators=(",", ":")))
        os.replace(tmp, self.path)


def write_tree(git_dir: Path, entries: list[Entry], index: Path) -> str:
    """Build the tree of ``entries`` (their blobs stored already) with ``index`` as git's index
    file, replaced whole; return the tree's hash."""
    listing = b"".join(f"{e.mode} {e.sha}\t".encode() + os.fsencode(e.path) + b"\0" for e in entries)
    tmp = index.with_name(index.name + ".new")
    tmp.unlink(missing_ok=True)
    git(git_dir, "update-index", "-z", "--add", "--index-info", input=listing, index=tmp)
    tree = git(git_dir, "write-tree", index=tmp).decode().strip() if entries else EMPTY_TREE
    if not entries:
        git(git_dir, "read-tree", "--empty", index=tmp)
    os.replace(tmp, index)
    return tree


def list_tree(git_dir: Path, tree: str) -> list[Entry]:
    """The files of ``tree`` (recursive), in git's order."""
    out = git(git_dir, "ls-tree", "-r", "-z", "--full-tree", tree)
    entries = []
    for record in filter(None, out.split(b"\0")):
        meta, path = record.split(b"\t", 1)
        mode, _kind, sha = meta.decode().split()
        entries.append(Entry(os.fsdecode(path), mode, sha))
    return entries


def read_blobs(git_dir: Path, shas: Iterable[str]) -> dict[str, bytes]:
    """The contents of the blobs ``shas``, read in one ``git cat-file --batch``."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    out = git(git_dir, "cat-file", "--batch", input="".join(s + "\n" for s in wanted).encode())
    blobs, pos = {}, 0
    for sha in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].decode().split()
        if len(header) != 3:
            raise UserError(f"the run's git database lacks object {sha}: {out[pos:end].decode(errors='replace')}")
        size = int(header[2])
        blobs[sha] = out[end + 1 : end + 1 + size]
        pos = end + 1 + size + 1
    return blobs
