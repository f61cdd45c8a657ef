"""Horizon's ``Sandbox`` over Harbor's environment: every command runs in the task's container.

``HarborSandbox.run`` is what the coding plugin's ``shell`` tool calls: it pushes the mirror's
changes (``ContainerMirror.push``), runs the command with ``environment.exec`` (as one shell
line, from the container's working folder or the folder under it that ``cwd`` names, with
``timeout_sec`` from the limits), pulls what the command changed (``ContainerMirror.pull``) and
returns a ``ProcessResult``. The container is the isolation: its limits are Harbor's
(``[environment]`` cpus, memory), not ``SandboxLimits``' (only ``timeout_s`` and ``output_bytes``
apply), and nothing runs on this machine.
"""

from __future__ import annotations

import math
import shlex
import time
import uuid
from pathlib import Path

from core.api import ProcessResult, SandboxLimits, SandboxUnavailable
from plugins.coding.harbor.mirror import ContainerMirror


def _capped(text: str | None, limit: int) -> tuple[str, int]:
    """``text`` cut to at most ``limit`` bytes of UTF-8 (the head kept), and its whole size in bytes."""
    data = (text or "").encode("utf-8", "surrogateescape")
    return data[:limit].decode("utf-8", "replace"), len(data)


class HarborSandbox:
    """A ``core.sandbox.Sandbox`` whose commands run in Harbor's container (module docstring).

    Args:
        mirror: the synchronised working folder (its ``root`` is this sandbox's ``workspace``).
        workspace, scratch: the run's folders on this machine.
        limits: default limits of each command (``timeout_s`` and ``output_bytes`` are used).
    """

    isolated = True  # the container isolates the commands

    def __init__(self, mirror: ContainerMirror, workspace: Path, scratch: Path, limits: SandboxLimits | None = None) -> None:
        self.mirror = mirror
        self.workspace = Path(workspace).resolve()
        self.scratch = Path(scratch).resolve()
        self.limits = limits or SandboxLimits()
        self.commands = 0  # commands run so far

    def _inside(self, cwd: Path | None) -> str:
        """The container folder of a local ``cwd`` (the working folder when it is not under the workspace)."""
        if cwd is None:
            return self.mirror.workdir
        try:
            rel = Path(cwd).resolve().relative_to(self.workspace).as_posix()
        except ValueError:
            return self.mirror.workdir
        return self.mirror.remote("" if rel == "." else rel)

    def run(
        self,
        argv: list[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        limits: SandboxLimits | None = None,
        stdin: str | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> ProcessResult:
        """Run ``argv`` in the container, with the mirror synchronised before and after.

        Raises:
            SandboxUnavailable: the environment could not run it or synchronise (the message says
                why), or ``pass_fds`` was asked for (no descriptor crosses into a container).
        """
        if not argv:
            raise ValueError("empty command")
        if pass_fds:
            raise SandboxUnavailable("a command in Harbor's container cannot inherit this process's file descriptors")
        limits = limits or self.limits
        self.mirror.push()
        command = shlex.join(argv)
        stdin_path = ""
        if stdin is not None:
            stdin_path = f"/tmp/.horizon-stdin-{uuid.uuid4().hex}"
            local = self.scratch / "runs" / Path(stdin_path).name
            local.parent.mkdir(parents=True, exist_ok=True)
            local.write_text(stdin, encoding="utf-8", errors="surrogateescape")
            self.mirror.bridge.call(self.mirror.environment.upload_file, local, stdin_path)
            local.unlink()
            command = f"{command} < {stdin_path}; status=$?; rm -f {stdin_path}; exit $status"
        started = time.monotonic()
        timed_out = False
        self.commands += 1
        try:
            result = self.mirror.bridge.call(self.mirror.environment.exec, command, cwd=self._inside(cwd), env=env or None,
                                             timeout_sec=max(1, math.ceil(limits.timeout_s)))  # fmt: skip
            code, out, err = result.return_code, result.stdout, result.stderr
        except TimeoutError as exc:  # asyncio's too (Python 3.11+)
            timed_out, code, out, err = True, -9, "", str(exc) or f"timed out after {limits.timeout_s:g} s"
        except SandboxUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - the environment's own failure, not the command's
            if "timeout" in type(exc).__name__.lower() or "timed out" in str(exc).lower():
                timed_out, code, out, err = True, -9, "", str(exc)
            else:
                raise SandboxUnavailable(f"Harbor's environment could not run the command: {type(exc).__name__}: {exc}") from None
        duration = time.monotonic() - started
        self.mirror.pull()
        stdout, stdout_bytes = _capped(out, limits.output_bytes)
        stderr, stderr_bytes = _capped(err, limits.output_bytes)
        return ProcessResult(argv=argv, exit_code=code, stdout=stdout, stderr=stderr, stdout_bytes=stdout_bytes,
                             stderr_bytes=stderr_bytes, timed_out=timed_out, duration_s=duration)  # fmt: skip

    def command_line(self, argv: list[str], *, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """Refused: a long-lived process with pipes on this machine (an MCP server) cannot live in Harbor's container.

        Raises:
            ValueError: always.
        """
        raise ValueError("Horizon's Harbor agent runs no long-lived processes (MCP servers) in the container")

