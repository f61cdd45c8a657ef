"""The Blender add-on: built by `agent threed build-addon`, loaded in headless Blender (bpy, in a
separate process), registered, driven through one scripted episode, and its panel drawn."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.policy.scripted import load_script

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parents[2] / "examples" / "threed"


def test_build_addon_writes_an_extension_zip(tmp_path):
    out = CliRunner().invoke(app, ["threed", "build-addon", "--output", str(tmp_path)])
    assert out.exit_code == 0, out.output
    zip_path = tmp_path / "horizon_agent-0.1.0.zip"
    assert f"wrote {zip_path}" in out.output.replace("\n", "")
    with zipfile.ZipFile(zip_path) as zf:
        assert sorted(zf.namelist()) == ["__init__.py", "blender_manifest.toml", "scene_ops.py"]
        manifest = tomllib.loads(zf.read("blender_manifest.toml").decode())
    assert manifest["schema_version"] == "1.0.0" and manifest["type"] == "add-on"
    assert manifest["blender_version_min"] >= "4.2.0" and manifest["id"] == "horizon_agent"


def test_addon_runs_a_scripted_episode_into_the_open_scene(tmp_path):
    from plugins.threed.build_addon import build_addon

    zip_path = build_addon(tmp_path / "addon.zip")
    turns = [t for t in load_script(EXAMPLES / "low-table.jsonl") if t["tool"] != "render_preview"]
    script = tmp_path / "table.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    out = tmp_path / "result.json"
    env = dict(os.environ, HORIZON_PYTHON=sys.executable, PYTHONPATH=str(HERE.parents[2]))  # the agent runs this tree
    proc = subprocess.run(
        [sys.executable, str(HERE / "addon_driver.py"), str(zip_path), str(script), str(EXAMPLES / "low-table" / "task.json"), str(out)],
        check=False, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["run"] == ["FINISHED"] and result["running_after_start"]
    assert result["ops_module"] == "horizon_agent.scene_ops"  # the zip's own copy of the operations
    assert {"Tabletop", "Leg.FL", "Leg.FR", "Leg.BL", "Leg.BR", "Key", "Fill", "Rim", "Camera", "Floor"} <= set(result["objects"])
    assert result["tabletop"] == pytest.approx([1.2, 0.6, 0.04])
    assert result["leg_materials"] == ["Oak"] and result["modifiers"] == ["BEVEL"]
    scene_changing = [t for t in turns if t["tool"] not in ("inspect_scene", "finish")]
    assert result["applied"] == len(scene_changing)
    assert result["status"].startswith("submitted, reward 1.000") and not result["running"]
    assert result["error"] == "" and result["log_path"] == ""  # nothing went wrong: no message, the task folder is gone
    texts = [text for text, _ in result["log"]]
    assert any("add_mesh: ok" in t for t in texts) and any(t.startswith("verify: all 52 checks pass") for t in texts)  # 48 + physics/stands (a table) + structure/parts, distinct, through
    assert result["undo_once"] == {"result": ["FINISHED"], "camera": False, "tabletop": True, "key": True}
    drawn = result["draw"]
    assert ["operator", {"idname": "horizon.run"}] in drawn and ["operator", {"idname": "horizon.stop"}] in drawn
    assert ["prop", {"name": "request"}] in drawn and ["prop", {"name": "script"}] in drawn
    assert ["prop", {"name": "allow_python"}] in drawn
    labels = [c[1]["text"] for c in drawn if c[0] == "label"]
    assert any("steps applied" in t for t in labels) and any("finish: ok" in t for t in labels)
    assert result["stop_when_idle"] == ["CANCELLED"] and result["unregistered"]


def test_manifest_passes_blenders_own_extension_validator(tmp_path):
    from plugins.threed.build_addon import ADDON, build_addon, validate_with_blender

    valid, report = validate_with_blender(ADDON)
    assert valid, report
    valid, report = validate_with_blender(build_addon(tmp_path / "addon.zip"))
    assert valid and "Success" in report, report


def test_blenders_validator_rejects_a_broken_manifest(tmp_path):
    import shutil

    from plugins.threed.build_addon import ADDON, validate_with_blender

    broken = tmp_path / "horizon_agent"
    shutil.copytree(ADDON, broken)
    manifest = broken / "blender_manifest.toml"
    text = manifest.read_text()
    manifest.write_text(text.replace('tagline = "', 'tagline = "' + "x" * 60, 1).replace('"4.2.0"', '"4.2"'))
    valid, report = validate_with_blender(broken)
    assert not valid
    assert 'key "tagline" invalid' in report and "64 characters" in report  # Blender's words, not ours
    assert 'key "blender_version_min" invalid' in report
