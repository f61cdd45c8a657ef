"""Start one long-lived command under a cgroup and rlimits, and record how it ended.

``Confinement.launcher`` (``core.sandbox.limits``) starts a long-lived sandboxed process whose
pipes someone else holds (an external MCP server, spawned by the ``mcp`` SDK's stdio client) as::

    python -I -S launch.py SPEC -- ARGV...

SPEC is JSON: ``{"cgroup_procs": [paths], "rlimits": [[resource, soft, hard], ...], "status":
path, "parent": pid}``. The launcher forks; the child writes ``0`` to each ``cgroup.procs`` (it
joins the command's cgroup), sets the rlimits and execs ARGV (bwrap, in Horizon's case), so the
command and everything it starts are inside both before any of its code runs. The parent stays
outside them, holds no pipe of the command (its stdin and stdout go to /dev/null, so the command's
end is its pipes' end), passes SIGTERM/SIGINT/SIGHUP on, and when the command ends writes its exit
status (negative: the signal that ended it, e.g. ``-SIGXCPU`` past the CPU-time limit) to the
status file, then exits the same way. It dies with its own parent (``PR_SET_PDEATHSIG``), and
the command's ``setpriv --pdeathsig`` and bwrap's ``--die-with-parent`` take the sandbox with it.

Only the standard library: it runs with ``-I -S`` (no site-packages, no environment variables
read), in a fraction of a second.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import sys


def _die_with_parent(parent: int) -> None:
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def _child(spec: dict, argv: list[str]) -> None:
    try:
        for path in spec.get("cgroup_procs", []):
            fd = os.open(path, os.O_WRONLY)
            try:
                os.write(fd, b"0")
            finally:
                os.close(fd)
        for resource_id, soft, hard in spec.get("rlimits", []):
            resource.setrlimit(resource_id, (soft, hard))
        os.execvp(argv[0], argv)
    except BaseException as exc:  # noqa: BLE001 - the command never started: say why on its stderr
        os.write(2, f"horizon: cannot start {argv[0]} under its limits: {exc}\n".encode(errors="replace"))
        os._exit(127)


def _record(path: str, code: int) -> None:
    temp = f"{path}.tmp"
    with open(temp, "w", encoding="utf-8") as f:
        json.dump({"exit_code": code}, f)
    os.replace(temp, path)


def main(args: list[str]) -> int:
    """Run ``args`` (``SPEC -- ARGV...``, the module docstring); returns the command's exit code."""
    if len(args) < 3 or args[1] != "--":
        sys.stderr.write("usage: launch.py SPEC -- ARGV...\n")
        return 2
    spec = json.loads(args[0])
    argv = args[2:]
    _die_with_parent(int(spec.get("parent", os.getppid())))
    pid = os.fork()
    if pid == 0:
        _child(spec, argv)
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda number, frame: _forward(pid, number))
    while True:
        try:
            _, status = os.waitpid(pid, 0)
            break
        except ChildProcessError:
            status = 0
            break
    code = os.waitstatus_to_exitcode(status)
    if spec.get("status"):
        try:
            _record(spec["status"], code)
        except OSError:
            pass
    return code if code >= 0 else 128 - code


def _forward(pid: int, number: int) -> None:
    try:
        os.kill(pid, number)
    except ProcessLookupError:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
