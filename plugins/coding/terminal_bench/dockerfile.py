"""A Dockerfile read without Docker: what its starting files, working folder and environment
amount to, and what it needs Docker for (refused with the file, line and reason).

See ``plugins.coding.terminal_bench`` for what is accepted and refused. Dockerfile reference:
https://docs.docker.com/reference/dockerfile/ (instructions, line continuation, the ``escape``
directive, ``.dockerignore``).
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from core.api import UserError

#: Instructions that do not shape the starting files: read and ignored.
_IGNORED = {"CMD", "ENTRYPOINT", "LABEL", "EXPOSE", "USER", "VOLUME", "SHELL", "STOPSIGNAL", "HEALTHCHECK", "MAINTAINER", "ONBUILD"}
_PIP = re.compile(r"^(?:pip3?|python3?\s+-m\s+pip|uv\s+pip)\s+install\s+(.*)$")
_VAR = re.compile(r"\\\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?::([-+])([^}]*))?\}|\$([A-Za-z_][A-Za-z0-9_]*)")



@dataclass(frozen=True)
class Copy:
    """One file or folder of the starting tree.

    Attributes:
        source: the file or folder in the build context (absolute).
        target: where it goes, relative to the working folder (POSIX; ``.`` is the folder itself).
        into: ``target`` is a folder that receives ``source`` (a file) under its own name.
        mode: ``--chmod`` (octal), or None to keep the source's mode.
        line: the Dockerfile line (for messages).
    """

    source: Path
    target: str
    into: bool
    mode: int | None
    line: int


@dataclass(frozen=True)
class Environment:
    """What a Dockerfile amounts to without Docker.

    Attributes:
        dockerfile: the file read (absolute).
        context: its build context (absolute): COPY sources are relative to it.
        base_image: the ``FROM`` image (recorded; not pulled).
        workdir: the last ``WORKDIR``, absolute POSIX (e.g. ``/app``).
        env: ``ENV`` values in order.
        copies: the starting tree's files and folders, in order.
        folders: folders ``RUN mkdir`` makes, relative to the working folder.
    """

    dockerfile: Path
    context: Path
    base_image: str
    workdir: str
    env: dict[str, str] = field(default_factory=dict)
    copies: list[Copy] = field(default_factory=list)
    folders: list[str] = field(default_factory=list)


def read_task_file(path: Path) -> str:
    """A task file's text: UTF-8, a byte-order mark dropped.

    Raises:
        UserError: the file is not UTF-8 (named, with how to fix it); OSError: it cannot be read.
    """
    try:
        return path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path} is not UTF-8 text (byte {exc.start}: {exc.reason}); save it as UTF-8") from None


def _unquoted(part: str) -> str:
    """A shell command with its quoted text removed, so that only unquoted characters are checked
    for shell syntax; a double-quoted ``$(`` or backquote (still run by the shell) is kept."""

    def blank(match: re.Match[str]) -> str:
        quoted = match.group(0)
        return "$(" if quoted.startswith('"') and ("$(" in quoted or "`" in quoted) else " "

    return re.sub(r"'[^']*'|\"(?:[^\"\\]|\\.)*\"", blank, part)


def _logical_lines(text: str, escape: str) -> list[tuple[int, str]]:
    """Instructions with their first line number: comments dropped, continued lines joined."""
    lines: list[tuple[int, str]] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if stripped.startswith("#") or (pending and not stripped):
            continue  # a comment (or a blank line inside a continued instruction)
        if not pending:
            start = number
        if stripped.endswith(escape):
            pending.append(stripped[:-1])
            continue
        pending.append(stripped)
        joined = " ".join(p.strip() for p in pending).strip()
        pending = []
        if joined:
            lines.append((start, joined))
    if pending:
        lines.append((start, " ".join(p.strip() for p in pending).strip()))
    return lines


def _substitute(text: str, values: dict[str, str]) -> str:
    """Docker's variable substitution: ``$X``, ``${X}``, ``${X:-default}``, ``${X:+alternative}``."""

    def one(match: re.Match[str]) -> str:
        if match.group(0) == "\\$":
            return "$"
        name = match.group(1) or match.group(4)
        value = values.get(name, "")
        if match.group(2) == "-":
            return value or match.group(3)
        if match.group(2) == "+":
            return match.group(3) if value else ""
        return value

    return _VAR.sub(one, text)


def _words(args: str) -> list[str]:
    """A COPY/ADD argument list: the JSON form, or words split at white space."""
    if args.startswith("["):
        try:
            words = json.loads(args)
        except json.JSONDecodeError:
            words = None
        if isinstance(words, list) and all(isinstance(w, str) for w in words):
            return words
    return args.split()


def _env_pairs(args: str) -> list[tuple[str, str]]:
    import shlex

    words = shlex.split(args)
    if words and "=" not in words[0]:  # the old form: ENV KEY value with spaces
        return [(words[0], args.split(None, 1)[1].strip() if len(words) > 1 else "")]
    return [tuple(w.split("=", 1)) if "=" in w else (w, "") for w in words]  # type: ignore[misc]


def _posix_join(base: str, path: str) -> str:
    return str(PurePosixPath(os.path.normpath(PurePosixPath(base) / path)))


def parse_dockerfile(dockerfile: Path, context: Path) -> Environment:
    """Read a Dockerfile as far as Horizon can honour it without Docker (see the module's docstring).

    Args:
        dockerfile: the file.
        context: its build context (COPY sources are relative to it).

    Returns:
        The environment: base image, working folder, ENV, the starting tree's copies and folders.

    Raises:
        UserError: ``"<file>:<line>: needs Docker: <why>"`` for what cannot run here, or a
            missing ``FROM``/``WORKDIR``, a missing COPY source.
    """
    context = context.resolve()
    text = read_task_file(dockerfile)
    directive = re.match(r"\s*#\s*escape\s*=\s*(\S)", text)
    escape = directive.group(1) if directive else "\\"
    ignored = dockerignore_patterns(context)
    base_image = ""
    workdir = "/"
    has_workdir = False
    values: dict[str, str] = {}
    env: dict[str, str] = {}
    copies: list[tuple[int, list[Path], str, bool, int | None]] = []  # line, sources, absolute target, into a folder, mode
    folders: list[tuple[int, str]] = []

    def refuse(line: int, why: str) -> UserError:
        return UserError(f"{dockerfile}:{line}: needs Docker: {why}")

    for line, instruction in _logical_lines(text, escape):
        where = f"{dockerfile}:{line}"
        word, _, rest = instruction.partition(" ")
        keyword, args = word.upper(), rest.strip()
        if keyword == "FROM":
            if base_image:
                raise refuse(line, "a second FROM makes a multi-stage build")
            words = [w for w in _substitute(args, values).split() if not w.startswith("--")]
            if not words:
                raise UserError(f"{where}: FROM names no image")
            base_image = words[0]
        elif not base_image and keyword != "ARG":
            raise UserError(f"{where}: {keyword} before FROM; a Dockerfile starts with FROM (or ARG)")
        elif keyword == "ARG":
            for name, value in _env_pairs(args):
                values.setdefault(name, _substitute(value, values))
        elif keyword == "ENV":
            for name, value in _env_pairs(_substitute(args, values)):
                env[name] = values[name] = value
        elif keyword == "WORKDIR":
            workdir, has_workdir = _posix_join(workdir, _substitute(args, values)), True
        elif keyword in ("COPY", "ADD"):
            copies.append((line, *_copy_sources(keyword, _words(_substitute(args, values)), context, ignored, workdir, where)))
        elif keyword == "RUN":
            folders += [(line, f) for f in _run_folders(args, workdir, values, where)]
        elif keyword not in _IGNORED:
            raise UserError(f"{where}: unknown instruction {keyword}")
    if not base_image:
        raise UserError(f"{dockerfile}: no FROM line; it is not a Dockerfile")
    if not has_workdir:
        raise UserError(f"{dockerfile}: no WORKDIR: the tests' working folder (e.g. WORKDIR /app) must be set")

    def inside(line: int, target: str) -> str:
        if not PurePosixPath(target).is_relative_to(workdir):
            raise refuse(line, f"it puts files at {target}, outside the working folder {workdir}, the only folder Horizon provides")
        return PurePosixPath(target).relative_to(workdir).as_posix()

    tree = [
        Copy(source=source, target=inside(line, target), into=into, mode=mode, line=line)
        for line, sources, target, into, mode in copies for source in sources
    ]  # fmt: skip
    return Environment(
        dockerfile=dockerfile.resolve(), context=context, base_image=base_image, workdir=workdir, env=env, copies=tree,
        folders=[inside(line, f) for line, f in folders],
    )  # fmt: skip


def dockerignore_patterns(context: Path) -> list[str]:
    """The ``.dockerignore`` patterns of a build context (comments and blank lines dropped,
    leading and trailing slashes removed); empty when there is no such file.

    Raises:
        UserError: the file has ``!`` exceptions (not supported here).
    """
    path = context / ".dockerignore"
    if not path.is_file():
        return []
    patterns = [p.strip().strip("/") for p in read_task_file(path).splitlines() if p.strip() and not p.strip().startswith("#")]
    if any(p.startswith("!") for p in patterns):
        raise UserError(f"{path}: needs Docker: its ! exceptions are not read here")
    return patterns


def is_ignored(rel: str, patterns: list[str]) -> bool:
    """Whether the context-relative POSIX path ``rel``, or a folder above it, matches one of
    ``patterns`` (shell-style, ``fnmatch``)."""
    parts = rel.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    return any(fnmatch.fnmatchcase(prefix, p) for p in patterns for prefix in prefixes)


def _copy_sources(
    keyword: str, words: list[str], context: Path, ignored: list[str], workdir: str, where: str
) -> tuple[list[Path], str, bool, int | None]:
    """The sources of one COPY/ADD, its absolute target, whether the target is a folder, and ``--chmod``.

    Raises:
        UserError: ``where``: needs Docker (``--from``, a URL, an archive, a path outside the
            context), or a source that is not in the context.
    """
    mode = None
    while words and words[0].startswith("--"):
        flag, _, value = words.pop(0)[2:].partition("=")
        if flag == "from":
            raise UserError(f"{where}: needs Docker: {keyword} --from={value} copies out of another image or build stage")
        if flag == "chmod":
            try:
                mode = int(value, 8)
            except ValueError:
                raise UserError(f"{where}: needs Docker: --chmod={value} is not an octal mode") from None
        elif flag not in ("chown", "link"):
            raise UserError(f"{where}: needs Docker: {keyword} --{flag} is not supported here")
    if len(words) < 2:
        raise UserError(f"{where}: {keyword} needs a source and a target")
    *patterns, target = words
    sources: list[Path] = []
    for pattern in patterns:
        if re.match(r"^[a-z][a-z0-9+.-]*://|^git@", pattern):
            raise UserError(f"{where}: needs Docker: {keyword} {pattern} downloads from the network")
        if keyword == "ADD" and re.search(r"\.(tar|tgz|tar\.gz|tar\.bz2|tar\.xz|tbz2|txz)$", pattern):
            raise UserError(f"{where}: needs Docker: ADD {pattern} unpacks an archive")
        matches = sorted(context.glob(pattern.lstrip("/"))) if any(c in pattern for c in "*?[") else [context / pattern.lstrip("/")]
        for match in matches:
            resolved = match.resolve()
            if not resolved.is_relative_to(context):
                raise UserError(f"{where}: needs Docker: {pattern} lies outside the build context {context}")
            rel = resolved.relative_to(context).as_posix()
            if rel != "." and is_ignored(rel, ignored):
                continue
            if not match.exists():
                raise UserError(f"{where}: {keyword} source {pattern} is not in the build context {context}")
            sources.append(resolved)
    if not sources:
        raise UserError(f"{where}: {keyword} source {' '.join(patterns)} matches nothing in the build context {context}")
    into = target.endswith("/") or len(sources) > 1
    return sources, _posix_join(workdir, target), into, mode


def _run_folders(args: str, workdir: str, values: dict[str, str], where: str) -> list[str]:
    """The folders a RUN line makes, if it is one Horizon can honour (see the module's docstring).

    Raises:
        UserError: ``where``: needs Docker, and why.
    """
    if args.startswith("["):
        words = _words(args)
        args = " ".join(words[2:]) if words[:2] in (["sh", "-c"], ["/bin/sh", "-c"], ["bash", "-c"]) else " ".join(words)
    folders: list[str] = []
    for part in (p.strip() for p in _substitute(args, values).split("&&")):
        first = part.split()[0] if part.split() else ""
        if first in ("apt-get", "apt", "apk", "yum", "dnf", "microdnf", "zypper", "pacman"):
            raise UserError(f"{where}: needs Docker: RUN {part[:60]} installs system packages")
        if first in ("curl", "wget", "git"):
            raise UserError(f"{where}: needs Docker: RUN {part[:60]} downloads from the network")
        if re.search(r"[;|<>`]|\$\(", _unquoted(part)):
            raise UserError(f"{where}: needs Docker: RUN {part[:60]} is a shell command Horizon does not replay")
        if first == "mkdir":
            folders += [_posix_join(workdir, w) for w in _split(part, where)[1:] if not w.startswith("-")]
            continue
        pip = _PIP.match(part)
        if pip:
            _check_installed(_split(pip.group(1), where), where)
            continue
        if first in ("uv", "uvx", "pipx", "conda", "npm", "cargo", "go"):
            raise UserError(f"{where}: needs Docker: RUN {part[:60]} installs software into the image")
        raise UserError(f"{where}: needs Docker: RUN {part[:60]} is a build step Horizon does not replay")
    return folders


def _split(command: str, where: str) -> list[str]:
    """A shell command's words, quotes removed (``shlex``).

    Raises:
        UserError: ``where``: unbalanced quotes.
    """
    import shlex

    try:
        return shlex.split(command)
    except ValueError as exc:
        raise UserError(f"{where}: RUN {command[:60]}: {exc}") from None


def _check_installed(words: list[str], where: str) -> None:
    """Accept ``pip install`` of requirements Horizon's Python already satisfies.

    Raises:
        UserError: a requirements file, or a distribution missing or at another version.
    """
    from importlib.metadata import PackageNotFoundError, version

    from packaging.requirements import InvalidRequirement, Requirement

    takes_value = {"-i", "--index-url", "--extra-index-url", "-f", "--find-links", "--target", "-t", "--python", "--prefix"}
    skip = False
    for word in words:
        if skip:
            skip = False
            continue
        if word in ("-r", "--requirement", "-e", "--editable", "-c", "--constraint"):
            raise UserError(f"{where}: needs Docker: pip install {word} installs from files or folders")
        if word.startswith("-"):
            skip = word in takes_value
            continue
        try:
            requirement = Requirement(word.strip("'\""))
            installed = version(requirement.name)
        except (InvalidRequirement, PackageNotFoundError):
            raise UserError(f"{where}: needs Docker: pip install {word} installs what Horizon's Python does not have") from None
        if requirement.specifier and not requirement.specifier.contains(installed, prereleases=True):
            raise UserError(f"{where}: needs Docker: pip install {word}; Horizon's Python has {requirement.name} {installed}")
