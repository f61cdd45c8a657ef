"""``agent mcp threed --blender PORT``: an MCP session that drives the artist's open Blender.

The Horizon add-on's "Listen for MCP" (``plugins/threed/addon``) listens on 127.0.0.1:PORT and
writes a secret token to ``token_file(PORT)`` (this user only). Each run of the MCP session:

1. asks the add-on for a copy of the open scene (``scene``) and starts on it: the run's folder
   (``HORIZON_HOME/threed-live/...``) holds that ``scene.blend``, and ``task.json`` when
   ``--repo`` names a task folder. The typed tools run in the run's own sandboxed Blender worker,
   checked and stored as in any run.
2. after each successful scene-changing call, sends the add-on the step report the add-on's own
   panel applies (``plugins.threed.session.step_report``: validated arguments, or a copy of the
   agent's scene for a step the add-on does not repeat from them, e.g. ``run_blender_python``);
   the add-on applies it on Blender's main thread as one undo step and answers, and the answer
   joins the call's result ("applied to the open Blender as undo step ...", or why not and what
   to do). After a step the add-on missed, the next one brings the whole scene across.

Raw Python is offered only with ``HORIZON_THREED_PYTHON=1`` (as in every threed run) and reaches
the open scene only while the add-on's "Allow raw Python" is on; its code never runs in the
artist's Blender, only in the sandboxed worker.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import tempfile
import time
from pathlib import Path
from typing import Any

from core.api import Task, ToolContext, UserError, horizon_home, make_data_folder
from plugins.threed.session import SceneSnapshots, step_report
from plugins.threed.tools import task_spec

HOST = "127.0.0.1"
#: A step report whose arguments make a message longer than this goes as a scene copy instead
#: (the add-on takes lines of up to 8 MiB; ``add_mesh`` may hold 100,000 vertices).
MAX_STEP_BYTES = 1024 * 1024
#: Seconds to wait for the add-on's answer: Blender applies on its main thread, between redraws.
REPLY_TIMEOUT_S = 120.0
RAW_PYTHON_TOOL = "run_blender_python"
CONNECT_TIMEOUT_S = 5.0


def token_file(port: int) -> Path:
    """The add-on's token file for ``port``: ``$XDG_CONFIG_HOME/horizon/blender-PORT.token``
    (``~/.config/...`` without it); the add-on's ``token_file`` writes the same path."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "horizon" / f"blender-{port}.token"


class BlenderLink:
    """The MCP session's line to the add-on listening on ``127.0.0.1:port`` (``McpExtension``).

    Args:
        port: the port shown in the add-on's panel.
        timeout_s: seconds to wait for each answer.
    """

    def __init__(self, port: int, timeout_s: float = REPLY_TIMEOUT_S) -> None:
        self.port, self.timeout_s = port, timeout_s
        self.replayed: set[str] | None = None  # the add-on's own list, from hello
        self._snapshots: SceneSnapshots | None = None
        self.session = secrets.token_hex(8)  # the add-on lets one session drive Blender per Listen
        self._behind = False  # a step was not applied: the next one sends the whole scene
        self._raw_behind = False  # ... and one of those was raw Python: that copy needs the artist's consent too

    def _todo(self) -> str:
        return (f"in Blender, enable the Horizon Agent add-on and press Listen for MCP in the sidebar's Horizon tab "
                f"(port {self.port} in the add-on's preferences, the PORT of agent mcp threed --blender PORT)")

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        """Send one message with the token and return the add-on's answer (``{"ok": ...}``).

        Raises:
            UserError: no token file (not listening), nothing listens on the port, the add-on
                refused the token or did not answer in time; each says what to do.
        """
        path = token_file(self.port)
        try:
            token = path.read_text().strip()
        except OSError:
            raise UserError(f"no Horizon add-on listens on port {self.port} (no token at {path}): {self._todo()}") from None
        try:
            with socket.create_connection((HOST, self.port), timeout=CONNECT_TIMEOUT_S) as conn:
                conn.settimeout(self.timeout_s)
                # the token first: the add-on reads no further into a line without it at the start
                conn.sendall((json.dumps({"token": token, **{k: v for k, v in message.items() if k != "token"}, "session": self.session}) + "\n").encode())
                with conn.makefile("rb") as reader:
                    line = reader.readline()
        except TimeoutError:
            raise UserError(f"Blender did not answer on port {self.port} within {self.timeout_s:.0f} s: close any open dialog "
                            f"in Blender and try again") from None
        except OSError as exc:
            raise UserError(f"no Horizon add-on listens on {HOST}:{self.port} ({exc.strerror or exc}): {self._todo()}") from None
        if not line:
            raise UserError(f"Blender closed the connection on port {self.port} without an answer: {self._todo()}")
        try:
            reply = json.loads(line)
        except ValueError:
            raise UserError(f"what listens on port {self.port} is not the Horizon add-on (it answered {line[:80]!r}): "
                            f"check the port") from None
        if reply.get("refused"):
            raise UserError(f"the add-on on port {self.port} refused the token ({reply.get('error')}): press Listen for MCP "
                            f"again in Blender, then retry")
        return reply

    def hello(self) -> dict[str, Any]:
        """The add-on's hello (``blender``, ``addon``, ``replayed_tools``, ``allow_python``).

        Raises:
            UserError: as ``request``.
        """
        reply = self.request({"type": "hello"})
        self.replayed = set(reply.get("replayed_tools") or [])
        return reply

    def start(self) -> str:
        """Say whether the add-on answers now (a problem is a warning: Blender may start later)."""
        try:
            reply = self.hello()
        except UserError as exc:
            return f"warning: {exc}; each run tries again when it starts"
        raw = "allowed" if reply.get("allow_python") else "not allowed"
        return (f"driving Blender {reply.get('blender')} through the Horizon add-on {reply.get('addon')} on {HOST}:{self.port} "
                f"(raw Python {raw} there)")

    def prepare(self, task: Task) -> Task:
        """A new run's task: on a copy of the open scene (plus ``task.json`` from ``task.repo``, if any).

        Raises:
            UserError: the add-on does not answer or could not save the scene (as ``request``).
        """
        self.hello()
        reply = self.request({"type": "scene"})
        if not reply.get("ok") or not reply.get("path"):
            raise UserError(f"Blender could not save a copy of the open scene: {reply.get('error')}")
        # kept: the run's repo, which agent show and agent apply name
        folder = Path(tempfile.mkdtemp(prefix=time.strftime("%Y%m%d-%H%M%S-"), dir=make_data_folder(horizon_home() / "threed-live")))
        shutil.copyfile(reply["path"], folder / "scene.blend")
        if task.repo is not None and (Path(task.repo) / "task.json").is_file():
            shutil.copyfile(Path(task.repo) / "task.json", folder / "task.json")
        self._snapshots = SceneSnapshots(folder / "scene.blend", folder / "snapshots", self.replayed or set())
        self._behind = self._raw_behind = False
        return task.model_copy(update={"repo": folder})

    def after_tool(self, ctx: ToolContext, event: dict[str, Any]) -> tuple[str, bool] | None:
        """Send a successful scene-changing call to the add-on; return the note for the client.

        Returns:
            None for a call that changes nothing in the open scene (a read, a refusal, a render);
            else ``(text, is_error)``: the undo step's name, or why the open Blender does not have
            the change and what to do (an error: the run's copy and the open scene now differ).
        """
        if self._snapshots is None or event["is_error"]:
            return None
        report = step_report(event, ctx, self._snapshots, whole=self._behind)
        if not report["scene_file"] and report["tool"] not in self._snapshots.replayed:
            if report["tool"] == "finish" and self._behind:
                return ("[open Blender: it lacks the change(s) the NOT applied notes above name; the run's own scene, which "
                        "the reward judged, has them]"), False  # the run did finish: a note, not a failure
            return None  # read-only, or nothing in the scene changed
        if not report["scene_file"] and len(json.dumps(report["args"])) > MAX_STEP_BYTES:
            report.update(scene_file=self._snapshots.copy(ctx.workspace / task_spec(ctx).scene, report["step"]), args=None)
        raw = report["tool"] == RAW_PYTHON_TOOL
        if self._raw_behind and report["scene_file"]:
            report["raw_python"] = True  # the copy holds what raw code did: the add-on asks for the same consent
        try:
            reply = self.request({"type": "step", "step": report})
        except UserError as exc:
            reply = {"ok": False, "error": str(exc)}
        if reply.get("ok") and reply.get("applied"):
            self._behind = self._raw_behind = False
            undo, detail = reply.get("undo"), f" ({reply['detail']})" if reply.get("detail") else ""
            if undo:
                return f"[open Blender: applied as undo step '{undo}'{detail} (Edit > Undo in Blender takes it back)]", False
            return f"[open Blender: applied{detail}, but not undoable: {reply.get('undo_problem')}]", False
        self._behind, self._raw_behind = True, self._raw_behind or raw
        why = reply.get("error") or "the add-on did not apply it"
        then = ("Later changes carry what the raw code did and wait for that consent too." if self._raw_behind
                else "The next scene-changing call brings the open scene up to date.")
        return (f"[open Blender: NOT applied: {why}. That is the artist's open scene speaking, not your run's: your run's scene "
                f"has this change, so do not repeat, undo or work around the call. {then}]"), True


def parse_options(options: list[str]) -> BlenderLink | None:
    """``agent mcp threed``'s own options: ``--blender PORT`` (None without it).

    Raises:
        UserError: an option other than ``--blender PORT``, or a port out of range.
    """
    if not options:
        return None
    parser = argparse.ArgumentParser(prog="agent mcp threed", add_help=False, exit_on_error=False)
    parser.add_argument("--blender", type=int, metavar="PORT")
    try:
        known, unknown = parser.parse_known_args(options)
    except (argparse.ArgumentError, SystemExit) as exc:
        raise UserError(f"agent mcp threed: {exc}; the 3D plugin takes --blender PORT (the port in the add-on's panel)") from None
    if unknown:
        raise UserError(f"agent mcp threed takes no option {unknown[0]!r}; it takes --blender PORT (the port in the add-on's panel)")
    if known.blender is None:
        return None
    if not 1 <= known.blender <= 65535:
        raise UserError(f"--blender {known.blender}: a port is 1 to 65535 (the one in the add-on's panel)")
    return BlenderLink(known.blender)
