"""``ContainerSandbox``: an episode's commands run in a container of the task's own image
(Docker Engine or Podman, ``core.sandbox.engine``), as Harbor runs a Terminal-Bench task.

One container per episode, started from the image (its ENTRYPOINT, if any, runs with
``sh -c 'sleep infinity'`` in place of CMD, as Harbor starts a task's container, so an entrypoint
that sets the environment up and then ``exec "$@"`` works) and removed at ``close``:

* the episode's workspace is bind-mounted at the image's working folder (``workdir``, e.g.
  ``/app``, ``/root`` or ``/tmp``), so the file tools (on the host) and the commands (inside) see
  the same files; the rest of the container's file system is the image's, writable, and lives as
  long as the container: a file the agent writes to ``/tmp/x`` is there for the verifier;
* the scratch folder is shown at its own path read-only, ``scratch/runs`` writable (the Sandbox
  protocol's layout);
* ``--network none`` unless the task allows the internet; ``--cpus`` and ``--memory`` from the
  task's ``[environment]`` (the memory limit covers the whole container, not each command);
  its storage limit is ``--storage-opt size=`` where the engine's storage driver supports it
  (overlay on XFS with project quotas) and is measured otherwise: a command that writes past it
  is stopped (``core.sandbox.storage``);
* each command is ``ENGINE exec`` with its environment, working folder (a host path in the
  workspace is mapped to ``workdir``) and standard input, under coreutils ``timeout`` inside the
  container (its process group is killed at the deadline) and a host-side deadline a little later.

Per-command limits other than the time limit (CPU seconds, processes, file size) are not applied in
the container: the container's own cpus/memory limits are.
"""

from __future__ import annotations

import shlex
import uuid
from pathlib import Path, PurePosixPath

from core.errors import SandboxUnavailable, UserError
from core.sandbox.base import SCRATCH_WRITABLE, ProcessResult, SandboxLimits
from core.sandbox.engine import Engine
from core.sandbox.process import decode_head, kill_group, run_captured
from core.sandbox.storage import MARKER

#: Seconds the host waits past a command's own deadline before it kills the ``exec`` client.
GRACE_S = 15.0


class ContainerSandbox:
    """Runs an episode's commands in one container of ``image`` (see the module docstring).

    Args:
        engine: the container engine.
        image: the image's tag.
        workspace: the episode's workspace (host), mounted at ``workdir``.
        scratch: the run's scratch folder (made if missing).
        workdir: the image's working folder (absolute POSIX; not ``/``).
        limits: default limits of each command (its ``timeout_s`` and ``output_bytes`` apply).
        allow_network: False: ``--network none``.
        cpus: ``--cpus`` (None: unlimited); memory_bytes: ``--memory`` (None: unlimited).
        storage_bytes: what the commands may write, the workspace included (None: unlimited;
            ``core.sandbox.storage``); ``storage_mode`` says how it is enforced once started:
            ``"quota"`` (the engine's ``--storage-opt size``) or ``"measured"``.
        env: environment of every command (the image's own ENV applies besides).

    Raises:
        ValueError: ``workspace`` is not a folder, or ``workdir`` is ``/`` or relative.
    """

    isolated = True

    def __init__(self, engine: Engine, image: str, workspace: Path, scratch: Path, *, workdir: str, limits: SandboxLimits | None = None,
                 allow_network: bool = False, cpus: float | None = None, memory_bytes: int | None = None,
                 env: dict[str, str] | None = None, storage_bytes: int | None = None):  # fmt: skip
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise ValueError(f"sandbox workspace is not a folder: {workspace}")
        if not workdir.startswith("/") or PurePosixPath(workdir) == PurePosixPath("/"):
            raise ValueError(f"a container's workspace needs an absolute working folder other than /, not {workdir!r}")
        self.scratch = Path(scratch).resolve()
        (self.scratch / SCRATCH_WRITABLE).mkdir(parents=True, exist_ok=True)
        self.engine, self.image, self.workdir = engine, image, str(PurePosixPath(workdir))
        self.limits = limits or SandboxLimits()
        self.allow_network, self.cpus, self.memory_bytes = allow_network, cpus, memory_bytes
        self.env = dict(env or {})
        self.storage_bytes = int(storage_bytes) if storage_bytes else None
        self.storage_mode: str | None = None
        self._watch = None
        self.name = f"horizon-{uuid.uuid4().hex[:12]}"
        self.container: str | None = None
        self.spec: dict = {}  # the task's container metadata, when opened from it (``open_container``)

    # -- the container -----------------------------------------------------------------------------

    def start(self) -> ContainerSandbox:
        """Start the container (once).

        Raises:
            SandboxUnavailable: the engine cannot start it (its message).
        """
        if self.container is not None:
            return self
        runs = self.scratch / SCRATCH_WRITABLE
        args = ["run", "-d", "--name", self.name, "--label", "horizon.sandbox=1",
                "-v", f"{self.workspace}:{self.workdir}", "-v", f"{self.scratch}:{self.scratch}:ro", "-v", f"{runs}:{runs}",
                "-w", self.workdir, *self.engine.run_options()]  # fmt: skip
        if not self.allow_network:
            args += ["--network", "none"]
        if self.cpus:
            args += ["--cpus", f"{self.cpus:g}"]
        if self.memory_bytes:
            args += ["--memory", str(int(self.memory_bytes)), "--memory-swap", str(int(self.memory_bytes))]
        # The image's ENTRYPOINT runs (a task's set-up, as Harbor keeps it) with this command in place of CMD.
        command = [self.image, "sh", "-c", "sleep infinity"]
        try:
            if self.storage_bytes:
                self.container = self._start_with_storage(args, command)
            else:
                self.container = self.engine.text([*args, *command], timeout_s=300)
        except UserError as exc:
            raise SandboxUnavailable(f"the task's container could not start: {exc}") from None
        return self

    def _start_with_storage(self, args: list[str], command: list[str]) -> str:
        """Start with ``--storage-opt size=`` (the engine's quota), or without it and measured
        where the engine's storage driver refuses the option (``core.sandbox.storage``)."""
        from core.sandbox.storage import UNSUPPORTED, StorageWatch

        try:
            container = self.engine.text([*args, "--storage-opt", f"size={self.storage_bytes}", *command], timeout_s=300)
            self.storage_mode = "quota"
        except UserError as exc:
            if not UNSUPPORTED.search(str(exc)):
                raise
            self.engine.call(["rm", "-f", self.name], check=False, timeout_s=120)  # a container created before the refusal
            container = self.engine.text([*args, *command], timeout_s=300)
            self.storage_mode = "measured"
        self._watch = StorageWatch(self.engine, container, self.workspace, self.storage_bytes, layer=self.storage_mode == "measured").start()
        return container

    def close(self) -> None:
        """Remove the container (and everything written in it outside the workspace); safe to call twice."""
        if self._watch is not None:
            self._watch.stop()
            self._watch = None
        if self.container is not None:
            self.engine.call(["rm", "-f", self.container], check=False, timeout_s=120)
            self.container = None

    def __enter__(self) -> ContainerSandbox:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def inside(self, path: Path | str) -> str:
        """Where the host path ``path`` (in the workspace or scratch) is inside the container."""
        path = Path(path).resolve()
        if path.is_relative_to(self.workspace):
            rel = path.relative_to(self.workspace).as_posix()
            return self.workdir if rel == "." else f"{self.workdir}/{rel}"
        return str(path)

    def copy_in(self, source: Path, target: str) -> None:
        """Copy the host folder ``source`` into the container at ``target`` (replacing it).

        Raises:
            UserError: the engine cannot copy.
        """
        self.start()
        self.engine.call(["exec", self.container, "rm", "-rf", target], check=False)
        self.engine.call(["exec", self.container, "mkdir", "-p", str(PurePosixPath(target).parent)], check=False)
        self.engine.call(["cp", str(source), f"{self.container}:{target}"], timeout_s=600)

    def copy_out(self, source: str, dest: Path) -> bool:
        """Copy ``source`` out of the container to ``dest``; False when it does not exist there."""
        self.start()
        return self.engine.call(["cp", f"{self.container}:{source}", str(dest)], check=False, timeout_s=600).returncode == 0

    # -- commands ------------------------------------------------------------------------------------

    def _exec_argv(self, argv: list[str], *, cwd: str, env: dict[str, str], interactive: bool) -> list[str]:
        out = [self.engine.path, "exec", *(["-i"] if interactive else []), "-w", cwd]
        for key, value in {**self.env, **env}.items():  # the image's ENV applies besides
            if not key or "=" in key or "\0" in key or "\0" in value:
                raise ValueError(f"invalid environment variable {key!r}")
            out += ["-e", f"{key}={value}"]
        return [*out, self.container or "", *argv]

    def command_line(self, argv: list[str], *, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """``ENGINE exec -i`` of ``argv`` in the container, for a long-lived process whose pipes
        the caller holds (an MCP server), and the environment for the engine's client.

        Raises:
            ValueError: empty ``argv`` or an invalid environment variable.
        """
        if not argv:
            raise ValueError("empty command")
        self.start()
        return self._exec_argv(argv, cwd=self.workdir, env=dict(env or {}), interactive=True), _client_env()

    def run(self, argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None, limits: SandboxLimits | None = None,
            stdin: str | None = None, pass_fds: tuple[int, ...] = ()) -> ProcessResult:  # fmt: skip
        """Run ``argv`` in the container to completion (see ``Sandbox.run``); never raises for a failing command.

        ``cwd`` is a host path in the workspace or scratch (mapped inside) or a path of the
        container (``str``, e.g. ``/tests``). ``pass_fds`` cannot reach into a container: refused.

        Raises:
            SandboxUnavailable: the container cannot start, or the engine's client cannot run.
            ValueError: ``pass_fds`` given, or an invalid environment variable.
        """
        if pass_fds:
            raise ValueError("a container sandbox cannot pass descriptors to its commands")
        if not argv:
            raise ValueError("empty command")
        self.start()
        limits = limits or self.limits
        where = self.workdir if cwd is None else (cwd if isinstance(cwd, str) else self.inside(cwd))
        timeout = max(1.0, float(limits.timeout_s))
        inner = ["timeout", "-s", "KILL", f"{timeout:g}", *argv]
        variables = dict(env or {})
        watch, token = self._watch, uuid.uuid4().hex
        if watch is not None:  # the storage limit: this command's processes carry a marker the watcher can find
            variables[MARKER] = token
            watch.begin(token)
        full = self._exec_argv(inner, cwd=where, env=variables, interactive=stdin is not None)
        runs = self.scratch / SCRATCH_WRITABLE
        try:
            done = run_captured(full, env=_client_env(), cwd=None, stdin=stdin, timeout_s=timeout + GRACE_S,
                                output_bytes=limits.output_bytes, output_dir=runs, on_timeout=kill_group)  # fmt: skip
        except OSError as exc:
            if watch is not None:
                watch.end(token)
            raise SandboxUnavailable(f"the container engine's client {self.engine.path} cannot run: {exc}") from None
        code = done.returncode
        broke = watch.end(token) if watch is not None else None
        timed_out = done.timed_out or (code == 137 and done.duration_s >= timeout - 0.5)
        if code == 126 and b"OCI runtime exec failed" in done.stderr:
            raise SandboxUnavailable(f"the container {self.name} cannot run commands: {decode_head(done.stderr, done.stderr_bytes).strip()}")
        if code == 137 and not timed_out:
            code = -9
        stderr = decode_head(done.stderr, done.stderr_bytes)
        if broke:
            sep = "\n" if stderr and not stderr.endswith("\n") else ""
            code, stderr = code or 1, f"{stderr}{sep}{broke}\n"
        return ProcessResult(argv=list(argv), exit_code=code, stdout=decode_head(done.stdout, done.stdout_bytes),
                             stderr=stderr, stdout_bytes=done.stdout_bytes,
                             stderr_bytes=done.stderr_bytes, timed_out=timed_out, duration_s=done.duration_s)  # fmt: skip

    def shell(self, command: str, **kwargs: object) -> ProcessResult:
        """``run(["sh", "-c", command])``."""
        return self.run(["sh", "-c", command], **kwargs)  # type: ignore[arg-type]

    def changed_files(self) -> list[tuple[str, str]]:
        """The container's changes against its image (``ENGINE diff``): ``(kind, path)`` with kind
        ``A`` (added), ``C`` (changed) or ``D`` (deleted); bind mounts (the workspace) are not in it."""
        if self.container is None:
            return []
        text = self.engine.text(["diff", self.container], timeout_s=300)
        return [(line[0], line[2:]) for line in text.splitlines() if len(line) > 2]

    def __repr__(self) -> str:
        return f"ContainerSandbox({self.image!r}, workdir={self.workdir!r}, {shlex.quote(self.name)})"


def _client_env() -> dict[str, str]:
    """The environment of the engine's client: no host variables but what it needs to find its daemon."""
    import os

    keep = ("PATH", "HOME", "DOCKER_HOST", "DOCKER_CONFIG", "CONTAINER_HOST", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME")
    return {k: os.environ[k] for k in keep if k in os.environ}


def remove_leftovers(engine: Engine) -> int:
    """Remove containers Horizon started that are still there (a crashed process's); returns how many."""
    ids = engine.text(["ps", "-aq", "--filter", "label=horizon.sandbox=1"]).split()
    if ids:
        engine.call(["rm", "-f", *ids], check=False)
    return len(ids)

