"""The sandbox interface: run one command confined to an episode's workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

#: The one folder under ``scratch`` that sandboxed commands may write (their reports and build
#: outputs, one subfolder per command); the rest of scratch is read-only to them, so what Horizon
#: and the plugins keep there (e.g. the reward's baseline) cannot be rewritten by a command.
SCRATCH_WRITABLE = "runs"


class SandboxLimits(BaseModel):
    """Resource limits for one command. Units are in the field names.

    Defaults suit running a repository's test suite (a JVM needs about 1 GiB of memory).
    """

    timeout_s: float = Field(120.0, description="wall-clock limit in seconds; the whole process tree is killed after it")
    cpu_s: int = Field(300, description="CPU-time limit in seconds (RLIMIT_CPU)")
    memory_bytes: int = Field(4 << 30, description="memory limit in bytes (cgroup memory, else RLIMIT_AS)")
    max_processes: int = Field(256, description="processes and threads the command may run at once")
    file_size_bytes: int = Field(256 << 20, description="largest file the command may write, in bytes (RLIMIT_FSIZE)")
    output_bytes: int = Field(1 << 20, description="stdout and stderr kept per stream, in bytes; the rest is counted, not kept")


class ProcessResult(BaseModel):
    """The outcome of one sandboxed command.

    Attributes:
        argv: the command as run inside the sandbox.
        exit_code: the command's exit status; negative for a signal (as subprocess reports it).
        stdout, stderr: decoded text, at most ``output_bytes`` of each (head kept).
        stdout_bytes, stderr_bytes: total bytes the command wrote to each stream.
        timed_out: True when the wall-clock limit killed it.
        duration_s: wall-clock seconds from start to the end of the whole process tree.
    """

    argv: list[str]
    exit_code: int
    stdout: str = ""
    stderr: str = ""
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    timed_out: bool = False
    duration_s: float = 0.0

    @property
    def ok(self) -> bool:
        """True when the command exited 0 within its limits."""
        return self.exit_code == 0 and not self.timed_out

    @property
    def truncated(self) -> bool:
        """True when some output was dropped by the ``output_bytes`` cap."""
        return self.stdout_bytes > len(self.stdout.encode()) or self.stderr_bytes > len(self.stderr.encode())


@runtime_checkable
class Sandbox(Protocol):
    """Runs commands for one episode: only ``workspace`` and ``scratch/runs`` writable
    (``SCRATCH_WRITABLE``; the rest of ``scratch`` is read-only to commands).

    Implementations: ``BwrapSandbox`` (the default), ``ContainerSandbox`` (a task's own container
    image: ``core.sandbox.container``) and ``UnconfinedSandbox`` (only on the user's explicit request).
    """

    workspace: Path
    scratch: Path
    isolated: bool
    limits: SandboxLimits

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
        """Run ``argv`` to completion and return its result; never raises for a failing command.

        Args:
            argv: program and arguments (no shell; pass ``["bash", "-lc", cmd]`` for one).
            cwd: working directory inside the workspace; default the workspace root.
            env: extra environment variables; the host's environment is NOT inherited.
            limits: resource limits; default the sandbox's own.
            stdin: text fed to the command's standard input (default: none, /dev/null).
            pass_fds: the caller's descriptors the command inherits at the same numbers (the
                write end of a pipe the caller reads while the command runs: the coding reward's
                verdict stream, ``plugins.coding.verdict_stream``); default none.

        Raises:
            SandboxUnavailable: the sandbox itself failed to start.
        """
        ...

    def command_line(self, argv: list[str], *, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """How to start ``argv`` as a long-lived process in this sandbox whose pipes the caller
        holds (an MCP server over stdio): ``(argv to spawn, its environment)``. Isolation as
        ``run``'s; no limits or deadline of its own (the process lives as long as the episode):
        the caller wraps it in ``Confinement.launcher`` (``core.sandbox.limits``) for the limits,
        as ``core.mcp.client`` does.

        Raises:
            ValueError: empty ``argv`` or an invalid environment variable.
        """
        ...
