"""The Blender worker process: lazy start, crash and hang recovery from the last saved scene."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from core.errors import ToolError
from plugins.threed import tools
from plugins.threed.client import BlenderWorker


def test_worker_starts_lazily_answers_errors_and_stops(tmp_path):
    worker = BlenderWorker(tmp_path / "scene.blend", tmp_path / "log.txt")
    assert worker.pid is None and not (tmp_path / "scene.blend").exists()
    assert worker.call("inspect_scene", {})["total"] == 0
    assert (tmp_path / "scene.blend").is_file() and worker.pid is not None
    pid = worker.pid
    with pytest.raises(ToolError, match="unknown operation 'explode'"):
        worker.call("explode", {})
    with pytest.raises(ToolError, match="no object named 'Ghost'"):
        worker.call("delete_object", {"name": "Ghost"})
    assert worker.pid == pid and worker.restarts == 0  # operation errors keep the worker
    worker.close()
    assert worker.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_killed_idle_worker_is_restarted_with_the_saved_scene(ctx):
    tools.add_primitive({"name": "Kept", "kind": "cube", "size": [1, 1, 1]}, ctx)
    worker = tools.worker(ctx)
    os.kill(worker.pid, signal.SIGKILL)
    time.sleep(0.2)
    result = tools.inspect_scene({}, ctx)
    assert not result.is_error
    assert "had stopped, killed by SIGKILL" in result.output and "restarted" in result.output
    assert [o["name"] for o in result.data["objects"]] == ["Kept"]
    assert worker.restarts == 1


def test_a_crash_during_a_call_is_an_observation_and_the_scene_survives(ctx):
    tools.add_primitive({"name": "Kept", "kind": "cube", "size": [1, 1, 1]}, ctx)
    tools.set_camera({"location": [3, -3, 2], "target": [0, 0, 0]}, ctx)
    worker = tools.worker(ctx)
    pid = worker.pid
    killer = threading.Timer(1.5, os.kill, (pid, signal.SIGKILL))  # during a long render
    killer.start()
    result = tools.render_preview({"width": 640, "height": 480, "samples": 1024, "time_limit_s": 120}, ctx)
    killer.join()
    assert result.is_error
    assert "crashed (killed by SIGKILL) during render_preview" in result.output
    assert "restarted and the scene reloaded from the last saved step" in result.output
    assert worker.pid not in (None, pid)
    after = tools.inspect_scene({}, ctx)
    assert sorted(o["name"] for o in after.data["objects"]) == ["Camera", "Kept"]


def test_a_render_past_its_time_limit_is_stopped_and_the_run_can_go_on(ctx):
    tools.add_primitive({"name": "Ball", "kind": "uv_sphere", "radius": 1.0}, ctx)
    tools.set_camera({"location": [4, -4, 3], "target": [0, 0, 0]}, ctx)
    start = time.monotonic()
    result = tools.render_preview({"width": 640, "height": 480, "samples": 1024, "time_limit_s": 1.0}, ctx)
    assert time.monotonic() - start < 60  # the 1 s limit plus restarting Blender, not the whole render
    assert result.is_error
    assert "did not answer within its time limit of 1 s" in result.output
    assert "use fewer samples, a smaller size, or a longer limit" in result.output
    assert not tools.add_primitive({"name": "After", "kind": "cube", "size": [1, 1, 1]}, ctx).is_error
    names = [o["name"] for o in tools.inspect_scene({}, ctx).data["objects"]]
    assert names == ["After", "Ball", "Camera"]


def test_python_inside_a_user_blend_file_does_not_run(tmp_path):
    marker = tmp_path / "ran.txt"
    make = (
        "import bpy\n"
        "bpy.ops.wm.read_factory_settings(use_empty=True)\n"
        "t = bpy.data.texts.new('autorun.py')\n"
        f"t.write(\"open({str(marker)!r}, 'w').write('ran')\\n\")\n"
        "t.use_module = True  # 'Register': Blender runs it on load when scripts may auto-run\n"
        f"bpy.ops.wm.save_as_mainfile(filepath={str(tmp_path / 'scene.blend')!r})\n"
    )
    subprocess.run([sys.executable, "-c", make], check=True, capture_output=True, cwd=tmp_path)
    worker = BlenderWorker(tmp_path / "scene.blend", tmp_path / "log.txt")
    try:
        assert worker.call("inspect_scene", {}, save=False)["total"] == 0
    finally:
        worker.close()
    assert not marker.exists()
