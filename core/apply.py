"""``agent apply``: a run's patch reviewed, then applied to the user's repository in one atomic
step, with an undo.

The user's repository changes all at once or not at all::

    review   the patch's file sections read into what it adds, modifies, deletes, renames, makes
             executable or a symbolic link (``review_patch``), cross-checked with git's own reading
             (``git apply --numstat``); links that leave the repository and changes inside ``.git``
             are refused unless allowed
    stage    next to the repository, on the same filesystem: a copy of the repository whose
             unchanged files are hard links and whose changed files are new files, the patch
             applied there by ``git apply``; then checked: every path that differs from the
             repository is one the review lists, and no link leaves the tree
    swap     ``renameat2(RENAME_EXCHANGE)`` swaps the staged folder and the repository in one
             system call: killed at any instant (SIGKILL, power loss), the repository's path
             names either the old tree or the new one
    finish   the old tree, pruned to the files the patch touched, is kept as the backup that
             ``undo`` puts back (``agent apply --undo RUN_ID``, itself the same kind of
             transaction); the run's folder records what was applied (``apply.json``)

Where the filesystem cannot exchange two paths (``EINVAL``, ``ENOSYS``, ``EXDEV``: some network
and FUSE filesystems, kernels before 3.15, a C library without ``renameat2``), the swap is two
renames (repository -> ``old``, staged -> repository) under a journal. Killed between the two,
the repository's path is missing until the next ``agent apply`` or ``agent apply --undo`` on that
repository, whose first act (``recover``) finishes the swap.

Everything lives in a transaction folder beside the repository ``<parent>/<name>``::

    <parent>/.horizon-apply.<name>/     mode 0700; refused if it is not a folder you own
        lock                            flock: one transaction per repository at a time
        git/                            an empty git database: git runs with it, never with the
                                        repository's own configuration, hooks or filters
        journal.json                    the transaction in flight, from just before the swap until
                                        it is finished; ``recover`` reads it
        tx-<id>/record.json             what the transaction did (also the run's ``apply.json``)
        tx-<id>/new/                    the staged tree, until the swap
        tx-<id>/old/                    the old tree between the two renames (fallback only)
        tx-<id>/before/                 after an apply: the touched files as they were (the backup)

The backups of the last ``KEEP_BACKUPS`` applies to a repository are kept; older ones are
removed at the start of the next apply, and an undone apply's backup at once. Unchanged files of
the staged tree are hard links to the repository's, so staging costs directory entries, not data;
the backups keep only the touched files.

What it does not promise: a program that edits the repository while ``agent apply`` runs may
lose that edit (a file replaced between staging and the swap is in the old tree); a shell, editor
or process whose current folder is inside the repository keeps seeing the old folder after the
swap (``cd .`` in a shell moves it to the new one); extended attributes and ACLs of folders are
not copied to the new tree; hard links between two files of the repository become two files
when one of them is patched.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import fcntl
import hashlib
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self

from core.errors import UserError

__all__ = [
    "KEEP_BACKUPS", "Change", "Flag", "Outcome", "Review", "apply_patch", "apply_run_patch", "area_of", "format_review",
    "printable", "recover", "recover_run", "review_patch", "review_run", "undo", "undo_run", "undo_summary",
]

#: How many applies per repository keep their backup (for ``undo``).
KEEP_BACKUPS = 5

LINK_MODE = "120000"
EXEC_MODE = "100755"
SUBMODULE_MODE = "160000"


# --------------------------------------------------------------------------------------------
# the review


@dataclass(frozen=True)
class Change:
    """One file section of a patch.

    Attributes:
        kind: ``add``, ``delete``, ``modify`` (content, mode or both), ``rename`` or ``copy``.
        path: the file's path after the patch (for ``delete``: the deleted path), relative to the
            repository, ``/``-separated.
        old_path: the path before the patch (the source of a rename or copy; ``path`` for
            ``modify`` and ``delete``; None for ``add``).
        old_mode, new_mode: git modes (``100644``, ``100755``, ``120000`` a symbolic link,
            ``160000`` a submodule), None where the side does not exist.
        link_target: for a symbolic link after the patch, its target; None when it is not a link
            or the target cannot be read from the patch.
        binary: the section is a binary patch.
        added, removed: lines added and removed (git's count; 0 for binary).
    """

    kind: str
    path: str
    old_path: str | None
    old_mode: str | None
    new_mode: str | None
    link_target: str | None = None
    binary: bool = False
    added: int = 0
    removed: int = 0


@dataclass(frozen=True)
class Flag:
    """Something in a patch a person should look at before applying it.

    Attributes:
        kind: ``outside-link`` and ``git-dir`` are refused unless allowed; ``link``,
            ``executable``, ``autorun``, ``submodule`` and ``mass-delete`` are warnings.
        path: the path concerned.
        text: one line saying what it is.
    """

    kind: str
    path: str
    text: str

    @property
    def refusable(self) -> bool:
        """True for the kinds ``apply_patch`` refuses unless allowed."""
        return self.kind in ("outside-link", "git-dir")


@dataclass
class Review:
    """What a patch would do to a repository, read before anything changes.

    Attributes:
        repo: the repository (resolved, absolute).
        patch: the patch file.
        data: the patch's bytes, exactly as reviewed (``apply_patch`` applies these).
        changes: one ``Change`` per file section, in the patch's order.
        flags: links, executables, files that tools run by themselves, refusals.
        notes: what ``review_run`` found and recovered first (an interrupted earlier apply).
    """

    repo: Path
    patch: Path
    data: bytes
    changes: list[Change]
    flags: list[Flag] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def of_kind(self, kind: str) -> list[Change]:
        """The changes of one kind (``add``, ``delete``, ``modify``, ``rename``, ``copy``)."""
        return [c for c in self.changes if c.kind == kind]

    @property
    def mode_changes(self) -> list[Change]:
        """Changes whose file mode changes (executable bit, or a file becoming a link)."""
        return [c for c in self.changes if c.old_mode and c.new_mode and c.old_mode != c.new_mode]

    def touched(self) -> list[str]:
        """Every path whose state the patch changes (both sides of a rename), sorted."""
        paths: set[str] = set()
        for c in self.changes:
            if c.kind != "add" and c.kind != "copy" and c.old_path:
                paths.add(c.old_path)
            if c.kind != "delete":
                paths.add(c.path)
        return sorted(paths)

    def refusals(self, *, allow_outside_links: bool = False, allow_git_dir: bool = False) -> list[str]:
        """What stops the patch from being applied, one line each (empty: nothing does).

        Args:
            allow_outside_links: symbolic links whose target leaves the repository are allowed.
            allow_git_dir: changes inside ``.git`` (and links into it) are allowed.
        """
        out = []
        for f in self.flags:
            if (f.kind == "outside-link" and not allow_outside_links) or (f.kind == "git-dir" and not allow_git_dir):
                option = "--allow-outside-links" if f.kind == "outside-link" else "--allow-git-dir"
                out.append(f"{f.text} (refused; {option} allows it)")
        return out


def review_patch(repo: Path, patch: Path) -> Review:
    """Read ``patch`` (a ``git diff`` of a run) into a ``Review`` of what it would do to ``repo``.

    Nothing is written; git runs with a scrubbed environment and an empty configuration.

    Args:
        repo: the repository the patch is meant for.
        patch: the patch file (``git diff --binary`` format).

    Returns:
        The review, with its flags; ``Review.refusals()`` says whether it may be applied.

    Raises:
        UserError: no patch or an empty one, ``repo`` is not a folder, a path in the patch is
            absolute or climbs out with ``..``, or git reads the patch's files differently.
    """
    repo = _resolved_repo(repo)
    if not patch.is_file():
        raise UserError(f"no patch at {patch}")
    data = patch.read_bytes()
    if not data.strip():
        raise UserError("the run's patch is empty: the agent changed nothing, so there is nothing to apply")
    sections = _parse(data)
    if not sections:
        raise UserError(f"{patch} holds no file changes (no 'diff --git' section); inspect it with: git apply --stat {patch}")
    for s in sections:
        for name in (s.path, s.old_path):
            if name is not None:
                _check_relative(name)
    counts = _git_numstat(repo, data)
    if [name for name, _, _ in counts] != [s.path for s in sections]:
        raise UserError(
            f"git reads the files of {patch} differently from Horizon's review (an unusual or crafted patch); "
            f"it is not applied. Inspect it with: git apply --numstat --summary {patch}"
        )
    changes = []
    for s, (_, added, removed) in zip(sections, counts, strict=True):
        if s.kind in ("rename", "copy") and s.new_mode is None and s.old_path:  # a pure move: the mode is the file's
            s.old_mode = s.new_mode = _mode_on_disk(repo / s.old_path)
        target = s.link_target
        if s.new_mode == LINK_MODE and target is None and s.kind in ("rename", "copy") and not s.has_hunk and s.old_path:
            target = _readlink(repo / s.old_path)  # a link moved unchanged: its target may now lead elsewhere
        changes.append(Change(s.kind, s.path, s.old_path, s.old_mode, s.new_mode, target, s.binary, added, removed))
    review = Review(repo=repo, patch=patch, data=data, changes=changes)
    review.flags = _flags(review, repo)
    return review


def format_review(review: Review, *, limit: int = 30, allow_outside_links: bool = False, allow_git_dir: bool = False) -> list[str]:
    """The review as lines for a person: a count, the files by kind, then warnings and refusals.

    Paths are shown quoted (C-style escapes) when they hold control or invisible characters, so a
    crafted name cannot rewrite the terminal. A path the patch deletes and adds again (a file
    that becomes a link) is shown once, as replaced. Each kind lists at most ``limit`` files;
    warnings and refusals are always listed in full.

    Args:
        review: from ``review_patch``.
        limit: files listed per kind.
        allow_outside_links, allow_git_dir: what the user allowed; those refusals show as warnings.

    Returns:
        Plain text lines; a warning starts with ``!``, a refusal with ``x``.
    """
    replaced = {c.path for c in review.of_kind("delete")} & {c.path for c in review.of_kind("add")}
    groups: dict[str, list[str]] = {word: [] for word in ("added", "modified", "replaced", "deleted", "renamed", "copied")}
    words = {"add": "added", "modify": "modified", "delete": "deleted", "rename": "renamed", "copy": "copied"}
    for c in review.changes:
        if c.path in replaced:
            if c.kind == "add":
                groups["replaced"].append(_describe(c))
            continue
        groups[words[c.kind]].append(_describe(c))
    counts = [f"{len(items):,} {word}" for word, items in groups.items() if items]
    if review.mode_changes:
        counts.append(f"{len(review.mode_changes):,} mode change{'s' * (len(review.mode_changes) != 1)}")
    paths = len(review.touched())
    lines = [f"{paths:,} path{'s' * (paths != 1)} in {printable(str(review.repo))}: {', '.join(counts)}"]
    for word, items in groups.items():
        lines += [f"  {word:<9} {item}" for item in items[:limit]]
        if len(items) > limit:
            lines.append(f"  {word:<9} ... and {len(items) - limit:,} more (all of them: git apply --numstat --summary {review.patch})")
    allowed = {"outside-link": allow_outside_links, "git-dir": allow_git_dir}
    for f in review.flags:
        if not f.refusable:
            lines.append(f"! {f.text}")
        elif allowed[f.kind]:
            lines.append(f"! {f.text} (allowed by --allow-{'outside-links' if f.kind == 'outside-link' else 'git-dir'})")
    lines += [f"x {f.text}" for f in review.flags if f.refusable and not allowed[f.kind]]
    return lines


def _describe(c: Change) -> str:
    text = printable(c.path)
    if c.kind in ("rename", "copy") and c.old_path is not None:
        text = f"{printable(c.old_path)} -> {printable(c.path)}"
    extras = []
    if c.binary:
        extras.append("binary")
    elif c.added or c.removed:
        extras.append(f"+{c.added} -{c.removed}")
    if c.old_mode and c.new_mode and c.old_mode != c.new_mode:
        extras.append(f"mode {c.old_mode} -> {c.new_mode}")
    elif c.kind == "add" and c.new_mode not in (None, "100644"):
        extras.append(f"mode {c.new_mode}")
    if c.new_mode == LINK_MODE and c.kind != "delete":
        extras.append(f"link to {printable(c.link_target) if c.link_target is not None else '(unreadable target)'}")
    return text + (f"  ({', '.join(extras)})" if extras else "")


# Files that a tool runs, loads or obeys by itself, without anyone calling them: (test, why).
_AUTORUN_NAMES = {
    ".envrc": "direnv runs it when a shell enters the folder",
    ".env": "tools load it into the environment (dotenv, docker compose)",
    "makefile": "make runs it", "gnumakefile": "make runs it",
    "setup.py": "pip runs it to build the package", "setup.cfg": "pip's build reads it",
    "pyproject.toml": "pip runs the build backend it names",
    "conftest.py": "pytest imports it", "pytest.ini": "pytest obeys it", "tox.ini": "tox and pytest obey it",
    "noxfile.py": "nox runs it", "sitecustomize.py": "Python runs it at start-up", "usercustomize.py": "Python runs it at start-up",
    "package.json": "npm runs its install scripts", ".npmrc": "npm obeys it", ".yarnrc": "yarn obeys it", ".yarnrc.yml": "yarn obeys it",
    ".pre-commit-config.yaml": "pre-commit installs and runs the hooks it names",
    ".gitlab-ci.yml": "GitLab CI runs it", ".travis.yml": "Travis CI runs it", "jenkinsfile": "Jenkins runs it",
    "azure-pipelines.yml": "Azure Pipelines runs it",
    "build.rs": "cargo runs it", "build.gradle": "gradle runs it", "build.gradle.kts": "gradle runs it",
    "settings.gradle": "gradle runs it", "gradlew": "the Gradle wrapper", "mvnw": "the Maven wrapper", "pom.xml": "maven runs its plugins",
    "dockerfile": "docker build runs it", "configure": "an install script",
    ".bashrc": "a shell start-up file", ".bash_profile": "a shell start-up file", ".profile": "a shell start-up file",
    ".zshrc": "a shell start-up file",
}
_AUTORUN_FOLDERS = {
    ".github": "GitHub runs workflows and actions from it", ".circleci": "CircleCI runs it", ".husky": "husky installs git hooks from it",
    ".vscode": "VS Code runs tasks and settings from it", ".idea": "JetBrains IDEs run configurations from it",
    ".devcontainer": "dev containers run it", ".cargo": "cargo obeys it",
}


def _autorun(path: str) -> str | None:
    parts = path.split("/")
    name = parts[-1].lower()
    for part in parts[:-1]:
        if part.lower() in _AUTORUN_FOLDERS:
            return _AUTORUN_FOLDERS[part.lower()]
    if name in _AUTORUN_NAMES:
        return _AUTORUN_NAMES[name]
    if name.startswith(".git"):
        return "git obeys it (attributes and filters, submodule URLs, ignore rules)"
    if name.endswith(".pth"):
        return "Python runs it at start-up when it sits in site-packages"
    if name.endswith(".mk"):
        return "make includes it"
    if name.startswith(("install", "bootstrap")) or name in ("setup.sh", "postinstall", "preinstall"):
        return "an install script"
    return None


def _is_git_path(path: str) -> bool:
    return any(part.lower() == ".git" for part in path.split("/"))


def _flags(review: Review, repo: Path) -> list[Flag]:
    flags: list[Flag] = []
    # the links of the tree after the patch, over the repository's: path -> target (None: not a link)
    overlay: dict[str, str | None] = {}
    for c in review.changes:
        if c.kind in ("delete", "rename") and c.old_path:
            overlay[c.old_path] = None
        if c.kind != "delete":
            overlay[c.path] = c.link_target if c.new_mode == LINK_MODE else None
    for c in review.changes:
        for name in {c.path, c.old_path} - {None}:
            if _is_git_path(name):  # type: ignore[arg-type]
                flags.append(Flag("git-dir", name, f"changes a file inside .git: {printable(name)}"))  # type: ignore[arg-type]
        if c.kind == "delete":
            continue
        if c.new_mode == LINK_MODE:
            target = c.link_target
            if target is None:
                flags.append(Flag("outside-link", c.path, f"symbolic link with a target the review cannot read: {printable(c.path)}"))
            else:
                where = _resolve_link(repo, repo, c.path, target, overlay)
                if where is None:
                    flags.append(Flag("outside-link", c.path, f"symbolic link leaving the repository: {printable(c.path)} -> {printable(target)}"))
                elif _is_git_path(where):
                    flags.append(Flag("git-dir", c.path, f"symbolic link into .git: {printable(c.path)} -> {printable(target)}"))
                else:
                    flags.append(Flag("link", c.path, f"symbolic link: {printable(c.path)} -> {printable(target)}"))
        if c.new_mode == SUBMODULE_MODE:
            flags.append(Flag("submodule", c.path, f"submodule commit: {printable(c.path)}"))
        if c.new_mode == EXEC_MODE and c.old_mode != EXEC_MODE:
            flags.append(Flag("executable", c.path, f"new executable: {printable(c.path)}"))
        why = _autorun(c.path)
        if why:
            flags.append(Flag("autorun", c.path, f"{printable(c.path)}: {why}"))
    deleted = len(review.of_kind("delete"))
    if deleted >= 50:
        flags.append(Flag("mass-delete", "", f"deletes {deleted:,} files"))
    return flags


def _resolve_link(fs_root: Path, repo: Path, rel: str, target: str, overlay: dict[str, str | None] | None = None) -> str | None:
    """Where the link ``rel`` -> ``target`` leads inside the tree at ``fs_root``, following the
    tree's other links (``overlay`` first, then the links on disk); None when it leaves the tree.

    Absolute targets count as inside only under ``repo`` (the tree's final path); a loop counts
    as leaving.
    """
    budget = [40]  # the kernel's own limit on links followed in one lookup

    def walk(base: list[str], link_target: str) -> list[str] | None:
        if link_target.startswith("/"):
            root = str(repo)
            if link_target != root and not link_target.startswith(root.rstrip("/") + "/"):
                return None
            base, link_target = [], link_target[len(root):]
        stack = list(base)
        for part in link_target.split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if not stack:
                    return None
                stack.pop()
                continue
            stack.append(part)
            key = "/".join(stack)
            if overlay is not None and key in overlay:
                nxt = overlay[key]
            else:
                nxt = _readlink(fs_root / key)
            if nxt is not None:
                budget[0] -= 1
                if budget[0] <= 0:
                    return None
                resolved = walk(stack[:-1], nxt)
                if resolved is None:
                    return None
                stack = resolved
        return stack

    found = walk(rel.split("/")[:-1], target)
    return None if found is None else "/".join(found)


def _mode_on_disk(path: Path) -> str | None:
    """The git mode of a file in the repository (None if it is not there)."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(st.st_mode):
        return LINK_MODE
    return EXEC_MODE if st.st_mode & 0o100 else "100644"


def _readlink(path: Path) -> str | None:
    try:
        return os.readlink(path)
    except OSError:
        return None


def _check_relative(name: str) -> None:
    parts = name.split("/")
    if name.startswith("/") or ".." in parts or "" in parts or "\0" in name:
        raise UserError(f"the patch names a path outside the repository or an invalid path: {printable(name)}; it is not applied")


def printable(text: str | None) -> str:
    """``text`` as printable: unchanged when every character is printable, else quoted with
    escapes (a control character, a bidirectional override or an undecodable byte is visible, not
    interpreted by the terminal)."""
    if text is None:
        return ""
    if text.isprintable() and not any(0xDC80 <= ord(ch) <= 0xDCFF for ch in text):
        return text
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:
            out.append(f"\\x{code - 0xDC00:02x}")
        elif ch == '"' or ch == "\\":
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif code < 0x100:
            out.append(f"\\x{code:02x}")
        else:
            out.append(f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}")
    return '"' + "".join(out) + '"'


# --------------------------------------------------------------------------------------------
# reading the patch


@dataclass
class _Section:
    kind: str = "modify"
    path: str = ""
    old_path: str | None = None
    old_mode: str | None = None
    new_mode: str | None = None
    link_target: str | None = None
    binary: bool = False
    has_hunk: bool = False


def _unquote(text: str) -> tuple[str, str]:
    """A C-style quoted name at the start of ``text`` (git's ``quote_c_style``): (name, rest)."""
    assert text.startswith('"')
    out = bytearray()
    i = 1
    simple = {"a": 7, "b": 8, "t": 9, "n": 10, "v": 11, "f": 12, "r": 13, '"': 34, "\\": 92}
    while i < len(text):
        ch = text[i]
        if ch == '"':
            return out.decode("utf-8", "surrogateescape"), text[i + 1:]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
                continue
            if nxt in "0123" and i + 3 < len(text) and all(c in "01234567" for c in text[i + 1:i + 4]):
                out.append(int(text[i + 1:i + 4], 8))
                i += 4
                continue
            raise UserError("the patch holds a badly quoted file name; it is not applied")
        out.extend(ch.encode("utf-8", "surrogateescape"))
        i += 1
    raise UserError("the patch holds a badly quoted file name; it is not applied")


def _strip_prefix(name: str) -> str:
    """git apply's ``-p1``: drop the first path component (``a/``, ``b/``)."""
    return name.split("/", 1)[1] if "/" in name else name


def _name_field(value: str) -> str | None:
    """The name of a ``---``/``+++`` line without its prefix; None for ``/dev/null``."""
    if value.startswith('"'):
        name, _ = _unquote(value)
    else:
        name = value.removesuffix("\t")
        name = name.split("\t", 1)[0]
    return None if name == "/dev/null" else _strip_prefix(name)


def _plain_field(value: str) -> str:
    """The name of a ``rename from``/``copy to`` line (no prefix)."""
    return _unquote(value)[0] if value.startswith('"') else value


def _git_line_names(rest: str) -> tuple[str | None, str | None]:
    """Both names of a ``diff --git a/X b/Y`` line (prefixes dropped), as far as they can be told
    apart; (None, None) when they cannot (git then needs the other headers too)."""
    if rest.startswith('"'):
        a, tail = _unquote(rest)
        tail = tail.lstrip(" ")
        b = _unquote(tail)[0] if tail.startswith('"') else tail
        return _strip_prefix(a), _strip_prefix(b)
    if rest.endswith('"') and ' "' in rest:
        head, _, quoted = rest.rpartition(' "')
        return _strip_prefix(head), _strip_prefix(_unquote('"' + quoted)[0])
    if len(rest) % 2 == 1:  # "a/X b/X": the same name twice
        half = len(rest) // 2
        a, b = rest[:half], rest[half + 1:]
        if rest[half] == " " and _strip_prefix(a) == _strip_prefix(b):
            return _strip_prefix(a), _strip_prefix(b)
    return None, None


_HUNK = "@@ -"


def _hunk_counts(line: str) -> tuple[int, int]:
    """The old and new line counts of a ``@@ -a,b +c,d @@`` header."""
    try:
        ranges = line[3:].split(" @@", 1)[0].split(" ")
        old, new = ranges[0].lstrip("-"), ranges[1].lstrip("+")
        return (int(old.split(",")[1]) if "," in old else 1), (int(new.split(",")[1]) if "," in new else 1)
    except (IndexError, ValueError):
        raise UserError(f"the patch holds a malformed hunk header ({printable(line[:80])}); it is not applied") from None


def _parse(data: bytes) -> list[_Section]:
    """The file sections of a git patch, in order; each with its kind, names, modes and, for a
    symbolic link, the target written in its hunk."""
    lines = data.decode("utf-8", "surrogateescape").split("\n")
    sections: list[_Section] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if not line.startswith("diff --git "):
            i += 1
            continue
        s = _Section()
        a, b = _git_line_names(line[len("diff --git "):])
        minus: str | None = None
        plus: str | None = None
        seen_minus = seen_plus = False
        rename_from = rename_to = None
        i += 1
        # extended headers, then the ---/+++ pair
        while i < len(lines) and not lines[i].startswith(("diff --git ", _HUNK, "GIT binary patch", "Binary files ")):
            h = lines[i]
            if h.startswith("old mode "):
                s.old_mode = h[9:].strip()
            elif h.startswith("new mode "):
                s.new_mode = h[9:].strip()
            elif h.startswith("deleted file mode "):
                s.kind, s.old_mode = "delete", h[18:].strip()
            elif h.startswith("new file mode "):
                s.kind, s.new_mode = "add", h[14:].strip()
            elif h.startswith(("rename from ", "copy from ")):
                s.kind = "rename" if h.startswith("rename") else "copy"
                rename_from = _plain_field(h.split(" from ", 1)[1])
            elif h.startswith(("rename to ", "copy to ")):
                rename_to = _plain_field(h.split(" to ", 1)[1])
            elif h.startswith("index "):
                fields = h.split()
                if len(fields) == 3:  # the mode is unchanged
                    s.old_mode = s.old_mode or fields[2]
                    s.new_mode = s.new_mode or fields[2]
            elif h.startswith("--- "):
                minus, seen_minus = _name_field(h[4:]), True
            elif h.startswith("+++ "):
                plus, seen_plus = _name_field(h[4:]), True
            i += 1
        if s.kind in ("rename", "copy"):
            s.old_path, s.path = rename_from, rename_to or ""
        elif s.kind == "add":
            s.path = plus if seen_plus and plus else (b or "")
        elif s.kind == "delete":
            s.old_path = minus if seen_minus and minus else a
            s.path = s.old_path or ""
        else:
            s.path = plus if seen_plus and plus else (b or "")
            s.old_path = minus if seen_minus and minus else (a or s.path)
        if s.kind != "add" and s.kind != "delete" and s.old_mode and not s.new_mode:
            s.new_mode = s.old_mode
        if not s.path or (s.kind != "add" and not s.old_path):
            raise UserError("the patch has a file section whose names cannot be read; it is not applied")
        # the body: hunks (read by their line counts, so a '--- ' inside one is content) or a binary patch
        new_side: list[str] = []
        while i < len(lines) and not lines[i].startswith("diff --git "):
            line = lines[i]
            if line.startswith(_HUNK):
                s.has_hunk = True
                old_n, new_n = _hunk_counts(line)
                i += 1
                while i < len(lines) and (old_n > 0 or new_n > 0):
                    body = lines[i]
                    if body.startswith("\\"):  # "\ No newline at end of file"
                        i += 1
                        continue
                    tag = body[:1]
                    if tag in (" ", ""):
                        old_n, new_n = old_n - 1, new_n - 1
                        new_side.append(body[1:])
                    elif tag == "-":
                        old_n -= 1
                    elif tag == "+":
                        new_n -= 1
                        new_side.append(body[1:])
                    else:
                        raise UserError("the patch has a hunk shorter than its header says; it is not applied")
                    i += 1
                continue
            if line.startswith(("GIT binary patch", "Binary files ")):
                s.binary = True
            i += 1
        if s.new_mode == LINK_MODE and s.kind != "delete" and s.has_hunk and not s.binary:
            s.link_target = "\n".join(new_side)
        sections.append(s)
    return sections


# --------------------------------------------------------------------------------------------
# git, with nothing of the user's configuration


def _git_env(work_tree: Path, git_dir: Path) -> dict[str, str]:
    """A scrubbed environment: no API keys or other secrets, no system or global configuration,
    no repository discovery above ``work_tree``; git's database is ``git_dir`` (empty, ours)."""
    return {
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LC_ALL": "C", "HOME": str(git_dir),
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CEILING_DIRECTORIES": str(work_tree.parent),
        "GIT_DIR": str(git_dir), "GIT_WORK_TREE": str(work_tree),
        "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0",
    }


_GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "core.fsmonitor=false", "-c", "core.autocrlf=false",
        "-c", "core.symlinks=true", "-c", "core.filemode=true", "-c", "safe.directory=*"]


def _git(args: list[str], work_tree: Path, git_dir: Path, stdin: bytes | None = None,
         lock_fd: int | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run git; with ``lock_fd`` (the transaction folder's lock) git holds the lock too and dies
    with Horizon, so a killed apply's git never writes on while the next one recovers."""
    if lock_fd is None:
        return subprocess.run(_GIT + args, cwd=work_tree, env=_git_env(work_tree, git_dir), input=stdin, capture_output=True, check=False)
    return subprocess.run(_GIT + args, cwd=work_tree, env=_git_env(work_tree, git_dir), input=stdin, capture_output=True, check=False,
                          pass_fds=(lock_fd,), preexec_fn=_die_with_parent)


def _die_with_parent() -> None:
    libc = _libc()
    if libc is not None:
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


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


# --------------------------------------------------------------------------------------------
# file states


def _state(path: Path) -> list[Any] | None:
    """What a path holds, comparable and JSON-safe: ``["file", mode, sha256]``, ``["link",
    target]``, ``["dir", mode]``, ``["other", type]``, or None when nothing is there."""
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    if stat.S_ISLNK(st.st_mode):
        return ["link", os.readlink(path)]
    if stat.S_ISREG(st.st_mode):
        digest = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return ["file", stat.S_IMODE(st.st_mode), digest.hexdigest()]
    if stat.S_ISDIR(st.st_mode):
        return ["dir", stat.S_IMODE(st.st_mode)]
    return ["other", stat.S_IFMT(st.st_mode)]


def _ancestors(rel: str) -> list[str]:
    parts = rel.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


def _dir_modes(root: Path, paths: list[str]) -> dict[str, int]:
    """Mode of each folder above ``paths`` that exists under ``root``."""
    found = {}
    for d in sorted({a for p in paths for a in _ancestors(p)}):
        try:
            st = os.lstat(root / d)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode):
            found[d] = stat.S_IMODE(st.st_mode)
    return found


# --------------------------------------------------------------------------------------------
# the transaction folder


def _resolved_repo(repo: Path) -> Path:
    path = Path(os.path.realpath(repo))
    if not path.is_dir():
        raise UserError(f"{repo} is not a folder: the repository the run was started on is gone or moved")
    return path


def area_of(repo: Path) -> Path:
    """The transaction folder of ``repo``: ``<parent>/.horizon-apply.<name>`` (see the module)."""
    return repo.parent / f".horizon-apply.{repo.name}"


class _Area:
    """The transaction folder of one repository, locked while open."""

    def __init__(self, repo: Path, wait_s: float = 5.0) -> None:
        self.repo = repo
        self.path = area_of(repo)
        try:
            self.path.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise UserError(f"cannot create {self.path} beside the repository ({exc.strerror}); agent apply stages "
                            f"the new files there: make {repo.parent} writable") from None
        st = os.lstat(self.path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise UserError(f"{self.path} is not a folder that only you can write; move it away and try again")
        self.fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    raise UserError(f"another agent apply is changing {repo} right now; try again when it ends") from None
                time.sleep(0.05)
        self.git_dir = _empty_git_dir(self.path / "git")

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def journal(self) -> Path:
        return self.path / "journal.json"

    def new_tx(self) -> Path:
        tx = self.path / f"tx-{datetime.now():%Y%m%d-%H%M%S-%f}-{secrets.token_hex(2)}"  # sorts by time
        tx.mkdir()
        return tx


def _write_json(path: Path, value: Any, *, compact: bool = False) -> None:
    """Write ``value`` to ``path`` atomically and durably (temporary file, fsync, rename, fsync)."""
    tmp = path.with_name(path.name + f".tmp-{secrets.token_hex(4)}")
    with open(tmp, "w") as f:
        json.dump(value, f, ensure_ascii=True, **({"separators": (",", ":")} if compact else {"indent": 1}))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _rmtree(path: Path) -> bool:
    """Remove a tree we made or swapped out, making read-only folders writable on the way;
    True when it is gone."""

    def retry(func: Any, target: str, _exc: Any) -> None:
        parent = os.path.dirname(target)
        try:
            os.chmod(parent, stat.S_IMODE(os.lstat(parent).st_mode) | stat.S_IRWXU)
            if os.path.isdir(target) and not os.path.islink(target):
                os.chmod(target, stat.S_IMODE(os.lstat(target).st_mode) | stat.S_IRWXU)
            func(target)
        except OSError:
            pass

    if not os.path.lexists(path):
        return True
    if path.is_symlink() or not path.is_dir():
        path.unlink()
        return True
    shutil.rmtree(path, onerror=retry)
    return not os.path.lexists(path)


# --------------------------------------------------------------------------------------------
# staging


def _link_tree(src: Path, dst: Path) -> dict[str, tuple[int, int, int]]:
    """Make ``dst`` (which must not exist) a copy of ``src``: folders new, every other entry a
    hard link to the same file (a copy where a link cannot be made).

    Returns:
        Each folder's (mode, uid, gid), by relative path ("" for the root), to be set by
        ``_finish_dirs`` once the staged tree is complete (a read-only folder must stay writable
        until then).

    Raises:
        UserError: a mount point inside ``src`` (its files cannot be swapped with the rest).
    """
    root_st = os.lstat(src)
    modes: dict[str, tuple[int, int, int]] = {"": (stat.S_IMODE(root_st.st_mode), root_st.st_uid, root_st.st_gid)}
    os.mkdir(dst, 0o700)
    stack = [""]
    while stack:
        rel = stack.pop()
        s_dir, d_dir = src / rel if rel else src, dst / rel if rel else dst
        with os.scandir(s_dir) as entries:
            for entry in entries:
                r = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    st = entry.stat(follow_symlinks=False)
                    if st.st_dev != root_st.st_dev:
                        raise UserError(f"{s_dir / entry.name} is a mount point inside the repository; "
                                        f"agent apply cannot swap it: unmount it, or apply the patch by hand")
                    os.mkdir(d_dir / entry.name, 0o700)
                    modes[r] = (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid)
                    stack.append(r)
                else:
                    _link_or_copy(Path(entry.path), d_dir / entry.name)
    return modes


def _link_or_copy(src: Path, dst: Path) -> None:
    try:
        os.link(src, dst, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.EMLINK, errno.EXDEV, errno.EACCES, errno.ENOTSUP, errno.EOPNOTSUPP):
            raise
        _copy_fresh(src, dst)


def _copy_fresh(src: Path, dst: Path) -> None:
    """Copy one entry as a new file (never a link to ``src``'s data)."""
    st = os.lstat(src)
    if stat.S_ISLNK(st.st_mode):
        os.symlink(os.readlink(src), dst)
    elif stat.S_ISREG(st.st_mode):
        shutil.copy2(src, dst, follow_symlinks=False)
        if os.geteuid() == 0:
            os.chown(dst, st.st_uid, st.st_gid, follow_symlinks=False)
    else:
        raise UserError(f"{src} is a special file (a FIFO, socket or device) that cannot be copied; move it out of the repository")


def _finish_dirs(root: Path, modes: dict[str, tuple[int, int, int]]) -> None:
    as_root = os.geteuid() == 0
    for rel, (mode, uid, gid) in sorted(modes.items(), key=lambda kv: -kv[0].count("/")):
        path = root / rel if rel else root
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        if as_root:
            os.chown(path, uid, gid)
        os.chmod(path, mode)


def _changed_paths(a_root: Path, b_root: Path) -> set[str]:
    """Every path that differs between two trees that share their unchanged files (hard links):
    a non-folder whose inode differs (and whose content or mode differs too), or an entry, folder
    or not, present in one tree only."""
    changed: set[str] = set()

    def entries(path: Path) -> dict[str, os.DirEntry[str]]:
        try:
            with os.scandir(path) as it:
                return {e.name: e for e in it}
        except (FileNotFoundError, NotADirectoryError):
            return {}

    def all_below(root: Path, rel: str) -> None:
        for dirpath, dirnames, filenames in os.walk(root / rel):
            base = Path(dirpath).relative_to(root).as_posix()
            changed.update(f"{base}/{n}" for n in dirnames + filenames)

    stack = [""]
    while stack:
        rel = stack.pop()
        ea, eb = entries(a_root / rel), entries(b_root / rel)
        for name in ea.keys() | eb.keys():
            r = f"{rel}/{name}" if rel else name
            x, y = ea.get(name), eb.get(name)
            x_dir = x is not None and x.is_dir(follow_symlinks=False)
            y_dir = y is not None and y.is_dir(follow_symlinks=False)
            if x_dir and y_dir:
                stack.append(r)
                continue
            same_kind = x is not None and y is not None and not x_dir and not y_dir
            if same_kind and (x.inode() == y.inode() or _state(a_root / r) == _state(b_root / r)):  # type: ignore[union-attr]
                continue
            changed.add(r)
            if x_dir:
                all_below(a_root, r)
            if y_dir:
                all_below(b_root, r)
    return changed


def _syncfs(path: Path) -> None:
    """Flush the filesystem holding ``path`` to disk (the staged files, before the swap)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "syncfs"):
        os.sync()
        return
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        libc.syncfs(fd)
    finally:
        os.close(fd)


_LIBC: list[Any] = []


def _libc() -> Any:
    if not _LIBC:
        try:
            _LIBC.append(ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True))
        except OSError:
            _LIBC.append(None)
    return _LIBC[0]


AT_FDCWD = -100
RENAME_EXCHANGE = 2


def _exchange(a: Path, b: Path) -> None:
    """Swap two paths atomically (``renameat2(RENAME_EXCHANGE)``, Linux 3.15+, glibc 2.28+).

    Raises:
        OSError: with ``ENOSYS`` where the C library or the kernel lacks it, ``EINVAL`` where the
            filesystem does not support it, or the call's own error.
    """
    libc = _libc()
    func = getattr(libc, "renameat2", None) if libc is not None else None
    if func is None:
        raise OSError(errno.ENOSYS, "renameat2 is not available")
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    if func(AT_FDCWD, os.fsencode(a), AT_FDCWD, os.fsencode(b), RENAME_EXCHANGE) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(a))


# --------------------------------------------------------------------------------------------
# the transaction: journal, swap, finish, recover


@dataclass
class Outcome:
    """What ``apply_patch`` or ``undo`` did.

    Attributes:
        state: ``applied`` (the repository holds the patched tree) or ``restored`` (an undo put
            the touched files back).
        repo: the repository.
        run_id: the run whose patch it was.
        files: how many paths changed.
        backup: where the touched files' old versions are kept (None after an undo).
        swap: ``exchange`` (one atomic system call) or ``two renames`` (the journaled fallback).
        notes: what else a person should know (an earlier transaction recovered, a folder left).
    """

    state: str
    repo: Path
    run_id: str
    files: int
    backup: Path | None
    swap: str
    notes: list[str] = field(default_factory=list)


def _swap(area: _Area, tx: Path, journal: dict[str, Any]) -> str:
    """Put the staged tree ``tx/new`` at the repository's path; the old tree ends at ``tx/new``
    (exchange) or ``tx/old`` (two renames). Returns the way it was done."""
    repo, new = area.repo, tx / "new"
    _syncfs(new)
    journal["swap"] = "exchange"
    _write_json(area.journal, journal)
    try:
        _exchange(new, repo)
        _fsync_dir(repo.parent)
        return "exchange"
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.ENOTSUP):
            area.journal.unlink()
            raise UserError(f"cannot swap the new files into {repo}: {exc.strerror}") from None
    journal["swap"] = "two renames"
    _write_json(area.journal, journal)
    os.rename(repo, tx / "old")
    os.rename(new, repo)  # killed just before this line: the repository is missing until recover()
    _fsync_dir(repo.parent)
    return "two renames"


def _old_tree(tx: Path, journal: dict[str, Any]) -> Path | None:
    """Where the swapped-out tree of a transaction is, if it still exists."""
    for name in ("new", "old"):
        if _inode(tx / name) == journal["repo_inode"]:
            return tx / name
    return None


def _finish(area: _Area, journal: dict[str, Any], notes: list[str]) -> None:
    """The steps after the swap, each safe to repeat: keep the backup (apply) or drop the old
    tree and the undone backup (undo), write the records, forget the journal."""
    tx = area.path / journal["tx"]
    record = _read_json(tx / "record.json")
    record["swap"] = journal.get("swap", "exchange")
    old = _old_tree(tx, journal)
    if journal["op"] == "apply":
        before = tx / "before"
        if old is not None:
            os.rename(old, before)
        if before.exists():
            _prune(before, set(record["touched"]))
        record["state"] = "applied"
    else:
        if old is not None:
            os.rename(old, tx / "trash")
        _rmtree(tx / "trash")
        record["state"] = "restored"
    _write_json(tx / "record.json", record, compact=True)
    run_record = Path(journal["run_record"])
    for tmp in [*tx.glob("*.tmp-*"), *run_record.parent.glob(run_record.name + ".tmp-*")]:  # a write a kill cut short
        tmp.unlink()
    if run_record.parent.is_dir():
        if journal["op"] == "apply":
            _write_json(run_record, _public_record(record))
        elif run_record.is_file():
            applied = _read_json(run_record)
            applied.update(state="undone", undone_at=record["created_at"], backup=None)
            _write_json(run_record, applied)
    if journal["op"] == "undo":
        undone = area.path / record["undoes"]
        if not _rmtree(undone):
            notes.append(f"could not remove the old backup {undone}; remove it by hand")
    area.journal.unlink()
    _fsync_dir(area.path)
    if journal["op"] == "undo":
        _rmtree(tx)  # killed before this: the next recover removes it (no before/)


def _public_record(record: dict[str, Any]) -> dict[str, Any]:
    """The run folder's ``apply.json``: what was applied, when, where the backup is (its
    ``record.json`` holds every touched path's state before and after, for ``undo``)."""
    return {k: record[k] for k in ("run_id", "state", "repo", "swap", "tx", "backup", "files")} | {
        "applied_at": record["created_at"], "undone_at": None, "paths": len(record["touched"])}


def _prune(tree: Path, keep: set[str]) -> None:
    """Remove from ``tree`` everything but the paths in ``keep`` and the folders above them."""
    keep_dirs = {a for p in keep for a in _ancestors(p)}
    stack = [""]
    while stack:
        rel = stack.pop()
        path = tree / rel if rel else tree
        try:
            entries = list(os.scandir(path))
        except FileNotFoundError:
            continue
        try:
            os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | stat.S_IRWXU)
        except OSError:
            pass
        for entry in entries:
            r = f"{rel}/{entry.name}" if rel else entry.name
            if r in keep:
                continue
            if r in keep_dirs and entry.is_dir(follow_symlinks=False):
                stack.append(r)
                continue
            if entry.is_dir(follow_symlinks=False):
                _rmtree(Path(entry.path))
            else:
                try:
                    os.unlink(entry.path)
                except FileNotFoundError:
                    pass


def recover(repo: Path) -> list[str]:
    """Finish or roll back a transaction on ``repo`` that a kill cut short, and remove what it
    left (staged trees, half-made folders). ``apply_patch`` and ``undo`` call it first.

    Args:
        repo: the repository.

    Returns:
        One line per thing done, for the user (empty when there was nothing to recover).

    Raises:
        UserError: the repository's path was replaced by something else meanwhile; the old and
            new trees are left where they are, and the message names them.
    """
    repo = Path(os.path.realpath(repo))
    if not area_of(repo).is_dir():
        return []
    with _Area(repo) as area:
        return _recover(area)


def _recover(area: _Area) -> list[str]:
    notes: list[str] = []
    repo = area.repo
    if area.journal.is_file():
        journal = _read_json(area.journal)
        tx = area.path / journal["tx"]
        what = f"an interrupted agent apply{' --undo' if journal['op'] == 'undo' else ''} of run {journal['run_id']}"
        here = _inode(repo)
        if here == journal["new_inode"]:
            _finish(area, journal, notes)
            notes.append(f"{what} was finished: its swap had happened, so {repo} holds its result")
        elif here is None and (tx / "new").is_dir() and (tx / "old").is_dir():
            os.rename(tx / "new", repo)  # the second rename of the fallback swap
            _fsync_dir(repo.parent)
            _finish(area, journal, notes)
            notes.append(f"{what} was finished: it was killed between its two renames and {repo} was missing; it is back, with the result")
        elif here == journal["repo_inode"]:
            area.journal.unlink()
            _rmtree(tx)
            notes.append(f"{what} was rolled back: it was killed before its swap, so {repo} was never changed")
        else:
            raise UserError(
                f"{what} cannot be recovered: {repo} is neither the tree before it nor the one after it "
                f"(replaced meanwhile?). The trees are in {tx} (new/ or old/); {area.journal} describes them. "
                f"Move what you need, then delete {area.journal}."
            )
    # what a transaction without a journal left: a staged tree never swapped, a finished undo's
    # folder; what stays is a backup (before/ and its record)
    for tx in sorted(area.path.glob("tx-*")):
        backup = (tx / "before").is_dir() and (tx / "record.json").is_file()
        unfinished = not backup or any(os.path.lexists(tx / name) for name in ("new", "old", "trash"))
        if unfinished and not _rmtree(tx):
            notes.append(f"could not remove {tx}; remove it by hand")
    for tmp in [*area.path.glob("*.tmp-*"), *area.path.glob("tx-*/*.tmp-*")]:
        _rmtree(tmp)
    return notes


def _prune_backups(area: _Area, keep: int = KEEP_BACKUPS) -> list[str]:
    """Remove the backups of all but the last ``keep`` applies (their undo is then impossible)."""
    done = sorted(tx for tx in area.path.glob("tx-*") if (tx / "before").is_dir())
    notes = []
    for tx in done[: max(0, len(done) - keep)]:
        record = _read_json(tx / "record.json") if (tx / "record.json").is_file() else {}
        run_record = Path(record.get("run_record", ""))
        if run_record.is_file():
            try:
                applied = _read_json(run_record)
                if applied.get("tx") == tx.name:
                    applied["backup"] = None
                    _write_json(run_record, applied)
            except (OSError, ValueError):
                pass
        if not _rmtree(tx):
            notes.append(f"could not remove the old backup {tx}; remove it by hand")
    return notes


# --------------------------------------------------------------------------------------------
# apply and undo


def apply_patch(review: Review, *, run_id: str, run_record: Path, allow_outside_links: bool = False,
                allow_git_dir: bool = False) -> Outcome:
    """Apply a reviewed patch to its repository as one transaction (see the module).

    Args:
        review: from ``review_patch``; exactly its bytes are applied.
        run_id: the run the patch comes from (recorded).
        run_record: where to record what was applied (the run folder's ``apply.json``).
        allow_outside_links: apply symbolic links whose target leaves the repository.
        allow_git_dir: apply changes inside ``.git``.

    Returns:
        The outcome: ``state`` is ``applied``; the repository holds the new tree.

    Raises:
        UserError: the review refuses the patch, the patch is already applied or does not apply
            to the repository as it is now, the repository cannot be staged or swapped (a mount
            point, an unwritable parent folder), or another apply is running. The repository is
            unchanged in every one of these cases, and the message says so.
    """
    refused = review.refusals(allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir)
    if refused:
        raise UserError("not applied: " + "; ".join(refused) + "; your files are unchanged")
    repo = review.repo
    if os.path.ismount(repo):
        raise UserError(f"{repo} is a mount point; agent apply cannot swap it (apply by hand: git apply {review.patch})")
    with _Area(repo) as area:
        notes = _recover(area)
        extra = ["--unsafe-paths"] if allow_git_dir else []
        check = _git(["apply", "--check", *extra, "-"], repo, area.git_dir, stdin=review.data)
        if check.returncode != 0:
            reverse = _git(["apply", "--check", "--reverse", *extra, "-"], repo, area.git_dir, stdin=review.data)
            if reverse.returncode == 0:
                raise UserError(f"the patch is already applied to {repo}; your files are unchanged")
            raise UserError(
                f"the patch does not apply to {repo}: {check.stderr.decode(errors='replace').strip()}; your files are "
                f"unchanged. Inspect it with: git apply --stat {review.patch}"
            )
        notes += _prune_backups(area, KEEP_BACKUPS - 1)  # with this one, KEEP_BACKUPS
        tx = area.new_tx()
        try:
            record = _stage_apply(area, tx, review, run_id, run_record, extra,
                                  allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir)
        except OSError as exc:
            _rmtree(tx)
            raise UserError(f"cannot stage the new files beside {repo}: {exc}; your files are unchanged") from None
        except BaseException:
            _rmtree(tx)
            raise
        return _commit(area, tx, record, run_record, notes)


def _stage_apply(area: _Area, tx: Path, review: Review, run_id: str, run_record: Path, extra: list[str], *,
                 allow_outside_links: bool, allow_git_dir: bool) -> dict[str, Any]:
    repo, new = area.repo, tx / "new"
    touched = review.touched()
    (tx / "patch.diff").write_bytes(review.data)
    modes = _link_tree(repo, new)
    # changed files become new files before git writes them: the repository's inodes are never written
    fresh = {c.old_path for c in review.changes if c.kind == "modify" and c.old_path}
    for rel in fresh:
        if (new / rel).is_file() and not (new / rel).is_symlink():
            os.unlink(new / rel)
            _copy_fresh(repo / rel, new / rel)
    proc = _git(["apply", *extra, str(tx / "patch.diff")], new, area.git_dir, lock_fd=area.fd)
    if proc.returncode != 0:
        raise UserError(f"git apply failed on the staged copy: {proc.stderr.decode(errors='replace').strip()}; your files are unchanged")
    _keep_permissions(repo, new, review)
    _finish_dirs(new, modes)
    before = {rel: _state(repo / rel) for rel in touched}
    after = {rel: _state(new / rel) for rel in touched}
    _verify(repo, new, touched, allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir)
    return {
        "op": "apply", "run_id": run_id, "repo": str(repo), "created_at": _now(), "tx": tx.name,
        "backup": str(tx / "before"), "run_record": str(run_record), "state": "staged",
        "files": {
            "added": [c.path for c in review.of_kind("add")] + [c.path for c in review.of_kind("copy")],
            "modified": [c.path for c in review.of_kind("modify")],
            "deleted": [c.path for c in review.of_kind("delete")],
            "renamed": [[c.old_path, c.path] for c in review.of_kind("rename")],
            "mode_changed": [c.path for c in review.mode_changes],
        },
        "touched": {rel: {"before": before[rel], "after": after[rel]} for rel in touched},
        "dirs_before": _dir_modes(repo, touched), "dirs_after": _dir_modes(new, touched),
    }


def _keep_permissions(repo: Path, new: Path, review: Review) -> None:
    """git writes a patched file with default permissions: give it back the old file's (a private
    0600 file stays private), with the executable bits the patch asks for; as root, the owner too."""
    as_root = os.geteuid() == 0
    for c in review.changes:
        if c.kind == "delete" or not c.old_path or c.kind == "add":
            continue
        target = new / c.path
        try:
            old, now = os.lstat(repo / c.old_path), os.lstat(target)
        except FileNotFoundError:
            continue
        if not (stat.S_ISREG(old.st_mode) and stat.S_ISREG(now.st_mode)):
            continue
        mode = stat.S_IMODE(old.st_mode)
        if c.new_mode == EXEC_MODE:
            mode |= (mode & 0o444) >> 2
        elif c.new_mode == "100644":
            mode &= ~0o111
        os.chmod(target, mode)
        if as_root:
            os.chown(target, old.st_uid, old.st_gid)
    if as_root:  # new files: owned like the folder they are in
        for c in review.changes:
            if c.kind in ("add", "copy") and os.path.lexists(new / c.path):
                parent = os.lstat((new / c.path).parent)
                os.chown(new / c.path, parent.st_uid, parent.st_gid, follow_symlinks=False)


def _verify(repo: Path, new: Path, touched: list[str], *, allow_outside_links: bool, allow_git_dir: bool) -> None:
    """Check the staged tree itself, not the patch's text: only reviewed paths (and the folders
    above them) differ from the repository, and no link in them leaves the tree."""
    allowed = set(touched) | {a for p in touched for a in _ancestors(p)}
    extra = sorted(_changed_paths(repo, new) - allowed)
    if extra:
        raise UserError(f"the staged result changes paths the review does not list ({', '.join(printable(p) for p in extra[:5])}); "
                        f"not applied, your files are unchanged")
    for rel in touched:
        if not allow_git_dir and _is_git_path(rel):
            raise UserError(f"the patch changes {printable(rel)} inside .git; not applied, your files are unchanged")
        target = _readlink(new / rel)
        if target is None:
            continue
        where = _resolve_link(new, repo, rel, target)
        if where is None and not allow_outside_links:
            raise UserError(f"the symbolic link {printable(rel)} -> {printable(target)} leaves the repository; not applied, your files are unchanged")
        if where is not None and _is_git_path(where) and not allow_git_dir:
            raise UserError(f"the symbolic link {printable(rel)} -> {printable(target)} points into .git; not applied, your files are unchanged")


def _commit(area: _Area, tx: Path, record: dict[str, Any], run_record: Path, notes: list[str]) -> Outcome:
    """Swap the staged tree in and finish; before the swap any failure leaves the repository as it was.

    Ctrl-C (SIGINT) is held back from the journal to the end, so Python never stops between the
    swap and its record; a SIGKILL there is what ``recover`` is for.
    """
    repo = area.repo
    new = tx / "new"
    _write_json(tx / "record.json", record, compact=True)
    journal = {"op": record["op"], "tx": tx.name, "run_id": record["run_id"], "repo": str(repo),
               "run_record": str(run_record), "new_inode": _inode(new), "repo_inode": _inode(repo)}
    with _held_signals() as held:
        try:
            swap = _swap(area, tx, journal)
        except BaseException:
            if _inode(repo) != journal["new_inode"]:  # not swapped: put everything back as it was
                if _inode(repo) is None and _inode(tx / "old") == journal["repo_inode"]:
                    os.rename(tx / "old", repo)
                if area.journal.exists():
                    area.journal.unlink()
                _rmtree(tx)
                raise
            swap = journal.get("swap", "exchange")
        # from here on the repository holds the new tree, whatever happens
        try:
            _finish(area, journal, notes)
        except OSError as exc:
            notes.append(f"the swap is done, but tidying up failed ({exc}); the next agent apply on {repo} finishes it")
    if held:
        notes.append("Ctrl-C came during the swap; it waited until the transaction was complete")
    files = len(record["touched"])
    if record["op"] == "apply":
        return Outcome("applied", repo, record["run_id"], files, tx / "before", swap, notes)
    return Outcome("restored", repo, record["run_id"], files, None, swap, notes)


def _inode(path: Path) -> list[int] | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino]


@contextmanager
def _held_signals() -> Iterator[list[int]]:
    """SIGINT, SIGTERM and SIGHUP recorded instead of acted on inside the block (main thread
    only); yields the list of those that came."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    wanted = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, lambda signum, _frame: came.append(signum)) for sig in wanted}
    try:
        yield came
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def undo_summary(run_record: Path) -> dict[str, Any]:
    """The record of an apply that ``undo`` would reverse (the run folder's ``apply.json``).

    Raises:
        UserError: the run's patch was never applied by ``agent apply`` (or by an older Horizon
            that kept no record), or it was undone already.
    """
    if not run_record.is_file():
        raise UserError(f"no record of an agent apply of this run ({run_record} is missing): nothing to undo")
    record = _read_json(run_record)
    if record.get("state") != "applied":
        raise UserError(f"the patch of run {record.get('run_id')} was undone already ({record.get('undone_at')}); nothing to undo")
    return record


def undo(run_record: Path) -> Outcome:
    """Put back the files an apply touched, as they were before it, as one transaction.

    Files the patch did not touch are left as they are now: later edits elsewhere survive.

    Args:
        run_record: the run folder's ``apply.json`` written by ``apply_patch``.

    Returns:
        The outcome: ``state`` is ``restored``.

    Raises:
        UserError: nothing to undo, the backup was removed (only the last ``KEEP_BACKUPS`` applies
            per repository keep theirs), the repository is gone, or a file the patch touched
            changed since the apply (the message lists them: undo would lose those changes). The
            repository is unchanged in every one of these cases.
    """
    record = undo_summary(run_record)
    repo = _resolved_repo(Path(record["repo"]))
    with _Area(repo) as area:
        notes = _recover(area)
        record = undo_summary(run_record)  # recovery may have finished an earlier undo
        applied_tx = area.path / record["tx"]
        full = _read_json(applied_tx / "record.json") if (applied_tx / "record.json").is_file() else None
        if full is None or not (applied_tx / "before").is_dir() or full.get("state") != "applied":
            raise UserError(f"the backup of this apply is gone ({applied_tx}; Horizon keeps the last {KEEP_BACKUPS} applies "
                            f"per repository), so it cannot be undone here; use git to revert the files")
        touched: dict[str, dict[str, Any]] = full["touched"]
        changed = [rel for rel, s in touched.items() if _state(repo / rel) != s["after"]]
        if changed:
            shown = ", ".join(printable(p) for p in changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
            raise UserError(f"cannot undo: files the patch touched changed since it was applied ({shown}); undo would lose "
                            f"those changes. Your files are unchanged; revert by hand (the old versions are in {applied_tx / 'before'})")
        tx = area.new_tx()
        try:
            new_record = _stage_undo(area, tx, full, run_record, notes)
        except OSError as exc:
            _rmtree(tx)
            raise UserError(f"cannot stage the old files beside {repo}: {exc}; your files are unchanged") from None
        except BaseException:
            _rmtree(tx)
            raise
        return _commit(area, tx, new_record, run_record, notes)


def _stage_undo(area: _Area, tx: Path, full: dict[str, Any], run_record: Path, notes: list[str]) -> dict[str, Any]:
    repo, new = area.repo, tx / "new"
    before_tree = area.path / full["tx"] / "before"
    touched: dict[str, dict[str, Any]] = full["touched"]
    modes = _link_tree(repo, new)
    for rel in sorted(touched, key=lambda p: -p.count("/")):
        path = new / rel
        if os.path.lexists(path):
            if path.is_dir() and not path.is_symlink():
                _rmtree(path)
            else:
                path.unlink()
    dirs_before: dict[str, int] = full["dirs_before"]
    for d in sorted(set(full["dirs_after"]) - set(dirs_before), key=lambda p: -p.count("/")):
        try:
            os.rmdir(new / d)
            modes.pop(d, None)
        except FileNotFoundError:
            pass
        except OSError:
            notes.append(f"kept the folder {printable(d)}, made by the patch: it holds files added since")
    for d in sorted(dirs_before, key=lambda p: p.count("/")):
        if not os.path.isdir(new / d):
            os.mkdir(new / d, 0o700)
            modes[d] = (dirs_before[d], *_owner(new / d))
    for rel, s in touched.items():
        if s["before"] is not None:
            _link_or_copy(before_tree / rel, new / rel)
    _finish_dirs(new, modes)
    for rel, s in touched.items():
        if _state(new / rel) != s["before"]:
            raise UserError(f"the backup of {printable(rel)} does not match what was there before; not undone, your files are unchanged")
    return {
        "op": "undo", "run_id": full["run_id"], "repo": str(repo), "created_at": _now(), "tx": tx.name, "undoes": full["tx"],
        "backup": None, "run_record": str(run_record), "state": "staged", "files": full["files"],
        "touched": {rel: {"before": s["after"], "after": s["before"]} for rel, s in touched.items()},
    }


def _owner(path: Path) -> tuple[int, int]:
    st = os.lstat(path.parent)
    return st.st_uid, st.st_gid


# --------------------------------------------------------------------------------------------
# by run id


def _run_files(run_id: str, home: Path | None) -> tuple[Path, Path, Path]:
    """(repository, patch, run folder) of a run."""
    from contextlib import closing

    from core.config import runs_dir
    from core.runs import open_store

    with closing(open_store(run_id, home)) as store:
        row = store.run()
    if not row["repo"]:
        raise UserError(f"run {run_id} has no repository to apply a patch to")
    folder = runs_dir(home) / run_id
    return Path(row["repo"]), folder / "patch.diff", folder


def recover_run(run_id: str, home: Path | None = None) -> list[str]:
    """``recover`` the repository of a run (before showing what an apply or undo would do).

    Raises:
        RunNotFound, UserError: no such run, no repository, or see ``recover``.
    """
    return recover(_run_files(run_id, home)[0])


def review_run(run_id: str, home: Path | None = None) -> Review:
    """``review_patch`` of a run's final patch against the repository it was started on.

    Raises:
        RunNotFound, UserError: no such run, no repository, or see ``review_patch``.
    """
    repo, patch, _ = _run_files(run_id, home)
    notes = recover(repo)  # first: a killed transaction finished (a fallback swap may have left it missing)
    review = review_patch(repo, patch)
    review.notes = notes
    return review


def apply_run_patch(run_id: str, home: Path | None = None, *, review: Review | None = None,
                    allow_outside_links: bool = False, allow_git_dir: bool = False) -> Outcome:
    """Apply a run's final patch to its repository (``apply_patch``), recorded in the run's folder
    (``apply.json``).

    Args:
        run_id: the run.
        home: Horizon's data folder (default ``$HORIZON_HOME`` or ``~/.horizon``).
        review: the review the user saw (default: made now).
        allow_outside_links, allow_git_dir: see ``apply_patch``.

    Raises:
        RunNotFound, UserError: see ``review_patch`` and ``apply_patch``.
    """
    _, _, folder = _run_files(run_id, home)
    review = review or review_run(run_id, home)
    outcome = apply_patch(review, run_id=run_id, run_record=folder / "apply.json",
                          allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir)
    outcome.notes[:0] = review.notes
    return outcome


def undo_run(run_id: str, home: Path | None = None) -> Outcome:
    """``undo`` of a run's last apply.

    Raises:
        UserError: see ``undo``.
    """
    from core.config import runs_dir

    folder = runs_dir(home) / run_id
    if not folder.is_dir():
        from core.errors import RunNotFound

        raise RunNotFound(f"no run {run_id!r} in {runs_dir(home)}; list runs with: agent runs")
    return undo(folder / "apply.json")
