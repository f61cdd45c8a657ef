"""Building a repository's declared test environment with uv, once per dependency set, in the sandbox.

Where: ``$HORIZON_HOME/cache/python-envs/<key>`` (``env_cache_root``), where ``key`` is the
SHA-256 of the declaring files' contents, the Python version and path, the index settings and
``RECIPE`` (``declared.cache_key``). A folder there is complete by construction: it is built in
``.build-<key>-<random>/`` beside it and renamed into place only when it works (a rename in one
file system is atomic), so a run killed mid-build leaves no half environment (its build folder
is deleted by a later build after ``ABANDONED_AFTER_S``), and two runs
building the same key both finish: the first rename wins, the second run uses the winner's
folder and deletes its own. Nothing is ever evicted: delete the folder to get the space back.

How, all inside a sandbox of the episode's kind with the network allowed (the build runs the
project's build backend and third-party ``setup.py`` code; the episode's own sandbox stays
offline), on a copy of the repository (build backends write ``build/`` and ``*.egg-info`` into
the source tree, which must not change the episode's starting files):

1. ``uv venv --relocatable --python <Horizon's base interpreter>`` (relocatable: its scripts
   still work after the rename);
2. with ``uv.lock``: ``uv export --frozen --no-emit-project --no-editable`` with the chosen
   extras and groups, then ``uv pip install -r`` that (the exact locked versions) and the project
   itself with ``--no-deps``; with ``poetry.lock``: its versions as constraints (``-c``) for the
   same install as without a lock (uv cannot read Poetry's lock, and Poetry is not installed);
   without a lock: ``uv pip install '.[extras]' -r <requirement files> --group <groups> pytest``
   (uv resolves them together). When the project itself cannot be built (a C extension without
   its system library), the install is tried again with its dependencies read from
   ``pyproject.toml`` (``-r pyproject.toml``), and the set-up text says the metadata is missing;
3. ``pytest`` is always asked for (unpinned: the declared pin, if any, wins in the resolution);
4. the project's own installed files are removed (``STRIP_PROJECT``, run by the environment's
   interpreter in the sandbox), keeping its ``*.dist-info``: the tests import the workspace's
   code (``PYTHONPATH``), and ``importlib.metadata.version(name)`` and entry points
   (``pytest11`` plugins) still work. A compiled extension of the project is removed too, so a
   package with a pure-Python fallback (MarkupSafe's ``_speedups``) runs that, and one without
   fails to import its extension (say so; building in place per run is not done).

Each build has its own uv cache (deleted afterwards): a shared one would let one project's
build code plant files that another project's build installs.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from core.api import (
    ProcessResult,
    Sandbox,
    SandboxLimits,
    content_only,
    horizon_home,
    make_data_folder,
    read_regular,
    remove_tree,
    sandbox_like,
    write_new,
)
from plugins.coding.environment.declared import Declaration

#: Version of the build recipe, part of the cache key: change it when what is built changes.
RECIPE = "1"
MANIFEST = "horizon-env.json"
#: A build folder this old was abandoned (its run was killed) and is deleted by the next build.
ABANDONED_AFTER_S = 6 * 3600
#: Limits of each build command: downloads and compilers need more than a test run.
BUILD_LIMITS = SandboxLimits(timeout_s=600, cpu_s=3600, memory_bytes=4 << 30, max_processes=1024,
                             file_size_bytes=4 << 30, output_bytes=1 << 20)  # fmt: skip
#: Host variables passed to uv in the build sandbox: where to download from (part of the cache key)...
INDEX_VARIABLES = ("UV_INDEX", "UV_DEFAULT_INDEX", "UV_INDEX_URL", "UV_EXTRA_INDEX_URL", "UV_FIND_LINKS", "UV_NO_INDEX",
                   "UV_INDEX_STRATEGY", "UV_EXCLUDE_NEWER")  # fmt: skip
#: ...and how to reach it (not part of the key).
NETWORK_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
                     "SSL_CERT_FILE", "SSL_CERT_DIR", "UV_NATIVE_TLS", "UV_HTTP_TIMEOUT", "UV_CONCURRENT_DOWNLOADS")  # fmt: skip
#: Not copied into the build's copy of the repository: version control, environments, caches, outputs.
COPY_SKIPPED = [".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", "node_modules", "__pycache__", ".pytest_cache",
                ".mypy_cache", ".ruff_cache", "build", "dist", "*.egg-info", ".horizon"]  # fmt: skip

#: Run by the new environment's interpreter in the build sandbox, with the project copy's
#: ``file://`` URL: removes the project's installed files but its ``*.dist-info`` (RECORD
#: rewritten to what is left), and prints what the environment holds as one JSON line.
STRIP_PROJECT = r"""
import json, os, sys, sysconfig, urllib.parse, importlib.metadata as md
target = os.path.realpath(urllib.parse.urlparse(sys.argv[1]).path)
libs = {os.path.realpath(sysconfig.get_paths()[k]) for k in ("purelib", "platlib")}
project, count = None, 0
for dist in md.distributions():
    count += 1
    text = dist.read_text("direct_url.json")
    if text:
        url = json.loads(text).get("url", "")
        if url.startswith("file:") and os.path.realpath(urllib.parse.urlparse(url).path) == target:
            project = dist
found = None
if project is not None:
    record = next(f for f in project.files if f.name == "RECORD")
    info = os.path.realpath(record.locate().parent)
    kept, removed = [], 0
    for file in project.files:
        path = os.path.realpath(file.locate())
        if any(path.startswith(lib + os.sep) for lib in libs) and not path.startswith(info + os.sep):
            try:
                os.remove(path)
                removed += 1
            except OSError:
                pass
            folder = os.path.dirname(path)
            while folder not in libs and any(folder.startswith(lib + os.sep) for lib in libs):
                try:
                    os.rmdir(folder)
                except OSError:
                    break
                folder = os.path.dirname(folder)
        else:
            kept.append(str(file))
    with open(record.locate(), "w", encoding="utf-8") as out:
        out.write("".join(f"{k},,\n" for k in kept))
    found = {"name": project.metadata["Name"], "version": project.version, "removed_files": removed}
try:
    import pytest
    version = pytest.__version__
except Exception as exc:
    version = None
print(json.dumps({"project": found, "distributions": count, "pytest": version}))
"""


def env_cache_root() -> Path:
    """``$HORIZON_HOME/cache/python-envs`` (default ``~/.horizon/cache/python-envs``); only the path."""
    return horizon_home() / "cache" / "python-envs"


def base_interpreter() -> Path:
    """The interpreter Horizon's own one was made from (its venv's base), resolved; new
    environments use it, so the sandbox shows it (``core.sandbox.bwrap.python_prefixes``)."""
    return Path(getattr(sys, "_base_executable", None) or sys.executable).resolve()


def index_settings() -> list[str]:
    """The host's uv index variables that are set, as ``NAME=value`` (they go into the cache key)."""
    return [f"{name}={os.environ[name]}" for name in INDEX_VARIABLES if os.environ.get(name)]


def _find_links_dirs() -> list[Path]:
    """Local folders named by ``UV_FIND_LINKS``: the build sandbox must show them."""
    found = []
    for item in re.split(r"[,\s]+", os.environ.get("UV_FIND_LINKS", "")):
        path = Path(urlparse(item).path if item.startswith("file:") else item)
        if item and path.is_absolute() and path.is_dir():
            found.append(path.resolve())
    return found


@dataclass
class Built:
    """The outcome of ``build_or_reuse``.

    Attributes:
        path: the environment folder (complete), or None when the build failed.
        reused: True when it was in the cache already (built by an earlier run or a concurrent one).
        seconds: wall-clock seconds spent here.
        error: why the build failed (uv's last lines), or "" on success.
        notes: remarks for the set-up text (e.g. the project's metadata is missing).
        manifest: the environment's ``horizon-env.json`` (what it holds).
        log: the build log's path ("" when nothing was built).
    """

    path: Path | None
    reused: bool = False
    seconds: float = 0.0
    error: str = ""
    notes: list[str] = field(default_factory=list)
    manifest: dict = field(default_factory=dict)
    log: str = ""


def read_manifest(env: Path) -> dict | None:
    """The environment's manifest, or None when it is missing or unreadable (not a complete environment)."""
    try:
        data = json.loads(read_regular(env / MANIFEST))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def build_sandbox(sandbox: Sandbox, build: Path, logs: Path) -> Sandbox:
    """A sandbox like the episode's on the build folder, with the network (the episode's stays offline)."""
    return sandbox_like(sandbox, build, logs, limits=BUILD_LIMITS, allow_network=True, readonly=_find_links_dirs())


def _pretend_version(workspace: Path, declaration: Declaration) -> dict[str, str]:
    """The build copy has no ``.git``: a version from version control (setuptools-scm, hatch-vcs)
    cannot be computed, so this project's is set to 0 (``SETUPTOOLS_SCM_PRETEND_VERSION_FOR_<NAME>``);
    an sdist's ``PKG-INFO`` carries the real one and is left to work."""
    if not declaration.name or (workspace / "PKG-INFO").is_file():
        return {}
    return {"SETUPTOOLS_SCM_PRETEND_VERSION_FOR_" + re.sub(r"[-_.]+", "_", declaration.name).upper(): "0.0.0"}


class BuildLog:
    """Collects each build command's output into ``build.log`` and keeps the last failure's tail."""

    def __init__(self, path: Path):
        self.path = path
        self.parts: list[str] = []

    def add(self, result: ProcessResult) -> ProcessResult:
        argv = " ".join("<script>" if "\n" in arg else arg for arg in result.argv)
        self.parts.append(f"$ {argv}\n[exit {result.exit_code}, {result.duration_s:.1f} s"
                          f"{', timed out' if result.timed_out else ''}]\n{result.stdout}{result.stderr}\n")  # fmt: skip
        write_new(self.path, "".join(self.parts))
        return result


def failure_text(result: ProcessResult, lines: int = 12) -> str:
    """A failed build command in a few lines: uv's error (its last lines), or the time limit."""
    if result.timed_out:
        return f"`{Path(result.argv[0]).name} {result.argv[1]}` took longer than {BUILD_LIMITS.timeout_s:.0f} s"
    text = [line.rstrip() for line in (result.stderr or result.stdout).splitlines() if line.strip()]
    text = [
        line
        for line in text
        if not line.lstrip().startswith(("Using ", "Resolved ", "Prepared ", "Built ", "Downloading ", "Downloaded "))
    ]
    tail = "\n".join(text[-lines:])
    return tail[-1500:] or f"exit code {result.exit_code}"


def build_or_reuse(
    sandbox: Sandbox, workspace: Path, scratch: Path, declaration: Declaration, key: str, uv: str, *, as_of: str = ""
) -> Built:
    """The environment for ``key``: from the cache, else built (module docstring).

    Args:
        sandbox: the episode's sandbox (its kind is reused, with the network, for the build).
        workspace: repository root (copied for the build; never written).
        scratch: the run's scratch folder; the build log goes to ``scratch/runs/NNN-environment/build.log``.
        declaration: what to install (``declared.read_declaration``).
        key: ``declared.cache_key`` of the declaration.
        uv: the uv program (``uv.find_uv_bin()``).
        as_of: an ISO date or timestamp (``2024-03-01``): only distributions uploaded before it
            are installed (uv's ``UV_EXCLUDE_NEWER``), so an old release is tested with the
            dependencies of its time; it must be part of ``key``. Empty: the newest.

    Returns:
        ``Built``; a failed build is a result with ``error``, not an exception.

    Raises:
        UserError: the cache folder cannot be written (``make_data_folder``), or the sandbox kind
            cannot build.
    """
    from plugins.coding.testing import new_run_dir

    started = time.monotonic()
    root = make_data_folder(env_cache_root())
    final = root / key[:32]
    manifest = read_manifest(final)
    if manifest is not None:
        return Built(path=final, reused=True, seconds=time.monotonic() - started, manifest=manifest)
    remove_abandoned(root)
    logs = new_run_dir(scratch, "environment")
    build = root / f".build-{key[:12]}-{secrets.token_hex(4)}"
    build.mkdir()
    try:
        result = _build(build_sandbox(sandbox, build, logs), workspace, build, declaration, uv, BuildLog(logs / "build.log"), as_of)
        result.log = str(logs / "build.log")
        if result.path is not None:
            result.manifest.update(key=key, recipe=RECIPE, python=str(base_interpreter()), built_from=declaration.summary(),
                                   files=declaration.files, created=time.strftime("%Y-%m-%dT%H:%M:%S%z"))  # fmt: skip
            write_new(result.path / MANIFEST, json.dumps(result.manifest, indent=1))
            result.path, theirs, result.error = move_into_cache(result.path, final)
            if theirs is not None:
                result.reused, result.manifest = True, theirs
    finally:
        remove_tree(build)
    result.seconds = time.monotonic() - started
    return result


def move_into_cache(folder: Path, final: Path) -> tuple[Path | None, dict | None, str]:
    """Rename a complete build ``folder`` (with its ``MANIFEST``) to ``final`` (one file system:
    atomic). Another run may have renamed the same key into place first: theirs is used.

    Returns:
        ``(final, None, "")`` when renamed; ``(final, their manifest, "")`` when another run's
        folder is there; ``(None, None, why)`` when neither.
    """
    try:
        os.rename(folder, final)
        return final, None, ""
    except OSError as exc:
        theirs = read_manifest(final)
        if theirs is None:
            return None, None, f"the new folder could not be moved into the cache ({exc})"
        return final, theirs, ""


def remove_abandoned(root: Path, age_s: float = ABANDONED_AFTER_S) -> None:
    """Delete build folders older than ``age_s``: left by a run killed mid-build (a live build
    is far younger: each of its few commands stops after ``BUILD_LIMITS.timeout_s``)."""
    now = time.time()
    for folder in root.glob(".build-*"):
        try:
            if now - folder.lstat().st_mtime > age_s:
                remove_tree(folder)
        except OSError:
            continue


def _build(box: Sandbox, workspace: Path, build: Path, declaration: Declaration, uv: str, log: BuildLog, as_of: str = "") -> Built:
    project = build / "project"
    shutil.copytree(workspace.resolve(), project, symlinks=True, ignore=content_only(COPY_SKIPPED))
    env = build / "env"
    python = str(env / "bin" / "python")
    variables = {"UV_CACHE_DIR": str(build / "uv-cache"), "UV_PYTHON_DOWNLOADS": "never", "UV_NO_PROGRESS": "1", "NO_COLOR": "1",
                 **{n: os.environ[n] for n in INDEX_VARIABLES + NETWORK_VARIABLES if os.environ.get(n)},
                 **_pretend_version(workspace, declaration), **({"UV_EXCLUDE_NEWER": as_of} if as_of else {})}  # fmt: skip

    def run(*argv: str) -> ProcessResult:
        return log.add(box.run([uv, *argv], cwd=project, env=variables))

    made = run("venv", "--relocatable", "--no-project", "--python", str(base_interpreter()), str(env))
    if not made.ok:
        return Built(path=None, error=f"uv venv failed: {failure_text(made)}")
    extras = [f"--extra={e}" for e in declaration.extras]
    groups = [f"--group={g}" for g in declaration.groups]
    notes: list[str] = []
    if declaration.lock == "uv":
        exported = run("export", "--frozen", "--no-hashes", "--no-emit-project", "--no-editable", "--format=requirements.txt",
                       "--python", python, *extras, *groups, f"--output-file={build / 'locked.txt'}")  # fmt: skip
        if not exported.ok:
            return Built(path=None, error=f"uv export from uv.lock failed: {failure_text(exported)}")
        installed = run("pip", "install", "--python", python, "-r", str(build / "locked.txt"), "pytest")
        if installed.ok and declaration.project:
            own = run("pip", "install", "--python", python, "--no-deps", ".")
            if not own.ok:
                notes.append(f"the project itself could not be built, so its metadata is missing ({failure_text(own, 3)})")
    else:
        common: list[str] = []
        for rel in declaration.requirements:
            common += ["-r", rel]
        common += groups
        if declaration.tox_deps:
            write_new(build / "tox-deps.txt", "\n".join(declaration.tox_deps) + "\n")
            common += ["-r", str(build / "tox-deps.txt")]
        if declaration.lock == "poetry" or declaration.poetry_names:
            constraints, names = _poetry_inputs(project, declaration)
            if constraints:
                write_new(build / "poetry-constraints.txt", constraints)
                common += ["-c", str(build / "poetry-constraints.txt")]
            if names:
                write_new(build / "poetry-groups.txt", "\n".join(names) + "\n")
                common += ["-r", str(build / "poetry-groups.txt")]
        spec = "." + (f"[{','.join(declaration.extras)}]" if declaration.extras else "")
        installed = run("pip", "install", "--python", python, *([spec] if declaration.project else []), *common, "pytest")
        if not installed.ok and declaration.project and (project / "pyproject.toml").is_file():
            first = failure_text(installed, 6)
            retry = run("pip", "install", "--python", python, "-r", "pyproject.toml", *extras, *common, "pytest")
            if retry.ok:
                installed = retry
                notes.append(f"the project itself could not be built, so its metadata is missing ({first})")
    if not installed.ok:
        return Built(path=None, error=failure_text(installed))
    stripped = log.add(
        box.run([python, "-c", STRIP_PROJECT, project.as_uri()], cwd=project, env={"PYTHONDONTWRITEBYTECODE": "1"})
    )
    try:
        facts = json.loads(stripped.stdout.strip().splitlines()[-1]) if stripped.ok else None
    except (ValueError, IndexError):
        facts = None
    if not isinstance(facts, dict):
        return Built(path=None, error=f"the new environment's interpreter does not run: {failure_text(stripped)}")
    if not facts.get("pytest"):
        return Built(path=None, error="pytest could not be imported in the new environment")
    return Built(path=env, notes=notes, manifest=facts)


def _poetry_inputs(project: Path, declaration: Declaration) -> tuple[str, list[str]]:
    """``(constraints text, requirement names)``: every ``name==version`` of ``poetry.lock`` (the
    versions to use), and the Poetry test/dev groups' names (their versions come from the lock)."""
    import tomllib

    constraints = ""
    if declaration.lock == "poetry":
        try:
            lock = tomllib.loads((project / "poetry.lock").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            lock = {}
        pins = {p["name"]: p["version"] for p in lock.get("package", []) if isinstance(p, dict) and p.get("name") and p.get("version")
                and (p.get("source") or {}).get("type") in (None, "legacy")}  # fmt: skip
        constraints = "".join(f"{name}=={version}\n" for name, version in sorted(pins.items()))
    return constraints, declaration.poetry_names
