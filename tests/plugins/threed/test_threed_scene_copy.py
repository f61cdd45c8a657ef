"""A scene copy from the agent's run into the artist's open Blender (the add-on's ``sync_scene``)
replaces only what the run changed: the default Cube, Camera and Light it never touched stay the
artist's own objects (checked in a real Blender, ``scene_copy_driver.py``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def copies(tmp_path_factory):
    root = tmp_path_factory.mktemp("scene-copy")
    env = {**os.environ, "PYTHONPATH": str(HERE.parents[2])}
    proc = subprocess.run([sys.executable, str(HERE / "scene_copy_driver.py"), str(root), str(root / "out.json")],
                          check=False, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    return json.loads((root / "out.json").read_text())


def test_an_untouched_default_scene_is_left_as_it_was(copies):
    lamp = copies["lamp"]
    assert lamp["summary"] == ("scene copied from the agent's run: replaced none; added Lamp; removed none; "
                               "left unchanged: Camera, Cube, Light")
    assert lamp["objects"] == ["Camera", "Cube", "Lamp", "Light"]
    assert lamp["same_objects"] == ["Camera", "Cube", "Light"]  # the artist's own objects, not copies
    assert lamp["camera"] == "Camera"
    assert not [n for n in lamp["meshes"] + lamp["materials"] if n.endswith(".001")]  # no dropped copy left behind


def test_what_the_run_changed_is_replaced_and_a_flag_replaces_everything(copies):
    moved = copies["moved"]
    assert moved["summary"].startswith("scene copied from the agent's run: replaced Cube; added Lamp; removed none")
    assert moved["summary"].endswith("left unchanged: Camera, Light") and moved["cube_z"] == 1.0
    assert moved["same_objects"] == ["Camera", "Light"]
    forced = copies["forced"]
    assert forced["summary"] == "scene copied from the agent's run: replaced Camera, Cube, Light; added Lamp; removed none"
    assert forced["same_objects"] == [] and forced["camera"] == "Camera"
