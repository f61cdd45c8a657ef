"""``plugins.threed.session``: the add-on's agent process, run in-process on a real scripted
episode; which step reports carry a copy of the agent's scene (``scene_file``)."""

from __future__ import annotations

import io
import json

from plugins.threed import session


def test_only_scene_changing_steps_the_addon_cannot_repeat_carry_a_copy_of_the_scene(tmp_path, monkeypatch):
    monkeypatch.setenv("HORIZON_THREED_PYTHON", "1")
    task = tmp_path / "task"
    task.mkdir()
    turns = [
        {"tool": "add_primitive", "arguments": {"name": "Box", "kind": "cube", "size": [1, 1, 1]}},
        {"tool": "inspect_scene", "arguments": {}},
        {"tool": "run_blender_python", "arguments": {"code": "import bpy\nbpy.data.objects['Box'].location.z = 3.0\n"}},
        {"tool": "run_blender_python", "arguments": {"code": "raise ValueError('no change')\n"}},
        {"tool": "finish", "arguments": {"summary": "a box"}},
    ]
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    out = io.StringIO()
    code = session.main(["--task-dir", str(task), "--request", "a box", "--policy", "scripted", "--script", str(script),
                         "--replayed-tools", "add_primitive,transform"], out=out)
    assert code == 0
    reports = [json.loads(line) for line in out.getvalue().splitlines()]
    steps = {r["step"]: r for r in reports if r["type"] == "step"}
    assert [steps[n]["ok"] for n in (1, 2, 3, 4, 5)] == [True, True, True, False, True]
    assert steps[1]["scene_file"] is None  # repeated by the add-on from its arguments
    assert steps[2]["scene_file"] is None  # read-only
    assert steps[3]["scene_file"] == str(task.resolve() / "snapshots" / "step-003.blend")
    assert (task / "snapshots" / "step-003.blend").read_bytes()[:7] == b"BLENDER"
    assert steps[4]["scene_file"] is None  # the failed code left the saved scene as it was
    assert reports[-1]["type"] == "end" and reports[-1]["exit_status"] == "submitted"
