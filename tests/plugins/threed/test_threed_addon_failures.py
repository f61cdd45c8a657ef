"""The Blender add-on's failures and undo steps, with real processes: the built add-on registered
in one headless Blender (bpy) per module (``addon_failures_driver.py``), driven through a Python
without Horizon, an agent killed mid-run, a model server that does not answer, a raw-Python step
that must reach the open scene as its own undo step, and undo switched off in the preferences."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import venv
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

RAW_CODE = """
import bmesh
import bpy
bpy.data.objects["Box"].location = (0.0, 0.0, 2.0)
bpy.data.objects.remove(bpy.data.objects["Temp"])
mesh = bpy.data.meshes.new("RawSphereMesh")
bm = bmesh.new()
bmesh.ops.create_uvsphere(bm, u_segments=16, v_segments=8, radius=0.5)
bm.to_mesh(mesh)
bm.free()
mesh.materials.append(bpy.data.materials.new("RawGlaze"))
sphere = bpy.data.objects.new("RawSphere", mesh)
sphere.location = (2.0, 0.0, 0.5)
bpy.context.scene.collection.objects.link(sphere)
"""


def _script(path: Path, turns: list[dict]) -> str:
    path.write_text("".join(json.dumps(t) + "\n" for t in turns))
    return str(path)


def _closed_url() -> str:
    with socket.socket() as s:  # a port the system just handed out and nobody listens on any more
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


@pytest.fixture(scope="module")
def panel(tmp_path_factory):
    """Every scenario's panel state, from one Blender process (starting Blender costs seconds)."""
    from plugins.threed.build_addon import build_addon

    root = tmp_path_factory.mktemp("addon-failures")
    venv.create(root / "bare", with_pip=False)  # a real Python with nothing installed (no system or user packages)
    finish = {"tool": "finish", "arguments": {"summary": "done"}}
    inputs = {
        "bare_python": str(root / "bare" / "bin" / "python"),
        "source": str(HERE.parents[2]),  # this tree's Horizon, not the one the venv installed
        "closed_url": _closed_url(),
        "short": _script(root / "short.jsonl", [
            {"tool": "add_primitive", "arguments": {"name": "Plank", "kind": "cube", "size": [1.0, 0.2, 0.05]}}, finish]),
        "hang": _script(root / "hang.jsonl", [
            {"tool": "add_primitive", "arguments": {"name": "Plank", "kind": "cube", "size": [1.0, 0.2, 0.05]}},
            {"tool": "run_blender_python", "arguments": {"code": "import time\ntime.sleep(120)\n", "timeout_s": 150}}, finish]),
        "raw": _script(root / "raw.jsonl", [
            {"tool": "add_primitive", "arguments": {"name": "Box", "kind": "cube", "size": [0.5, 0.5, 0.5], "location": [0, 0, 0.25]}},
            {"tool": "set_material", "arguments": {"object": "Box", "material": "Oak", "preset": "oak"}},
            {"tool": "add_primitive", "arguments": {"name": "Temp", "kind": "uv_sphere", "radius": 0.1}},
            {"tool": "run_blender_python", "arguments": {"code": RAW_CODE}},
            finish]),
    }
    (root / "inputs.json").write_text(json.dumps(inputs))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "HORIZON_THREED_PYTHON")}
    env.update(HORIZON_HOME=str(root / "home"), HORIZON_RETRY_MAX_ATTEMPTS="1")  # a dead server: one attempt, no backoff
    out = root / "result.json"
    proc = subprocess.run(
        [sys.executable, str(HERE / "addon_failures_driver.py"), str(build_addon(root / "addon.zip")), str(root / "inputs.json"), str(out)],
        check=False, env=env, capture_output=True, text=True, timeout=600, cwd=root,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return {**json.loads(out.read_text()), "bare_python": inputs["bare_python"]}


def test_a_python_without_horizon_is_named_with_the_command_that_fixes_it(panel):
    shown, bare = panel["missing"], panel["bare_python"]
    assert panel["missing_run"] == ["FINISHED"] and not shown["running"]
    assert shown["status"] == "Horizon not found"  # not "starting" forever
    assert shown["error"].startswith(f"Horizon is not installed in {bare} (No module named 'plugins')")
    assert f"{bare} -m pip install -e '/path/to/horizon[threed]'" in shown["error"]
    assert shown["log_exists"] and shown["log_path"].endswith("agent-stderr.txt")  # kept, not deleted
    assert any(label.startswith("agent log: ") for label in shown["labels"])
    drawn = " ".join(shown["labels"])
    assert "Horizon is not installed in" in drawn and "-m pip install -e" in drawn  # the panel draws the whole message
    assert all(len(label) <= 200 for label in shown["labels"])


def test_a_python_with_horizons_source_but_not_its_packages_is_told_to_install_the_extra(panel):
    shown, bare = panel["partial"], panel["bare_python"]
    assert shown["status"] == "Horizon not found" and not shown["running"]
    source = str(HERE.parents[2])
    assert shown["error"].startswith(f"Horizon in {bare} lacks the package that provides '")
    assert shown["error"].endswith(f"run: {bare} -m pip install -e '{source}[threed]'")


def test_a_killed_agent_is_shown_as_dead_with_its_log_and_the_resume_command(panel):
    shown = panel["dead"]
    assert panel["dead_run"] == ["FINISHED"] and not shown["running"]
    assert shown["status"] == "agent died"
    assert "the agent process was killed by SIGKILL before its final report" in shown["error"]
    assert "the run is kept: agent resume 20" in shown["error"]  # run ids start with the date
    assert f"Its log: {shown['log_path']}" in shown["error"] and shown["log_exists"]


def test_a_model_server_that_does_not_answer_says_where_and_what_to_do(panel):
    shown = panel["server"]
    assert panel["server_run"] == ["FINISHED"] and not shown["running"]
    assert shown["status"].startswith("model_error, reward -")
    error = shown["error"]
    assert error.startswith("the model server did not answer: cannot reach the model server at http://127.0.0.1:")
    assert "agent resume" in error and "correct Base URL and Model name in this panel" in error
    assert shown["log_exists"]


def test_a_raw_python_step_reaches_the_open_scene_as_its_own_undo_step(panel):
    shown = panel["raw"]
    assert panel["raw_run"] == ["FINISHED"] and shown["status"].startswith("submitted")
    assert shown["error"] == "" and shown["applied"] == 4 and shown["log_path"] == ""  # a clean run leaves nothing behind
    texts = [text for text, _ in shown["log"]]
    assert any("run_blender_python: ok" in t for t in texts)
    assert "    scene copied from the agent's run: replaced Box; added RawSphere; removed Temp" in texts
    assert shown["objects"] == ["Box", "RawSphere"]  # Temp deleted by the code; no "Box.001": the copy took the name back
    assert shown["box_location"] == pytest.approx([0, 0, 2]) and shown["box_dimensions"] == pytest.approx([0.5, 0.5, 0.5])
    assert shown["box_material"] == ["Oak"] and shown["raw_material"] == ["RawGlaze"]
    assert not [name for name in shown["materials"] + shown["meshes"] if name.endswith(".001")]
    # one undo takes back the raw step only: the sphere goes, Temp returns, the box returns to where the typed step put it
    assert shown["undo"] == ["FINISHED"] and shown["after_undo"] == ["Box", "Temp"]
    assert shown["box_location_after_undo"] == pytest.approx([0, 0, 0.25])


def test_undo_switched_off_is_shown_with_the_step_it_belongs_to(panel):
    shown = panel["undo_off"]
    assert shown["status"].startswith("running") and shown["applied"] == 1 and "Plank" in shown["objects"]
    assert shown["error"] == ("step 1 (add_primitive) was applied, but undo is off (Preferences > System > Undo Steps "
                              "is 0): this step cannot be undone")
    undo_line = ("    undo: undo is off (Preferences > System > Undo Steps is 0): this step cannot be undone", False)
    assert undo_line in [tuple(line) for line in shown["log"]]
    # the run goes on after it, and a later death of the agent is still shown (the undo line stays in the log)
    dead = panel["undo_off_then_dead"]
    assert dead["status"] == "agent died" and dead["error"].startswith("the agent process was killed by SIGKILL")
    assert undo_line in [tuple(line) for line in dead["log"]] and dead["log_exists"]
