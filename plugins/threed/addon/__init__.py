"""Horizon Agent, a Blender add-on (extension format, Blender 4.2+): a sidebar panel that runs
Horizon's 3D agent on the open scene without freezing Blender.

How it works:

- **Run** saves a copy of the open scene to a fresh task folder and starts the agent loop in a
  separate process (``python -m plugins.threed.session``, with the Python that has Horizon
  installed, set in the add-on's preferences or ``HORIZON_PYTHON``). A reader thread queues the
  process's JSON-lines step reports.
- A ``bpy.app.timers`` timer on Blender's main thread drains the queue: each successful
  scene-changing step is applied to the open scene with the same operation the agent's worker
  ran (``scene_ops``, a copy of ``plugins.threed.ops`` bundled by ``agent threed build-addon``),
  then pushed as its own undo step, and logged in the panel.
- **Stop** sends SIGINT: the run stops after the step in flight and stays resumable
  (``agent resume RUN_ID``).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import bpy
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, IntProperty, PointerProperty, StringProperty

try:  # the installed add-on carries its own copy of the operations
    from . import scene_ops as ops
except ImportError:  # running from Horizon's source tree
    from plugins.threed import ops

#: Steps the panel repeats on the open scene; renders and exports stay in the agent's workspace.
APPLIED_TOOLS = {"add_primitive", "add_mesh", "delete_object", "transform", "apply_scale", "add_modifier", "set_material",
                 "add_light", "set_camera", "set_world"}
POLL_INTERVAL_S = 0.2
LOG_LINES_SHOWN = 12

_session: dict[str, Any] = {"proc": None, "queue": None, "thread": None, "task_dir": None}


class HorizonPreferences(bpy.types.AddonPreferences):
    """Where Horizon is installed."""

    bl_idname = __package__

    python: StringProperty(
        name="Horizon Python", subtype="FILE_PATH", default=os.environ.get("HORIZON_PYTHON", ""),
        description="Python interpreter with Horizon installed (e.g. .../horizon/.venv/bin/python)",
    )

    def draw(self, context):
        self.layout.prop(self, "python")


class HorizonLogLine(bpy.types.PropertyGroup):
    """One line of the panel's step log."""

    text: StringProperty()
    ok: BoolProperty(default=True)


class HorizonSettings(bpy.types.PropertyGroup):
    """The panel's state (on the window manager: not saved in .blend files)."""

    request: StringProperty(name="Request", description="What to build, e.g. 'a low table, 1.2 m by 0.6 m ...'")
    policy: EnumProperty(name="Model", items=[
        ("auto", "Auto", "A model server when a base URL is set, else the embedded model"),
        ("openai", "Server", "An OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama)"),
        ("embedded", "Embedded", "The small embedded model"),
        ("scripted", "Scripted", "Replay a JSON-lines script of tool calls"),
    ], default="auto")
    base_url: StringProperty(name="Base URL", description="e.g. http://localhost:8000/v1")
    model: StringProperty(name="Model name")
    script: StringProperty(name="Script", subtype="FILE_PATH", description="JSON-lines script for the scripted policy")
    task_file: StringProperty(name="Task spec", subtype="FILE_PATH", description="optional task.json with checkable requirements")
    max_steps: IntProperty(name="Max steps", default=60, min=1, max=500)
    running: BoolProperty(default=False)
    status: StringProperty(default="idle")
    applied: IntProperty(default=0)
    log: CollectionProperty(type=HorizonLogLine)


def _settings(context) -> HorizonSettings:
    return context.window_manager.horizon


def _log(settings: HorizonSettings, text: str, ok: bool = True) -> None:
    line = settings.log.add()
    line.text, line.ok = text[:200], ok


def _python(context) -> str:
    addon = context.preferences.addons.get(__package__)
    configured = addon.preferences.python if addon is not None else ""
    return bpy.path.abspath(configured) if configured else os.environ.get("HORIZON_PYTHON", "")


def _read_lines(stream, lines: queue.Queue) -> None:
    """Reader thread: queue each line the agent process writes; None at its end."""
    for line in stream:
        lines.put(line)
    lines.put(None)


def apply_step(settings: HorizonSettings, event: dict[str, Any]) -> None:
    """Apply one reported step to the open scene (main thread) as its own undo step, and log it."""
    mark = "ok" if event["ok"] else "error"
    first = (event.get("output") or "").splitlines()[0:1]
    _log(settings, f"{event['step']:>3} {event['tool']}: {mark} {first[0] if first else ''}", event["ok"])
    if not event["ok"] or event["tool"] not in APPLIED_TOOLS or not event.get("args"):
        return
    try:
        ops.OPS[event["tool"]](event["args"])
    except Exception as exc:  # noqa: BLE001 - the open scene may differ from the agent's; say so, keep going
        _log(settings, f"    not applied here: {exc}", False)
        return
    settings.applied += 1
    try:
        bpy.ops.ed.undo_push(message=f"Horizon step {event['step']}: {event['tool']}")
    except RuntimeError:
        pass  # no undo stack without a window (background mode)


def poll_session() -> float | None:
    """The timer: drain the step queue on the main thread. Returns seconds to the next call, or
    None when the agent process has ended (the timer unregisters itself)."""
    settings = _settings(bpy.context)
    lines = _session["queue"]
    if lines is None:
        return None
    while True:
        try:
            line = lines.get_nowait()
        except queue.Empty:
            return POLL_INTERVAL_S
        if line is None:
            _finish(settings)
            return None
        try:
            event = json.loads(line)
        except ValueError:
            _log(settings, f"(agent said) {line.strip()}", False)
            continue
        kind = event.get("type")
        if kind == "step":
            apply_step(settings, event)
        elif kind == "started":
            settings.status = f"running {event['run_id']}"
        elif kind == "verify":
            _log(settings, f"verify: {event['summary']}", event["reward"] == 1.0)
        elif kind == "end":
            reward = "-" if event["reward"] is None else f"{event['reward']:.3f}"
            settings.status = f"{event['exit_status']}, reward {reward} (run {event['run_id']})"
        elif kind == "error":
            settings.status = "could not start"
            _log(settings, event["message"], False)


def _finish(settings: HorizonSettings) -> None:
    proc = _session["proc"]
    if proc is not None:
        code = proc.wait()
        if code not in (0, None) and settings.status.startswith("running"):
            settings.status = f"agent process ended with exit code {code}"
    settings.running = False
    if _session["task_dir"]:
        shutil.rmtree(_session["task_dir"], ignore_errors=True)
    _session.update(proc=None, queue=None, thread=None, task_dir=None)


class HORIZON_OT_run(bpy.types.Operator):
    """Start the agent on the open scene with the request typed in the panel."""

    bl_idname = "horizon.run"
    bl_label = "Run"

    def execute(self, context):
        settings = _settings(context)
        if _session["proc"] is not None:
            self.report({"ERROR"}, "an agent is already running; press Stop first")
            return {"CANCELLED"}
        if not settings.request.strip():
            self.report({"ERROR"}, "type a request first")
            return {"CANCELLED"}
        python = _python(context)
        if not python or not Path(python).is_file():
            self.report({"ERROR"}, "set the Horizon Python in the add-on's preferences (or HORIZON_PYTHON)")
            return {"CANCELLED"}
        task_dir = Path(tempfile.mkdtemp(prefix="horizon-addon-"))
        bpy.ops.wm.save_as_mainfile(filepath=str(task_dir / "scene.blend"), copy=True, check_existing=False)
        if settings.task_file:
            shutil.copyfile(bpy.path.abspath(settings.task_file), task_dir / "task.json")
        cmd = [python, "-m", "plugins.threed.session", "--task-dir", str(task_dir), "--request", settings.request,
               "--policy", settings.policy, "--max-steps", str(settings.max_steps)]
        if settings.policy == "scripted":
            cmd += ["--script", bpy.path.abspath(settings.script)]
        if settings.base_url:
            cmd += ["--base-url", settings.base_url]
        if settings.model:
            cmd += ["--model", settings.model]
        log = open(task_dir / "agent-stderr.txt", "wb")  # noqa: SIM115 - owned by the child process
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                                cwd=str(task_dir))
        log.close()
        lines: queue.Queue = queue.Queue()
        thread = threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True)
        thread.start()
        _session.update(proc=proc, queue=lines, thread=thread, task_dir=str(task_dir))
        settings.log.clear()
        settings.running, settings.applied, settings.status = True, 0, "starting"
        _log(settings, f"request: {settings.request}")
        if not bpy.app.timers.is_registered(poll_session):
            bpy.app.timers.register(poll_session, first_interval=POLL_INTERVAL_S)
        return {"FINISHED"}


class HORIZON_OT_stop(bpy.types.Operator):
    """Stop the agent after the step in flight (the run stays resumable)."""

    bl_idname = "horizon.stop"
    bl_label = "Stop"

    def execute(self, context):
        proc = _session["proc"]
        if proc is None or proc.poll() is not None:
            self.report({"WARNING"}, "no agent is running")
            return {"CANCELLED"}
        proc.send_signal(signal.SIGINT)
        _settings(context).status = "stopping after the current step"
        return {"FINISHED"}


class HORIZON_PT_panel(bpy.types.Panel):
    """The sidebar panel: request, model settings, Run/Stop, and the live step log."""

    bl_idname = "HORIZON_PT_panel"
    bl_label = "Horizon Agent"
    bl_space_type = "VIEW_3D"
    bl_region_type = "UI"
    bl_category = "Horizon"

    def draw(self, context):
        settings = _settings(context)
        layout = self.layout
        layout.prop(settings, "request", text="")
        box = layout.box()
        box.prop(settings, "policy")
        if settings.policy in ("auto", "openai"):
            box.prop(settings, "base_url")
            box.prop(settings, "model")
        if settings.policy == "scripted":
            box.prop(settings, "script")
        box.prop(settings, "task_file")
        box.prop(settings, "max_steps")
        row = layout.row(align=True)
        run = row.row(align=True)
        run.enabled = not settings.running
        run.operator(HORIZON_OT_run.bl_idname, icon="PLAY")
        stop = row.row(align=True)
        stop.enabled = settings.running
        stop.operator(HORIZON_OT_stop.bl_idname, icon="CANCEL")
        layout.label(text=f"{settings.status} · {settings.applied} steps applied")
        log = layout.column(align=True)
        for line in list(settings.log)[-LOG_LINES_SHOWN:]:
            log.label(text=line.text, icon="CHECKMARK" if line.ok else "ERROR")


CLASSES = (HorizonPreferences, HorizonLogLine, HorizonSettings, HORIZON_OT_run, HORIZON_OT_stop, HORIZON_PT_panel)


def register() -> None:
    """Register the classes and the window manager's ``horizon`` settings."""
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.WindowManager.horizon = PointerProperty(type=HorizonSettings)


def unregister() -> None:
    """Stop a running agent and unregister everything."""
    proc = _session["proc"]
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    if bpy.app.timers.is_registered(poll_session):
        bpy.app.timers.unregister(poll_session)
    del bpy.types.WindowManager.horizon
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)


