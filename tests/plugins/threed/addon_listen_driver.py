"""Run inside a headless Blender (``python addon_listen_driver.py ZIP PORT FOLDER``): the artist's
open Blender for ``agent mcp threed --blender PORT``. It installs the built add-on from its zip,
puts a "Pedestal" in the open scene, presses Listen for MCP on PORT and pumps the listener's timer
function (background Blender runs no timers) until FOLDER/stop appears; then it records the open
scene, undoes the applied steps one by one (each undo must take back exactly one step), draws the
panel, stops listening, and writes FOLDER/result.json. FOLDER/ready holds the token file's path
once it listens; FOLDER/pause stops listening (answered by FOLDER/paused), FOLDER/resume listens
again (FOLDER/resumed); each FOLDER/act-NAME.py is run once as the artist's own work (answered
by FOLDER/act-NAME.done). While FOLDER/hold exists the timer is not pumped (a busy main thread) and
FOLDER/status holds "QUEUED ABANDONED": the messages waiting, and how many of them were given up."""

from __future__ import annotations

import json
import stat
import sys
import tempfile
import threading
import time
import types
import zipfile
from pathlib import Path

import bpy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from addon_driver import RecordingLayout


def _box() -> dict:
    box = bpy.data.objects.get("Box")
    if box is None:
        return {"exists": False}
    return {"exists": True, "location": [round(v, 4) for v in box.location],
            "materials": [s.material.name for s in box.material_slots if s.material]}


def main(zip_path: str, port: str, folder: str) -> None:
    out = Path(folder)
    bpy.ops.wm.read_factory_settings(use_empty=True)
    addon_dir = Path(tempfile.mkdtemp(prefix="addon-"))
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(addon_dir / "horizon_agent")
    sys.path.insert(0, str(addon_dir))
    import horizon_agent

    horizon_agent.register()
    settings = bpy.context.window_manager.horizon
    bpy.ops.mesh.primitive_cube_add(size=0.4, location=(-1.0, 0.0, 0.2))
    bpy.context.active_object.name = "Pedestal"
    bpy.ops.ed.undo_push(message="the artist's own work")
    result: dict = {"listen": sorted(bpy.ops.horizon.listen(port=int(port)))}
    token_file = Path(settings.listen_token_file)
    result["token_file"] = {"path": str(token_file), "mode": oct(stat.S_IMODE(token_file.stat().st_mode)),
                            "expected": str(horizon_agent.token_file(int(port)))}
    (out / "ready").write_text(str(token_file))
    deadline = time.monotonic() + 240
    while not (out / "stop").exists() and time.monotonic() < deadline:
        if (out / "hold").exists():  # the main thread busy (a render, a dialog): say what waits in the listener's queue
            inbox = horizon_agent._listener["queue"]
            waiting = list(inbox.queue) if inbox is not None else []
            (out / "status.tmp").write_text(f"{len(waiting)} {sum(item.state == 'abandoned' for item in waiting)}")
            (out / "status.tmp").replace(out / "status")
        else:
            horizon_agent.serve_listener()
        if (out / "pause").exists() and not (out / "paused").exists():  # the artist presses Stop listening ...
            result["pause"] = sorted(bpy.ops.horizon.listen())
            result["pause_threads"] = sorted(t.name for t in threading.enumerate() if t.name.startswith("horizon-mcp"))
            (out / "paused").write_text(str(token_file.exists()))
        if (out / "resume").exists() and not (out / "resumed").exists():  # ... and Listen for MCP again
            result["resume"] = sorted(bpy.ops.horizon.listen(port=int(port)))
            (out / "resumed").write_text("")
        for act in sorted(out.glob("act-*.py")):  # the artist's own work meanwhile, run once each
            if not act.with_suffix(".done").exists():
                exec(act.read_text(), {"bpy": bpy})  # noqa: S102 - the test's own scripted artist actions
                act.with_suffix(".done").write_text("")
        time.sleep(0.02)
    objects = sorted(o.name for o in bpy.context.scene.objects)
    result.update(objects=objects, box=_box(), applied=settings.applied,
                  steps=[{k: s[k] for k in ("step", "tool", "applied", "undo", "error")} for s in horizon_agent._listener["steps"]])
    calls: list = []
    horizon_agent.HORIZON_PT_panel.draw(types.SimpleNamespace(layout=RecordingLayout(calls)), bpy.context)
    result["labels"] = [c[1]["text"] for c in calls if c[0] == "label"]
    undone = []
    for _ in range(settings.applied):  # one undo per applied step, newest first
        undo = sorted(bpy.ops.ed.undo())
        undone.append({"result": undo, "box": _box(), "pedestal": "Pedestal" in bpy.data.objects, "knob": "Knob" in bpy.data.objects})
    result["undone"] = undone
    result["listen_again"] = sorted(bpy.ops.horizon.listen())  # the same button stops listening
    result["stop_threads"] = sorted(t.name for t in threading.enumerate() if t.name.startswith("horizon-mcp"))
    result["token_file_after"] = token_file.exists()
    horizon_agent.unregister()
    (out / "result.json").write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:4])
