"""Run inside a headless Blender (``python addon_failures_driver.py ZIP SCRIPTS_JSON OUT``): install
the built add-on from its zip, register it once, and drive the Run operator through one
scenario after another with real agent processes, writing what the panel showed to OUT as JSON.

SCRIPTS_JSON maps names to script files and holds ``bare_python`` (an interpreter without
Horizon), ``source`` (the Horizon tree under test, put on the agent's PYTHONPATH) and
``closed_url`` (a base URL nothing listens on). Scenarios:

- ``missing``: Horizon Python is ``bare_python``;
- ``partial``: ``bare_python`` with Horizon's source on its path but none of its packages;
- ``dead``: a scripted run (``short``: adds ``Plank``) whose process is killed (SIGKILL) once it has reported its start;
- ``server``: the "Server" model at ``closed_url``;
- ``raw``: raw Python allowed, the script ``raw`` (typed steps adding ``Box`` in oak and
  ``Temp``, then a ``run_blender_python`` step moving ``Box``, deleting ``Temp`` and adding
  ``RawSphere``), then one undo;
- ``undo_off``: Undo Steps set to 0 in the preferences, the script ``hang`` (a typed step
  adding ``Plank``, then raw Python that sleeps), the agent killed once the first step is
  applied (``undo_off_then_dead``).

Background Blender runs no timers, so the panel's timer function is called here in a loop.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import tempfile
import time
import types
import zipfile
from pathlib import Path

import bpy
from addon_driver import RecordingLayout


def _wait(horizon_agent, until=None, limit_s: float = 180) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if horizon_agent.poll_session() is None or (until is not None and until()):
            return
        time.sleep(0.05)


def _panel(horizon_agent, settings) -> dict:
    calls: list = []
    horizon_agent.HORIZON_PT_panel.draw(types.SimpleNamespace(layout=RecordingLayout(calls)), bpy.context)
    log_path = settings.log_path
    return {
        "status": settings.status, "error": settings.error, "running": settings.running, "applied": settings.applied,
        "log_path": log_path, "log_exists": bool(log_path) and Path(log_path).is_file(),
        "log": [(line.text, line.ok) for line in settings.log],
        "labels": [c[1]["text"] for c in calls if c[0] == "label"],
        "objects": sorted(o.name for o in bpy.data.objects),
    }


def _start(horizon_agent, settings, python: str, source: str | None, **fields) -> list:
    """Press Run with ``python`` as Horizon Python, Horizon's source tree ``source`` on its
    PYTHONPATH (None: none; the agent process inherits Blender's environment)."""
    os.environ["HORIZON_PYTHON"] = python  # the add-on's preference falls back to it
    os.environ.pop("PYTHONPATH", None)
    if source is not None:
        os.environ["PYTHONPATH"] = source
    settings.request = "a test scene"
    for key, value in fields.items():
        setattr(settings, key, value)
    return sorted(bpy.ops.horizon.run())


def main(zip_path: str, inputs: str, out: str) -> None:
    given = json.loads(Path(inputs).read_text())
    bpy.ops.wm.read_factory_settings(use_empty=True)
    folder = Path(tempfile.mkdtemp(prefix="addon-"))
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(folder / "horizon_agent")
    sys.path.insert(0, str(folder))
    import horizon_agent

    horizon_agent.register()
    settings = bpy.context.window_manager.horizon
    result: dict = {}

    result["missing_run"] = _start(horizon_agent, settings, given["bare_python"], None, policy="scripted", script=given["short"])
    _wait(horizon_agent)
    result["missing"] = _panel(horizon_agent, settings)

    result["partial_run"] = _start(horizon_agent, settings, given["bare_python"], given["source"])
    _wait(horizon_agent)
    result["partial"] = _panel(horizon_agent, settings)

    result["dead_run"] = _start(horizon_agent, settings, sys.executable, given["source"], policy="scripted", script=given["short"])
    _wait(horizon_agent, until=lambda: settings.status.startswith("running"))
    if horizon_agent._session["proc"] is None:
        raise SystemExit(f"the run to kill ended first: {_panel(horizon_agent, settings)}")
    os.kill(horizon_agent._session["proc"].pid, signal.SIGKILL)
    _wait(horizon_agent)
    result["dead"] = _panel(horizon_agent, settings)

    result["server_run"] = _start(horizon_agent, settings, sys.executable, given["source"], policy="openai", base_url=given["closed_url"],
                                  model="test-model")
    _wait(horizon_agent)
    result["server"] = _panel(horizon_agent, settings)

    for obj in list(bpy.data.objects):  # whatever the killed run applied
        bpy.data.objects.remove(obj)
    bpy.ops.ed.undo_push(message="before the raw run")
    result["raw_run"] = _start(horizon_agent, settings, sys.executable, given["source"], policy="scripted", script=given["raw"], allow_python=True)
    _wait(horizon_agent)
    result["raw"] = _panel(horizon_agent, settings)
    objects = bpy.data.objects
    result["raw"]["box_dimensions"] = list(objects["Box"].dimensions) if "Box" in objects else None
    result["raw"]["box_location"] = list(objects["Box"].location) if "Box" in objects else None
    result["raw"]["box_material"] = [s.material.name for s in objects["Box"].material_slots] if "Box" in objects else None
    result["raw"]["materials"] = sorted(m.name for m in bpy.data.materials)
    result["raw"]["meshes"] = sorted(m.name for m in bpy.data.meshes)
    result["raw"]["raw_material"] = [s.material.name for s in objects["RawSphere"].material_slots] if "RawSphere" in objects else None
    result["raw"]["undo"] = sorted(bpy.ops.ed.undo())
    result["raw"]["after_undo"] = sorted(o.name for o in bpy.data.objects)
    box = bpy.data.objects.get("Box")  # undo reloads the data: earlier references are stale
    result["raw"]["box_location_after_undo"] = list(box.location) if box is not None else None

    bpy.context.preferences.edit.undo_steps = 0
    result["undo_off_run"] = _start(horizon_agent, settings, sys.executable, given["source"], policy="scripted",
                                    script=given["hang"], allow_python=True)
    _wait(horizon_agent, until=lambda: settings.applied >= 1)
    result["undo_off"] = _panel(horizon_agent, settings)
    if horizon_agent._session["proc"] is None:
        raise SystemExit(f"the run to kill ended first: {result['undo_off']}")
    os.kill(horizon_agent._session["proc"].pid, signal.SIGKILL)  # in its second step, which sleeps
    _wait(horizon_agent)
    result["undo_off_then_dead"] = _panel(horizon_agent, settings)
    horizon_agent.unregister()
    Path(out).write_text(json.dumps(result, default=str))


if __name__ == "__main__":
    main(*sys.argv[1:4])
