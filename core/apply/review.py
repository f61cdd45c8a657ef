"""The review of a patch, made before anything changes: ``review_patch`` reads its file sections,
cross-checks them with git's own reading and flags what a person should look at (links,
executables, files that tools run by themselves); links that leave the repository and changes
inside ``.git`` are refusals. ``format_review`` shows it to a person."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.apply.diff import _parse
from core.apply.git import _git_numstat
from core.apply.paths import (
    EXEC_MODE,
    LINK_MODE,
    SUBMODULE_MODE,
    _check_relative,
    _is_git_path,
    _mode_on_disk,
    _readlink,
    _resolve_link,
    _resolved_repo,
    printable,
)
from core.errors import UserError


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
