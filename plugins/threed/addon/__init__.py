"""Horizon Agent, a Blender add-on (extension format, Blender 4.2+): a sidebar panel that runs
Horizon's 3D agent on the open scene without freezing Blender.

How it works:

- **Run** saves a copy of the open scene to a fresh task folder and starts the agent loop in a
  separate process (``plugins.threed.session``, through a small bootstrap that reports a
  Python without Horizon as a JSON line; the Python is set in the add-on's preferences or
  ``HORIZON_PYTHON``). Its stderr goes to ``agent-stderr.txt`` in the task folder, whose path
  the panel shows; the folder is deleted only after a run that ended normally. A reader thread
  queues the process's JSON-lines step reports.
- A ``bpy.app.timers`` timer on Blender's main thread drains the queue: each successful
  scene-changing step is applied to the open scene with the same operation the agent's worker
  ran (``scene_ops``, a copy of ``plugins.threed.ops`` bundled by ``agent threed build-addon``);
  a step the add-on cannot repeat from its arguments (``run_blender_python``, a tool newer than
  the add-on) comes with a copy of the agent's scene after it, whose objects and world replace
  the open scene's (``sync_scene``): the model's code never runs in this Blender. Each applied
  step is pushed as its own undo step; a push that fails, or undo switched off in the
  preferences, is shown with the step it belongs to.
- What went wrong is shown in the panel with what to do: a Python without Horizon, an agent
  process that died, a model server that does not answer, a run that could not start.
- **Stop** sends SIGINT: the run stops after the step in flight and stays resumable
  (``agent resume RUN_ID``).
- **Listen for MCP** lets ``agent mcp threed --blender PORT`` drive this Blender: a listener on
  127.0.0.1:PORT (a background thread) takes JSON-line messages carrying a secret token (shown
  in the panel, written to ``token_file(PORT)`` with 0600 permissions) and queues them to a
  timer on the main thread (``serve_listener``): ``hello``, ``scene`` (a copy of the open scene
  for the MCP run to start on) and ``step`` (a step report, applied by ``apply_step`` exactly as
  a panel run's, one undo step each). One session drives Blender per Listen; a step
  is refused while an object is in Edit (or another non-Object) mode; a scene copy keeps the objects the artist
  added meanwhile.
"""

from __future__ import annotations

import hmac
import json
import os
import queue
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import traceback
from pathlib import Path
from typing import Any

import bpy
from bpy.props import BoolProperty, CollectionProperty, EnumProperty, IntProperty, PointerProperty, StringProperty

try:  # the installed add-on carries its own copy of the operations
    from . import scene_ops as ops
except ImportError:  # running from Horizon's source tree
    from plugins.threed import ops

#: Steps the panel repeats on the open scene from their arguments; renders and exports stay in
#: the agent's workspace. The agent process is told this list (``--replayed-tools``) and sends a
#: copy of its scene for any other step that changed the scene.
APPLIED_TOOLS = {"add_primitive", "add_mesh", "delete_object", "transform", "apply_scale", "add_modifier", "set_material",
                 "add_light", "set_camera", "set_world"}
POLL_INTERVAL_S = 0.2
#: The port Listen for MCP uses by default (the add-on's preferences change it).
DEFAULT_PORT = 9876
LOG_LINES_SHOWN = 12
ERROR_LINE_CHARS = 70  # a panel label does not wrap: long messages are cut into lines this wide
STDERR_TAIL_CHARS = 600
PYTHON_ENV = "HORIZON_THREED_PYTHON"  # the agent offers run_blender_python only when this is "1"
RAW_PYTHON_TOOL = "run_blender_python"
#: Exit code of the bootstrap when the chosen Python cannot import Horizon.
MISSING_EXIT = 3

#: Run by the chosen Python instead of ``-m plugins.threed.session``, so that a Python without
#: Horizon (or without one of its packages) says so on stdout as a JSON line the panel reads.
BOOTSTRAP = """
import json, os, sys
try:
    from plugins.threed import session
except ImportError as exc:
    root = ""
    try:
        import plugins
        root = os.path.dirname(os.path.dirname(os.path.abspath(plugins.__file__)))
    except ImportError:
        pass
    print(json.dumps({"type": "missing", "module": getattr(exc, "name", None) or "", "message": str(exc), "root": root}))
    sys.stdout.flush()
    sys.exit(""" + str(MISSING_EXIT) + """)
sys.exit(session.main(sys.argv[1:]))
"""

_session: dict[str, Any] = {"proc": None, "queue": None, "thread": None, "task_dir": None, "python": "", "run_id": "",
                           "ended": False, "failed": False}


class HorizonPreferences(bpy.types.AddonPreferences):
    """Where Horizon is installed."""

    bl_idname = __package__

    python: StringProperty(
        name="Horizon Python", subtype="FILE_PATH", default=os.environ.get("HORIZON_PYTHON", ""),
        description="Python interpreter with Horizon installed (e.g. .../horizon/.venv/bin/python)",
    )

    port: IntProperty(name="MCP port", default=DEFAULT_PORT, min=1024, max=65535,
                      description="Listen for MCP takes agent mcp threed --blender PORT on 127.0.0.1 at this port")

    def draw(self, context):
        self.layout.prop(self, "python")
        self.layout.prop(self, "port")


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
    allow_python: BoolProperty(
        name="Allow raw Python", default=os.environ.get(PYTHON_ENV) == "1",
        description="Offer the agent run_blender_python (its code runs in the agent's sandboxed Blender, never in this one; "
                    "the resulting scene is copied here)",
    )
    running: BoolProperty(default=False)
    status: StringProperty(default="idle")
    error: StringProperty(default="", description="what went wrong and what to do; empty when nothing did")
    log_path: StringProperty(default="", description="the agent process's stderr log, kept after a failure")
    applied: IntProperty(default=0)
    log: CollectionProperty(type=HorizonLogLine)
    listening: BoolProperty(default=False)
    listen_port: IntProperty(default=0)
    listen_token_file: StringProperty(default="", description="the token agent mcp threed --blender reads")


def _settings(context) -> HorizonSettings:
    return context.window_manager.horizon


def _log(settings: HorizonSettings, text: str, ok: bool = True) -> None:
    line = settings.log.add()
    line.text, line.ok = text[:200], ok


def _fail(settings: HorizonSettings, status: str | None, error: str) -> None:
    """Show a failure of the run: a short status (None: keep it) and the full message with what
    to do (also logged). An undo step that was not recorded is shown without this: the run goes on."""
    if status is not None:
        settings.status = status
    settings.error = error
    _session["failed"] = True
    _log(settings, error, False)


def _warn(settings: HorizonSettings, error: str, logged: str) -> None:
    """Show a problem the run goes on after (an undo step not recorded, a report the add-on
    could not handle): the panel's message, and ``logged`` in the log; a later failure of the
    run replaces the message."""
    settings.error = error
    _log(settings, logged, False)


def _python(context) -> str:
    addon = context.preferences.addons.get(__package__)
    configured = addon.preferences.python if addon is not None else ""
    return bpy.path.abspath(configured) if configured else os.environ.get("HORIZON_PYTHON", "")


def _read_lines(stream, lines: queue.Queue) -> None:
    """Reader thread: queue each line the agent process writes; None at its end."""
    for line in stream:
        lines.put(line)
    lines.put(None)


def _stderr_tail(path: str) -> str:
    """The last lines of the agent's stderr log (what it said before it died), or ''."""
    try:
        data = Path(path).read_bytes()[-STDERR_TAIL_CHARS:]
    except OSError:
        return ""
    return " | ".join(line.strip() for line in data.decode("utf-8", "replace").splitlines() if line.strip())


# -- undo -----------------------------------------------------------------------------------


def push_undo(message: str) -> str | None:
    """Push the open scene's state as one undo step named ``message``.

    Returns None when Blender recorded it, else why not, in words for the panel: undo is
    switched off in the preferences (``undo_steps`` 0 or global undo off: Blender's push then
    returns FINISHED yet records nothing), or Blender refused the push (a ``RuntimeError``, e.g.
    a context without an undo stack, or a result other than FINISHED).
    """
    edit = bpy.context.preferences.edit
    if edit.undo_steps == 0:
        return "undo is off (Preferences > System > Undo Steps is 0): this step cannot be undone"
    if not edit.use_global_undo:
        return "global undo is off (Preferences > System > Global Undo): this step cannot be undone"
    try:
        result = bpy.ops.ed.undo_push(message=message)
    except RuntimeError as exc:
        return f"Blender refused the undo step: {exc}"
    if result != {"FINISHED"}:
        return f"Blender's undo push returned {', '.join(sorted(result))}: this step cannot be undone"
    return None


# -- the agent's scene copied into the open one -----------------------------------------------

#: Datablock kinds a synced scene can bring, in the order their old versions are freed (users first).
_SYNCED_KINDS = ("objects", "meshes", "curves", "lights", "cameras", "materials", "node_groups", "images", "worlds")
_COPY_SUFFIX = re.compile(r"^(?P<base>.+)\.\d{3,}$")


def _material_print(mat: Any) -> tuple:
    """What a material looks like, as comparable values: its viewport colour and each node's
    type and unlinked input values (a copy's name may differ: ``Oak.001``)."""
    if mat is None:
        return ()
    nodes = []
    if mat.use_nodes and mat.node_tree is not None:
        for node in sorted(mat.node_tree.nodes, key=lambda n: n.name):
            values = []
            for socket in node.inputs:
                value = getattr(socket, "default_value", None)
                if socket.is_linked or value is None or isinstance(value, (str, bpy.types.ID)):
                    continue
                values.append(tuple(round(float(v), 6) for v in value) if hasattr(value, "__len__") else round(float(value), 6))
            nodes.append((node.bl_idname, tuple(values)))
    return (tuple(round(v, 6) for v in mat.diffuse_color), tuple(nodes))


def _references(obj: Any, names: dict[int, str]) -> set[str]:
    """Names (``names``: pointer -> name as the agent's scene has it) of the objects ``obj`` points
    at: its parent and its modifiers' objects (a boolean's cutter, a mirror's centre)."""
    targets = [obj.parent] + [getattr(m, "object", None) or getattr(m, "mirror_object", None) for m in obj.modifiers]
    return {names.get(t.as_pointer(), t.name) for t in targets if t is not None}


def _object_print(obj: Any, names: dict[int, str]) -> tuple:
    """What an object is, as comparable values: its type, transform, parent, visibility,
    modifiers, materials and data (mesh vertices and faces, light, camera); equal for an object
    and its unchanged copy appended from another file."""
    # matrix_basis (from location, rotation, scale) and the parent inverse: an appended object's
    # matrix_world is not evaluated until it is in a scene
    matrix = tuple(round(v, 6) for m in (obj.matrix_basis, obj.matrix_parent_inverse) for row in m for v in row)
    mods = tuple((m.type, m.name, m.show_render, m.show_viewport) for m in obj.modifiers)
    mats = tuple(_material_print(s.material) for s in obj.material_slots)
    data = obj.data
    if obj.type == "MESH":
        coords = [0.0] * (3 * len(data.vertices))
        data.vertices.foreach_get("co", coords)
        loops = [0] * len(data.loops)
        data.loops.foreach_get("vertex_index", loops)
        shape = (tuple(round(c, 6) for c in coords), tuple(loops), tuple(p.loop_total for p in data.polygons),
                 tuple(p.material_index for p in data.polygons), tuple(p.use_smooth for p in data.polygons))
    elif obj.type == "LIGHT":
        shape = (data.type, round(data.energy, 6), tuple(round(c, 6) for c in data.color),
                 round(getattr(data, "size", 0.0), 6), round(getattr(data, "shadow_soft_size", 0.0), 6))
    elif obj.type == "CAMERA":
        shape = (data.type, round(data.lens, 6), round(data.sensor_width, 6), round(data.shift_x, 6), round(data.shift_y, 6),
                 round(data.clip_start, 6), round(data.clip_end, 6))
    else:
        shape = (obj.as_pointer(),)  # curves, text, empties...: not compared, always copied
    return (obj.type, matrix, obj.hide_render, obj.hide_viewport, mods, tuple(sorted(_references(obj, names))), mats, shape)


def _unchanged(scene: Any, incoming: dict[str, Any]) -> set[str]:
    """Names of the open scene's objects that their incoming copy (``incoming``: the agent's
    name -> appended object) leaves unchanged, that no changed object points at, and that point
    at no changed object (a kept object must not lose its parent or be lost as a cutter)."""
    names = {obj.as_pointer(): name for name, obj in incoming.items()}
    same = {o.name for o in scene.objects if o.name in incoming and _object_print(o, {}) == _object_print(incoming[o.name], names)}
    while True:
        wanted: set[str] = set()
        for name, obj in incoming.items():
            if name not in same:
                wanted |= _references(obj, names)
        drop = {n for n in same if n in wanted or not _references(scene.objects[n], {}) <= same}
        if not drop:
            return same
        same -= drop


def sync_scene(path: str, known: set[str] | None = None, replace_unchanged: bool = False) -> str:
    """Make the open scene's objects, their data and materials, its camera and world those of the
    agent's saved scene ``path`` (a step the add-on cannot repeat from its arguments, such as
    ``run_blender_python``). Objects are appended from the file, never linked; no script in it
    runs (Blender's "Auto Run Python Scripts" preference governs drivers as for any file).

    Objects of the same name are replaced (keeping their collections) when the agent's copy
    differs (``_object_print``: transform, mesh, materials, modifiers, light, camera); an unchanged
    one (the artist's default Cube, Camera and Light the run never touched) stays as it is, its
    copy dropped, unless ``replace_unchanged``. An object the agent's
    scene does not have is deleted only when the run knew it (``known``: the names its scene
    started with and those its steps made; None: every object), so what the artist added
    meanwhile stays; an appended datablock that got a ``.001`` name because the open file held
    one of that name takes its name once the old one is unused.

    Returns a one-line summary naming what was replaced, added, removed and kept. Raises OSError
    (unreadable file) or RuntimeError (not a .blend).
    """
    before = {kind: {x.as_pointer() for x in getattr(bpy.data, kind)} for kind in (*_SYNCED_KINDS, "collections")}
    with bpy.data.libraries.load(path, link=False) as (src, dst):
        names = list(src.objects)
        dst.objects = list(names)  # Blender replaces these names by the appended objects
        dst.scenes = list(src.scenes[:1])  # read for its camera and world, then removed
    appended_scene = dst.scenes[0] if dst.scenes else None
    camera = appended_scene.camera if appended_scene is not None else None
    world = appended_scene.world if appended_scene is not None else None
    if appended_scene is not None:
        bpy.data.scenes.remove(appended_scene)
        for collection in [c for c in bpy.data.collections if c.as_pointer() not in before["collections"]]:
            bpy.data.collections.remove(collection)  # the appended scene's own collections
    scene = bpy.context.scene
    incoming = {name: obj for name, obj in zip(names, dst.objects) if obj is not None}
    camera_name = next((name for name, obj in incoming.items() if obj == camera), None)
    same = set() if replace_unchanged else _unchanged(scene, incoming)
    replaced, removed, kept, unchanged = [], [], [], {}
    for old in list(scene.objects):
        new = incoming.get(old.name)
        if new is not None and old.name in same:
            unchanged[old.name] = old  # the same as the agent's: keep the artist's object, drop the copy
            del incoming[old.name]
            bpy.data.objects.remove(new)
            continue
        if new is not None:
            for collection in old.users_collection:
                collection.objects.link(new)
            replaced.append(old.name)
        elif known is not None and old.name not in known:
            kept.append(old.name)  # the artist's, made while the run went on
            continue
        else:
            removed.append(old.name)
        bpy.data.objects.remove(old)
    for name, new in incoming.items():
        if not new.users_collection:
            scene.collection.objects.link(new)
        new.name = name  # the old object of that name is gone
    if camera_name in unchanged:  # the agent's camera was an unchanged copy, now removed: the artist's is the same
        camera = unchanged[camera_name]
    scene.camera = camera
    if world is not None:
        scene.world = world
    if unchanged:  # the dropped copies' meshes and materials, used by nothing now
        for kind in _SYNCED_KINDS[1:]:
            data = getattr(bpy.data, kind)
            for block in [x for x in data if x.as_pointer() not in before[kind] and x.users == 0]:
                data.remove(block)
    _take_back_names(before)
    added = sorted(set(incoming) - set(replaced))

    def listed(names: list[str]) -> str:
        return ", ".join(sorted(names)[:12]) + (f" and {len(names) - 12} more" if len(names) > 12 else "") if names else "none"

    summary = f"scene copied from the agent's run: replaced {listed(replaced)}; added {listed(added)}; removed {listed(removed)}"
    summary += f"; kept yours: {listed(kept)}" if kept else ""
    return summary + (f"; left unchanged: {listed(list(unchanged))}" if unchanged else "")


def _take_back_names(before: dict[str, set[int]]) -> None:
    """Free the old datablocks that appended copies shadow (``Oak`` by ``Oak.001``) once nothing
    uses them, and give the copies their names back."""
    for kind in _SYNCED_KINDS[1:]:
        data = getattr(bpy.data, kind)
        for new in [x for x in data if x.as_pointer() not in before[kind]]:
            match = _COPY_SUFFIX.match(new.name)
            old = data.get(match["base"]) if match else None
            if old is None or old.as_pointer() not in before[kind]:
                continue
            if old.users == 0 or (old.users == 1 and old.use_fake_user):
                data.remove(old)
                new.name = match["base"]


# -- applying the reports ---------------------------------------------------------------------


def apply_step(settings: HorizonSettings, event: dict[str, Any], known: set[str] | None = None) -> dict[str, Any]:
    """Apply one reported step to the open scene (main thread) as its own undo step, and log it.

    A step with ``scene_file`` (one the add-on cannot repeat) is applied by ``sync_scene``; a
    step of ``APPLIED_TOOLS`` by the same operation the agent's worker ran. An undo push that
    fails is logged under the step and shown as the panel's error. A ``run_blender_python``
    step (or a scene copy marked ``raw_python``: it holds what raw code did) is applied only while
    "Allow raw Python" is on (the artist's consent for this Blender).

    ``known``: the object names the run knew, for ``sync_scene`` (None: the panel's own run,
    which owns the scene while it runs).

    Returns:
        ``{"applied": bool, "undo": the undo step's name or None, "undo_problem": why it was not
        recorded or None, "error": why the step was not applied or None, "detail": what a scene
        copy changed or None}``; a failed or read-only step is ``applied`` False with no
        ``error`` (nothing to apply).
    """
    mark = "ok" if event["ok"] else "error"
    first = (event.get("output") or "").splitlines()[0:1]
    _log(settings, f"{event['step']:>3} {event['tool']}: {mark} {first[0] if first else ''}", event["ok"])
    outcome: dict[str, Any] = {"applied": False, "undo": None, "undo_problem": None, "error": None, "detail": None}
    try:
        if event.get("scene_file"):
            if (event["tool"] == RAW_PYTHON_TOOL or event.get("raw_python")) and not settings.allow_python:
                raise PermissionError("raw Python is not allowed in this Blender: tick Allow raw Python in the Horizon panel")
            outcome["detail"] = sync_scene(event["scene_file"], known)
            _log(settings, f"    {outcome['detail']}")
        elif event["ok"] and event["tool"] in APPLIED_TOOLS and event.get("args"):
            ops.OPS[event["tool"]](event["args"])
        else:
            return outcome
    except Exception as exc:  # noqa: BLE001 - the open scene may differ from the agent's; say so, keep going
        _log(settings, f"    not applied here: {exc}", False)
        outcome["error"] = str(exc) or type(exc).__name__
        return outcome
    settings.applied += 1
    name = f"Horizon step {event['step']}: {event['tool']}"
    problem = push_undo(name)
    outcome.update(applied=True, undo=None if problem else name, undo_problem=problem)
    if problem is not None:
        _warn(settings, f"step {event['step']} ({event['tool']}) was applied, but {problem}", f"    undo: {problem}")
    return outcome


def poll_session() -> float | None:
    """The timer: drain the step queue on the main thread. Returns seconds to the next call, or
    None when the agent process has ended (the timer unregisters itself). An error in handling
    a report is shown in the panel, never left to kill the timer silently."""
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
            _handle(settings, line)
        except Exception as exc:  # noqa: BLE001 - a timer that raises is unregistered: the panel would freeze
            last = traceback.extract_tb(exc.__traceback__)[-1]
            text = (f"the add-on failed on a report ({type(exc).__name__}: {exc}, {Path(last.filename).name}:{last.lineno}); "
                    f"the run goes on")
            _warn(settings, text, text)


def _handle(settings: HorizonSettings, line: str) -> None:
    try:
        event = json.loads(line)
    except ValueError:
        _log(settings, f"(agent said) {line.strip()}", False)
        return
    kind = event.get("type")
    if kind == "step":
        apply_step(settings, event)
    elif kind == "started":
        _session["run_id"] = event["run_id"]
        settings.status = f"running {event['run_id']}"
    elif kind == "verify":
        _log(settings, f"verify: {event['summary']}", event["reward"] == 1.0)
    elif kind == "end":
        _session["ended"] = True
        reward = "-" if event["reward"] is None else f"{event['reward']:.3f}"
        settings.status = f"{event['exit_status']}, reward {reward} (run {event['run_id']})"
        if event["exit_status"] == "model_error":
            _fail(settings, None, f"the model server did not answer: {event['summary']}. Start the server (e.g. agent "
                                  f"serve MODEL), or correct Base URL and Model name in this panel")
        elif event["exit_status"] == "crashed":
            _fail(settings, None, f"the agent crashed: {event['summary']}")
    elif kind == "error":
        _fail(settings, "could not start", f"the agent could not start: {event['message']}")
    elif kind == "missing":
        _fail(settings, "Horizon not found", _missing_message(_session["python"], event))


def _missing_message(python: str, event: dict[str, Any]) -> str:
    """What to do when the chosen Python cannot import Horizon or one of its packages."""
    module = event.get("module") or ""
    if module.split(".")[0] in ("plugins", "core", ""):
        return (f"Horizon is not installed in {python} ({event['message']}): set Horizon Python in the add-on's "
                f"preferences to the .venv/bin/python of a Horizon checkout (setup.sh makes it), or run: "
                f"{python} -m pip install -e '/path/to/horizon[threed]'")
    source = event.get("root") or "/path/to/horizon"
    return (f"Horizon in {python} lacks the package that provides '{module}' ({event['message']}): run: "
            f"{python} -m pip install -e '{source}[threed]'")


def _finish(settings: HorizonSettings) -> None:
    """The agent's output ended: say how, keep the task folder (and its log) unless all went well."""
    proc = _session["proc"]
    code = proc.wait() if proc is not None else 0
    log_path = str(Path(_session["task_dir"]) / "agent-stderr.txt") if _session["task_dir"] else ""
    if not _session["ended"] and not _session["failed"]:
        _fail(settings, "agent died" if code != MISSING_EXIT else "Horizon not found", _death_message(code, log_path))
    elif code not in (0, None) and not _session["failed"]:
        _fail(settings, f"agent exited with code {code}", _death_message(code, log_path))
    settings.running = False
    if settings.error:  # kept for the artist to read: never deleted after a failure
        settings.log_path = log_path
    elif _session["task_dir"]:
        settings.log_path = ""
        shutil.rmtree(_session["task_dir"], ignore_errors=True)
    _session.update(proc=None, queue=None, thread=None, task_dir=None, ended=False, failed=False)


def _death_message(code: int | None, log_path: str) -> str:
    if code is not None and code < 0:
        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"exited with code {code}"
    said = _stderr_tail(log_path)
    resume = f"; the run is kept: agent resume {_session['run_id']}" if _session["run_id"] else ""
    return (f"the agent process {how} before its final report{resume}. Its log: {log_path}"
            + (f" (it ends: {said})" if said else ""))


# -- the MCP listener: `agent mcp threed --blender PORT` drives this Blender ------------------

#: The longest message line taken (an add_mesh step's vertices and faces fit many times over).
MAX_MESSAGE_BYTES = 8 * 1024 * 1024
#: Seconds a connection waits for the main thread to handle its message (a modal dialog blocks
#: timers); shorter than the client's own wait (``plugins.threed.live.REPLY_TIMEOUT_S``) so the
#: client hears "not applied" from here, and a message given up on is never applied later.
REPLY_WAIT_S = 100.0
#: Open connections taken at once. One more closes the oldest that has not shown the token yet
#: (so idle strangers cannot lock the MCP server out); with none such it is refused.
MAX_CONNECTIONS = 16
#: Seconds a connection may take to send a whole message line (from connecting, or from the last
#: reply): an idle or trickling client is dropped.
LINE_WAIT_S = 10.0
#: Bytes a line must carry its token within: a message line starts ``{"token": "..."``, so a
#: caller without the token is refused before more of its line is read.
TOKEN_PREFIX_BYTES = 256
#: How often (s) a connection waiting for the main thread checks that its client is still there.
HANGUP_CHECK_S = 0.25
LISTEN_LOG_SHOWN = 6
ADDON_VERSION = "0.1.0"
STOPPED_REPLY = "Blender stopped listening for MCP; press Listen for MCP and retry"
_TOKEN_AT_START = re.compile(rb'\A\s*\{\s*"token"\s*:\s*"([A-Za-z0-9_\-]{1,128})"')

_listener: dict[str, Any] = {"server": None, "thread": None, "queue": None, "token": "", "port": 0, "token_file": "",
                             "scene_dirs": [], "steps": [], "state": None}


class _Refused(Exception):
    """A line this listener will not take: its text is the refusal sent back, then the connection closes."""


class _ListenState:
    """What a listener's threads share: its open connections and whether it is stopping.

    ``lock`` guards ``conns`` (oldest first), ``trusted`` (those that showed the token),
    ``evicted``, ``stopping`` and the claim/abandon of each queued message (one ``_Queued``), so a
    message is either handled by the main thread or given up, never both.
    """

    def __init__(self, token: str) -> None:
        self.token = token
        self.lock = threading.Lock()
        self.conns: dict[socket.socket, threading.Thread] = {}
        self.trusted: set[socket.socket] = set()
        self.evicted: set[socket.socket] = set()
        self.stopping = False


class _Queued:
    """One message waiting for the main thread: ``answer`` gets its reply; ``state`` is "queued",
    "claimed" (the timer handles it) or "abandoned" (its connection gave up: the timer skips it)."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.message, self.answer, self.state = message, queue.Queue(maxsize=1), "queued"


def token_file(port: int) -> Path:
    """Where Listen writes its token for ``port``: ``$XDG_CONFIG_HOME/horizon/blender-PORT.token``
    (``~/.config/horizon/...`` without it), readable by this user only. The MCP server
    (``plugins.threed.live.token_file``) reads the same path."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "horizon" / f"blender-{port}.token"


def _write_token(path: Path, token: str) -> None:
    """Write ``token`` to a new file at ``path`` (0600) in a folder only this user can enter (0700).

    An old file there (a stale token, or a link planted by someone) is removed first; the new one is
    created exclusively and never through a symbolic link.

    Raises:
        OSError: the folder belongs to another user, or the file cannot be created.
    """
    folder = path.parent
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    if folder.stat().st_uid != os.getuid():
        raise PermissionError(f"{folder} belongs to another user: the token would not be private")
    os.chmod(folder, 0o700)  # an existing folder keeps its mode through mkdir: set it
    path.unlink(missing_ok=True)  # removes a link itself, never its target
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)  # the umask may have narrowed it; never wider than 0600
        os.write(fd, token.encode())
    finally:
        os.close(fd)


def _read_line(conn: socket.socket, state: _ListenState, pending: bytearray) -> bytes:
    """Read one message line from ``conn`` (``pending``: bytes already read past the last line).

    The token is checked as soon as ``TOKEN_PREFIX_BYTES`` (or the whole line) arrived, so a
    caller without it never gets more than that read. Returns b"" when the client closed.

    Raises:
        _Refused: no token at the line's start, a line over ``MAX_MESSAGE_BYTES``, or not whole
            within ``LINE_WAIT_S``.
        OSError: the connection failed (or was shut down by Stop listening).
    """
    deadline = time.monotonic() + LINE_WAIT_S
    checked = False
    scanned = 0  # bytes of pending already searched for the line's end
    while True:
        end = pending.find(b"\n", scanned)
        scanned = len(pending) if end < 0 else 0
        if not checked and (end >= 0 or len(pending) >= TOKEN_PREFIX_BYTES):
            head = bytes(pending[:TOKEN_PREFIX_BYTES])
            found = _TOKEN_AT_START.match(head)
            if found is None or not hmac.compare_digest(found.group(1), state.token.encode()):
                raise _Refused("wrong or missing token: a message line starts with {\"token\": ...}; read the token from the "
                               "file the Horizon panel names")
            checked = True
            with state.lock:
                state.trusted.add(conn)
        if end >= 0:
            line = bytes(pending[:end + 1])
            del pending[:end + 1]
            return line
        if len(pending) > MAX_MESSAGE_BYTES:
            raise _Refused(f"message longer than {MAX_MESSAGE_BYTES} bytes")
        left = deadline - time.monotonic()
        if left <= 0:
            raise _Refused(f"no whole message line within {LINE_WAIT_S:.0f} s: the connection is closed")
        conn.settimeout(left)
        try:
            chunk = conn.recv(65536)
        except TimeoutError:
            continue  # the deadline check above answers
        if not chunk:
            return b""
        pending += chunk


def _serve_connection(conn: socket.socket, inbox: queue.Queue, state: _ListenState) -> None:
    """A connection's thread: read JSON lines, refuse those without the token, queue the rest for
    the main thread and write back its reply (one JSON line per message). Any failure becomes a
    reply; the connection is forgotten (and closed) when the thread ends."""
    pending = bytearray()
    try:
        while True:
            try:
                raw = _read_line(conn, state, pending)
            except _Refused as exc:
                reply: dict[str, Any] = {"ok": False, "refused": True, "error": str(exc)}
            except OSError:
                return
            else:
                if not raw:
                    return
                try:
                    reply = _screened(raw, inbox, state, conn)
                except Exception as exc:  # noqa: BLE001 - a thread that raises answers nothing: the client would hang
                    reply = {"ok": False, "refused": True, "error": f"the message could not be read ({type(exc).__name__})"}
            try:
                conn.settimeout(LINE_WAIT_S)
                conn.sendall((json.dumps(reply) + "\n").encode())
            except OSError:
                return
            if reply.get("refused"):
                return  # a caller without the token (or a broken line) gets one answer, then the door closes
    finally:
        with state.lock:
            state.conns.pop(conn, None)
            state.trusted.discard(conn)
            state.evicted.discard(conn)
        conn.close()


def _client_gone(conn: socket.socket) -> bool:
    """Whether the client closed its side (or the connection failed) while its message waits."""
    try:
        conn.settimeout(0.0)  # a socket with a timeout would wait for data before peeking
        return conn.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def _screened(raw: bytes, inbox: queue.Queue, state: _ListenState, conn: socket.socket) -> dict[str, Any]:
    """Check one message line's form and token (on the connection's thread), then wait for the main
    thread's reply. A message still queued when the wait ends, or when the client hangs up, is
    abandoned: the main thread skips it, so "not applied" stays true."""
    try:
        message = json.loads(raw)
    except (ValueError, RecursionError):
        return {"ok": False, "refused": True, "error": "not a JSON line (or nested too deeply)"}
    if not isinstance(message, dict):
        return {"ok": False, "refused": True, "error": "a message is a JSON object"}
    given = message.get("token")
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), state.token.encode()):
        return {"ok": False, "refused": True, "error": "wrong or missing token: read it from the file the Horizon panel names"}
    item = _Queued(message)
    with state.lock:
        if state.stopping:
            return {"ok": False, "error": STOPPED_REPLY}
        inbox.put(item)
    deadline = time.monotonic() + REPLY_WAIT_S
    while True:
        try:
            return item.answer.get(timeout=HANGUP_CHECK_S)
        except queue.Empty:
            pass
        gone, late = _client_gone(conn), time.monotonic() >= deadline
        if gone or late:
            with state.lock:
                if item.state == "queued":
                    item.state = "abandoned"
                    return {"ok": False, "error": f"Blender's main thread did not take the message in {REPLY_WAIT_S:.0f} s "
                                                  f"(a dialog open, or a long render?); it was not applied and will not be"}
            # claimed: the main thread is applying it now; its reply comes


def _accept(server: socket.socket, inbox: queue.Queue, state: _ListenState) -> None:
    """The listener's thread: a thread per connection (at most ``MAX_CONNECTIONS``) until the
    socket is closed (Stop listening)."""
    while True:
        try:
            conn, _ = server.accept()
        except OSError:
            return
        with state.lock:
            full = state.stopping or len(state.conns) - len(state.evicted) >= MAX_CONNECTIONS
            if full and not state.stopping:
                stranger = next((c for c in state.conns if c not in state.trusted and c not in state.evicted), None)
                if stranger is not None:  # the oldest that never showed the token makes room
                    state.evicted.add(stranger)
                    try:
                        stranger.shutdown(socket.SHUT_RDWR)  # its thread wakes, ends and forgets it
                    except OSError:
                        pass
                    full = False
            if not full:
                thread = threading.Thread(target=_serve_connection, args=(conn, inbox, state), daemon=True, name="horizon-mcp-conn")
                state.conns[conn] = thread
        if full:
            try:
                conn.settimeout(1.0)
                conn.sendall(json.dumps({"ok": False, "error": f"Blender has {MAX_CONNECTIONS} MCP connections open already: "
                                                               f"close one and retry"}).encode() + b"\n")
            except OSError:
                pass
            conn.close()
            continue
        thread.start()


def start_listening(settings: HorizonSettings, port: int) -> None:
    """Listen on 127.0.0.1:``port`` (only this machine) with a fresh token written to ``token_file(port)``.

    Raises:
        OSError: the port cannot be bound (in use) or the token file cannot be written.
    """
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # listening again at once: closed connections linger
        server.bind(("127.0.0.1", port))
        server.listen(8)
        token = secrets.token_urlsafe(24)
        path = token_file(port)
        _write_token(path, token)
    except OSError:
        server.close()
        raise
    inbox: queue.Queue = queue.Queue()
    state = _ListenState(token)
    thread = threading.Thread(target=_accept, args=(server, inbox, state), daemon=True, name="horizon-mcp-listener")
    thread.start()
    _listener.update(server=server, thread=thread, queue=inbox, token=token, port=port, token_file=str(path), state=state)
    settings.listening, settings.listen_port, settings.listen_token_file = True, port, str(path)
    if not bpy.app.timers.is_registered(serve_listener):
        bpy.app.timers.register(serve_listener, first_interval=POLL_INTERVAL_S)


def stop_listening(settings: HorizonSettings | None) -> None:
    """Close the listener and its connections (queued messages are answered that Blender stopped
    listening, unapplied), delete its token file and the scene copies it handed out."""
    server, thread, state, inbox = _listener["server"], _listener["thread"], _listener["state"], _listener["queue"]
    if server is not None:
        try:
            server.shutdown(socket.SHUT_RDWR)  # wakes the thread blocked in accept(); close() alone leaves the port bound
        except OSError:
            pass  # not every system lets a listening socket be shut down; close() then ends accept()
        server.close()
    if thread is not None:
        thread.join(timeout=2)
    if state is not None:
        with state.lock:
            state.stopping = True  # no connection queues anything from now on
            while inbox is not None:
                try:
                    item = inbox.get_nowait()
                except queue.Empty:
                    break
                if item.state == "queued":
                    item.state = "abandoned"
                    item.answer.put({"ok": False, "error": STOPPED_REPLY})
            conns = dict(state.conns)
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RD)  # wakes a thread blocked reading; a reply being written still goes out
            except OSError:
                pass
        deadline = time.monotonic() + 2
        for conn_thread in conns.values():
            conn_thread.join(timeout=max(0.0, deadline - time.monotonic()))
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)  # one still writing to a client that does not read: cut it off
            except OSError:
                pass
    if _listener["token_file"]:
        Path(_listener["token_file"]).unlink(missing_ok=True)
    for folder in _listener["scene_dirs"]:
        shutil.rmtree(folder, ignore_errors=True)
    _listener.update(server=None, thread=None, queue=None, token="", token_file="", scene_dirs=[], state=None)
    if settings is not None:
        settings.listening = False
    if bpy.app.timers.is_registered(serve_listener):
        bpy.app.timers.unregister(serve_listener)


def serve_listener() -> float | None:
    """The listener's timer: handle the queued messages on the main thread (skipping those their
    connection gave up on). Returns seconds to the next call, or None once listening stopped. A
    separate timer from ``poll_session``: the two live and end independently (a panel run may end
    while an MCP client still drives Blender)."""
    inbox, state = _listener["queue"], _listener["state"]
    if inbox is None or state is None:
        return None
    settings = _settings(bpy.context)
    while True:
        try:
            item = inbox.get_nowait()
        except queue.Empty:
            return POLL_INTERVAL_S
        with state.lock:
            if item.state != "queued":
                continue  # abandoned: its client was told it was not applied
            item.state = "claimed"
        try:
            reply = handle_message(settings, item.message)
        except Exception as exc:  # noqa: BLE001 - a timer that raises is unregistered: answer, keep listening
            last = traceback.extract_tb(exc.__traceback__)[-1]
            reply = {"ok": False, "error": f"the add-on failed ({type(exc).__name__}: {exc}, {Path(last.filename).name}:{last.lineno})"}
        item.answer.put(reply)


def _claim(session: Any) -> str | None:
    """Let one ``agent mcp`` session drive this Blender per Listen (two would undo each other's
    objects through their scene copies). Returns why a message of another session is refused."""
    if not isinstance(session, str) or not session:
        return "a scene or step message names its 'session' (agent mcp threed sends one)"
    held = _listener.get("session")
    if held and held[1] == _listener["token"] and held[0] != session:
        return (f"another agent mcp session drives this Blender (since {held[2]}): end that session, or press Listen for MCP "
                f"twice in Blender (stop, listen) to hand Blender to the next session")
    if not held or held[0] != session or held[1] != _listener["token"]:
        _listener["session"] = (session, _listener["token"], time.strftime("%H:%M:%S"))
    return None


def handle_message(settings: HorizonSettings, message: dict[str, Any]) -> dict[str, Any]:
    """One token-checked message from the MCP server, on the main thread.

    ``hello``: Blender's version and the tools the add-on repeats. ``scene``: a copy of the open
    scene saved to a fresh folder (``path`` in the reply). ``step``: a step report (as
    ``plugins.threed.session`` writes them) applied by ``apply_step``, one undo step.

    Returns:
        The reply: ``{"ok": True, ...}``, or ``{"ok": False, "error": what went wrong}``.
    """
    kind = message.get("type")
    if kind in ("scene", "step"):
        refused = _claim(message.get("session"))
        if refused:
            return {"ok": False, "error": refused}
    if kind == "hello":
        return {"ok": True, "blender": bpy.app.version_string, "addon": ADDON_VERSION, "replayed_tools": sorted(APPLIED_TOOLS),
                "allow_python": settings.allow_python}
    if kind == "scene":
        for old in _listener["scene_dirs"]:  # the server copied the previous one when it asked
            shutil.rmtree(old, ignore_errors=True)
        folder = tempfile.mkdtemp(prefix="horizon-live-")
        path = os.path.join(folder, "scene.blend")
        bpy.ops.wm.save_as_mainfile(filepath=path, copy=True, check_existing=False)
        _listener["scene_dirs"] = [folder]
        _listener["known"] = {o.name for o in bpy.context.scene.objects}
        _log(settings, f"MCP: a run started on a copy of this scene ({len(bpy.context.scene.objects)} objects)")
        return {"ok": True, "path": path}
    if kind == "step":
        step = message.get("step")
        if not isinstance(step, dict) or not isinstance(step.get("tool"), str) or not isinstance(step.get("step"), int):
            return {"ok": False, "error": "a step message holds 'step': a step report with 'tool' and 'step'"}
        step.setdefault("ok", True)
        editing = sorted(o.name for o in bpy.context.scene.objects if o.mode != "OBJECT")
        if editing:  # Blender writes Edit Mode's own mesh back on leaving it: a change made now would be lost
            return {"ok": False, "applied": False, "error": f"Blender is in {bpy.data.objects[editing[0]].mode.replace('_', ' ').title()} "
                    f"mode on {', '.join(editing)}: the artist leaves it (Tab) and the next scene-changing call catches up"}
        before = {o.name for o in bpy.context.scene.objects}
        outcome = apply_step(settings, step, _listener.setdefault("known", set()))
        _listener["known"] |= {o.name for o in bpy.context.scene.objects} - before
        _listener["steps"].append({"step": step["step"], "tool": step["tool"], **outcome})
        if outcome["error"]:
            return {"ok": False, **outcome}
        return {"ok": True, **outcome}
    return {"ok": False, "error": f"unknown message type {kind!r}; this add-on takes hello, scene and step"}


class HORIZON_OT_listen(bpy.types.Operator):
    """Let `agent mcp threed --blender PORT` drive this Blender (localhost only, with a secret token)."""

    bl_idname = "horizon.listen"
    bl_label = "Listen for MCP"

    port: IntProperty(name="Port", default=0, min=0, max=65535, description="0: the add-on preferences' port")

    def execute(self, context):
        settings = _settings(context)
        if _listener["server"] is not None:
            stop_listening(settings)
            _log(settings, "MCP: stopped listening")
            return {"FINISHED"}
        addon = context.preferences.addons.get(__package__)
        port = self.port or (addon.preferences.port if addon is not None else DEFAULT_PORT)
        try:
            start_listening(settings, port)
        except OSError as exc:
            settings.error = (f"cannot listen on 127.0.0.1:{port} ({exc.strerror or exc}): pick another port in the add-on's "
                              f"preferences and pass it to agent mcp threed --blender PORT")
            self.report({"ERROR"}, settings.error)
            return {"CANCELLED"}
        _log(settings, f"MCP: listening on 127.0.0.1:{port}")
        return {"FINISHED"}


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
        settings.error, settings.log_path = "", ""
        if not python or not Path(python).is_file():
            where = f"{python} is not a file" if python else "none is set"
            _fail(settings, "no Horizon Python", f"set Horizon Python in the add-on's preferences (or HORIZON_PYTHON) to "
                                                 f"the Python Horizon is installed in ({where})")
            self.report({"ERROR"}, settings.error)
            return {"CANCELLED"}
        task_dir = Path(tempfile.mkdtemp(prefix="horizon-addon-"))
        bpy.ops.wm.save_as_mainfile(filepath=str(task_dir / "scene.blend"), copy=True, check_existing=False)
        if settings.task_file:
            shutil.copyfile(bpy.path.abspath(settings.task_file), task_dir / "task.json")
        cmd = [python, "-c", BOOTSTRAP, "--task-dir", str(task_dir), "--request", settings.request,
               "--policy", settings.policy, "--max-steps", str(settings.max_steps),
               "--replayed-tools", ",".join(sorted(APPLIED_TOOLS))]
        if settings.policy == "scripted":
            cmd += ["--script", bpy.path.abspath(settings.script)]
        if settings.base_url:
            cmd += ["--base-url", settings.base_url]
        if settings.model:
            cmd += ["--model", settings.model]
        env = {k: v for k, v in os.environ.items() if k != PYTHON_ENV}
        if settings.allow_python:
            env[PYTHON_ENV] = "1"
        log_path = task_dir / "agent-stderr.txt"
        settings.log.clear()
        try:
            with open(log_path, "wb") as log:
                proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, stdin=subprocess.DEVNULL, text=True,
                                        cwd=str(task_dir), env=env)
        except OSError as exc:
            _fail(settings, "could not start", f"cannot start {python} ({exc.strerror or exc}): set Horizon Python in the "
                                                f"add-on's preferences to a Python interpreter with Horizon installed")
            self.report({"ERROR"}, settings.error)
            return {"CANCELLED"}
        lines: queue.Queue = queue.Queue()
        thread = threading.Thread(target=_read_lines, args=(proc.stdout, lines), daemon=True)
        thread.start()
        _session.update(proc=proc, queue=lines, thread=thread, task_dir=str(task_dir), python=python, run_id="", ended=False,
                        failed=False)
        settings.running, settings.applied, settings.status = True, 0, "starting"
        settings.log_path = str(log_path)
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


def _wrapped(text: str, width: int = ERROR_LINE_CHARS) -> list[str]:
    """``text`` cut at spaces into lines of at most ``width`` characters (long words cut too)."""
    lines, line = [], ""
    for word in text.split():
        while len(word) > width:
            if line:
                lines.append(line)
                line = ""
            lines.append(word[:width])
            word = word[width:]
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    if line:
        lines.append(line)
    return lines


class HORIZON_PT_panel(bpy.types.Panel):
    """The sidebar panel: request, model settings, Run/Stop, status, the error with what to do,
    the agent's log path, and the live step log."""

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
        box.prop(settings, "allow_python")
        row = layout.row(align=True)
        run = row.row(align=True)
        run.enabled = not settings.running
        run.operator(HORIZON_OT_run.bl_idname, icon="PLAY")
        stop = row.row(align=True)
        stop.enabled = settings.running
        stop.operator(HORIZON_OT_stop.bl_idname, icon="CANCEL")
        layout.label(text=f"{settings.status} · {settings.applied} steps applied")
        if settings.error:
            problem = layout.box().column(align=True)
            for i, text in enumerate(_wrapped(settings.error)):
                problem.label(text=text, icon="ERROR" if i == 0 else "BLANK1")
        if settings.log_path:
            layout.label(text=f"agent log: {settings.log_path}", icon="TEXT")
        mcp = layout.box().column(align=True)
        mcp.operator(HORIZON_OT_listen.bl_idname, text="Stop listening" if settings.listening else "Listen for MCP",
                     icon="PAUSE" if settings.listening else "LINKED")
        if settings.listening:
            mcp.label(text=f"MCP: listening on 127.0.0.1:{settings.listen_port}", icon="CHECKMARK")
            mcp.label(text=f"agent mcp threed --blender {settings.listen_port}")
            mcp.label(text=f"token {_listener['token']} (in {settings.listen_token_file})", icon="LOCKED")
            for step in _listener["steps"][-LISTEN_LOG_SHOWN:]:
                done = f"undo '{step['undo']}'" if step["undo"] else (step["error"] or step["undo_problem"] or "not applied")
                mcp.label(text=f"{step['step']:>3} {step['tool']}: {done}", icon="CHECKMARK" if step["applied"] else "ERROR")
        log = layout.column(align=True)
        for line in list(settings.log)[-LOG_LINES_SHOWN:]:
            log.label(text=line.text, icon="CHECKMARK" if line.ok else "ERROR")


CLASSES = (HorizonPreferences, HorizonLogLine, HorizonSettings, HORIZON_OT_run, HORIZON_OT_stop, HORIZON_OT_listen, HORIZON_PT_panel)


def register() -> None:
    """Register the classes and the window manager's ``horizon`` settings."""
    for cls in CLASSES:
        bpy.utils.register_class(cls)
    bpy.types.WindowManager.horizon = PointerProperty(type=HorizonSettings)


def unregister() -> None:
    """Stop a running agent and the MCP listener, and unregister everything."""
    stop_listening(None)
    proc = _session["proc"]
    if proc is not None and proc.poll() is None:
        proc.send_signal(signal.SIGINT)
    if bpy.app.timers.is_registered(poll_session):
        bpy.app.timers.unregister(poll_session)
    del bpy.types.WindowManager.horizon
    for cls in reversed(CLASSES):
        bpy.utils.unregister_class(cls)
