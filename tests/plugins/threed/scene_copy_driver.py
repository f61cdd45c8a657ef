"""Run with bpy (``python scene_copy_driver.py FOLDER OUT``): the artist's default scene (Cube,
Camera, Light) is copied into the agent's run, which adds a Lamp (and, second time, moves the
Cube); each agent scene is then copied back into the open default scene with the add-on's
``sync_scene``; writes what each copy said and changed to OUT as JSON."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import bpy

from plugins.threed.addon import sync_scene


def default_scene(path: Path) -> None:
    bpy.ops.wm.read_homefile(use_empty=False, use_factory_startup=True)  # Blender's default Cube, Camera, Light
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


def agent_scene(start: Path, path: Path, move_cube: bool) -> None:
    bpy.ops.wm.open_mainfile(filepath=str(start))
    bpy.ops.mesh.primitive_uv_sphere_add(radius=0.3, location=(3, 0, 0.3))
    bpy.context.active_object.name = "Lamp"
    if move_cube:
        bpy.data.objects["Cube"].location.z += 1.0
    bpy.ops.wm.save_as_mainfile(filepath=str(path))


def copy_back(start: Path, agent: Path, **kw) -> dict:
    bpy.ops.wm.open_mainfile(filepath=str(start))
    pointers = {o.name: o.as_pointer() for o in bpy.data.objects}
    summary = sync_scene(str(agent), known={"Cube", "Camera", "Light", "Lamp"}, **kw)
    scene = bpy.context.scene
    return {"summary": summary, "objects": sorted(o.name for o in scene.objects),
            "same_objects": sorted(n for n, p in pointers.items() if n in bpy.data.objects and bpy.data.objects[n].as_pointer() == p),
            "camera": scene.camera.name if scene.camera else None,
            "meshes": sorted(m.name for m in bpy.data.meshes), "materials": sorted(m.name for m in bpy.data.materials),
            "cube_z": round(bpy.data.objects["Cube"].location.z, 4)}


def main() -> None:
    folder, out = Path(sys.argv[1]), Path(sys.argv[2])
    start, lamp, moved = folder / "start.blend", folder / "lamp.blend", folder / "moved.blend"
    default_scene(start)
    agent_scene(start, lamp, move_cube=False)
    agent_scene(start, moved, move_cube=True)
    result = {"lamp": copy_back(start, lamp), "moved": copy_back(start, moved),
              "forced": copy_back(start, lamp, replace_unchanged=True)}
    out.write_text(json.dumps(result))


if __name__ == "__main__":
    main()
