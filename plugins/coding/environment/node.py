"""The installed packages (``node_modules``) a JavaScript/TypeScript repository's tests need.

A run's workspace never holds ``node_modules`` (``core.workspace.ALWAYS_EXCLUDED``: it is an
install, not the project's content), so Jest, a test's ``require('lodash')`` and TypeScript
loaders are missing unless set-up provides them. ``choose_node_modules`` decides once per
episode, in this order:

1. the original repository's own ``node_modules`` (the user ran ``npm install``), as a
   repository's own ``.venv`` is used for Python;
2. with ``package-lock.json`` or ``npm-shrinkwrap.json``: ``npm ci`` (the lockfile's exact
   versions), once per dependency set, into ``$HORIZON_HOME/cache/node-modules/<key>`` where
   ``key`` is the SHA-256 of ``package.json``, the lockfile, ``.npmrc``, Node's and npm's
   versions and ``RECIPE``. It runs in a sandbox of the episode's kind with the network (the
   episode's stays offline), on a folder holding only those files, with ``--ignore-scripts``:
   no package's install script and not the project's own ``prepare`` build run (they need the
   sources, and a native add-on's build is what a test run would then lack; say so). Built
   beside the cache and renamed into place when complete, as the Python environments are
   (``uv_build.move_into_cache``);
3. nothing, with the reason (no lockfile: ``npm install`` would resolve today's versions, not
   the project's; npm workspaces: the members' ``package.json`` files are not copied yet).

The folder is shown read-only at ``<tree>/node_modules`` in every command of the episode that
runs in its test environment (tests, ``shell``, the grader's copy):
``TestEnvironment.node_modules``, bound by ``core.api.with_binds``. Other sandboxes cannot
bind a folder into the workspace, so under ``--no-sandbox`` nothing is installed.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from core.api import SCRATCH_WRITABLE, ProcessResult, Sandbox, can_bind, horizon_home, make_data_folder, remove_tree, write_new
from plugins.coding.environment.declared import cache_key
from plugins.coding.environment.uv_build import (
    MANIFEST,
    NETWORK_VARIABLES,
    BuildLog,
    build_sandbox,
    failure_text,
    move_into_cache,
    read_manifest,
    remove_abandoned,
)

#: Version of the install recipe, part of the cache key.
RECIPE = "1"
LOCKFILES = ("npm-shrinkwrap.json", "package-lock.json")  # npm's precedence: the shrinkwrap wins
#: Copied into the install folder and hashed into the key, when present.
DECLARING_FILES = ("package.json", *LOCKFILES, ".npmrc")
#: npm's variables passed to the install (where to download from, how to reach it).
NPM_VARIABLES = ("npm_config_registry", "NPM_CONFIG_REGISTRY")


@dataclass
class NodeModules:
    """The outcome of ``choose_node_modules``.

    Attributes:
        path: the host folder to show at ``<tree>/node_modules``; None when there is none.
        summary: the set-up text's line (which folder, how it was made, how long it took; or why none).
        seconds: wall-clock seconds spent choosing (and installing).
    """

    path: Path | None
    summary: str
    seconds: float = 0.0


def node_cache_root() -> Path:
    """``$HORIZON_HOME/cache/node-modules`` (default ``~/.horizon/cache/node-modules``); only the path."""
    return horizon_home() / "cache" / "node-modules"


def _version(program: str) -> str:
    """``node --version`` / ``npm --version`` run on the host: Horizon's own programs, not the workspace's."""
    import subprocess

    try:
        done = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def _lockfile(workspace: Path) -> str:
    return next((name for name in LOCKFILES if (workspace / name).is_file() and not (workspace / name).is_symlink()), "")


def _uses_workspaces(workspace: Path) -> bool:
    try:
        package = json.loads((workspace / "package.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(package, dict) and bool(package.get("workspaces"))


def _count_packages(modules: Path) -> int | str:
    """How many packages npm installed: the entries of its hidden lockfile (``node_modules/.package-lock.json``)."""
    try:
        return len(json.loads((modules / ".package-lock.json").read_text(encoding="utf-8")).get("packages", {}))
    except (OSError, ValueError, AttributeError):
        return "?"


def npm_error(result: ProcessResult, lines: int = 8) -> str:
    """Why ``npm ci`` failed, in a few lines: npm's ``npm error`` lines before its usage text (an
    out-of-date lockfile is explained first, then ``npm ci``'s whole usage is printed), else the
    output's end (``uv_build.failure_text``)."""
    said = [line.strip() for line in (result.stderr or result.stdout).splitlines() if line.startswith(("npm error", "npm ERR!"))]
    reasons = []
    for line in said:
        text = line.split(" ", 2)[2] if line.count(" ") >= 2 else ""
        if text.startswith(("Clean install a project", "Usage:", "npm ci")):
            break  # the usage text follows the reason
        if text and not text.startswith(("A complete log of this run", "Run \"npm help")):
            reasons.append(line)
    return "\n".join(reasons[:lines]) or failure_text(result)


def choose_node_modules(sandbox: Sandbox, workspace: Path, scratch: Path, repo: Path | None = None) -> NodeModules:
    """Decide which ``node_modules`` the episode's JavaScript tests see (module docstring); install it if needed.

    Args:
        sandbox: the episode's sandbox; its kind is reused, with the network, for ``npm ci``.
        workspace: the episode's repository copy (never written).
        scratch: the run's scratch folder (``npm ci``'s log goes to ``scratch/runs/NNN-node-modules/``).
        repo: the repository the run was copied from, whose ``node_modules`` a run does not copy.

    Returns:
        ``NodeModules``; a failed install is a result whose summary says why (npm's last lines
        and the log's path), not an exception.

    Raises:
        UserError: Horizon's cache folder cannot be written.
    """
    from plugins.coding.testing import new_run_dir

    started = time.monotonic()

    def done(path: Path | None, summary: str) -> NodeModules:
        return NodeModules(path=path, summary=summary, seconds=round(time.monotonic() - started, 2))

    if not (workspace / "package.json").is_file():
        return done(None, "no package.json, so no Node packages were installed")
    if not can_bind(sandbox):
        return done(None, "node_modules is shown only in the bwrap sandbox (not under --no-sandbox), so none was installed")
    own = repo / "node_modules" if repo is not None else None
    if own is not None and own.is_dir() and not own.is_symlink():
        return done(own.resolve(), f"the repository's own node_modules ({own})")
    lockfile = _lockfile(workspace)
    if not lockfile:
        return done(None, "package.json has no package-lock.json or npm-shrinkwrap.json, so no Node packages were installed "
                          "(npm install would pick today's versions); tests that import a package will fail")  # fmt: skip
    if _uses_workspaces(workspace):
        return done(None, "package.json declares npm workspaces, which Horizon does not install yet; tests that import a package will fail")
    npm, node = shutil.which("npm"), shutil.which("node")
    if npm is None or node is None:
        return done(None, "npm is not installed here (Debian package npm), so no Node packages were installed")
    versions = [f"recipe={RECIPE}", f"node={_version(node)}", f"npm={_version(npm)}",
                *(f"{n}={os.environ[n]}" for n in NPM_VARIABLES if os.environ.get(n))]  # fmt: skip
    files = [name for name in DECLARING_FILES if (workspace / name).is_file() and not (workspace / name).is_symlink()]
    key = cache_key(workspace, files, versions)
    root = make_data_folder(node_cache_root())
    final = root / key[:32]
    manifest = read_manifest(final)
    if manifest is not None:
        return done(final / "node_modules", f"reused node_modules installed earlier by npm ci from {lockfile} "
                                             f"({manifest.get('packages', '?')} packages; {final})")  # fmt: skip
    remove_abandoned(root)
    logs = new_run_dir(scratch, "node-modules")
    build = root / f".build-{key[:12]}-{secrets.token_hex(4)}"
    build.mkdir()
    try:
        for name in files:
            shutil.copyfile(workspace / name, build / name)
        log = BuildLog(logs / "npm.log")
        variables = {"npm_config_cache": str(build / ".npm-cache"), "npm_config_logs_dir": str(logs / SCRATCH_WRITABLE),  # npm's debug log, kept
                     "NO_COLOR": "1",
                     "npm_config_update_notifier": "false",
                     **{n: os.environ[n] for n in NPM_VARIABLES + NETWORK_VARIABLES if os.environ.get(n)}}  # fmt: skip
        result = log.add(build_sandbox(sandbox, build, logs).run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"], cwd=build, env=variables))  # fmt: skip
        if not result.ok or not (build / "node_modules").is_dir():
            return done(None, f"npm ci from {lockfile} failed after {time.monotonic() - started:.1f} s (log: {logs / 'npm.log'}):\n"
                              f"{npm_error(result)}\nTests that import a package will fail")  # fmt: skip
        remove_tree(build / ".npm-cache")
        packages = _count_packages(build / "node_modules")
        write_new(build / MANIFEST, json.dumps({"key": key, "recipe": RECIPE, "lockfile": lockfile, "packages": packages,
                                                "versions": versions, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}, indent=1))  # fmt: skip
        path, _, error = move_into_cache(build, final)
    finally:
        remove_tree(build)
    if path is None:
        return done(None, f"npm ci from {lockfile} worked but {error}")
    return done(path / "node_modules", f"npm ci from {lockfile} (--ignore-scripts: no install scripts ran) in "
                                       f"{time.monotonic() - started:.1f} s, {packages} packages; cached in {path}")  # fmt: skip

