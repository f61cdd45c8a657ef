"""A Harbor environment for tests: Harbor's documented interface over a local folder standing for
the container's filesystem.

``FolderEnvironment`` has the methods of Harbor's ``harbor.environments.base.BaseEnvironment``
that an agent and the verifier use, with their names, signatures and async-ness: ``exec(command,
cwd, env, timeout_sec, user) -> ExecResult`` (``stdout``, ``stderr``, ``return_code``),
``upload_file(source_path, target_path)``, ``upload_dir(source_dir, target_dir)``,
``download_file(source_path, target_path)``, ``download_dir(source_dir, target_dir)``, and
``task_env_config.workdir``. Harbor itself needs Python 3.12 and cannot be imported here.

The "container" is ``root``: bubblewrap makes it the root of a fresh mount namespace (``--bind
root /``) with this machine's ``/usr`` and ``/etc`` and Horizon's Python shown read-only, no
network, its own ``/proc`` and ``/dev``; every command runs there with bash, so ``/app``,
``/tmp``, ``/logs`` and ``/tests`` are folders of ``root`` and persist between commands as a
container's would. Paths given to the transfer methods are container paths, mapped into ``root``
(and refused if they lead out of it). ``AgentContext`` has the fields of Harbor's
``harbor.models.agent.context.AgentContext``.
"""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel

from core.sandbox import python_prefixes
from core.sandbox.bwrap import find_bwrap


class ExecResult(BaseModel):
    """Harbor's ``ExecResult``."""

    stdout: str | None = None
    stderr: str | None = None
    return_code: int


class AgentContext(BaseModel):
    """Harbor's ``AgentContext`` (the fields an agent fills)."""

    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None
    rollout_details: list[Any] | None = None
    metadata: dict[str, Any] | None = None


class EnvironmentConfig(BaseModel):
    """The part of Harbor's ``EnvironmentConfig`` the agent reads."""

    workdir: str | None = None


class FolderEnvironment:
    """Harbor's environment interface over the folder ``root`` (module docstring).

    Args:
        root: the container's filesystem (made if missing).
        workdir: ``[environment] workdir``; None: the agent asks ``pwd`` (the default ``cwd``).
        default_cwd: where ``exec`` runs without ``cwd`` (a Dockerfile's ``WORKDIR``).
    """

    def __init__(self, root: Path, *, workdir: str | None = None, default_cwd: str = "/") -> None:
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self.task_env_config = EnvironmentConfig(workdir=workdir)
        self.default_cwd = default_cwd
        self.default_user: str | None = None
        self.calls: list[str] = []  # method names, in order
        for name in ("bin", "lib", "lib64", "sbin"):  # this machine's merged /usr layout
            host, inside = Path("/") / name, self.root / name
            if host.is_symlink() and not inside.is_symlink():
                inside.symlink_to(os.readlink(host))
        for name in ("usr", "etc", "tmp", "proc", "dev"):
            (self.root / name).mkdir(exist_ok=True)
        (self.root / "tmp").chmod(0o1777)

    def path(self, inside: str) -> Path:
        """The host path of a container path.

        Raises:
            ValueError: not absolute, or it leads out of ``root``.
        """
        posix = PurePosixPath(inside)
        if not posix.is_absolute():
            raise ValueError(f"container paths are absolute: {inside!r}")
        host = (self.root / str(posix).lstrip("/")).resolve()
        if host != self.root and self.root not in host.parents:
            raise ValueError(f"{inside!r} leads out of the container")
        return host

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None, timeout_sec: int | None = None,
                   user: str | int | None = None) -> ExecResult:  # fmt: skip
        """Run ``command`` with bash in the container.

        Raises:
            TimeoutError: it ran past ``timeout_sec`` (it is killed).
        """
        self.calls.append("exec")
        variables = {"PATH": ":".join([str(Path(p) / "bin") for p in python_prefixes()] + ["/usr/local/bin", "/usr/bin", "/bin"]),
                     "HOME": "/tmp", "LANG": "C.UTF-8", **(env or {})}  # fmt: skip
        argv = [find_bwrap(), "--die-with-parent", "--unshare-all", "--bind", str(self.root), "/",
                "--ro-bind", "/usr", "/usr", "--ro-bind", "/etc", "/etc", "--proc", "/proc", "--dev", "/dev"]  # fmt: skip
        for prefix in python_prefixes():
            if not prefix.is_relative_to("/usr"):
                argv += ["--ro-bind", str(prefix), str(prefix)]
        argv += ["--clearenv", "--chdir", cwd or self.default_cwd]
        for key, value in variables.items():
            argv += ["--setenv", key, value]
        argv += ["bash", "-c", command]
        process = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.PIPE)  # fmt: skip
        try:
            out, err = await asyncio.wait_for(process.communicate(), timeout=timeout_sec)
        except TimeoutError:
            process.kill()
            await process.wait()
            raise TimeoutError(f"command timed out after {timeout_sec} seconds") from None
        return ExecResult(stdout=out.decode("utf-8", "replace"), stderr=err.decode("utf-8", "replace"), return_code=process.returncode)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        """Copy a local file into the container."""
        self.calls.append("upload_file")
        target = self.path(target_path)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source_path, target)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        """Copy a local folder into the container (merged with what is there)."""
        self.calls.append("upload_dir")
        shutil.copytree(source_dir, self.path(target_dir), symlinks=True, dirs_exist_ok=True)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        """Copy a file of the container to this machine."""
        self.calls.append("download_file")
        Path(target_path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(self.path(source_path), target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        """Copy a folder of the container to this machine (overwriting what is there)."""
        self.calls.append("download_dir")
        shutil.copytree(self.path(source_dir), target_dir, symlinks=True, dirs_exist_ok=True)


def build_task_container(task: Path, root: Path) -> FolderEnvironment:
    """The container of a Harbor task whose Dockerfile is ``WORKDIR /app`` and ``COPY <files> /app/``
    (the fixture's): the files copied into ``root/app``."""
    lines = (task / "environment" / "Dockerfile").read_text().splitlines()
    workdir = next(line.split()[1] for line in reversed(lines) if line.startswith("WORKDIR "))
    env = FolderEnvironment(root, default_cwd=workdir)
    for line in lines:
        if line.startswith("COPY "):
            *sources, target = line.split()[1:]
            for source in sources:
                (env.path(target)).mkdir(parents=True, exist_ok=True)
                shutil.copy2(task / "environment" / source, env.path(target) / source)
    return env


async def verify(task: Path, env: FolderEnvironment) -> float:
    """Harbor's verifier: ``tests/`` copied to ``/tests`` now, ``tests/test.sh`` run in the same
    container, the reward read from ``/logs/verifier/reward.txt``."""
    await env.upload_dir(task / "tests", "/tests")
    result = await env.exec("bash /tests/test.sh", timeout_sec=120)
    assert result.return_code == 0, result
    reward = env.path("/logs/verifier/reward.txt")
    return float(reward.read_text().strip())
