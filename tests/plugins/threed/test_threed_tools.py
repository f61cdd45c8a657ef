"""Each 3D tool against a real Blender worker: what it changes, what it returns, what it refuses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import trimesh

from plugins.threed import checks, tools
from plugins.threed import tools_modelling as tm
from plugins.threed.reward import load_scene_meshes
from tests.plugins.threed.tool_calls import call, fails

LEG = {
    "vertices": [[-0.015, -0.015, 0], [0.015, -0.015, 0], [0.015, 0.015, 0], [-0.015, 0.015, 0],
                 [-0.025, -0.025, 0.41], [0.025, -0.025, 0.41], [0.025, 0.025, 0.41], [-0.025, 0.025, 0.41]],
    "faces": [[0, 3, 2, 1], [4, 5, 6, 7], [0, 1, 5, 4], [1, 2, 6, 5], [2, 3, 7, 6], [3, 0, 4, 7]],
}


def scene_meshes(scene_ctx):
    exported = tools.worker(scene_ctx).call("mesh_data", {"folder": str(scene_ctx.scratch / "m")}, save=False)
    return load_scene_meshes(exported)


def test_primitives_have_the_requested_sizes_and_the_scene_is_saved(scene_ctx):
    cases = {
        "Box": ({"kind": "cube", "size": [1.2, 0.6, 0.04]}, [1.2, 0.6, 0.04]),
        "Can": ({"kind": "cylinder", "radius": 0.05, "depth": 0.2}, [0.1, 0.1, 0.2]),
        "Cone": ({"kind": "cone", "radius": 0.1, "radius_top": 0.02, "depth": 0.3}, [0.2, 0.2, 0.3]),
        "Ball": ({"kind": "uv_sphere", "radius": 0.5}, [1.0, 1.0, 1.0]),
        "Ico": ({"kind": "ico_sphere", "radius": 0.25}, [0.5, 0.5, 0.5]),
        "Ring": ({"kind": "torus", "radius": 0.3, "minor_radius": 0.05}, [0.7, 0.7, 0.1]),
        "Sheet": ({"kind": "plane", "size": [2.0, 1.0]}, [2.0, 1.0, 0.0]),
    }
    for name, (arguments, dims) in cases.items():
        out = call(tools.add_primitive, scene_ctx, name=name, **arguments)
        assert out.data["added"]["dimensions"] == pytest.approx(dims, abs=2e-3), name
    assert (scene_ctx.workspace / "scene.blend").is_file()
    meshes = scene_meshes(scene_ctx)
    for name in ("Box", "Can", "Cone", "Ball", "Ico", "Ring"):
        assert checks.closed_solid([meshes[name][0]]).passed, name
    assert not checks.closed_solid([meshes["Sheet"][0]]).passed


def test_argument_errors_are_observations(scene_ctx):
    assert "needs size" in fails(tools.add_primitive, scene_ctx, name="A", kind="cube")
    assert "radius" in fails(tools.add_primitive, scene_ctx, name="A", kind="cylinder", depth=1.0)
    assert "Extra inputs" in fails(tools.add_primitive, scene_ctx, name="A", kind="cube", size=[1, 1, 1], colour="red")
    assert "greater than 0" in fails(tools.add_primitive, scene_ctx, name="A", kind="cube", size=[1, -1, 1])
    call(tools.add_primitive, scene_ctx, name="A", kind="cube", size=[1, 1, 1])
    assert "already exists" in fails(tools.add_primitive, scene_ctx, name="A", kind="cube", size=[1, 1, 1])
    assert "no object named 'Nope'" in fails(tools.transform, scene_ctx, name="Nope", location=[0, 0, 0])
    assert "at least one of" in fails(tools.transform, scene_ctx, name="A")
    assert "must end in .png" in fails(tools.render_preview, scene_ctx, path="renders/p.jpg")


def test_add_mesh_builds_a_closed_tapered_leg_and_rejects_bad_faces(scene_ctx):
    out = call(tools.add_mesh, scene_ctx, name="Leg", location=[0.5, 0.2, 0], **LEG)
    assert out.data["non_manifold_edges"] == 0 and "closed surface" in out.output
    assert out.data["added"]["dimensions"] == pytest.approx([0.05, 0.05, 0.41])
    leg = scene_meshes(scene_ctx)["Leg"][0]
    assert checks.closed_solid([leg]).passed
    assert leg.bounds[0] == pytest.approx([0.475, 0.175, 0.0])  # world coordinates
    assert "only 8 vertices" in fails(tools.add_mesh, scene_ctx, name="Bad", vertices=LEG["vertices"], faces=[[0, 1, 8]])
    too_many = fails(tools.add_mesh, scene_ctx, name="Big", vertices=[[0, 0, 0]] * 100_001, faces=[[0, 1, 2]])
    assert "at most 100,000 vertices per call" in too_many
    assert "repeats a vertex" in fails(tools.add_mesh, scene_ctx, name="Bad", vertices=LEG["vertices"], faces=[[0, 1, 1]])
    open_top = call(tools.add_mesh, scene_ctx, name="Open", vertices=LEG["vertices"], faces=LEG["faces"][:-1])
    assert open_top.data["non_manifold_edges"] == 4 and "not a closed solid" in open_top.output


def test_transform_and_apply_scale(scene_ctx):
    call(tools.add_primitive, scene_ctx, name="Board", kind="cube", size=[1, 1, 1])
    out = call(tools.transform, scene_ctx, name="Board", dimensions=[0.8, 0.3, 0.02], location=[0, 0, 1], rotation_deg=[0, 0, 90])
    assert out.data["before"]["dimensions"] == [1, 1, 1]
    assert out.data["after"]["scale"] == pytest.approx([0.8, 0.3, 0.02])
    applied = call(tools.apply_scale, scene_ctx, name="Board")
    assert applied.data["after"]["scale"] == [1, 1, 1]
    assert applied.data["after"]["dimensions"] == pytest.approx([0.8, 0.3, 0.02])
    board = scene_meshes(scene_ctx)["Board"][0]
    assert board.extents == pytest.approx([0.3, 0.8, 0.02], abs=1e-5)  # rotated 90 degrees about z
    moved = call(tools.transform, scene_ctx, name="Board", translate=[0.1, 0, 0])
    assert moved.data["after"]["location"] == pytest.approx([0.1, 0, 1])


def test_modifiers_change_the_evaluated_mesh(scene_ctx):
    call(tools.add_primitive, scene_ctx, name="Top", kind="cube", size=[1.2, 0.6, 0.04])
    bevel = call(tools.add_modifier, scene_ctx, name="Top", kind="bevel", width=0.004, segments=2)
    assert bevel.data["faces_after"] > bevel.data["faces_before"] == 6
    call(tools.add_primitive, scene_ctx, name="Slat", kind="cube", size=[0.1, 0.02, 0.02])
    array = call(tools.add_modifier, scene_ctx, name="Slat", kind="array", count=3, offset=[0, 0.05, 0])
    assert array.data["faces_after"] == 18
    call(tools.add_primitive, scene_ctx, name="Half", kind="cube", size=[0.1, 0.1, 0.1], location=[0.2, 0, 0])
    mirror = call(tools.add_modifier, scene_ctx, name="Half", kind="mirror", axes=["x"], object="Top")  # across Top's origin
    assert mirror.data["faces_after"] == 12
    call(tools.add_primitive, scene_ctx, name="Sheet", kind="plane", size=[0.5, 0.5], location=[0, 2, 0])
    call(tools.add_modifier, scene_ctx, name="Sheet", kind="solidify", thickness=0.01)
    call(tools.add_primitive, scene_ctx, name="Blob", kind="cube", size=[0.2, 0.2, 0.2], location=[0, -2, 0])
    assert call(tools.add_modifier, scene_ctx, name="Blob", kind="subdivision", levels=2).data["faces_after"] == 96
    meshes = scene_meshes(scene_ctx)
    assert checks.closed_solid([meshes["Top"][0]]).passed
    assert checks.dimensions(meshes["Top"][0], [1.2, 0.6, 0.04], 1e-4).passed  # bevel keeps the size
    assert checks.bodies([meshes["Slat"][0]], 3).passed
    assert checks.bodies([meshes["Half"][0]], 2).passed  # the copy lies at x = -0.2
    assert checks.closed_solid([meshes["Sheet"][0]]).passed  # a plane made solid
    assert meshes["Sheet"][0].extents[2] == pytest.approx(0.01)


def test_boolean_difference_makes_a_closed_cup_and_hides_the_cutter(scene_ctx):
    call(tools.add_primitive, scene_ctx, name="Cup", kind="cylinder", radius=0.04, depth=0.1, location=[0, 0, 0.05])
    call(tools.add_primitive, scene_ctx, name="Cutter", kind="cylinder", radius=0.034, depth=0.1, location=[0, 0, 0.065])
    out = call(tools.add_modifier, scene_ctx, name="Cup", kind="boolean", object="Cutter", operation="difference")
    assert out.data["faces_after"] > out.data["faces_before"]
    meshes = scene_meshes(scene_ctx)
    assert "Cutter" not in meshes  # hidden from renders and checks
    cup = meshes["Cup"][0]
    assert checks.closed_solid([cup]).passed and checks.bodies([cup], 1).passed
    outer, inner = np.pi * 0.04**2 * 0.1, np.pi * 0.034**2 * 0.085
    assert cup.volume == pytest.approx(outer - inner, rel=0.02)


def test_boolean_on_a_non_manifold_mesh_is_refused(scene_ctx):
    call(tools.add_primitive, scene_ctx, name="Block", kind="cube", size=[1, 1, 1])
    call(tools.add_mesh, scene_ctx, name="Open", vertices=LEG["vertices"], faces=LEG["faces"][:-1])
    message = fails(tools.add_modifier, scene_ctx, name="Block", kind="boolean", object="Open")
    assert "closed solids" in message and "'Open' has 4 non-manifold edges" in message
    assert "needs object" in fails(tools.add_modifier, scene_ctx, name="Block", kind="boolean")
    assert call(tools.inspect_scene, scene_ctx).data["objects"][0]["modifiers"] == []  # nothing was added


def test_materials_presets_colours_faces_and_clear_refusals(scene_ctx):
    call(tools.add_primitive, scene_ctx, name="Top", kind="cube", size=[1, 1, 0.1])
    missing = fails(tools.set_material, scene_ctx, object="Top", material="Unobtainium")
    assert "material 'Unobtainium' does not exist" in missing and "oak" in missing
    assert "no material preset 'mahogany'" in fails(tools.set_material, scene_ctx, object="Top", material="M", preset="mahogany")
    assert "no object named 'Nope'" in fails(tools.set_material, scene_ctx, object="Nope", material="Oak", preset="oak")
    created = call(tools.set_material, scene_ctx, object="Top", material="Oak", preset="oak", roughness=0.4)
    assert created.data["created"] and created.data["settings"]["roughness"] == 0.4
    painted = call(tools.set_material, scene_ctx, object="Top", material="Red", base_color=[0.8, 0.05, 0.05], faces=[0, 1])
    assert painted.data["faces"] == 2
    assert "face index 6 does not exist" in fails(tools.set_material, scene_ctx, object="Top", material="Red", faces=[6])
    reused = call(tools.set_material, scene_ctx, object="Top", material="Oak", faces=[0])  # exists: no preset needed
    assert not reused.data["created"]
    mesh, slots = scene_meshes(scene_ctx)["Top"]
    assert slots == ["Oak", "Red"]
    assert mesh.metadata["faces_per_slot"] == [10, 2]  # triangles: 5 quads oak, 1 quad red
    call(tools.transform, scene_ctx, name="Top", rotation_deg=[180, 0, 0])  # upside down: its -z face now faces up
    top = call(tools.set_material, scene_ctx, object="Top", material="Steel", preset="steel", faces_facing="+z")
    assert top.data["faces"] == 1
    mesh, slots = scene_meshes(scene_ctx)["Top"]
    up = mesh.face_normals[:, 2] > 0.9
    steel = slots.index("Steel")
    assert up.sum() == 2 and set(np.load(scene_ctx.scratch / "m" / "0.npz")["material_index"][up]) == {steel}
    assert "not both" in fails(tools.set_material, scene_ctx, object="Top", material="Steel", faces=[0], faces_facing="+z")


def test_lights_camera_render_and_inspect_pages(scene_ctx):
    call(tools.add_primitive, scene_ctx, name="Thing", kind="uv_sphere", radius=0.5, location=[0, 0, 0.5])
    light = call(tools.add_light, scene_ctx, name="Key", kind="area", location=[2, -2, 3], target=[0, 0, 0.5], energy=500)
    assert light.data["added"]["light"]["energy_w"] == 500
    assert "no camera" in fails(tools.render_preview, scene_ctx, width=32, height=24, samples=1)
    call(tools.set_camera, scene_ctx, location=[3, -3, 2], target=[0, 0, 0.5], lens_mm=50)
    out = call(tools.render_preview, scene_ctx, path="renders/p.png", width=64, height=48, samples=2)
    png = scene_ctx.workspace / "renders" / "p.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out.data["mean_brightness"] > 0.02  # lit, not black
    assert "outside the repository" in fails(tools.render_preview, scene_ctx, path="../x.png")
    for i in range(4):
        call(tools.add_primitive, scene_ctx, name=f"Box{i}", kind="cube", size=[0.1, 0.1, 0.1])
    page = call(tools.inspect_scene, scene_ctx, offset=0, limit=3)
    assert page.data["total"] == 7 and [o["name"] for o in page.data["objects"]] == ["Box0", "Box1", "Box2"]
    assert "offset=3" in page.output
    rest = call(tools.inspect_scene, scene_ctx, offset=6, limit=3)
    assert [o["name"] for o in rest.data["objects"]] == ["Thing"]


def test_exports_load_back_with_the_same_geometry(scene_ctx):
    call(tools.add_primitive, scene_ctx, name="Box", kind="cube", size=[0.4, 0.2, 0.1], location=[1, 0, 0])
    call(tools.add_modifier, scene_ctx, name="Box", kind="bevel", width=0.01)
    for fmt, path in (("stl", "out/box.stl"), ("obj", "out/box.obj"), ("gltf", "out/box.glb")):
        out = call(tools.export_scene, scene_ctx, format=fmt, path=path)
        assert out.data["bytes"] > 0
        mesh = checks.combine(checks.load_parts(scene_ctx.workspace / path))
        assert sorted(mesh.extents) == pytest.approx(sorted([0.4, 0.2, 0.1]), abs=1e-4), fmt  # glTF is y-up
        assert checks.closed_solid([mesh]).passed, fmt
    copy = call(tools.export_scene, scene_ctx, format="blend", path="out/copy.blend")
    assert (scene_ctx.workspace / "out" / "copy.blend").stat().st_size == copy.data["bytes"]
    assert "ending in .glb" in fails(tools.export_scene, scene_ctx, format="gltf", path="out/box.stl")
    assert "working scene file" in fails(tools.export_scene, scene_ctx, format="blend", path="scene.blend")


def test_raw_python_is_off_unless_enabled_and_runs_in_the_sandbox(scene_ctx, monkeypatch):
    assert "run_blender_python" not in [t.name for t in tools.threed_tools()]
    assert "disabled" in fails(tools.run_blender_python, scene_ctx, code="print(1)")
    monkeypatch.setenv(tools.PYTHON_ENV, "1")
    assert "run_blender_python" in [t.name for t in tools.threed_tools()]
    call(tools.add_primitive, scene_ctx, name="Keep", kind="cube", size=[1, 1, 1])
    code = "bpy.data.objects['Keep'].location.z = 2.5\nprint('moved', bpy.data.objects['Keep'].location.z)\n"
    out = call(tools.run_blender_python, scene_ctx, code=code)
    assert "moved 2.5" in out.output
    assert call(tools.inspect_scene, scene_ctx).data["objects"][0]["location"] == [0, 0, 2.5]  # the worker reloaded it
    escape = tools.run_blender_python({"code": "bpy.data.objects['Keep'].location.z = 9\nopen('/etc/horizon-escape', 'w')"}, scene_ctx)
    assert escape.is_error and "Read-only file system" in escape.output  # the host is read-only in the sandbox
    assert not Path("/etc/horizon-escape").exists()
    assert call(tools.inspect_scene, scene_ctx).data["objects"][0]["location"] == [0, 0, 2.5]


def test_export_of_a_cube_matches_trimesh_box(scene_ctx):
    call(tools.add_primitive, scene_ctx, name="Unit", kind="cube", size=[1, 1, 1])
    call(tools.export_scene, scene_ctx, format="stl", path="unit.stl")
    mesh = checks.combine(checks.load_parts(scene_ctx.workspace / "unit.stl"))
    assert checks.chamfer_distance(mesh, trimesh.creation.box([1, 1, 1]), samples=2000) < 0.02


def _dark_box_scene(scene_ctx):
    """A black world with no light, a camera looking at the origin from -Y."""
    call(tools.set_world, scene_ctx, color=[0, 0, 0], strength=0.0)
    call(tools.set_camera, scene_ctx, location=[0, -3, 0], target=[0, 0, 0], lens_mm=50)


def test_emission_makes_a_bulb_glow_in_a_dark_scene(scene_ctx):
    _dark_box_scene(scene_ctx)
    call(tools.add_primitive, scene_ctx, name="Bulb", kind="uv_sphere", radius=0.5)
    dull = call(tools.set_material, scene_ctx, object="Bulb", material="Dull", base_color=[1, 1, 1])
    assert dull.data["material_now"]["emission_strength"] == 0.0
    dark = call(tools.render_preview, scene_ctx, path="renders/dark.png", width=32, height=24, samples=2)
    lit = call(tools.set_material, scene_ctx, object="Bulb", material="Bulb", preset="bulb")
    now = lit.data["material_now"]  # read back from the material's Principled BSDF
    assert now["emission_strength"] == 12.0 and now["emission_color"] == [1.0, 0.62, 0.3] and now["translucency"] == 0.0
    glowing = call(tools.render_preview, scene_ctx, path="renders/glow.png", width=32, height=24, samples=2)
    assert dark.data["mean_brightness"] < 0.01 and glowing.data["mean_brightness"] > 0.1
    # a colour alone glows at strength 1 (Blender's default strength 0 would not glow)
    green = call(tools.set_material, scene_ctx, object="Bulb", material="Bulb", emission_color=[0, 1, 0])
    assert green.data["material_now"]["emission_strength"] == 1.0 and green.data["material_now"]["emission_color"] == [0, 1, 0]
    glow = call(tm.set_surface, scene_ctx, objects=["Bulb"], material="Glaze", preset="ceramic", emission_strength=5.0)
    assert glow.data["material_now"]["emission_strength"] == 5.0 and glow.data["material_now"]["emission_color"] == [1, 1, 1]


def test_fabric_lets_a_light_behind_it_through_and_glass_it_is_not(scene_ctx):
    """A lampshade sheet between the camera and a light behind it: cloth (translucent) shows the
    light through it, diffusely; the same sheet opaque is dark; fabric has no glass transmission."""
    _dark_box_scene(scene_ctx)
    call(tools.add_primitive, scene_ctx, name="Shade", kind="cube", size=[3, 0.01, 3])
    call(tools.add_light, scene_ctx, name="Behind", kind="point", location=[0, 1, 0], energy=200)
    opaque = call(tools.set_material, scene_ctx, object="Shade", material="Felt", preset="fabric_grey")
    assert opaque.data["material_now"]["translucency"] == 0.0
    dark = call(tools.render_preview, scene_ctx, path="renders/felt.png", width=32, height=24, samples=4)
    cloth = call(tools.set_material, scene_ctx, object="Shade", material="Linen", preset="fabric_shade")
    now = cloth.data["material_now"]
    assert now["translucency"] == 0.45 and now["transmission"] == 0.0 and now["roughness"] == 1.0 and now["sheen"] == 0.5
    through = call(tools.render_preview, scene_ctx, path="renders/linen.png", width=32, height=24, samples=4)
    assert dark.data["mean_brightness"] < 0.01 and through.data["mean_brightness"] > 0.05
    less = call(tools.set_material, scene_ctx, object="Shade", material="Linen", translucency=0.1)
    assert less.data["material_now"]["translucency"] == 0.1
    woven = call(tm.set_surface, scene_ctx, objects=["Shade"], material="Woven", preset="fabric", color=[0.9, 0.9, 0.8])
    assert woven.data["material_now"]["translucency"] == 0.45 and woven.data["material_now"]["transmission"] == 0.0
    woven_through = call(tools.render_preview, scene_ctx, path="renders/woven.png", width=32, height=24, samples=4)
    assert woven_through.data["mean_brightness"] > 0.05
