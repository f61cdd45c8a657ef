"""A Terminal-Bench task in a container: which sandbox a task gets, its ``[environment]``
resources, and its image and starting tree, made when the task is loaded.

Which sandbox (``choose_sandbox``): the bubblewrap sandbox where the task needs nothing it
cannot honour (``parse_dockerfile`` accepts the Dockerfile, the working folder is not ``/``, ``/root``
or ``/tmp``, ``tests/`` has pytest files, and the test script installs nothing the tests may import
that Horizon's Python lacks, nor Debian packages: ``script.script_refusal``); otherwise a container built from the task's own
Dockerfile (``core.sandbox.container``), when an engine answers; otherwise the task is refused
with both reasons. ``HORIZON_TERMINAL_BENCH_SANDBOX=container`` (or ``bwrap``) forces one. Every
refusal happens here, when the task is loaded: the image is built then (a failing build refuses
the task), so an episode never starts on a task that cannot run.
"""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from core.api import UserError
from plugins.coding.terminal_bench.script import script_refusal

if TYPE_CHECKING:
    from plugins.coding.terminal_bench.task import TerminalBenchTask

#: The ``Task.metadata`` key ``core.environment`` reads to open a ``ContainerSandbox``.
CONTAINER_KEY = "container"
#: Forces the sandbox of every Terminal-Bench task: ``container`` or ``bwrap``.
SANDBOX_VARIABLE = "HORIZON_TERMINAL_BENCH_SANDBOX"
#: Working folders the bubblewrap sandbox cannot show the workspace at (they hide or are Horizon's own).
BWRAP_REFUSED_WORKDIRS = ("/", "/root", "/tmp")
#: Seconds a build may take when the task does not say (Harbor's ``build_timeout_sec``).
DEFAULT_BUILD_TIMEOUT_S = 1800.0


def resources(config: dict[str, Any], path: Path) -> dict[str, Any]:
    """A Harbor task's ``[environment]`` as the container's resources: ``cpus``, ``memory_bytes``
    (``memory_mb``, or ``memory`` like ``"2G"``), ``storage_mb`` (or ``storage`` like ``"10G"``:
    the container's storage limit, ``core.sandbox.storage``), ``allow_internet`` (default True, as Harbor's), ``task_env`` (``[environment.env]``: every
    command's variables) and ``build_timeout_s``.

    Raises:
        UserError: a value of the wrong kind, or ``mcp_servers`` (not started here).
    """
    table = config.get("environment") or {}
    out: dict[str, Any] = {"cpus": None, "memory_bytes": None, "storage_mb": None, "allow_internet": True,
                           "build_timeout_s": DEFAULT_BUILD_TIMEOUT_S}  # fmt: skip

    def number(key: str) -> float | None:
        value = table.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
            raise UserError(f"{path} is not a valid task file: [environment] {key} must be a positive number, not {value!r}")
        return float(value)

    out["cpus"] = number("cpus")

    def size_mb(key: str, example: str) -> float | None:  # schema 1.0's memory = "2G", storage = "10G"
        if not isinstance(table.get(key), str):
            return None
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*", table[key], re.IGNORECASE)
        if not match:
            raise UserError(f"{path} is not a valid task file: [environment] {key} {table[key]!r} is not a size like {example}")
        return float(match.group(1)) * {"": 1 / 2**20, "K": 1 / 1024, "M": 1, "G": 1024, "T": 2**20}[match.group(2).upper()]

    memory_mb = number("memory_mb")
    if memory_mb is None:
        memory_mb = size_mb("memory", "2G")
    out["memory_bytes"] = int(memory_mb * 2**20) if memory_mb else None
    storage_mb = number("storage_mb")
    out["storage_mb"] = storage_mb if storage_mb is not None else size_mb("storage", "10G")
    out["build_timeout_s"] = number("build_timeout_sec") or DEFAULT_BUILD_TIMEOUT_S
    env = table.get("env") or {}
    if not isinstance(env, dict):
        raise UserError(f"{path} is not a valid task file: [environment] env must be a table of names and values")
    out["task_env"] = {str(k): str(v) for k, v in env.items()}
    if table.get("mcp_servers"):
        raise UserError(f"{path}: [environment] mcp_servers: the task's MCP servers are not started by Horizon; it cannot run here")
    if "allow_internet" in table:
        if not isinstance(table["allow_internet"], bool):
            raise UserError(f"{path} is not a valid task file: [environment] allow_internet must be true or false")
        out["allow_internet"] = table["allow_internet"]
    return out


def bwrap_refusal(task: TerminalBenchTask) -> str | None:
    """Why the bubblewrap sandbox cannot run ``task`` as published, or None when it can."""
    if task.refusal:
        return task.refusal
    assert task.environment is not None
    if str(PurePosixPath(task.environment.workdir)) in BWRAP_REFUSED_WORKDIRS:
        return f"its WORKDIR {task.environment.workdir} is a folder the bubblewrap sandbox cannot show the workspace at"
    if not task.tests:
        return f"{task.tests_dir} has no pytest files (test_*.py or *_test.py), and only a container runs its test script"
    return script_refusal(task.script) if task.script else None


def choose_sandbox(task: TerminalBenchTask) -> tuple[str, str]:
    """``("bwrap" | "container", the reason, for the set-up text)`` (see the module docstring).

    Raises:
        UserError: neither can run it: the bubblewrap sandbox's reason and what to install or start.
    """
    from core.api import engine_or_none, find_engine

    forced = os.environ.get(SANDBOX_VARIABLE, "").strip()
    if forced not in ("", "bwrap", "container"):
        raise UserError(f"{SANDBOX_VARIABLE}={forced}: it must be bwrap or container")
    why_not = bwrap_refusal(task)
    if forced != "container" and why_not is None:
        return "bwrap", "its Dockerfile only copies files, which the bubblewrap sandbox honours, so it runs there (its pytest files are the tests)"
    if forced == "bwrap":
        raise UserError(f"{why_not}: it needs a container ({SANDBOX_VARIABLE}=bwrap is set)")
    engine = engine_or_none()
    if engine is None:
        try:
            find_engine()
        except UserError as exc:
            raise UserError(f"{why_not or 'a container was asked for'}: it needs a container, and {exc}") from None
    assert engine is not None
    because = f"{why_not}" if why_not else f"{SANDBOX_VARIABLE}=container"
    return "container", f"it runs in a {engine.name} container built from its Dockerfile, as Harbor runs it (bubblewrap could not: {because})"


def prepare_container(task: TerminalBenchTask, reason: str, home: Path | None = None) -> tuple[dict[str, Any], Path]:
    """Build the task's image (or find it cached) and its starting tree (the image's working
    folder, copied out once into ``$HORIZON_HOME/cache/terminal-bench/NAME-DIGEST``).

    Returns:
        ``(the "container" metadata, the starting tree)``; the metadata holds ``engine``,
        ``image``, ``workdir``, ``env`` (the image's), the resources, ``notes`` (stand-in
        base images) and ``reason``.

    Raises:
        UserError: no engine, a failing build, or the working folder ``/`` (the workspace cannot
            be mounted there).
    """
    from core.api import build_task_image, export_workdir, find_engine, horizon_home, image_config

    engine = find_engine()
    res = resources(task.config, task.folder / "task.toml") if task.layout == "terminal-bench-2" else resources({}, task.folder)
    build_timeout = res.pop("build_timeout_s")
    built = build_task_image(engine, task.name, task.dockerfile, task.context, timeout_s=build_timeout)
    config = image_config(engine, built.tag)
    workdir = str(PurePosixPath(config.get("WorkingDir") or "/"))
    if workdir == "/":
        raise UserError(f"{task.dockerfile}: its working folder is / (no WORKDIR): Horizon mounts the episode's workspace at the working "
                        "folder, which cannot be /; give the Dockerfile a WORKDIR")  # fmt: skip
    env = dict(str(e).split("=", 1) for e in config.get("Env") or [] if "=" in str(e))
    cache = (home or horizon_home()) / "cache" / "terminal-bench"
    for tag in built.evicted:  # their starting trees go with the images
        for tree in cache.glob(f"*-{tag.rsplit(':', 1)[1]}"):
            shutil.rmtree(tree, ignore_errors=True)
    start = cache / f"{task.name}-{built.tag.rsplit(':', 1)[1]}"
    if not start.is_dir():
        partial = cache / f".{start.name}.{os.getpid()}.partial"
        shutil.rmtree(partial, ignore_errors=True)
        try:
            export_workdir(engine, built.tag, workdir, partial)
            os.replace(partial, start)
        except OSError:
            if not start.is_dir():
                raise
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    meta = {"engine": engine.name, "image": built.tag, "workdir": workdir, "env": env, **res, "notes": built.notes, "reason": reason}
    verifier = task.config.get("verifier") or {} if task.layout == "terminal-bench-2" else {}
    if verifier.get("environment_mode") == "separate":
        meta.update(separate_verifier(task, engine, build_timeout))
    return meta, start


def separate_verifier(task: TerminalBenchTask, engine: Any, timeout_s: float) -> dict[str, Any]:
    """A Harbor task whose ``[verifier] environment_mode = "separate"``: its verifier image, built
    from ``tests/Dockerfile`` (``tests/`` its build context), and the ``artifacts`` (absolute
    paths) carried from the agent's container into it.

    Raises:
        UserError: no ``tests/Dockerfile`` (a prebuilt verifier image is not pulled here), no
            ``artifacts``, or a failing build.
    """
    from core.api import build_task_image

    dockerfile = task.tests_dir / "Dockerfile"
    if not dockerfile.is_file():
        raise UserError(f"{task.folder / 'task.toml'}: [verifier] environment_mode = \"separate\" without tests/Dockerfile: "
                        "a prebuilt verifier image is not run here")  # fmt: skip
    artifacts = task.config.get("artifacts") or []
    if not isinstance(artifacts, list) or not artifacts or not all(isinstance(a, str) and a.startswith("/") for a in artifacts):
        raise UserError(f"{task.folder / 'task.toml'}: a separate verifier needs artifacts = [absolute paths] to carry over to it")
    built = build_task_image(engine, f"{task.name}-verifier", dockerfile, task.tests_dir, timeout_s=timeout_s)
    return {"verifier_image": built.tag, "artifacts": list(artifacts), "notes_verifier": built.notes}
