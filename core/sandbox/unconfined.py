"""``UnconfinedSandbox``: commands run as plain processes, for users who opt out of isolation.

Only the limits, the timeout, the output capture and the environment are kept: the command can
read and write everything the user can, and use the network. The host environment is still not
inherited (it holds API keys). Commands get a private HOME and TMPDIR under the scratch folder.

Without a cgroup (an ordinary user on cgroup v2, usually), a process that leaves the command's
session (``setsid``) can outlive it; everything still in its process group is killed when it ends.
"""

from __future__ import annotations

import signal
from pathlib import Path

from core.sandbox.base import ProcessResult, SandboxLimits
from core.sandbox.limits import Confinement
from core.sandbox.process import command_env, decode_head, kill_group, run_captured


class UnconfinedSandbox:
    """Runs each command as a plain subprocess with the sandbox's limits, without isolation.

    Args:
        workspace: the episode's repository copy; the default working directory.
        scratch: a run-private folder (made if missing); holds the commands' HOME and TMPDIR
            and, while a command runs, its output files.
        limits: default limits of each command.
        use_cgroups: limit memory and processes with a cgroup where one can be made.

    Raises:
        ValueError: ``workspace`` is not a folder.
    """

    isolated = False

    def __init__(
        self,
        workspace: Path,
        scratch: Path,
        *,
        limits: SandboxLimits | None = None,
        use_cgroups: bool = True,
    ):
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise ValueError(f"sandbox workspace is not a folder: {workspace}")
        self.scratch = Path(scratch).resolve()
        self.scratch.mkdir(parents=True, exist_ok=True)
        self.limits = limits or SandboxLimits()
        self.use_cgroups = use_cgroups
        self._home = self.scratch / "home"
        self._tmp = self.scratch / "tmp"

    def command_line(self, argv: list[str], *, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """``argv`` itself, for a long-lived process whose pipes the caller holds (see
        ``BwrapSandbox.command_line``): unconfined, with the fixed environment (no host
        variables) and a private HOME and TMPDIR under scratch, plus ``env``.

        Returns:
            ``(argv, environment)`` to start the process with.

        Raises:
            ValueError: empty ``argv`` or an invalid environment variable.
        """
        if not argv:
            raise ValueError("empty command")
        self._home.mkdir(exist_ok=True)
        self._tmp.mkdir(exist_ok=True)
        return list(argv), command_env(dict(env or {}), home=str(self._home), tmpdir=str(self._tmp))

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
        """Run ``argv`` as a plain process; see ``Sandbox.run``.

        Raises:
            ValueError: empty ``argv``, ``cwd`` not a folder, or an invalid environment variable.
        """
        if not argv:
            raise ValueError("empty command")
        limits = limits or self.limits
        workdir = (self.workspace / cwd).resolve() if cwd is not None else self.workspace
        if not workdir.is_dir():
            raise ValueError(f"cwd is not a folder: {cwd}")
        self._home.mkdir(exist_ok=True)
        self._tmp.mkdir(exist_ok=True)
        with Confinement(limits, use_cgroups=self.use_cgroups) as confinement:
            extra = dict(env or {})
            if not confinement.memory_by_cgroup:
                extra = {"MALLOC_ARENA_MAX": "2", **extra}  # see BwrapSandbox.run
            full_env = command_env(extra, home=str(self._home), tmpdir=str(self._tmp))
            try:
                finished = run_captured(
                    list(argv),
                    env=full_env,
                    cwd=workdir,
                    stdin=stdin,
                    timeout_s=limits.timeout_s,
                    output_bytes=limits.output_bytes,
                    output_dir=self.scratch,
                    preexec_fn=confinement.preexec,
                    pass_fds=pass_fds,
                    on_timeout=lambda proc: (kill_group(proc), confinement.kill()),
                    after_exit=kill_group,  # background children (`cmd &`) end with the command
                )
            except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
                code = 127 if isinstance(exc, FileNotFoundError) else 126
                message = f"sandbox: cannot run {argv[0]!r}: {exc.strerror} (PATH={full_env['PATH']})\n"
                return ProcessResult(argv=list(argv), exit_code=code, stderr=message, stderr_bytes=len(message.encode()))
            oom = confinement.oom_killed()
        stderr = decode_head(finished.stderr, finished.stderr_bytes)
        stderr_bytes = finished.stderr_bytes
        if oom:
            note = f"\nsandbox: killed by the memory limit ({limits.memory_bytes} bytes)\n"
            stderr += note
            stderr_bytes += len(note.encode())
        return ProcessResult(
            argv=list(argv),
            exit_code=-signal.SIGKILL if finished.timed_out else finished.returncode,
            stdout=decode_head(finished.stdout, finished.stdout_bytes),
            stderr=stderr,
            stdout_bytes=finished.stdout_bytes,
            stderr_bytes=stderr_bytes,
            timed_out=finished.timed_out,
            duration_s=finished.duration_s,
        )
