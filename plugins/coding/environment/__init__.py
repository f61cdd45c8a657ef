"""The Python environment a repository's tests run in: the project's own, never Horizon's by accident.

Horizon's own interpreter holds Horizon's packages: a project's tests run there import typer's
``click`` instead of the click being fixed, and fail on every dependency the project needs that
Horizon lacks. ``choose_environment`` decides once per episode, at set-up, in this order:

1. ``$HORIZON_TEST_PYTHON``: the user's explicit choice;
2. the repository's own virtual environment (``.venv``, ``venv`` or ``env`` with a
   ``pyvenv.cfg``), in the workspace or, since Horizon does not copy ``.venv`` into a run, in the
   repository the run was made from;
3. the declared dependencies (``declared``), built with uv once per dependency set into a cache
   shared by all runs (``uv_build``);
4. Horizon's own interpreter, with the reason it was not one of the above (also what
   ``HORIZON_TEST_ENV=horizon`` asks for: no check, nothing built, as before this module).

Each candidate must start in the episode's sandbox and import pytest (``check``), or the next
is tried; the set-up text says which was used, how it was made and how long it took.

The workspace is what the tests import, in the workspace and in the grading copy, which lies at
another path. An editable install cannot do that for a cached environment shared by many runs
(it would point at one run's workspace), so the project's source roots (``src`` for a src layout,
else the root: ``declared.source_roots``) go first on ``PYTHONPATH``, as paths relative to
whichever tree the tests run in; ``PYTEST_LAUNCHER`` keeps them off ``sys.path`` while pytest
itself is imported. The built environment keeps the project's ``*.dist-info`` (its files
removed), so ``importlib.metadata.version(project)`` and its entry points work; a repository's
own environment may hold an editable install of the project, which the source roots shadow.

The choice is stored in the run's scratch folder (``ENVIRONMENT_FILE``, beside ``baseline.json``),
so ``run_tests``, the grader and a resumed run use the same one (``load_environment``).
"""

from __future__ import annotations

import configparser
import os
import platform
import sys
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from core.api import (
    SYSTEM_PATH,
    Sandbox,
    SandboxLimits,
    UserError,
    can_bind,
    hidden_dirs,
    python_prefixes,
    read_regular,
    with_binds,
    write_new,
)
from plugins.coding.environment.declared import DeclarationError, cache_key, read_declaration, source_roots
from plugins.coding.environment.uv_build import RECIPE, base_interpreter, build_or_reuse, index_settings

__all__ = [
    "ENVIRONMENT_FILE",
    "TestEnvironment",
    "choose_environment",
    "describe",
    "horizon_environment",
    "load_environment",
    "save_environment",
    "shell_environment",
]

ENVIRONMENT_FILE = "test_environment.json"
#: Folders of a repository that may hold its own virtual environment, in order.
VENV_DIRS = (".venv", "venv", "env")
OVERRIDE_VAR = "HORIZON_TEST_PYTHON"
#: ``auto`` (default): choose as the module docstring says; ``horizon``: always Horizon's own
#: interpreter (or ``$HORIZON_TEST_PYTHON``'s), unchecked, nothing built: for offline machines
#: and for Horizon's own test suite, whose example repositories need nothing but pytest.
MODE_VAR = "HORIZON_TEST_ENV"
#: Started in the sandbox with a candidate interpreter: prints its version and pytest's.
CHECK = "import sys, pytest; print('%d.%d.%d' % sys.version_info[:3], pytest.__version__)"
CHECK_LIMITS = SandboxLimits(timeout_s=60)
#: Folders the bwrap sandbox shows empty (``core.sandbox.bwrap``), besides the hidden home folders.
_PRIVATE = (Path("/tmp"), Path("/run"), Path("/dev/shm"))

Kind = Literal["horizon", "override", "repository", "built", "cached"]


class TestEnvironment(BaseModel):
    """Where pytest runs: an interpreter, the folders the sandbox must show, the source roots.

    Attributes:
        kind: ``horizon`` (Horizon's own interpreter), ``override`` (``$HORIZON_TEST_PYTHON``),
            ``repository`` (the repository's own virtual environment), ``built`` (built with uv
            at this set-up) or ``cached`` (built with uv by an earlier run, reused).
        python: the interpreter: absolute, or relative to the workspace when ``in_workspace``
            (so the grading copy uses its own copy of the repository's ``.venv``).
        in_workspace: ``python`` and ``prefix`` are relative to the workspace.
        prefix: the virtual environment's folder (``VIRTUAL_ENV``, its ``bin`` first on ``PATH``); "" for none.
        source_roots: folders put first on ``PYTHONPATH``, relative to the workspace (``src``, ``.``).
        visible: host folders the test sandbox shows read-only (the environment when it lies in
            Horizon's hidden home, a base interpreter under ``/root``).
        summary: the set-up text's line about it.
        seconds: how long choosing (and building) took.
        python_version: ``3.11.7``; "" when not checked.
        language: whose tests: ``python``, or ``javascript`` (then only ``node_modules`` matters
            and the summary is about it).
        node_modules: a host folder shown read-only at ``<tree>/node_modules`` (a JavaScript
            repository's installed packages: ``environment.node``); "" for none.
    """

    __test__ = False  # not a pytest test class

    kind: Kind
    python: str
    in_workspace: bool = False
    prefix: str = ""
    source_roots: list[str] = Field(default_factory=lambda: ["."])
    visible: list[str] = Field(default_factory=list)
    summary: str = ""
    seconds: float = 0.0
    python_version: str = ""
    language: Literal["python", "javascript"] = "python"
    node_modules: str = ""

    def interpreter(self, workspace: Path) -> str:
        """The interpreter's absolute path for a run in ``workspace``."""
        return str(workspace / self.python) if self.in_workspace else self.python

    def variables(self, workspace: Path) -> dict[str, str]:
        """Environment variables of a test command in ``workspace``: ``PYTHONPATH`` (the source
        roots, absolute in that tree), and for a virtual environment ``VIRTUAL_ENV`` and ``PATH``
        with its ``bin`` first, as an activated environment has."""
        roots = [str((workspace / r) if r != "." else workspace) for r in self.source_roots]
        # mypy reads MYPYPATH, not PYTHONPATH (pytest-mypy-plugins suites type-check the project).
        found = {"PYTHONPATH": os.pathsep.join(roots), "MYPYPATH": os.pathsep.join(roots)}
        if self.prefix:
            prefix = workspace / self.prefix if self.in_workspace else Path(self.prefix)
            found["VIRTUAL_ENV"] = str(prefix)
            found["PATH"] = ":".join([str(prefix / "bin"), *SYSTEM_PATH])
        return found

    def sandbox(self, sandbox: Sandbox) -> Sandbox:
        """``sandbox``, or a copy of it that also shows ``visible`` read-only and ``node_modules``
        read-only at its workspace's ``node_modules`` (bwrap only: other sandboxes see the whole
        machine and cannot bind a folder into the workspace)."""
        if not can_bind(sandbox):
            return sandbox
        return with_binds(sandbox, readonly=[Path(p) for p in self.visible],
                          mounts={"node_modules": Path(self.node_modules)} if self.node_modules else None)


def save_environment(scratch: Path, environment: TestEnvironment) -> None:
    """Write ``scratch/ENVIRONMENT_FILE`` (the sandboxed commands cannot write scratch itself)."""
    write_new(scratch / ENVIRONMENT_FILE, environment.model_dump_json(indent=1))


def load_environment(scratch: Path) -> TestEnvironment | None:
    """The environment chosen at set-up, or None when none was (a run from before this file, or
    a caller without a set-up: they get ``horizon_environment``)."""
    try:
        return TestEnvironment.model_validate_json(read_regular(scratch / ENVIRONMENT_FILE))
    except (OSError, ValidationError, ValueError):
        return None


def horizon_environment(workspace: Path, reason: str = "", *, own: bool = False) -> TestEnvironment:
    """Horizon's own interpreter (or ``$HORIZON_TEST_PYTHON``'s, unchecked, unless ``own``) with
    the workspace's source roots first; ``reason`` says why no other was used."""
    version = platform.python_version()
    override = "" if own else os.environ.get(OVERRIDE_VAR, "").strip()
    summary = f"{OVERRIDE_VAR}={override}, unchecked" if override else f"Horizon's own Python {version} ({sys.executable})"
    return TestEnvironment(
        kind="horizon",
        python=override or sys.executable,
        source_roots=source_roots(workspace),
        summary=summary + (f", because {reason}" if reason else ""),
        python_version="" if override else version,
    )


# --------------------------------------------------------------------------- what the sandbox must show


def _hidden_in_sandbox(path: Path) -> bool:
    """Whether the bwrap sandbox shows ``path`` empty: under the home folders it hides (or
    ``/tmp``, ``/run``), and not in the Python installation it shows again."""
    hidden = [*hidden_dirs(), *_PRIVATE]
    return any(path.is_relative_to(h) for h in hidden) and not any(path.is_relative_to(p) for p in python_prefixes())


def _installation(prefix: Path) -> bool:
    """Whether ``prefix`` is a Python installation (``lib/python3.X/os.py``) and no more: not a home
    folder or another folder that holds what the sandbox hides (a ``pyvenv.cfg`` is the
    repository's text, so its ``home`` is never trusted to name what may be shown)."""
    if len(prefix.parts) < 3 or any(h.is_relative_to(prefix) for h in [*hidden_dirs(), *_PRIVATE]):
        return False
    return any(prefix.glob("lib/python3*/os.py"))


def _venv_of(python: Path) -> Path | None:
    folder = python.parent.parent
    return folder if (folder / "pyvenv.cfg").is_file() else None


def _base_prefix(venv: Path) -> Path | None:
    """The installation a virtual environment was made from (``pyvenv.cfg``'s ``home`` is its ``bin``)."""
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string("[venv]\n" + (venv / "pyvenv.cfg").read_text(encoding="utf-8", errors="replace"))
    except (OSError, configparser.Error):
        return None
    home = parser.get("venv", "home", fallback="").strip()
    return Path(home).resolve().parent if home and Path(home).is_absolute() else None


def _must_show(python: Path, workspace: Path) -> list[str]:
    """Host folders the sandbox must show for ``python`` to start: its virtual environment when
    that is outside the workspace and hidden, and the installation the interpreter comes from."""
    shown: list[str] = []
    venv = _venv_of(python)
    if venv is not None:
        if not venv.resolve().is_relative_to(workspace.resolve()) and _hidden_in_sandbox(venv.resolve()):
            shown.append(str(venv.resolve()))
        base = _base_prefix(venv)
    else:
        base = python.resolve().parent.parent
    if base is not None and _hidden_in_sandbox(base) and _installation(base):
        shown.append(str(base))
    return shown


def check(sandbox: Sandbox, workspace: Path, environment: TestEnvironment) -> tuple[str, str]:
    """Start ``environment``'s interpreter in (a copy of) ``sandbox`` and import pytest.

    Returns:
        ``(python version, "")`` when it works, else ``("", why)``: the interpreter's error, in
        one or two lines.
    """
    python = environment.interpreter(workspace)
    if not Path(python).exists():
        return "", f"{python} does not exist"
    result = environment.sandbox(sandbox).run([python, "-c", CHECK], cwd=workspace, env=environment.variables(workspace),
                                              limits=CHECK_LIMITS)  # fmt: skip
    words = result.stdout.split()
    if result.ok and len(words) >= 2:
        return words[-2], ""
    said = [line.strip() for line in (result.stderr or result.stdout).splitlines() if line.strip()]
    if any("No module named 'pytest'" in line for line in said):
        return "", "pytest is not installed in it"
    return "", (" ".join(said[-2:]) or f"exit code {result.exit_code}")[:400]


# --------------------------------------------------------------------------- the choice


def _interpreter_environment(kind: Kind, python: Path, workspace: Path, roots: list[str]) -> TestEnvironment:
    inside = python.is_relative_to(workspace)
    venv = _venv_of(python)
    prefix = "" if venv is None else str(venv.relative_to(workspace) if inside else venv)
    return TestEnvironment(kind=kind, python=str(python.relative_to(workspace) if inside else python), in_workspace=inside,
                           prefix=prefix, source_roots=roots, visible=_must_show(python, workspace))  # fmt: skip


def _repository_venvs(workspace: Path, repo: Path | None) -> list[Path]:
    """Interpreters of the repository's own virtual environments: the workspace's, then the
    original repository's (a run's workspace is a copy without ``.venv``)."""
    found = []
    for base in dict.fromkeys(p for p in (workspace, repo) if p is not None):
        for name in VENV_DIRS:
            venv = base / name
            if (venv / "pyvenv.cfg").is_file() and not venv.is_symlink() and os.path.lexists(venv / "bin" / "python"):
                found.append(venv / "bin" / "python")
    return found


def find_uv() -> str:
    """The uv program of Horizon's environment (the PyPI package ``uv``).

    Raises:
        FileNotFoundError: uv is not installed (with what to do).
    """
    try:
        import uv
    except ImportError:
        raise FileNotFoundError("uv is not installed in Horizon's environment (pip install uv)") from None
    return uv.find_uv_bin()


def _python_mismatch(requires: str) -> str:
    """Why Horizon's interpreter does not satisfy ``requires-python`` ("" when it does or cannot tell)."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        wanted = SpecifierSet(requires)
    except InvalidSpecifier:
        return ""
    version = platform.python_version()
    return (
        "" if wanted.contains(version, prereleases=True) else f"the project requires Python {requires} and Horizon runs {version}"
    )


def choose_environment(
    sandbox: Sandbox, workspace: Path, scratch: Path, repo: Path | None = None, *, as_of: str = ""
) -> TestEnvironment:
    """Decide where this episode's Python tests run (module docstring); build it if needed.

    Args:
        sandbox: the episode's sandbox (offline); candidates are checked in it.
        workspace: the episode's repository copy.
        scratch: the run's scratch folder (a build's log goes under ``runs/``).
        repo: the repository the run was copied from, whose ``.venv`` a run does not copy.
        as_of: for a built environment, install only distributions uploaded before this ISO
            date (a task's ``dependencies_as_of``: an old release tested with the dependencies
            of its time, not today's); empty: the newest.

    Returns:
        The environment, its ``summary`` saying which, how it was made, how long it took, and
        why others were not used. Failures fall back to Horizon's interpreter with the reason;
        nothing here raises for a repository's content.

    Raises:
        UserError: Horizon's cache folder cannot be written.
    """
    started = time.monotonic()
    workspace = workspace.resolve()
    roots = source_roots(workspace)
    notes: list[str] = []

    def done(environment: TestEnvironment) -> TestEnvironment:
        environment.seconds = round(time.monotonic() - started, 2)
        environment.summary += "".join(f"; {note}" for note in notes)
        return environment

    mode = os.environ.get(MODE_VAR, "auto").strip() or "auto"
    if mode == "horizon":
        return done(horizon_environment(workspace, f"{MODE_VAR}=horizon asks for it"))
    if mode != "auto":
        notes.append(f"{MODE_VAR}={mode} is not a known mode (auto or horizon), so it was read as auto")
    override = os.environ.get(OVERRIDE_VAR, "").strip()
    if override:
        chosen = _interpreter_environment("override", Path(override).absolute(), workspace, roots)
        chosen.python_version, why = check(sandbox, workspace, chosen)
        if not why:
            chosen.summary = (
                f"{OVERRIDE_VAR}={override} (Python {chosen.python_version}), checked in {time.monotonic() - started:.1f} s"
            )
            return done(chosen)
        return done(horizon_environment(workspace, f"{OVERRIDE_VAR}={override} does not run in the sandbox: {why}", own=True))
    for python in _repository_venvs(workspace, repo):
        where = python.parent.parent
        label = f"the repository's {where.name}" + ("" if where.parent == workspace else f" ({where})")
        chosen = _interpreter_environment("repository", python, workspace, roots)
        chosen.python_version, why = check(sandbox, workspace, chosen)
        if not why:
            chosen.summary = f"{label} (Python {chosen.python_version}), checked in {time.monotonic() - started:.1f} s"
            return done(chosen)
        notes.append(f"{label} was not used: {why}")
    try:
        declaration = read_declaration(workspace)
    except DeclarationError as exc:
        return done(horizon_environment(workspace, str(exc)))
    if declaration.empty:
        return done(horizon_environment(workspace, "the repository declares no dependencies "
                                        "(no pyproject.toml project, setup.py, requirements file or lock)"))  # fmt: skip
    mismatch = _python_mismatch(declaration.requires_python)
    if mismatch:
        return done(horizon_environment(workspace, f"{mismatch}, so no environment was built"))
    try:
        uv = find_uv()
    except FileNotFoundError as exc:
        return done(horizon_environment(workspace, str(exc)))
    python_id = f"{sys.implementation.name}-{platform.python_version()}-{base_interpreter()}"
    as_of = as_of.strip()
    key = cache_key(workspace, declaration.files, [f"recipe={RECIPE}", f"python={python_id}", *index_settings(),
                                             *([f"exclude-newer={as_of}"] if as_of else [])])  # fmt: skip
    try:
        built = build_or_reuse(sandbox, workspace, scratch, declaration, key, uv, as_of=as_of)
    except UserError as exc:
        if "cannot build environments" not in str(exc):
            raise
        return done(horizon_environment(workspace, str(exc)))
    source = declaration.summary() + (f" (distributions uploaded before {as_of})" if as_of else "")
    if built.path is None:
        log = f" (log: {built.log})" if built.log else ""
        return done(horizon_environment(workspace, f"building one with uv from {source} failed after {built.seconds:.1f} s{log}:\n"
                                        f"{built.error}\nTests that need the project's dependencies will fail to import"))  # fmt: skip
    python = built.path / "bin" / "python"
    chosen = TestEnvironment(kind="cached" if built.reused else "built", python=str(python), prefix=str(built.path),
                             source_roots=roots, visible=[str(built.path)])  # fmt: skip
    chosen.python_version, why = check(sandbox, workspace, chosen)
    if why:
        return done(horizon_environment(workspace, f"the environment built with uv from {source} ({built.path}) does not run in "
                                        f"the sandbox: {why}"))  # fmt: skip
    facts = built.manifest
    held = f"{facts.get('distributions', '?')} distributions, pytest {facts.get('pytest', '?')}"
    if built.reused and built.log == "":
        chosen.summary = (f"reused the environment built earlier with uv from {source} (Python {chosen.python_version}, {held}; "
                          f"{built.path}), checked in {time.monotonic() - started:.1f} s")  # fmt: skip
    else:
        chosen.summary = (f"built with uv from {source} in {built.seconds:.1f} s (Python {chosen.python_version}, {held}); "
                          f"cached in {built.path} for later runs with the same files")  # fmt: skip
    notes += built.notes
    return done(chosen)


def describe(environment: TestEnvironment) -> str:
    """The set-up text's line: ``Test environment: <summary>.``, and, for the project's own
    environment, that ``shell`` commands use it too (``shell_environment``); for JavaScript
    tests ``Node packages: <summary>.``"""
    if environment.language == "javascript":
        shown = " They are read-only at node_modules in tests and shell commands." if environment.node_modules else ""
        return f"Node packages: {environment.summary}.{shown}"
    if environment.kind == "horizon":
        return f"Test environment: {environment.summary}."
    return f"Test environment: {environment.summary}. Commands of the shell tool run in it too (its python, pip and pytest)."


def shell_environment(sandbox: Sandbox, workspace: Path, scratch: Path) -> tuple[Sandbox, dict[str, str]]:
    """Where a ``shell`` command runs: in the project's environment chosen at set-up, as the tests
    do (the sandbox also shows it; ``PATH`` starts with its ``bin``, so ``python``, ``pip`` and
    ``pytest`` are its own; the workspace's source roots first on ``PYTHONPATH``), so that
    ``python -c 'import pkg'`` imports what the tests import. Horizon's own interpreter, or no
    choice saved (another plugin's workspace, an environment deleted since): ``(sandbox, {})``,
    the sandbox showing the repository's ``node_modules`` when set-up installed one.

    Returns:
        ``(sandbox, extra environment variables)`` for ``Sandbox.run``.
    """
    environment = load_environment(scratch)
    if environment is None:
        return sandbox, {}
    if environment.kind == "horizon" or not Path(environment.interpreter(workspace)).exists():
        return environment.sandbox(sandbox) if environment.node_modules else sandbox, {}
    variables = environment.variables(workspace)
    if "PATH" not in variables:  # an interpreter without a virtual environment (HORIZON_TEST_PYTHON=/usr/bin/python3.12)
        variables["PATH"] = ":".join([str(Path(environment.interpreter(workspace)).parent), *SYSTEM_PATH])
    return environment.sandbox(sandbox), variables
