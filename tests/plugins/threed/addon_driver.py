"""Run inside a headless Blender (``python addon_driver.py ZIP SCRIPT TASK_JSON OUT``): install the
built add-on from its zip, register it, drive the Run operator through one scripted episode
(calling the panel's timer function, since background Blender runs no timers), run the panel's
draw code against a recording layout, unregister, and write what happened to OUT as JSON."""

from __future__ import annotations

import json
import sys
import tempfile
import time
import types
import zipfile
from pathlib import Path

import bpy


class RecordingLayout:
    """Stands in for ``UILayout`` (none exists without a window); records what draw() asks for."""

    def __init__(self, calls: list) -> None:
        self.calls = calls
        self.enabled = True

    def _child(self, kind: str, **kw):
        self.calls.append((kind, kw))
        return RecordingLayout(self.calls)

    def prop(self, data, name, **kw):
        assert hasattr(data, name), name  # the property must exist on the settings
        self.calls.append(("prop", {"name": name}))

    def operator(self, idname, **kw):
        self.calls.append(("operator", {"idname": idname}))

    def label(self, text="", **kw):
        self.calls.append(("label", {"text": text, **kw}))

    def box(self):
        return self._child("box")

    def row(self, **kw):
        return self._child("row")

    def column(self, **kw):
        return self._child("column")


def main(zip_path: str, script: str, task_json: str, out: str) -> None:
    bpy.ops.wm.read_factory_settings(use_empty=True)
    folder = Path(tempfile.mkdtemp(prefix="addon-"))
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(folder / "horizon_agent")
    sys.path.insert(0, str(folder))
    import horizon_agent

    horizon_agent.register()
    settings = bpy.context.window_manager.horizon
    settings.request = "a low table, 1.2 m by 0.6 m, 0.45 m high, four tapered legs, oak"
    settings.policy = "scripted"
    settings.script = script
    settings.task_file = task_json
    result = {"run": sorted(bpy.ops.horizon.run()), "running_after_start": settings.running}
    deadline = time.monotonic() + 240
    while horizon_agent.poll_session() is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    objects = {o.name: o for o in bpy.data.objects}
    result.update(
        objects=sorted(objects), applied=settings.applied, status=settings.status, running=settings.running,
        error=settings.error, log_path=settings.log_path,
        log=[(line.text, line.ok) for line in settings.log],
        tabletop=list(objects["Tabletop"].dimensions) if "Tabletop" in objects else None,
        leg_materials=[s.material.name for s in objects["Leg.BR"].material_slots] if "Leg.BR" in objects else None,
        modifiers=[m.type for m in objects["Tabletop"].modifiers] if "Tabletop" in objects else None,
        ops_module=horizon_agent.ops.__name__,
    )
    # each applied step is its own undo step: one undo removes only the last (the camera)
    undo = sorted(bpy.ops.ed.undo())
    after = {o.name for o in bpy.data.objects}
    result["undo_once"] = {"result": undo, "camera": "Camera" in after, "tabletop": "Tabletop" in after, "key": "Key" in after}
    calls: list = []
    horizon_agent.HORIZON_PT_panel.draw(types.SimpleNamespace(layout=RecordingLayout(calls)), bpy.context)
    result["draw"] = calls
    result["stop_when_idle"] = sorted(bpy.ops.horizon.stop())
    horizon_agent.unregister()
    result["unregistered"] = not hasattr(bpy.types.WindowManager, "horizon")
    Path(out).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:5])
