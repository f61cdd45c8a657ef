"""The agent side of the Blender worker: start it lazily, call it with a deadline, restart it.

Blender runs out of the agent's process (``plugins.threed.worker``), so a crash or a hang in
Blender costs one tool call, not the run: the call raises ``ToolError`` saying what happened, the
worker is killed and started again, and the scene is reloaded from the .blend saved after the last
completed step. One worker serves one episode (kept in ``ToolContext.plugin_state``).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
import weakref
from pathlib import Path
from typing import Any

from core.api import ToolError

REPO_ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT_S = 90.0  # importing bpy takes 1-2 s alone; far more on a loaded 2-core machine
DEFAULT_TIMEOUT_S = 60.0
#: Variables the worker keeps from Horizon's environment (names, and prefixes ending in "_"):
#: enough for Blender to find its own configuration, never an API key.
WORKER_ENV = ("PATH", "HOME", "USER", "LOGNAME", "LANG", "LANGUAGE", "TZ", "TMPDIR", "LD_LIBRARY_PATH", "LC_", "BLENDER_",
              "OCIO", "OMP_NUM_THREADS")


def worker_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The Blender worker's environment: ``WORKER_ENV`` from ``environ`` plus Horizon on ``PYTHONPATH``.

    The worker is not sandboxed and opens files the agent can write, so it gets no secrets
    (``HORIZON_API_KEY``, cloud credentials) to lose.

    Args:
        environ: the environment to filter (default ``os.environ``).

    Returns:
        A new dict of variable names to values.
    """
    environ = os.environ if environ is None else environ
    kept = {k: v for k, v in environ.items() if k in WORKER_ENV or any(k.startswith(p) for p in WORKER_ENV if p.endswith("_"))}
    kept["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), environ.get("PYTHONPATH")]))
    return kept


class _WorkerLost(Exception):
    """The worker died or stopped answering; the text says which."""


def _kill(proc: subprocess.Popen) -> None:
    """Kill the worker's process group and reap it (also the finalizer at interpreter exit)."""
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            proc.kill()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            stream.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


class BlenderWorker:
    """One Blender worker process bound to one scene file.

    Args:
        scene_path: the .blend the worker loads at start and saves after each changing call
            (created empty when missing). It is opened with no script run, never through a
            symbolic link, and never written through one (``plugins.threed.ops.open_scene``).
        log_path: where the worker's stderr (Blender's own messages) is appended.
        python: the interpreter that has ``bpy`` installed (default: this one).
        root: the folder the scene may name files in (textures, libraries, caches); a path it
            names outside is dropped when the scene is loaded. Default: the scene's folder.

    Attributes:
        restarts: how many times the worker was started again after a crash or hang.
    """

    def __init__(self, scene_path: Path, log_path: Path, *, python: str = sys.executable, root: Path | None = None) -> None:
        scene_path = Path(scene_path)
        self.scene_path = scene_path.parent.resolve() / scene_path.name  # the worker refuses links on the way
        self.root = Path(root).resolve() if root is not None else self.scene_path.parent
        self.log_path = Path(log_path)
        self.python = python
        self.restarts = 0
        self._proc: subprocess.Popen | None = None
        self._buffer = b""
        self._next_id = 0
        self._finalizer: weakref.finalize | None = None
        self._note = ""  # said once in the next result after a silent restart

    # -- life cycle ----------------------------------------------------------------------------

    @property
    def pid(self) -> int | None:
        """The worker's process id, or None when no worker runs."""
        return self._proc.pid if self._proc is not None and self._proc.poll() is None else None

    def _start(self) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                [self.python, "-m", "plugins.threed.worker"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                cwd=REPO_ROOT, env=worker_env(), start_new_session=True,
            )
        self._buffer = b""
        self._finalizer = weakref.finalize(self, _kill, self._proc)
        try:
            hello = self._read_line(time.monotonic() + START_TIMEOUT_S, START_TIMEOUT_S)
            if not hello.get("ready"):
                raise _WorkerLost(f"said {hello} instead of ready")
            if os.path.lexists(self.scene_path):
                self.note_opened(self._request("open_scene", self.open_args(), DEFAULT_TIMEOUT_S, save=False))
            else:
                self._request("new_scene", {}, DEFAULT_TIMEOUT_S, save=True)
        except (_WorkerLost, ToolError) as exc:
            self._stop()
            raise ToolError(f"the Blender worker could not start: {exc}; Blender's messages are in {self.log_path}") from None

    def _stop(self) -> None:
        if self._finalizer is not None:
            self._finalizer()  # kills and reaps; detaches itself
        self._proc, self._finalizer = None, None

    def close(self) -> None:
        """Stop the worker (its stdin closes; it is killed if it does not exit within 5 s)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            try:
                proc.stdin.close()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._stop()

    def open_args(self) -> dict[str, str]:
        """The arguments of ``open_scene`` for this worker's scene: ``{"path", "root"}``."""
        return {"path": str(self.scene_path), "root": str(self.root)}

    def note_opened(self, result: dict[str, Any]) -> dict[str, Any]:
        """Remember, for the next result, what loading the scene refused (scripts, outside files).

        Args:
            result: ``open_scene``'s answer (``scripts_blocked``, ``dropped``).

        Returns:
            ``result`` unchanged.
        """
        said = []
        if result.get("scripts_blocked"):
            said.append("the scene file carries Python (registered text blocks or driver expressions); it was not run")
        if result.get("dropped"):
            names = ", ".join(result["dropped"][:10]) + (" ..." if len(result["dropped"]) > 10 else "")
            said.append(f"files it names outside {self.root} were dropped: {names}")
        if said:
            self._note = " ".join(filter(None, [self._note, f"({'; '.join(said)})"]))
        return result

    def ensure_started(self) -> None:
        """Start the worker if none runs (again, after a crash), loading the saved scene."""
        if self._proc is not None and self._proc.poll() is not None:
            code = self._proc.returncode
            self._stop()
            self.restarts += 1
            self._note = (f"(the Blender worker had stopped, {_exit_text(code)}; it was restarted with the scene "
                          "from the last saved step)")
        if self._proc is None:
            self._start()

    # -- calls ----------------------------------------------------------------------------------

    def call(self, op: str, args: dict[str, Any] | None = None, *, timeout_s: float = DEFAULT_TIMEOUT_S,
             save: bool = True) -> dict[str, Any]:
        """Run one operation (``plugins.threed.ops``) in the worker.

        Args:
            op: the operation's name.
            args: its arguments (JSON-serialisable).
            timeout_s: seconds to wait for the answer; past it the worker is killed and restarted.
            save: save the scene file after an operation that changes it.

        Returns:
            The operation's result dict; key ``"_note"`` holds a restart notice when the worker
            had to be started again before this call, or what loading the scene refused (Python
            not run, files outside ``root`` dropped). ``open_scene`` gets ``root`` by default.

        Raises:
            ToolError: the operation failed (the message is Blender's or the operation's), or the
                worker crashed or exceeded ``timeout_s`` (it is restarted with the scene from the
                last saved step before this returns).
        """
        self.ensure_started()
        if op == "open_scene":
            args = {"root": str(self.root), **(args or {})}
        try:
            result = self._request(op, args or {}, timeout_s, save=save)
        except _WorkerLost as lost:
            self._restart_after(op, str(lost))
        if op == "open_scene":
            return self.note_opened(result)  # said in the next result: callers of open_scene show none
        if self._note:
            result = {**result, "_note": self._note}
            self._note = ""
        return result

    def _request(self, op: str, args: dict[str, Any], timeout_s: float, *, save: bool) -> dict[str, Any]:
        assert self._proc is not None
        self._next_id += 1
        line = json.dumps({"id": self._next_id, "op": op, "args": args, "save_to": str(self.scene_path) if save else None})
        try:
            self._proc.stdin.write(line.encode() + b"\n")
            self._proc.stdin.flush()
        except OSError:  # a broken pipe: it died before reading the request
            raise _WorkerLost(f"crashed ({_exit_text(self._proc.wait(timeout=10))})") from None
        reply = self._read_line(time.monotonic() + timeout_s, timeout_s)
        if not reply.get("ok"):
            raise ToolError(f"{op} failed: {reply.get('error', 'no reason given')}")
        return reply["result"]

    def _read_line(self, deadline: float, timeout_s: float) -> dict[str, Any]:
        assert self._proc is not None and self._proc.stdout is not None
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise _WorkerLost(f"did not answer within its time limit of {timeout_s:g} s (killed)")
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 1 << 16)
            if not chunk:  # EOF: the worker died
                raise _WorkerLost(f"crashed ({_exit_text(self._proc.wait(timeout=10))})")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def _restart_after(self, op: str, what: str) -> None:
        """Kill the worker, start a fresh one on the last saved scene, and raise the observation."""
        self._stop()
        self.restarts += 1
        try:
            self._start()
            after = "it was restarted and the scene reloaded from the last saved step; nothing of this call was kept"
        except ToolError as exc:
            self._stop()
            after = f"restarting it failed too ({exc}); the next call tries again"
        raise ToolError(f"Blender worker {what} during {op}; {after}")


def _exit_text(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"
