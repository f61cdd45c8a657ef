"""A run's git object database, used as a content store that git never reads a work tree from.

Horizon keeps each run's starting files and every saved state of its workspace in a bare git
database (``baseline.git``, outside the workspace), so that patches are ``git diff-tree`` output
that ``git apply`` and reviewers understand. The workspace is written by the model and by the
repository's own code, so git must never interpret it: a nested ``.git`` folder with
``core.fsmonitor`` or a hook, a ``.gitattributes`` filter or a submodule would make a git that
looks at the workspace run a program on the host, outside the sandbox.

So git never gets a work tree here. Horizon's own process walks the workspace (``scan``), reads
each file's bytes without following links, and writes them as loose objects in git's own format
(zlib-deflated ``"blob <size>\\0" + bytes``, see Pro Git, "Git Internals - Git Objects"), and
the trees too (``store_tree``: each folder's ``"<mode> <name>\\0<20-byte sha>"`` entries in git's
order); git then only diffs and reads trees of the database. Every git process starts with a
scrubbed environment (``git_env``): no system or global configuration, no hooks, no fsmonitor,
no attributes, no external diff or text conversion, and no secrets.

At scale, a save costs what changed, as ``git add`` does with its index: the stat cache
(``StatCache``) keeps each file's ``lstat`` (inode, size, mtime, ctime, mode) beside its blob's
hash, so only files whose stat changed are read; a folder whose own stat is unchanged is not
listed again nor matched against ``.gitignore`` rules (``_walk``); only the trees of folders whose
entries changed are written. A file that changed within a timestamp granule of its read is read
again next time (``read_for_cache``: git's "racy git" problem).

Folders named ``.git`` (any case) are never stored: the workspace's own repository and nested ones
are plain data that stays out of snapshots and patches.
"""

from __future__ import annotations

import gc
import hashlib
import itertools
import marshal
import os
import re
import stat
import subprocess
import time
import zlib
from collections.abc import Callable, Iterable, Iterator
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


class Tracked:
    """Paths a repository tracks (git ignores no tracked file) and the folders above them, indexed
    once per list (a 100,000-path list takes a tenth of a second to index; a save must not pay it)."""

    def __init__(self, paths: Iterable[str] = ()) -> None:
        self.paths = frozenset(paths)
        self.dirs = frozenset(p.rsplit("/", i)[0] for p in self.paths for i in range(1, p.count("/") + 1))
        self._token: str | None = None

    @property
    def token(self) -> str:
        """A digest of the paths: two lists with the same paths have the same token."""
        if self._token is None:
            self._token = hashlib.sha1("\0".join(sorted(self.paths)).encode("utf-8", "surrogateescape")).hexdigest()
        return self._token


#: How close to the moment a file or folder is read its mtime or ctime may be for what was read
#: to be trusted later by its stat alone: a file changed again within the same timestamp granule
#: keeps its size and times, so its stat cannot tell (git's "racy git" problem). The granule is
#: the kernel's clock tick (at most 10 ms) on a file system with sub-second times (its ctimes
#: have nanoseconds), up to 2 s on one with whole seconds (FAT has 2 s).
RACY_FINE_NS = 50_000_000
RACY_COARSE_NS = 2_050_000_000
_clock = time.time_ns  # the moment of a read, compared with file times (tests replace it)


def _racy(info: os.stat_result, now: int) -> bool:
    """Whether ``info``'s mtime or ctime is within a timestamp granule of ``now``."""
    granule = RACY_FINE_NS if info.st_ctime_ns % 1_000_000_000 else RACY_COARSE_NS
    return now - granule <= info.st_mtime_ns <= now + granule or now - granule <= info.st_ctime_ns <= now + granule


_LEVELS: dict[tuple[str, str, tuple], list] = {}  # (folder, base, .gitignore stat) -> its parsed rules, in this process


class _Ignores:
    """``.gitignore`` rules as git applies them: patterns of the repository-wide list and of each
    folder's ``.gitignore`` (relative to that folder); the last rule that matches decides, deeper
    files after shallower ones; an ignored folder is not entered. Paths in ``tracked`` are never
    ignored (git ignores only untracked files), nor the folders above them.

    Each rule set is checked first with one regular expression joining all its patterns: a path
    that none of them matches (nearly every path) costs one search instead of one per pattern;
    a path that one matches is decided by ``pathspec`` itself, so the verdict is always its own.
    ``token`` names the rules and tracked paths a walk starts with (``_walk``'s folder records)."""

    #: ``(base folder, its patterns, a search that finds whether any pattern matches)``
    Rules = tuple[tuple[str, pathspec.PathSpec, Callable[[str], object]], ...]

    def __init__(self, always: list[str], tracked: Tracked | Iterable[str], read_gitignore: bool) -> None:
        self.read_gitignore = read_gitignore
        known = tracked if isinstance(tracked, Tracked) else Tracked(tracked)
        self.tracked, self.tracked_dirs = known.paths, known.dirs
        self.root_rules: _Ignores.Rules = tuple(self._level("", always))
        self.token = (repr(sorted(always)), read_gitignore, known.token)

    @staticmethod
    def _level(base: str, lines: list[str]) -> list[tuple[str, pathspec.PathSpec, Callable[[str], object]]]:
        spec = pathspec.GitIgnoreSpec.from_lines(lines)
        regexes = [p.regex for p in spec.patterns if getattr(p, "include", None) is not None and getattr(p, "regex", None) is not None]
        if not regexes:
            return []  # comments and blank lines only: nothing to check
        if len({r.flags for r in regexes}) == 1:
            # pathspec names a group in each pattern (its folder mark); one search needs them unnamed
            joined = "|".join(f"(?:{r.pattern.replace('(?P<ps_d>', '(?:')})" for r in regexes)
            try:
                return [(base, spec, re.compile(joined, regexes[0].flags).search)]
            except re.error:
                pass
        return [(base, spec, lambda _path: True)]  # always asks pathspec

    def enter(self, rules: Rules, rel_dir: str, folder: str, expected: tuple | None = None) -> tuple[Rules, tuple | None]:
        """The rules that hold inside ``folder`` (which holds a ``.gitignore``): ``rules`` plus
        those of its ``.gitignore`` if it is a regular file that can be read, and that file's stat
        ``(inode, size, mtime ns, ctime ns)`` (None when it adds nothing). With ``expected``, the
        file's stat from an earlier walk: its rules parsed then are reused when the stat is that."""
        if not self.read_gitignore:
            return rules, None
        path = f"{folder}/.gitignore"
        if expected is not None and (known := _LEVELS.get((folder, rel_dir, expected))) is not None:
            return (*rules, *known), expected
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
            try:
                info = os.fstat(fd)
                if not stat.S_ISREG(info.st_mode):
                    return rules, None
                data = os.read(fd, 1_000_000)
            finally:
                os.close(fd)
            level = self._level(rel_dir, data.decode("utf-8", "replace").splitlines())
        except (OSError, ValueError):
            return rules, None  # an unreadable or malformed .gitignore ignores nothing
        key = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
        if _racy(info, _clock()):
            key = (*key, "racy", _clock())  # rules read just after a change: never matched by a later walk
        else:
            if len(_LEVELS) > 10_000:
                _LEVELS.clear()
            _LEVELS[(folder, rel_dir, key)] = level
        return (*rules, *level), key

    def ignored(self, rules: Rules, rel: str, is_dir: bool) -> bool:
        verdict = False
        for base, spec, search in rules:
            sub = rel[len(base) + 1 :] if base else rel
            if is_dir:
                sub += "/"
            if search(sub) is None:
                continue  # no pattern of this level matches: it does not decide
            result = spec.check_file(sub)
            if result.include is not None:
                verdict = result.include
        if verdict and (rel in self.tracked or (is_dir and rel in self.tracked_dirs)):
            return False
        return verdict


#: One listed folder of a walk: ``(relative folder, its path, [(name, lstat)] of the files and
#: links kept, [names] of the folders to enter)``; the lists are None for a folder that cannot be
#: listed (no permission: its files are unknown, not deleted).
Folder = tuple[str, str, "list[tuple[str, os.stat_result]] | None", "list[str] | None"]


def _walk(root: Path, ignores: _Ignores, known: dict[str, tuple] | None = None, fresh: dict[str, tuple] | None = None) -> Iterator[Folder]:
    """The folders under ``root`` that a snapshot enters, each before those below it (see ``scan``).

    With ``known``, the records (``fresh``) of an earlier walk with the same rules: a folder whose
    own stat (inode, mtime, ctime) is that of its record, under the same ``.gitignore`` files, has
    the same names as then (adding, removing or renaming an entry changes its mtime), so it is not
    listed again nor its names matched against the rules: its kept files are ``lstat``-ed by name.
    A record is only made for a folder that did not change just before it was listed (``_racy``).
    Records: ``{folder: ((inode, mtime, ctime), .gitignore chain, its .gitignore's stat, file names,
    folder names)}``, the chain naming the rules in force (``_Ignores.token`` and the stats of the
    ``.gitignore`` files above)."""
    try:
        top = os.stat(root)
    except OSError:
        top = None
    stack: list[tuple[str, str, _Ignores.Rules, tuple, os.stat_result | None]] = [("", str(root), ignores.root_rules, (ignores.token,), top)]
    read_gitignore, S_ISDIR, S_ISREG, S_ISLNK, lstat = ignores.read_gitignore, stat.S_ISDIR, stat.S_ISREG, stat.S_ISLNK, os.lstat
    while stack:
        rel_dir, folder, rules, chain, here = stack.pop()
        prefix = f"{rel_dir}/" if rel_dir else ""
        record = known.get(rel_dir) if known is not None and here is not None else None
        if record is not None and record[0] == (here.st_ino, here.st_mtime_ns, here.st_ctime_ns) and record[1] == chain:
            inner = chain
            if record[2] is not None:  # its .gitignore: the same file still?
                try:
                    info = lstat(f"{folder}/.gitignore")
                    same = (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns) == record[2]
                except OSError:
                    same = False
                if same:
                    within, key = ignores.enter(rules, rel_dir, folder, record[2])
                    same = key == record[2]  # not rewritten since its lstat
                if same:
                    rules, inner = within, (*chain, (rel_dir, record[2]))
                else:
                    record = None
        else:
            record = None
        if record is not None:
            files = []
            for name in record[3]:
                try:
                    info = lstat(f"{folder}/{name}")
                except OSError:
                    continue  # removed this instant (the folder changed after its stat was taken)
                if S_ISREG(info.st_mode) or S_ISLNK(info.st_mode):
                    files.append((name, info))
            dirs, subs = [], []
            for name in record[4]:
                try:
                    info = lstat(f"{folder}/{name}")
                except OSError:
                    continue
                if S_ISDIR(info.st_mode):
                    dirs.append(name)
                    subs.append(info)
            if fresh is not None:
                fresh[rel_dir] = record
            yield rel_dir, folder, files, dirs
            for name, info in zip(reversed(dirs), reversed(subs), strict=True):
                stack.append((prefix + name, f"{folder}/{name}", rules, inner, info))
            continue
        listed_at = _clock()
        try:
            with os.scandir(folder) as it:
                entries = list(it)
        except PermissionError:
            yield rel_dir, folder, None, None  # a folder Horizon may not list: the caller keeps what it knew of it
            continue
        except OSError:
            continue  # vanished: nothing to keep
        ignore_key = None
        if read_gitignore:
            for entry in entries:
                if entry.name == ".gitignore":
                    if entry.is_file(follow_symlinks=False):
                        rules, ignore_key = ignores.enter(rules, rel_dir, folder)
                    break
        inner = chain if ignore_key is None else (*chain, (rel_dir, ignore_key))
        files, dirs, subs = [], [], []
        for entry in entries:
            name = entry.name
            if len(name) == 4 and name.lower() == ".git":
                continue  # is_git_dir_name
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            mode = info.st_mode
            if S_ISDIR(mode):
                if not (rules and ignores.ignored(rules, prefix + name, True)):
                    dirs.append(name)
                    subs.append(info)
            elif (S_ISREG(mode) or S_ISLNK(mode)) and not (rules and ignores.ignored(rules, prefix + name, False)):
                files.append((name, info))
        if fresh is not None and here is not None and not _racy(here, listed_at) and (ignore_key is None or len(ignore_key) == 4):
            fresh[rel_dir] = ((here.st_ino, here.st_mtime_ns, here.st_ctime_ns), chain, ignore_key,
                              tuple(name for name, _info in files), tuple(dirs))  # fmt: skip
        yield rel_dir, folder, files, dirs
        for name, info in zip(reversed(dirs), reversed(subs), strict=True):
            stack.append((prefix + name, f"{folder}/{name}", rules, inner, info))


def scan(root: Path, *, always_excluded: list[str], tracked: Tracked | Iterable[str] = (), read_gitignore: bool = True) -> Iterator[tuple[str, os.stat_result | None]]:
    """Walk ``root`` without following links; yield ``(relative path, lstat)`` of each regular
    file and symbolic link that a snapshot keeps, and ``(folder, None)`` for a folder that cannot
    be listed (no permission: its files are unknown, not deleted).

    Skipped: anything named ``.git`` (any case) at any depth; paths matched by
    ``always_excluded`` (gitignore patterns) or, with ``read_gitignore``, by the ``.gitignore``
    files on the way, unless the path is in ``tracked``; FIFOs, sockets and devices. The walk is
    iterative (a 10,000-deep tree is fine).
    """
    for rel_dir, _folder, files, _dirs in _walk(root, _Ignores(always_excluded, tracked, read_gitignore)):
        if files is None:
            yield rel_dir, None
            continue
        prefix = f"{rel_dir}/" if rel_dir else ""
        for name, info in files:
            yield prefix + name, info


# ------------------------------------------------------------------------------------------
# objects


def _object_path(git_dir: Path, sha: str) -> Path:
    return git_dir / "objects" / sha[:2] / sha[2:]


_TMP_NAMES = itertools.count()


def write_object(git_dir: Path | str, kind: str, body: bytes) -> str:
    """Store ``body`` as a loose object of ``kind`` (``blob``, ``tree``) in git's format (zlib-
    deflated ``"<kind> <size>\\0" + body``); return its SHA-1. Idempotent: an object already there
    is not written again. The file is written under a temporary name and renamed into place, so
    no reader sees half an object.

    Raises:
        OSError: the database cannot be written (a full disk, no permission).
    """
    header = f"{kind} {len(body)}\0".encode()
    digest = hashlib.sha1(header)  # git names objects by SHA-1; not a security hash
    digest.update(body)
    sha = digest.hexdigest()
    folder = f"{git_dir}/objects/{sha[:2]}"
    path = f"{folder}/{sha[2:]}"
    if os.path.exists(path):
        return sha
    data = zlib.compress(header + body, 1)
    for _attempt in range(100):
        tmp = f"{folder}/tmp_obj_{os.getpid()}_{next(_TMP_NAMES)}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)  # read-only, as git's objects
        except FileExistsError:
            continue  # a file a crashed writer left: another name
        except FileNotFoundError:
            os.makedirs(folder, exist_ok=True)  # its first object (or git gc pruned the empty folder)
            continue
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except BaseException:
            os.close(fd)
            os.unlink(tmp)
            raise
        os.close(fd)
        os.replace(tmp, path)
        return sha
    raise OSError(f"cannot make a temporary object file in {folder}")


def write_blob(git_dir: Path, data: bytes) -> str:
    """Store ``data`` as a loose blob (git's object format); return its SHA-1. Idempotent."""
    return write_object(git_dir, "blob", data)


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


# ------------------------------------------------------------------------------------------
# the stat cache and trees


def read_for_cache(path: str, info: os.stat_result) -> tuple[bytes, os.stat_result, bool]:
    """Read a file's bytes (a link's target) without following links, for the stat cache.

    Args:
        path: the file.
        info: its ``lstat`` from the walk (a link is read as a link, a file as a file).

    Returns:
        ``(bytes, the stat they belong to, whether that stat may stand for these bytes later)``:
        not when the file changed while it was read, nor when it last changed so shortly before
        the read that another change in the same timestamp granule would not show (``_racy``).

    Raises:
        PermissionError: it cannot be read.
        OSError: it vanished or changed type since ``info`` was taken.
    """
    now = _clock()
    if stat.S_ISLNK(info.st_mode):
        data, before, after = os.fsencode(os.readlink(path)), info, os.lstat(path)
        stable = stat.S_ISLNK(after.st_mode) and after.st_ino == info.st_ino and after.st_ctime_ns == info.st_ctime_ns
    else:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            before = os.fstat(fd)
            if not stat.S_ISREG(before.st_mode):
                raise OSError(f"{path} is no longer a regular file")
            data = os.read(fd, before.st_size + 1)  # a short read is the end of a regular file
            if len(data) > before.st_size:  # it grew since: read on to its end
                chunks = [data]
                while chunk := os.read(fd, 1 << 20):
                    chunks.append(chunk)
                data = b"".join(chunks)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        stable = (after.st_size == before.st_size == len(data) and after.st_mtime_ns == before.st_mtime_ns
                  and after.st_ctime_ns == before.st_ctime_ns)  # fmt: skip
    return data, before, stable and not _racy(before, now)


_MEMORY: dict[str, tuple[tuple[int, int, int], StatCache]] = {}  # cache file -> (its stat when read or written, the cache)


class StatCache:
    """What Horizon knows of a workspace's files and folders, kept in the database between saves,
    so that a save reads only the files that changed and rebuilds only the trees above them.

    - ``files``: ``{path: (inode, size, mtime ns, ctime ns, st_mode, blob sha)}``, as git's index
      keeps a file's stat beside its hash; a file whose ``lstat`` matches its entry is not read.
      ctime cannot be set by a program (``os.utime`` sets it to now), so a file rewritten with its
      old size and mtime is still read again; an entry is only trusted when its file did not change
      during the read nor just before it (``read_for_cache``: the "racy git" problem); the others
      have inode -1 (read again next time, kept as last seen if the file becomes unreadable).
    - ``walks``: per kind of tree (``label``), the folder records of the last walk (``_walk``),
      so an unchanged folder is not listed nor matched against ``.gitignore`` rules again.
    - ``trees``: per ``label``, ``{folder: (listing, tree sha)}``, the listing being the folder's
      entries in git's order, ``(sort key, name, mode, sha)``; a folder whose listing is the same
      again has the same tree, so nothing is hashed or written for it.

    The file (``marshal``) is replaced atomically; in a process it is read once and then kept in
    memory for as long as it is the file on disk (the last 8 databases). Every entry stands on
    its own, checked against the disk before use, so a missing, older or unreadable file only
    costs reading files again; ``save`` therefore writes it only when enough has changed for
    that to cost more than the writing.
    """

    VERSION = 2
    _MEMORY_LIMIT = 8

    def __init__(self, path: Path, persisted: tuple[str, ...] = ("work",)) -> None:
        self.path, self.persisted = path, persisted
        self.files: dict[str, tuple] = {}
        self.walks: dict[str, dict[str, tuple]] = {}
        self.trees: dict[str, dict[str, tuple]] = {}
        self.pending = 0  # entries changed since the file was written or read

    @classmethod
    def open(cls, path: Path, persisted: tuple[str, ...] = ("work",)) -> StatCache:
        """The cache kept at ``path`` (from memory while that file has not changed); empty when
        there is none or it cannot be read."""
        try:
            info = os.stat(path)
            key = (info.st_ino, info.st_size, info.st_mtime_ns)
        except OSError:
            key = None
        known = _MEMORY.get(str(path))
        if key is not None and known is not None and known[0] == key:
            return known[1]  # (no file: a new database, maybe at the path of one deleted; never an old cache)
        cache = cls(path, persisted)
        if key is not None:
            try:
                data = marshal.loads(path.read_bytes())
                if isinstance(data, dict) and data.get("version") == cls.VERSION:
                    cache.files = dict(data["files"])
                    cache.walks = {k: dict(v) for k, v in data["walks"].items()}
                    cache.trees = {k: dict(v) for k, v in data["trees"].items()}
            except (OSError, ValueError, EOFError, TypeError, KeyError, AttributeError):
                cache.files, cache.walks, cache.trees = {}, {}, {}
        cls._remember(path, key, cache)
        return cache

    @classmethod
    def _remember(cls, path: Path, key: tuple[int, int, int] | None, cache: StatCache) -> None:
        _MEMORY.pop(str(path), None)
        _MEMORY[str(path)] = (key, cache)
        while len(_MEMORY) > cls._MEMORY_LIMIT:
            _MEMORY.pop(next(iter(_MEMORY)))

    def save(self, *, force: bool = False) -> bool:
        """Write the cache (its files and the ``persisted`` kinds of walk and tree) atomically, when
        ``force`` or when the entries changed since the last write would cost a later process more
        to read again than the write costs now (about 1 file in 50, or any change to a small
        cache); return whether it was written."""
        if not force and (self.pending == 0 or (len(self.files) > 5000 and self.pending * 50 < len(self.files))):
            return False
        data = {"version": self.VERSION, "files": self.files, "walks": {k: v for k, v in self.walks.items() if k in self.persisted},
                "trees": {k: v for k, v in self.trees.items() if k in self.persisted}}  # fmt: skip
        tmp = self.path.with_name(f"{self.path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps(data, 4))
        os.replace(tmp, self.path)
        info = os.stat(self.path)
        self.pending = 0
        self._remember(self.path, (info.st_ino, info.st_size, info.st_mtime_ns), self)
        return True


_DIR_MODE = "40000"


def _tree_body(listing: list[tuple]) -> bytes:
    """A tree object's bytes from its entries in git's order, ``(key, name, mode, sha)``."""
    return b"".join(b"%s %s\0%s" % (mode.encode(), os.fsencode(name), bytes.fromhex(sha)) for _key, name, mode, sha in listing)


@dataclass
class StoredTree:
    """A tree ``store_tree`` wrote: its hash (``EMPTY_TREE`` when nothing is kept) and its folders'
    listings, ``{folder: (entries in git's order (key, name, mode, sha), tree sha)}``."""

    sha: str
    folders: dict[str, tuple]

    def entries(self) -> list[Entry]:
        """Every file of the tree (``Entry``: path, git mode, blob sha), folder by folder."""
        out = []
        for rel_dir, (listing, _sha) in self.folders.items():
            prefix = f"{rel_dir}/" if rel_dir else ""
            out.extend(Entry(prefix + name, mode, sha) for _key, name, mode, sha in listing if mode != _DIR_MODE)
        return out


def store_tree(root: Path, git_dir: Path, cache: StatCache, *, label: str, always_excluded: list[str],
               tracked: Tracked | Iterable[str] = (), read_gitignore: bool = True, leave_out: dict[str, str] | None = None) -> StoredTree:  # fmt: skip
    """Store the files under ``root`` that a snapshot keeps (``scan``'s rules) in the database
    ``git_dir`` as a tree (git's own objects, written by Horizon: no git process reads the files);
    return it. Only files whose ``lstat`` differs from ``cache`` are read, unchanged folders are
    not listed again (``_walk``), and only the trees of folders whose entries changed are written:
    after a one-file edit, a save reads one file and writes the trees of the folders above it.

    A file that cannot be read (no permission) is kept as last seen, if it ever was, and a folder
    that cannot be listed keeps its last tree of this ``label``: neither is ever a deletion.
    Empty folders are not in the tree (git keeps no empty tree). The cache is updated in place;
    the caller saves it (``StatCache.save``).

    Args:
        cache: the stat cache (``StatCache.open``); its file entries are shared by the labels.
        label: the kind of tree (the same rules each time: ``always_excluded``,
            ``read_gitignore``), whose folder records and listings are kept apart.
        tracked: paths kept even where ``.gitignore`` names them.
        leave_out: ``{path: blob sha}`` of files left out of the tree while their content is that.

    Raises:
        OSError: the database cannot be written.
    """
    collecting = gc.isenabled()
    gc.disable()  # the walk makes a few tuples per file and keeps them all: collections would find nothing to free
    try:
        return _store_tree(root, git_dir, cache, label, _Ignores(always_excluded, tracked, read_gitignore), leave_out)
    finally:
        if collecting:
            gc.enable()


def _store_tree(root: Path, git_dir: Path, cache: StatCache, label: str, ignores: _Ignores, leave_out: dict[str, str] | None) -> StoredTree:
    files_cache = cache.files
    old = cache.trees.get(label, {})
    walked: dict[str, tuple] = {}
    nodes = list(_walk(root, ignores, cache.walks.get(label), walked))
    folders: dict[str, tuple] = {}
    trees: dict[str, str] = {}
    seen = changed = 0
    for rel_dir, folder, files, dirs in reversed(nodes):  # every folder after the folders below it
        prefix = f"{rel_dir}/" if rel_dir else ""
        if files is None or dirs is None:  # cannot be listed: the trees as last stored, from here down
            for known, record in old.items():
                if known == rel_dir or known.startswith(prefix):
                    folders[known] = record
            if rel_dir in old:
                trees[rel_dir] = old[rel_dir][1]
            continue
        listing = []
        plain = True
        for name, info in files:
            rel = prefix + name
            seen += 1
            hit = files_cache.get(rel)
            mode = info.st_mode
            if (hit is not None and hit[0] == info.st_ino and hit[1] == info.st_size and hit[2] == info.st_mtime_ns
                    and hit[3] == info.st_ctime_ns and hit[4] == mode):  # fmt: skip
                sha = hit[5]
            else:
                changed += 1
                try:
                    data, info, keep = read_for_cache(f"{folder}/{name}", info)
                except PermissionError:  # unreadable now: as last seen, if ever seen (never a deletion)
                    if hit is None:
                        continue
                    mode, sha = hit[4], hit[5]
                except OSError:
                    continue  # it vanished while read: deleted
                else:
                    mode = info.st_mode
                    sha = write_object(git_dir, "blob", data)
                    # an entry that may not be trusted gets inode -1: read again next time, but known
                    # as last seen should the file become unreadable
                    files_cache[rel] = (info.st_ino if keep else -1, info.st_size, info.st_mtime_ns, info.st_ctime_ns, mode, sha)
            if leave_out and leave_out.get(rel) == sha:
                continue
            plain = plain and name.isascii()
            git = "120000" if mode & 0o170000 == 0o120000 else ("100755" if mode & 0o100 else "100644")
            listing.append((name, name, git, sha))
        for name in dirs:
            sub = trees.get(prefix + name)
            if sub is not None:
                plain = plain and name.isascii()
                listing.append((name + "/", name, _DIR_MODE, sub))
        if not listing:
            continue  # an empty folder: no tree
        if not plain:  # git orders names by their bytes; str order differs from it for surrogate escapes
            listing = [(os.fsencode(key), name, mode, sha) for key, name, mode, sha in listing]
        listing.sort()
        record = old.get(rel_dir)
        if record is None or record[0] != listing:
            record = (listing, write_object(git_dir, "tree", _tree_body(listing)))
            changed += 1
        folders[rel_dir] = record
        trees[rel_dir] = record[1]
    cache.walks[label], cache.trees[label] = walked, folders
    cache.pending += changed + abs(len(folders) - len(old))
    if len(files_cache) > 2 * seen + 1000:  # mostly paths no longer there: keep the live ones
        live = {prefix + name for rel_dir, _f, files, _d in nodes if files for prefix in [f"{rel_dir}/" if rel_dir else ""] for name, _i in files}
        cache.files = {p: e for p, e in files_cache.items() if p in live}
        cache.pending += 1
    return StoredTree(trees.get("", EMPTY_TREE), folders)


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
