"""The artist's toolset (``tools_modelling``) on real Blender scenes: each tool changes the scene
as it says, measured back from Blender (mesh_data, inspect_scene, ray-cast views, renders)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh
from PIL import Image

from plugins.threed import tools
from plugins.threed import tools_modelling as tm
from plugins.threed.reward import load_scene_meshes
from tests.plugins.threed.tool_calls import call, fails


def exported(scene_ctx, relations=False):
    return tools.worker(scene_ctx).call("mesh_data", {"folder": str(scene_ctx.scratch / "m"), "relations": relations}, save=False)


def meshes(scene_ctx):
    return load_scene_meshes(exported(scene_ctx))


def objects(scene_ctx):
    return {o["name"]: o for o in call(tools.inspect_scene, scene_ctx, limit=200).data["objects"]}


def cube(scene_ctx, name, size=(0.2, 0.2, 0.2), location=(0, 0, 0.1)):
    call(tools.add_primitive, scene_ctx, name=name, kind="cube", size=list(size), location=list(location))


# -- duplicate, join, parent, apply, shade -------------------------------------------------


def test_duplicate_by_count_and_by_offsets_makes_independent_copies(scene_ctx):
    cube(scene_ctx, "Leg", (0.04, 0.04, 0.4), (0, 0, 0.2))
    out = call(tm.duplicate, scene_ctx, name="Leg", count=2, offset=[0.5, 0, 0])
    assert [c["name"] for c in out.data["copies"]] == ["Leg.001", "Leg.002"]
    call(tm.duplicate, scene_ctx, name="Leg", offsets=[[0, 0.3, 0], [0.5, 0.3, 0]], names=["Leg.B1", "Leg.B2"])
    found = objects(scene_ctx)
    assert found["Leg.002"]["location"] == [1.0, 0.0, 0.2] and found["Leg.B2"]["location"] == [0.5, 0.3, 0.2]
    call(tools.transform, scene_ctx, name="Leg.B1", dimensions=[0.04, 0.04, 0.2])  # unlinked: the others keep 0.4 m
    found = objects(scene_ctx)
    assert found["Leg.B1"]["dimensions"][2] == pytest.approx(0.2) and found["Leg"]["dimensions"][2] == pytest.approx(0.4)
    assert "one name per copy" in fails(tm.duplicate, scene_ctx, name="Leg", count=2, names=["A"])
    assert "already exists" in fails(tm.duplicate, scene_ctx, name="Leg", names=["Leg.B1"])


def test_join_merges_meshes_and_refuses_live_modifiers(scene_ctx):
    cube(scene_ctx, "A")
    cube(scene_ctx, "B", location=(0.5, 0, 0.1))
    cube(scene_ctx, "C", location=(1.0, 0, 0.1))
    call(tools.add_modifier, scene_ctx, name="C", kind="bevel", width=0.01)
    assert "apply_modifier" in fails(tm.join, scene_ctx, into="A", objects=["B", "C"])
    out = call(tm.join, scene_ctx, into="A", objects=["A", "B"])
    assert out.data["joined"] == ["B"] and out.data["after"]["faces"] == 12
    found = meshes(scene_ctx)
    assert "B" not in found
    mesh = found["A"][0]
    assert mesh.bounds[1][0] - mesh.bounds[0][0] == pytest.approx(0.7)  # both cubes, in world space


def test_parent_keeps_the_world_transform_and_then_carries_the_child(scene_ctx):
    cube(scene_ctx, "Seat", location=(1, 0, 0.5))
    call(tools.transform, scene_ctx, name="Seat", rotation_deg=[0, 0, 90])
    cube(scene_ctx, "Back", location=(1, 0.3, 0.8))
    call(tm.parent, scene_ctx, parent="Seat", children=["Back"])
    assert objects(scene_ctx)["Back"]["dimensions"] == [0.2, 0.2, 0.2]
    before = meshes(scene_ctx)["Back"][0].bounds.mean(axis=0)
    assert before == pytest.approx([1, 0.3, 0.8], abs=1e-6)  # it did not jump
    call(tools.transform, scene_ctx, name="Seat", translate=[0, 0, 1])
    assert meshes(scene_ctx)["Back"][0].bounds.mean(axis=0) == pytest.approx([1, 0.3, 1.8], abs=1e-6)
    assert "loop" in fails(tm.parent, scene_ctx, parent="Back", children=["Seat"])


def test_apply_modifier_bakes_it_into_the_mesh(scene_ctx):
    cube(scene_ctx, "Top", (1.0, 0.5, 0.04), (0, 0, 0.5))
    call(tools.add_modifier, scene_ctx, name="Top", kind="bevel", width=0.005, segments=3)
    call(tools.add_modifier, scene_ctx, name="Top", kind="array", count=2, offset=[0, 0, 0.1])
    assert "no modifier 'Bend'" in fails(tm.apply_modifier, scene_ctx, name="Top", modifier="Bend")
    one = call(tm.apply_modifier, scene_ctx, name="Top", modifier="Bevel")
    assert one.data["applied"] == ["Bevel"] and one.data["remaining"] == ["Array"]
    rest = call(tm.apply_modifier, scene_ctx, name="Top")
    assert rest.data["remaining"] == [] and rest.data["after"]["modifiers"] == []
    assert rest.data["after"]["faces"] == 2 * 98 and rest.data["non_manifold_edges"] == 0
    assert "no modifiers" in fails(tm.apply_modifier, scene_ctx, name="Top")


def test_shade_smooth_keeps_edges_over_the_angle_sharp(scene_ctx):
    cube(scene_ctx, "Box")
    call(tools.add_primitive, scene_ctx, name="Can", kind="cylinder", radius=0.1, depth=0.2, segments=64)
    out = call(tm.shade_smooth, scene_ctx, objects=["Box", "Can"], angle_deg=30).data["shading"]
    assert out["Box"]["smooth_faces"] == 6 and out["Box"]["sharp_edges"] == 12  # every cube edge is 90 degrees
    assert out["Can"]["sharp_edges"] == 2 * 64  # only the rims; the 5.6-degree side edges are smooth
    every = call(tm.shade_smooth, scene_ctx, objects=["Box"], angle_deg=None).data["shading"]["Box"]
    assert every["sharp_edges"] == 0
    flat = call(tm.shade_smooth, scene_ctx, objects=["Box"], smooth=False).data["shading"]["Box"]
    assert flat["smooth_faces"] == 0


# -- lathe, pipe ---------------------------------------------------------------------------

MUG = [[0, 0], [0.04, 0], [0.04, 0.1], [0.035, 0.1], [0.035, 0.006], [0, 0.006]]


def test_lathe_makes_a_hollow_closed_mug_of_the_right_volume(scene_ctx):
    out = call(tm.lathe, scene_ctx, name="Body", profile=MUG, segments=256)
    assert out.data["closed_solid"] and out.data["added"]["dimensions"] == pytest.approx([0.08, 0.08, 0.1], abs=1e-4)
    mesh = meshes(scene_ctx)["Body"][0]
    assert mesh.is_volume
    wall = math.pi * (0.04**2 * 0.1 - 0.035**2 * 0.094)  # outer cylinder minus the cavity
    assert mesh.volume == pytest.approx(wall, rel=0.01)
    open_ring = call(tm.lathe, scene_ctx, name="Ring", profile=[[0.05, 0], [0.05, 0.02]], segments=16)
    assert not open_ring.data["closed_solid"] and "open surface" in open_ring.output
    torus = call(tm.lathe, scene_ctx, name="Donut", profile=[[0.1, 0], [0.12, 0], [0.12, 0.02], [0.1, 0.02]], closed=True, segments=32)
    assert torus.data["closed_solid"]
    assert "r must be >= 0" in fails(tm.lathe, scene_ctx, name="Bad", profile=[[-0.1, 0], [0.1, 0.1]])
    assert "on the axis" in fails(tm.lathe, scene_ctx, name="Bad", profile=[[0, 0], [0, 0.1]])


def test_pipe_is_a_closed_tube_of_the_given_radius(scene_ctx):
    out = call(tm.pipe, scene_ctx, name="Rod", points=[[0, 0, 0], [0, 0, 1]], radius=0.05, smooth=False)
    assert out.data["closed_solid"]
    mesh = meshes(scene_ctx)["Rod"][0]
    assert mesh.is_volume and mesh.extents == pytest.approx([0.1, 0.1, 1.0], rel=0.01)
    sides = 4 + 2 * 4  # the default bevel_resolution: a 12-sided cross-section
    area = sides / 2 * 0.05**2 * math.sin(2 * math.pi / sides)
    assert mesh.volume == pytest.approx(area * 1.0, rel=0.01)
    handle = call(tm.pipe, scene_ctx, name="Handle", radius=0.005,
                  points=[[0.039, 0, 0.08], [0.06, 0, 0.085], [0.07, 0, 0.055], [0.06, 0, 0.03], [0.039, 0, 0.027]])
    assert handle.data["closed_solid"] and handle.data["added"]["dimensions"][1] == pytest.approx(0.01, abs=1e-4)
    assert "the same" in fails(tm.pipe, scene_ctx, name="Bad", radius=0.01, points=[[0, 0, 0], [0, 0, 0]])


# -- surfaces, light, camera ---------------------------------------------------------------


def test_uv_unwrap_and_image_texture_from_the_workspace(scene_ctx):
    cube(scene_ctx, "Box")
    call(tools.add_light, scene_ctx, name="Key", kind="sun", location=[0, 0, 3], target=[0, 0, 0], energy=3)
    call(tools.set_camera, scene_ctx, location=[1, -1, 1], target=[0, 0, 0.1])
    call(tools.render_preview, scene_ctx, path="tex/label.png", width=32, height=24, samples=1)
    assert "no UV map" in fails(tm.set_surface, scene_ctx, objects=["Box"], material="Label", preset="image", image_path="tex/label.png")
    uv = call(tm.uv_unwrap, scene_ctx, objects=["Box"]).data["uv_area"]["Box"]
    assert 0.3 < uv <= 1.0  # six islands packed into the unit square
    out = call(tm.set_surface, scene_ctx, objects=["Box"], material="Label", preset="image", image_path="tex/label.png")
    assert out.data["settings"]["size"] == [32, 24]
    assert "does not exist" in fails(tm.set_surface, scene_ctx, objects=["Box"], material="L2", preset="image", image_path="tex/none.png")
    assert "outside" in fails(tm.set_surface, scene_ctx, objects=["Box"], material="L3", preset="image", image_path="../x.png")
    assert "image_path goes with" in fails(tm.set_surface, scene_ctx, objects=["Box"], material="L4", preset="oak", image_path="tex/label.png")


def test_one_material_on_several_objects_and_oak_renders_brown(scene_ctx):
    cube(scene_ctx, "Board", (0.6, 0.3, 0.03), (0, 0, 0.015))
    cube(scene_ctx, "Block", (0.1, 0.1, 0.1), (0.5, 0, 0.05))
    call(tm.set_surface, scene_ctx, objects=["Board", "Block"], material="Oak", preset="oak")
    assert {name: slots for name, (_, slots) in meshes(scene_ctx).items()} == {"Board": ["Oak"], "Block": ["Oak"]}
    call(tm.light_preset, scene_ctx, preset="three_point", objects=["Board"])
    call(tm.frame_camera, scene_ctx, objects=["Board"], elevation_deg=60, margin=0.0, width=48, height=36)
    call(tools.render_preview, scene_ctx, path="r/oak.png", width=48, height=36, samples=4)
    pixels = np.asarray(Image.open(scene_ctx.workspace / "r" / "oak.png").convert("RGB"), dtype=float)
    r, g, b = pixels[12:24, 16:32].reshape(-1, 3).mean(axis=0)  # the middle of the board
    assert r > g * 1.15 > b * 1.3, (r, g, b)  # a warm brown, not grey or beech-pale


def test_light_presets_replace_each_other_and_the_backdrop_is_seamless(scene_ctx):
    call(tools.add_primitive, scene_ctx, name="Vase", kind="cylinder", radius=0.05, depth=0.3, location=[0, 0, 0.15])
    out = call(tm.light_preset, scene_ctx, preset="studio")
    assert [o["name"] for o in out.data["added"]] == ["Backdrop", "Softbox", "Key", "Fill"]
    backdrop = meshes(scene_ctx)["Backdrop"][0]
    assert backdrop.is_volume and backdrop.body_count == 1
    top = backdrop.vertices[backdrop.vertices[:, 1] < -0.2]  # the floor part in front of the vase
    assert top[:, 2].max() == pytest.approx(0.0, abs=1e-6)  # flush with the vase's base, the slab below
    # no horizon line: faces joined at under 10 degrees lead from the floor in front of the vase to the wall's top
    smooth = backdrop.face_adjacency[np.degrees(backdrop.face_adjacency_angles) < 10]
    floor = int(np.argmin(np.where(backdrop.face_normals[:, 2] > 0.99, np.linalg.norm(backdrop.triangles_center[:, :2] - [0, -0.3], axis=1), np.inf)))
    sheet = next(set(c) for c in trimesh.graph.connected_components(smooth, nodes=np.arange(len(backdrop.faces))) if floor in c)
    assert backdrop.triangles_center[list(sheet), 2].max() > 0.5  # up the wall, past the 0.2 m sweep
    again = call(tm.light_preset, scene_ctx, preset="sun_sky")
    assert set(again.data["removed"]) == {"Backdrop", "Softbox", "Key", "Fill"}
    lights = [o for o in objects(scene_ctx).values() if o["type"] == "light"]
    assert [o["name"] for o in lights] == ["Sun"] and "Ground" in objects(scene_ctx)
    back = call(tm.light_preset, scene_ctx, preset="three_point")
    assert set(back.data["removed"]) == {"Sun", "Ground"}
    assert sorted(o["name"] for o in objects(scene_ctx).values() if o["type"] == "light") == ["Fill", "Key", "Rim"]


def test_frame_camera_fits_the_box_with_the_margin_centred(scene_ctx):
    cube(scene_ctx, "Box", (0.4, 0.2, 0.6), (1, 2, 0.3))
    cube(scene_ctx, "Other", (0.1, 0.1, 0.1), (-3, 0, 0.05))
    out = call(tm.frame_camera, scene_ctx, objects=["Box"], azimuth_deg=-30, elevation_deg=25, lens_mm=35, margin=0.1, width=96, height=72)
    assert max(out.data["frame_filled"].values()) == pytest.approx(0.8, abs=0.005)
    view = exported(scene_ctx, relations=True)["view"]
    depth = np.load(view["file"])["depth"]  # (objects sorted by name, rows, columns)
    rows, cols = np.nonzero(np.isfinite(depth[0]))  # "Box"
    h, w = depth.shape[1:]
    left, right, top, bottom = cols.min(), w - 1 - cols.max(), rows.min(), h - 1 - rows.max()
    assert abs(left - right) <= 2 and abs(top - bottom) <= 2  # centred
    tightest = min((left + right) / w, (top + bottom) / h)
    assert tightest == pytest.approx(0.2, abs=0.04)  # 10% empty on each side of the tightest axis
    assert not np.isfinite(depth[1]).any()  # "Other" is out of the shot
    assert "nothing to light or frame" not in call(tm.frame_camera, scene_ctx).output


def test_frame_camera_leaves_out_the_default_cube_the_scene_started_with(ctx):
    """A run on Blender's default scene (Cube, Camera, Light): the camera frames the lamp the run
    built, not the artist's cube 3 m away, unless include_existing; named objects are framed as asked."""
    import subprocess
    import sys

    code = ("import bpy, sys; bpy.ops.wm.read_homefile(use_empty=False, use_factory_startup=True); "
            "bpy.ops.wm.save_as_mainfile(filepath=sys.argv[1])")
    subprocess.run([sys.executable, "-c", code, str(ctx.workspace / "scene.blend")], check=True, capture_output=True, timeout=120)
    assert set(objects(ctx)) == {"Cube", "Camera", "Light"}
    cube(ctx, "Lamp", (0.2, 0.2, 0.5), (3, 0, 0.25))
    built = call(tm.frame_camera, ctx)
    assert built.data["left_out"] == ["Cube"] and "left out what the scene started with: Cube" in built.output
    assert built.data["subject"] == {"min": [2.9, -0.1, 0.0], "max": [3.1, 0.1, 0.5]}
    everything = call(tm.frame_camera, ctx, include_existing=True)
    assert everything.data["left_out"] == [] and everything.data["subject"]["min"] == [-1.0, -1.0, -1.0]
    named = call(tm.frame_camera, ctx, objects=["Cube"])
    assert named.data["subject"]["max"] == [1.0, 1.0, 1.0] and named.data["left_out"] == []
    tools.close_worker(ctx)  # a restarted worker reopens the saved scene: the Lamp is still the run's, not the start's
    again = call(tm.frame_camera, ctx)
    assert again.data["left_out"] == ["Cube"] and again.data["subject"]["max"] == [3.1, 0.1, 0.5]


#: A hollow wine glass's cross-section from 12 points: foot, stem, bowl outside, rim, bowl inside.
GLASS = [[0, 0], [0.035, 0], [0.035, 0.004], [0.005, 0.012], [0.004, 0.08], [0.03, 0.1], [0.042, 0.14], [0.038, 0.19],
         [0.036, 0.19], [0.04, 0.14], [0.028, 0.104], [0, 0.096]]
GLASS_SHARP = [1, 2, 3, 7, 8]  # the foot's edge, the stem's foot, the rim


def _bowl_kink_deg(mesh, axis_x=0.0):
    """The profile's sharpest turn on the bowl (0.105 < z < 0.185), in degrees: the largest change
    of the faces' slope (their normal in the r-z plane) across an edge along a ring (both ends at
    one height), so the faces' angle around the axis does not count."""
    centres, normals = mesh.triangles_center, mesh.face_normals
    radial = centres[:, :2] - [axis_x, 0.0]
    radial /= np.linalg.norm(radial, axis=1, keepdims=True)
    slope = np.arctan2(normals[:, 2], np.sum(normals[:, :2] * radial, axis=1))
    edges = mesh.vertices[mesh.face_adjacency_edges]  # (pairs, 2 ends, xyz)
    ring = np.abs(edges[:, 0, 2] - edges[:, 1, 2]) < 1e-7
    pairs = mesh.face_adjacency[ring]
    bowl = np.all((centres[pairs][:, :, 2] > 0.105) & (centres[pairs][:, :, 2] < 0.185), axis=1)
    turn = np.abs(np.angle(np.exp(1j * (slope[pairs[bowl, 0]] - slope[pairs[bowl, 1]]))))
    return float(np.degrees(turn.max()))


def test_lathe_smooth_turns_a_few_points_into_a_smooth_closed_bowl(scene_ctx):
    segments = 64
    sharp = call(tm.lathe, scene_ctx, name="Polyline", profile=GLASS, segments=segments)
    smooth = call(tm.lathe, scene_ctx, name="Glass", profile=GLASS, segments=segments, smooth=8, sharp=GLASS_SHARP,
                  location=[0.2, 0, 0])
    assert sharp.data["closed_solid"] and smooth.data["closed_solid"]
    assert smooth.data["profile_points"] == {"given": 12, "revolved": 89}  # 11 segments x 8 + the last point
    got = meshes(scene_ctx)
    poly, glass = got["Polyline"][0], got["Glass"][0]
    assert glass.is_volume and len(glass.vertices) == (89 - 2) * segments + 2  # two poles on the axis
    assert len(glass.vertices) > 7 * len(poly.vertices)
    # no kink: the smooth profile's sharpest turn halves when its steps do (a curve); a polyline's stays
    call(tm.lathe, scene_ctx, name="Finer", profile=GLASS, segments=segments, smooth=16, sharp=GLASS_SHARP, location=[0.4, 0, 0])
    finer = meshes(scene_ctx)["Finer"][0]
    turns = _bowl_kink_deg(poly), _bowl_kink_deg(glass, axis_x=0.2), _bowl_kink_deg(finer, axis_x=0.4)
    assert turns[0] > 20 and turns[1] < turns[0] / 2 and turns[2] < 0.6 * turns[1], turns
    # a spline through the points: it bulges past them by under a millimetre; the height is kept exactly
    assert glass.extents == pytest.approx(poly.extents, abs=1e-3) and glass.extents[2] == pytest.approx(0.19, abs=1e-6)
    assert glass.volume == pytest.approx(poly.volume, rel=0.1)
    assert "sharp index 12" in fails(tm.lathe, scene_ctx, name="Bad", profile=GLASS, smooth=8, sharp=[12])


def test_a_branching_pipe_is_a_second_pipe_unioned_into_the_first(scene_ctx):
    """The documented way to branch a pipe (the README): a second pipe starting inside the first,
    unioned with a boolean and applied: one closed solid, one body, the branch's volume added."""
    call(tm.pipe, scene_ctx, name="Main", points=[[0, 0, 0], [0, 0, 0.5], [0.1, 0, 0.8]], radius=0.02)
    call(tm.pipe, scene_ctx, name="Branch", points=[[0, 0, 0.3], [0.12, 0, 0.42], [0.2, 0, 0.45]], radius=0.012)
    main_alone = meshes(scene_ctx)["Main"][0].volume
    branch_alone = meshes(scene_ctx)["Branch"][0].volume
    call(tools.add_modifier, scene_ctx, name="Main", kind="boolean", object="Branch", operation="union")
    call(tm.apply_modifier, scene_ctx, name="Main")
    call(tools.delete_object, scene_ctx, name="Branch")
    tree = meshes(scene_ctx)["Main"][0]
    assert tree.is_volume and tree.body_count == 1
    assert main_alone < tree.volume < main_alone + branch_alone  # the branch's part inside the main tube counted once
    assert tree.extents[0] > 0.2  # the branch reaches out to x = 0.2 m
