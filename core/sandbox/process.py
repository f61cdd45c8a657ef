"""Running one process with a wall-clock limit, its output in files: what both sandboxes share."""

from __future__ import annotations

import math
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

# Standard system directories, searched after the Python environment's bin.
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


def sandbox_path() -> str:
    """PATH for commands: the running Python's bin first (so ``python -m pytest`` finds the same
    interpreter and packages as Horizon), then the standard system directories."""
    dirs = [str(Path(sys.prefix) / "bin"), *SYSTEM_PATH]
    return ":".join(dict.fromkeys(dirs))


def command_env(extra: dict[str, str] | None, *, home: str, tmpdir: str) -> dict[str, str]:
    """The fixed environment of every command plus the caller's ``extra``.

    Nothing comes from the host environment: it holds API keys and tokens.

    Raises:
        ValueError: a variable name is empty or holds "=" or NUL.
    """
    env = {
        "PATH": sandbox_path(),
        "HOME": home,
        "TMPDIR": tmpdir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
    }
    for key, value in (extra or {}).items():
        if not key or "=" in key or "\0" in key or "\0" in value:
            raise ValueError(f"invalid environment variable name or value: {key!r}")
        env[key] = value
    return env


@dataclass
class Finished:
    """What happened to one process (before any sandbox-specific interpretation)."""

    returncode: int
    timed_out: bool
    duration_s: float
    stdout: bytes
    stdout_bytes: int
    stderr: bytes
    stderr_bytes: int


def run_captured(
    argv: list[str],
    *,
    env: dict[str, str],
    cwd: Path | None,
    stdin: str | None,
    timeout_s: float,
    output_bytes: int,
    output_dir: Path,
    on_timeout: Callable[[subprocess.Popen[bytes]], None],
    preexec_fn: Callable[[], None] | None = None,
    pass_fds: tuple[int, ...] = (),
    after_start: Callable[[subprocess.Popen[bytes], float], bool] | None = None,
    after_exit: Callable[[subprocess.Popen[bytes]], None] | None = None,
) -> Finished:
    """Run ``argv`` in a new session; stop it after ``timeout_s``.

    stdout and stderr go to unlinked files in ``output_dir``, not to pipes read into memory, so a
    command that prints gigabytes costs disk (bounded by RLIMIT_FSIZE), not Horizon's memory, and
    a detached child that keeps the descriptors open cannot make us wait for end of file.

    Args:
        on_timeout: kills the process tree when the time is up (called before reaping).
        preexec_fn: runs in the child before exec (forces fork instead of the cheaper vfork).
        after_start: called right after the start with the deadline (``time.monotonic()``);
            returns False when the deadline passed. If it raises, the process group is killed.
        after_exit: called once the process has exited but before it is reaped, so its pid and
            process group id cannot have been reused yet.

    Raises:
        OSError: the program (``argv[0]``) could not be started.
    """
    start = time.monotonic()
    with ExitStack() as files:
        out = files.enter_context(_output_file(output_dir))
        err = files.enter_context(_output_file(output_dir))
        inp = subprocess.DEVNULL if stdin is None else files.enter_context(_stdin_file(stdin, output_dir))
        proc = subprocess.Popen(
            argv,
            stdin=inp,
            stdout=out,
            stderr=err,
            env=env,
            cwd=cwd,
            close_fds=True,
            pass_fds=pass_fds,
            start_new_session=True,  # its own process group, which on_timeout can kill as one
            preexec_fn=preexec_fn,  # noqa: PLW1509 (only UnconfinedSandbox; see Confinement.preexec)
        )
        deadline = start + timeout_s
        try:
            started = after_start is None or after_start(proc, deadline)
            exited = started and _wait_unreaped(proc, deadline - time.monotonic())
            if not exited:
                on_timeout(proc)
            elif after_exit is not None:
                after_exit(proc)
        except BaseException:
            _killpg(proc.pid)
            raise
        finally:
            if proc.returncode is None:
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    _killpg(proc.pid)
                    proc.wait()
        duration = time.monotonic() - start
        stdout, stdout_bytes = _head(out, output_bytes)
        stderr, stderr_bytes = _head(err, output_bytes)
    return Finished(proc.returncode, not exited, duration, stdout, stdout_bytes, stderr, stderr_bytes)


def _wait_unreaped(proc: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Wait until ``proc`` exits or ``timeout_s`` passes, without reaping it; True if it exited."""
    if timeout_s <= 0:
        return proc.poll() is not None
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # Linux < 5.3: wait and reap; after_exit then comes late
        try:
            proc.wait(timeout=timeout_s)
            return True
        except subprocess.TimeoutExpired:
            return False
    try:
        return wait_readable(pidfd, time.monotonic() + timeout_s)
    finally:
        os.close(pidfd)


def wait_readable(fd: int, deadline: float) -> bool:
    """Wait until ``fd`` is readable (a pidfd: the process exited) or ``deadline`` passes."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        if poller.poll(max(1, math.ceil(remaining * 1000))):
            return True


def _killpg(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``proc`` leads (it was started in a new session)."""
    _killpg(proc.pid)


def _output_file(directory: Path) -> IO[bytes]:
    return tempfile.TemporaryFile(dir=directory, prefix="horizon-output-")


@contextmanager
def _stdin_file(text: str, directory: Path) -> Iterator[IO[bytes]]:
    """A file holding ``text``: a file, not a pipe, so no writer thread and no deadlock."""
    with tempfile.TemporaryFile(dir=directory, prefix="horizon-stdin-") as f:
        f.write(text.encode())
        f.seek(0)
        yield f


def _head(f: IO[bytes], keep: int) -> tuple[bytes, int]:
    """The first ``keep`` bytes of ``f`` and its total size."""
    total = os.fstat(f.fileno()).st_size
    return os.pread(f.fileno(), min(keep, total), 0), total


def decode_head(data: bytes, total: int) -> str:
    """Decode kept output; when it was cut, drop a character the cut split in two."""
    if total > len(data):
        # A UTF-8 character is at most 4 bytes: look back that far for a lead byte.
        for back in range(1, min(4, len(data)) + 1):
            byte = data[-back]
            if byte & 0xC0 != 0x80:  # not a continuation byte
                length = 1 if byte < 0x80 else 2 if byte >= 0xC0 and byte < 0xE0 else 3 if byte < 0xF0 else 4
                if length > back:
                    data = data[:-back]
                break
    return data.decode("utf-8", errors="replace")


def shell_status_to_exit_code(status: int) -> int:
    """bwrap (like a shell) reports a death by signal n as 128 + n; make it -n like subprocess."""
    if 128 < status <= 128 + 64:
        return -(status - 128)
    return status
