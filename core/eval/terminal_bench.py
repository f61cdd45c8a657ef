"""Terminal-Bench task folders for ``agent eval``, run in Horizon's sandbox instead of Docker.

Two layouts are read (``suites/README.md``, "Terminal-Bench tasks"):

* Terminal-Bench 2 (Harbor's task format)::

      TASK/instruction.md          what the agent is asked (Markdown)
      TASK/task.toml               [metadata] (free-form), [agent] timeout_sec, [verifier] timeout_sec and env,
                                   [environment] (resources; docker_image: a prebuilt image, refused)
      TASK/environment/Dockerfile  the container; environment/ is its build context
      TASK/tests/test.sh           the verifier (writes /logs/verifier/reward.txt), plus test_*.py
      TASK/solution/solve.sh       the reference solution (optional)

* Terminal-Bench 1: ``task.yaml`` (``instruction``, ``max_agent_timeout_sec``,
  ``max_test_timeout_sec``, ...), ``Dockerfile`` and ``docker-compose.yaml`` at the task's root
  (the build context), ``run-tests.sh``, ``solution.sh`` (or ``solution.yaml``, keystrokes: not
  replayed), ``tests/``.

Sources: Harbor's documentation, https://harborframework.com/docs/tasks,
https://harborframework.com/docs/task-difference and https://harborframework.com/docs/task-tutorial;
for Terminal-Bench 1, the ``terminal-bench`` 0.2.18 wheel on PyPI (its ``Task`` model in
``terminal_bench/handlers/trial_handler.py``, its task template in ``terminal_bench/cli/template-task/``,
and ``/tests``, where the harness copies the tests, in ``terminal_bench/terminal/docker_compose_manager.py``).
The wheel ships no benchmark tasks, only that template; the tasks in ``suites/terminal-bench/`` are ours.

Without Docker. The Dockerfile is read, not built:

* ``WORKDIR`` (the last one) is where the tests expect the files (usually ``/app``): the episode's
  workspace is shown there by the sandbox (``BwrapSandbox``'s ``alias``), so the agent's commands
  and the tests see ``/app``; the file tools see the same files relative to the workspace;
* ``COPY``/``ADD`` of files from the build context make the starting tree (the episode's ``repo``,
  built once into ``$HORIZON_HOME/cache/terminal-bench/``); their targets must lie inside the
  final ``WORKDIR``;
* ``ENV`` and ``ARG`` values are recorded (and substituted in later lines); the tests run with
  ``ENV`` (but ``PATH``, ``HOME`` and the like: ``KEPT_ENV``), the reference solution exports it;
  the agent's commands do not get it;
* ``FROM`` any single image is accepted: commands run with this machine's programs and Horizon's
  Python, not the image's, which is enough for tasks whose tests need Python and the standard tools;
* ``RUN`` is accepted only where it changes nothing Horizon lacks: ``mkdir`` inside the working
  folder (made in the starting tree) and ``pip install`` of distributions Horizon's Python already
  has (at a matching version). CMD, ENTRYPOINT, LABEL, EXPOSE, USER, VOLUME and the like do not
  shape the files and are ignored.

Refused, with a ``UserError`` that names the file, the line and why ("needs Docker: ..."): any
other ``RUN`` (``apt-get``, ``curl``, ``wget``, ``uv``, a ``pip install`` of something missing),
a second ``FROM`` (multi-stage build) or ``COPY --from``, ``ADD`` of a URL or an archive, a copy
to a path outside the working folder or from outside the build context, a ``.dockerignore`` with
``!`` exceptions, a Dockerfile without ``WORKDIR``, a ``docker-compose.yaml`` with more than the
one service built from the task's Dockerfile (Terminal-Bench 1) or any in ``environment/``
(Harbor), and a Harbor task with a prebuilt ``docker_image`` and no Dockerfile.

The tests' ``test.sh``/``run-tests.sh`` are not run (they install uv or pytest from the network):
the grader (``plugins.coding.terminal_bench``) runs the task's ``test_*.py``/``*_test.py`` files with
Horizon's pytest, in the sandbox, from a copy of ``tests/`` in the run's scratch folder. Tests that
read their own files through ``/tests/...`` or need packages Horizon's Python lacks fail there.
The agent's time limit (``[agent] timeout_sec``) is recorded, not enforced: ``agent eval
--time-limit`` is.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
import re
import shutil
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from core.errors import UserError

LAYOUT_TB2 = "terminal-bench-2"
LAYOUT_TB1 = "terminal-bench-1"
#: The ``Task.metadata`` key that carries a Terminal-Bench task (``task_metadata``).
METADATA_KEY = "terminal_bench"
#: The ``Task.metadata`` key the runner reads: where the sandbox shows the workspace a second time.
ALIAS_KEY = "workspace_alias"
#: Variables the Dockerfile's ENV does not change here: the sandbox's own stay (an image's
#: ``ENV PATH=/opt/x/bin:$PATH`` names folders of the image, not of this machine).
KEPT_ENV = frozenset({"PATH", "HOME", "TMPDIR", "LD_LIBRARY_PATH", "LD_PRELOAD"})
#: Seconds the tests may run when the task does not say (Terminal-Bench 1's own default is 60).
DEFAULT_TEST_TIMEOUT_S = 120.0
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


@dataclass(frozen=True)
class TerminalBenchTask:
    """A Terminal-Bench task folder, read and checked.

    Attributes:
        folder: the task folder (absolute).
        layout: ``terminal-bench-2`` (Harbor) or ``terminal-bench-1``.
        instruction: what the agent is asked.
        environment: the Dockerfile, read.
        tests_dir: the task's ``tests/`` folder (may be missing: then no tests).
        tests: its pytest files, relative to ``tests_dir`` (POSIX), sorted.
        solution: ``solve.sh``/``solution.sh``, or None.
        test_timeout_s: seconds the tests may run.
        agent_timeout_s: the agent's time limit in seconds, as the task gives it (not enforced).
        test_env: extra environment of the tests (Harbor's ``[verifier] env``).
        config: the task file as read (``task.toml`` or ``task.yaml``).
    """

    folder: Path
    layout: str
    instruction: str
    environment: Environment
    tests_dir: Path
    tests: list[str]
    solution: Path | None
    test_timeout_s: float
    agent_timeout_s: float | None
    test_env: dict[str, str] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The task's name: its folder's."""
        return self.folder.name


def detect_layout(folder: Path) -> str | None:
    """``terminal-bench-2`` for ``instruction.md`` + ``task.toml`` + ``environment/``,
    ``terminal-bench-1`` for ``task.yaml``, else None (not a Terminal-Bench task folder)."""
    if (folder / "instruction.md").is_file() and (folder / "task.toml").is_file() and (folder / "environment").is_dir():
        return LAYOUT_TB2
    if (folder / "task.yaml").is_file():
        return LAYOUT_TB1
    return None


def read_task(folder: Path) -> TerminalBenchTask:
    """Read a Terminal-Bench task folder (either layout) and check it can run without Docker.

    Raises:
        UserError: not a Terminal-Bench task folder, an unreadable task file, or an environment
            that needs Docker; the message names the file (and line) and why.
    """
    folder = folder.resolve()
    layout = detect_layout(folder)
    if layout is None:
        raise UserError(f"{folder} is not a Terminal-Bench task folder: it needs instruction.md, task.toml and "
                        "environment/ (Terminal-Bench 2), or task.yaml (Terminal-Bench 1)")
    if layout == LAYOUT_TB2:
        config = _read_toml(folder / "task.toml")
        instruction = (folder / "instruction.md").read_text(encoding="utf-8")
        verifier, agent, env_table = (_table(config, key, folder / "task.toml") for key in ("verifier", "agent", "environment"))
        if (folder / "environment" / "docker-compose.yaml").is_file() or (folder / "environment" / "docker-compose.yml").is_file():
            raise UserError(f"{folder / 'environment'}: needs Docker: a docker-compose file defines the environment's services")
        dockerfile = folder / "environment" / "Dockerfile"
        if not dockerfile.is_file():
            image = env_table.get("docker_image")
            why = f"it runs the prebuilt image {image}" if image else "it has no environment/Dockerfile"
            raise UserError(f"{folder / 'task.toml'}: needs Docker: {why}")
        environment = parse_dockerfile(dockerfile, folder / "environment")
        test_timeout = _seconds(verifier.get("timeout_sec"), DEFAULT_TEST_TIMEOUT_S, folder / "task.toml")
        agent_timeout = _seconds(agent.get("timeout_sec"), None, folder / "task.toml")
        test_env = {str(k): str(v) for k, v in dict(verifier.get("env") or {}).items()}
        solution = folder / "solution" / "solve.sh"
    else:
        config = _read_yaml(folder / "task.yaml")
        instruction = config.get("instruction")
        if not isinstance(instruction, str) or not instruction.strip():
            raise UserError(f"{folder / 'task.yaml'} is not a valid task file: instruction: a non-empty text is required")
        dockerfile = _tb1_dockerfile(folder)
        environment = parse_dockerfile(dockerfile, folder)
        test_timeout = _seconds(config.get("max_test_timeout_sec"), DEFAULT_TEST_TIMEOUT_S, folder / "task.yaml")
        agent_timeout = _seconds(config.get("max_agent_timeout_sec"), None, folder / "task.yaml")
        test_env = {}
        solution = folder / "solution.sh"
    if not instruction.strip():
        raise UserError(f"{folder / 'instruction.md'} is empty; it holds what the agent is asked")
    tests_dir = folder / "tests"
    tests = sorted(
        p.relative_to(tests_dir).as_posix() for p in tests_dir.rglob("*.py")
        if p.is_file() and (p.name.startswith("test_") or p.name.endswith("_test.py"))
    ) if tests_dir.is_dir() else []  # fmt: skip
    return TerminalBenchTask(
        folder=folder, layout=layout, instruction=instruction.strip(), environment=environment, tests_dir=tests_dir,
        tests=tests, solution=solution if solution.is_file() else None, test_timeout_s=test_timeout,
        agent_timeout_s=agent_timeout, test_env=test_env, config=config,
    )  # fmt: skip


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path} is not a valid task file: {exc}") from None


def _read_yaml(path: Path) -> dict[str, Any]:
    import yaml

    try:
        loaded = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise UserError(f"{path} is not a valid task file: {exc}") from None
    if not isinstance(loaded, dict):
        raise UserError(f"{path} is not a valid task file: it holds no mapping of fields")
    return loaded


def _table(config: dict[str, Any], key: str, path: Path) -> dict[str, Any]:
    value = config.get(key, {})
    if not isinstance(value, dict):
        raise UserError(f"{path} is not a valid task file: [{key}] must be a table")
    return value


def _seconds(value: Any, default: float | None, path: Path) -> float | None:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise UserError(f"{path} is not a valid task file: a timeout must be a positive number of seconds, not {value!r}")
    return float(value)


def _tb1_dockerfile(folder: Path) -> Path:
    """The Dockerfile a Terminal-Bench 1 task's docker-compose.yaml builds (default ``Dockerfile``).

    Raises:
        UserError: the compose file defines more than one service, or a service without a build.
    """
    compose = folder / "docker-compose.yaml"
    name = "Dockerfile"
    if compose.is_file():
        services = _read_yaml(compose).get("services") or {}
        if not isinstance(services, dict) or len(services) != 1:
            names = ", ".join(services) if isinstance(services, dict) else "?"
            raise UserError(f"{compose}: needs Docker: it defines the services {names}; only one, built from the task's Dockerfile, can run here")
        (service,) = services.values()
        build = (service or {}).get("build")
        if build is None:
            raise UserError(f"{compose}: needs Docker: its service runs an image instead of building the task's Dockerfile")
        if isinstance(build, dict):
            if build.get("context", ".") not in (".", "./"):
                raise UserError(f"{compose}: needs Docker: its build context is {build['context']}, not the task folder")
            name = build.get("dockerfile", name)
    dockerfile = (folder / name).resolve()
    if not dockerfile.is_file() or not dockerfile.is_relative_to(folder):
        raise UserError(f"task {folder.name}: the Dockerfile {folder / name} is missing")
    return dockerfile


# --------------------------------------------------------------------------- Dockerfile


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
    text = dockerfile.read_text(encoding="utf-8")
    directive = re.match(r"\s*#\s*escape\s*=\s*(\S)", text)
    escape = directive.group(1) if directive else "\\"
    ignored = _dockerignore(context)
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


def _dockerignore(context: Path) -> list[str]:
    path = context / ".dockerignore"
    if not path.is_file():
        return []
    patterns = [p.strip().strip("/") for p in path.read_text(encoding="utf-8").splitlines() if p.strip() and not p.strip().startswith("#")]
    if any(p.startswith("!") for p in patterns):
        raise UserError(f"{path}: needs Docker: its ! exceptions are not read here")
    return patterns


def _is_ignored(rel: str, patterns: list[str]) -> bool:
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
            if rel != "." and _is_ignored(rel, ignored):
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
        if re.search(r"[;|<>`]|\$\(", part):
            raise UserError(f"{where}: needs Docker: RUN {part[:60]} is a shell command Horizon does not replay")
        if first == "mkdir":
            folders += [_posix_join(workdir, w) for w in part.split()[1:] if not w.startswith("-")]
            continue
        pip = _PIP.match(part)
        if pip:
            _check_installed(pip.group(1).split(), where)
            continue
        if first in ("uv", "uvx", "pipx", "conda", "npm", "cargo", "go"):
            raise UserError(f"{where}: needs Docker: RUN {part[:60]} installs software into the image")
        raise UserError(f"{where}: needs Docker: RUN {part[:60]} is a build step Horizon does not replay")
    return folders


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


# --------------------------------------------------------------------------- the starting tree


def _digest(task: TerminalBenchTask) -> str:
    """A digest of everything the starting tree is made from (the Dockerfile and the copied files)."""
    digest = hashlib.sha256(task.environment.dockerfile.read_bytes())
    ignore = task.environment.context / ".dockerignore"
    digest.update(ignore.read_bytes() if ignore.is_file() else b"")
    for copy in task.environment.copies:
        paths = [copy.source] if copy.source.is_file() else sorted(p for p in copy.source.rglob("*") if p.is_file())
        for path in paths:
            digest.update(f"\0{path.relative_to(copy.source.parent)}\0{path.stat().st_mode:o}\0".encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def build_start_tree(task: TerminalBenchTask, dest: Path) -> None:
    """Make the working folder's starting contents in ``dest`` (which must not exist), as the
    Dockerfile's COPY/ADD and ``RUN mkdir`` lines would in the image's working folder.

    Raises:
        UserError: a copy would put a folder where a file is (or the reverse).
    """
    dest.mkdir(parents=True)
    context = task.environment.context
    ignored = _dockerignore(context)
    for copy in task.environment.copies:
        target = dest / copy.target
        if copy.source.is_dir():
            for path in sorted(copy.source.rglob("*")):
                rel = path.relative_to(copy.source)
                if ignored and _is_ignored(path.relative_to(context).as_posix(), ignored):
                    continue
                out = target / rel
                if path.is_dir():
                    out.mkdir(parents=True, exist_ok=True)
                else:
                    out.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, out, follow_symlinks=False)
                    if copy.mode is not None:
                        out.chmod(copy.mode)
            target.mkdir(parents=True, exist_ok=True)
            continue
        out = target / copy.source.name if copy.into or target.is_dir() else target
        if out.is_dir():
            raise UserError(f"{task.environment.dockerfile}:{copy.line}: copies the file {copy.source.name} onto the folder {copy.target}")
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(copy.source, out, follow_symlinks=False)
        if copy.mode is not None:
            out.chmod(copy.mode)
    for folder in task.environment.folders:
        (dest / folder).mkdir(parents=True, exist_ok=True)


def start_tree(task: TerminalBenchTask, home: Path | None = None) -> Path:
    """The task's starting tree, built once per content into ``$HORIZON_HOME/cache/terminal-bench/NAME-DIGEST``.

    Args:
        task: the task, read.
        home: Horizon's home folder (default ``core.config.horizon_home()``).

    Returns:
        The folder (reused when it exists: its name holds the digest of what it is made from).

    Raises:
        UserError: see ``build_start_tree``.
    """
    from core.config import horizon_home

    cache = (home or horizon_home()) / "cache" / "terminal-bench"
    folder = cache / f"{task.name}-{_digest(task)}"
    if folder.is_dir():
        return folder
    partial = cache / f".{folder.name}.{os.getpid()}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    try:
        build_start_tree(task, partial)
        os.replace(partial, folder)
    except OSError:
        if not folder.is_dir():  # not another process's finished build
            raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return folder


def task_metadata(task: TerminalBenchTask) -> dict[str, Any]:
    """What a run of the task carries in ``Task.metadata`` (JSON values).

    Returns:
        ``{"workspace_alias": workdir, "terminal_bench": {"folder", "layout", "workdir", "env",
        "base_image", "tests", "test_timeout_s", "test_env", "agent_timeout_s"}}``; ``env`` is
        the Dockerfile's ``ENV`` but ``KEPT_ENV`` (the image's own paths would break this machine's).
    """
    env = task.environment
    return {
        ALIAS_KEY: env.workdir,
        METADATA_KEY: {
            "folder": str(task.folder), "layout": task.layout, "workdir": env.workdir,
            "env": {k: v for k, v in env.env.items() if k not in KEPT_ENV},
            "base_image": env.base_image, "tests": list(task.tests), "test_timeout_s": task.test_timeout_s,
            "test_env": dict(task.test_env), "agent_timeout_s": task.agent_timeout_s,
        },
    }  # fmt: skip


def load_eval_task(folder: Path, home: Path | None = None) -> Any:
    """Read a Terminal-Bench task folder as an ``EvalTask`` of the coding plugin (its starting
    tree built, see ``start_tree``; its facts in ``metadata``, see ``task_metadata``).

    Raises:
        UserError: see ``read_task``.
    """
    from core.eval.tasks import EvalTask, TaskSpec

    task = read_task(folder)
    # model_construct: TaskSpec's checks are of task.json's coding fields (fail_to_pass, source),
    # which a Terminal-Bench task has not; it is graded by its own tests.
    spec = TaskSpec.model_construct(instruction=task.instruction, plugin="coding")
    return EvalTask(name=task.name, folder=task.folder, spec=spec, start=start_tree(task, home), metadata=task_metadata(task))


def reference_turns(folder: Path, metadata: dict[str, Any]) -> list[dict[str, Any]]:
    """The task's solution script run by the coding plugin's ``shell`` tool in the working folder
    (with the Dockerfile's ENV exported), then ``finish``.

    Raises:
        UserError: the task has no ``solve.sh``/``solution.sh`` (a ``solution.yaml`` of keystrokes
            is not replayed), or its ``solution/`` holds other files the script could need.
    """
    import shlex

    task = read_task(folder)
    if task.solution is None:
        raise UserError(f"task {task.name} has no solution script (solution/solve.sh or solution.sh) for --policy reference")
    others = [p.name for p in task.solution.parent.iterdir() if p != task.solution] if task.layout == LAYOUT_TB2 else []
    if others:
        raise UserError(f"task {task.name}: --policy reference runs solution/solve.sh alone; its solution/ also holds {', '.join(sorted(others))}")
    tb = metadata[METADATA_KEY]
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in tb["env"].items())
    script = f"cd {shlex.quote(tb['workdir'])}\n{exports}{task.solution.read_text(encoding='utf-8')}"
    timeout = min(600.0, tb["agent_timeout_s"] or 600.0)
    return [
        {"tool": "shell", "arguments": {"command": script, "timeout_s": timeout}},
        {"tool": "finish", "arguments": {"summary": f"ran the reference solution of {task.name}"}},
    ]
