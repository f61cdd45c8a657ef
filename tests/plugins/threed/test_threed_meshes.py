"""Mesh loading and topology checks on real files: the weld (merge by position within
``MERGE_DISTANCE_M`` metres), OBJ through trimesh's loader, malformed files as ``MeshFileError``,
and the admesh bad/good pairs and trimesh's broken models of ``../shared/data/meshes``."""

from __future__ import annotations

import struct

import numpy as np
import pytest
import trimesh

from plugins.threed import checks, meshfile
from tests.plugins.threed.mesh_files import back_to_back_triangles, l_prism_obj, notched_block_obj, seam_cube_obj, write_stl


def parts(meshes, name, **kw):
    return checks.load_parts(meshes / name, **kw)


# -- the weld --------------------------------------------------------------------------------


def test_uv_and_normal_seams_do_not_open_a_closed_mesh(tmp_path):
    path = seam_cube_obj(tmp_path / "seams.obj")
    split = trimesh.load(path, process=True)  # trimesh's own merge keeps UV/normal splits apart
    assert not split.is_watertight and len(split.vertices) > 8
    raw = trimesh.load(path, process=False)
    (cube,) = checks.load_parts(path)
    assert len(cube.vertices) == 8 and cube.metadata["merged_vertices"] == len(raw.vertices) - 8
    verdict = checks.closed_solid([cube])
    assert verdict.passed and verdict.detail["parts"][0]["boundary_edges"] == 0
    assert checks.bodies([cube], 1).passed


def test_a_real_uv_mapped_obj_is_one_closed_body(meshes):
    (knot,) = parts(meshes, "quadknot.obj")  # a torus knot of quads with UVs and normals: seams everywhere
    assert knot.metadata["merged_vertices"] > 1000
    assert checks.closed_solid([knot]).passed and checks.body_count(knot) == 1


@pytest.mark.parametrize("offset_m, closed", [(5e-6, True), (5e-5, False)])
def test_merge_distance_is_in_metres(tmp_path, offset_m, closed):
    box = trimesh.creation.box([0.1, 0.1, 0.1])
    triangles = box.vertices[box.faces].copy()
    triangles[0, 0] += offset_m  # one corner of one triangle, off by offset_m in x, y and z
    stl = write_stl(tmp_path / "box_m.stl", triangles)
    verdict = checks.closed_solid(checks.load_parts(stl))
    assert verdict.passed is closed
    if not closed:
        assert "open edges" in verdict.message
    # the same box written in millimetres: the distance still applies in metres after scaling
    mm = write_stl(tmp_path / "box_mm.stl", triangles * 1000)
    assert checks.closed_solid(checks.load_parts(mm, scale=0.001)).passed is closed


def test_an_exact_merge_is_not_enough_for_real_stl_files(meshes):
    # angle_block.STL has 46 corners that differ from their twins by about 1e-17: exact merging
    # leaves 166 open edges; the 10 µm weld closes it, as Blender's merge by distance does
    exact = checks.closed_solid(parts(meshes, "angle_block.STL", merge_distance_m=0.0))
    assert not exact.passed and "166 open edges" in exact.message
    (welded,) = parts(meshes, "angle_block.STL")
    assert welded.metadata["merged_nearby"] == 46 and checks.closed_solid([welded]).passed


def test_faces_collapsed_by_the_weld_are_dropped():
    box = trimesh.creation.box([1, 1, 1])
    sliver = len(box.vertices)
    vertices = np.vstack([box.vertices, box.vertices[0] + 1e-6])  # a vertex 1.7 µm from corner 0
    faces = np.vstack([box.faces, [[0, 1, sliver]]])  # a sliver triangle on it
    welded = checks.weld(trimesh.Trimesh(vertices, faces, process=False))
    assert welded.metadata["collapsed_faces"] == 1 and len(welded.faces) == 12
    assert checks.closed_solid([welded]).passed


def test_back_to_back_pairs_made_by_the_weld_are_dropped(tmp_path):
    # two sliver triangles 3 µm apart, wound opposite ways, across a closed box (a bevelled boolean's
    # leftovers): the weld makes them one vertex set twice, 4 faces on each of 3 edges
    path = write_stl(tmp_path / "slivers.stl", back_to_back_triangles())
    (mesh,) = checks.load_parts(path)
    assert mesh.metadata["back_to_back_pairs"] == 1 and len(mesh.faces) == 12
    verdict = checks.closed_solid([mesh])
    assert verdict.passed and verdict.detail["parts"][0]["back_to_back_pairs_dropped"] == 1
    assert "1 back-to-back face pair made by the weld dropped" in verdict.message
    assert verdict.detail["parts"][0]["volume_m3"] == pytest.approx(8e-6)
    # apart by more than the weld they are two thin slivers, kept: the box is non-manifold
    (apart,) = checks.load_parts(write_stl(tmp_path / "apart.stl", back_to_back_triangles(offset_m=1e-4)))
    assert apart.metadata["back_to_back_pairs"] == 0 and not checks.closed_solid([apart]).passed


def test_only_opposite_windings_pair_up():
    faces = np.array([[0, 1, 2], [2, 1, 0], [1, 2, 0], [0, 1, 2], [3, 4, 5], [4, 3, 5], [5, 4, 3], [6, 7, 8]])
    # set {0,1,2}: three forward, one backward -> one pair; set {3,4,5}: one forward, two backward -> one pair
    assert meshfile.back_to_back(faces).tolist() == [True, True, False, False, True, True, False, False]
    box = trimesh.creation.box([1, 1, 1])
    twice = checks.weld(trimesh.Trimesh(box.vertices, np.vstack([box.faces, box.faces[:1]]), process=False))
    assert twice.metadata["back_to_back_pairs"] == 0 and not checks.closed_solid([twice]).passed  # same winding: kept


def test_a_fan_over_a_notch_is_a_back_to_back_pair(tmp_path):
    # an L-shaped hexagon and the square in its notch, both listed from the notch's outer corner:
    # trimesh's fan of each draws one diagonal, and its triangles over the notch face each other,
    # 4 faces on that edge (the public closed OBJ of n-gons read as non-manifold)
    path = notched_block_obj(tmp_path / "notched.obj")
    fan = trimesh.load(path, process=False)
    assert checks.edge_counts(fan) == (0, 1) and meshfile.back_to_back(fan.faces).sum() == 2
    (block,) = checks.load_parts(path)
    assert block.metadata["ear_clipped_polygons"] == 1 and block.metadata["back_to_back_pairs"] == 0
    verdict = checks.closed_solid([block])
    assert verdict.passed and verdict.detail["parts"][0]["volume_m3"] == pytest.approx(4e-6)


def test_non_convex_ngons_are_ear_clipped(tmp_path):
    # the fan of an L listed from corner 2 has a backwards triangle over the notch, outside the L:
    # the surface (area, samples for the Chamfer distance) is wrong though the edges close
    (prism,) = checks.load_parts(l_prism_obj(tmp_path / "l.obj"))
    assert prism.metadata["ear_clipped_polygons"] == 2
    assert prism.area == pytest.approx(14e-4) and checks.closed_solid([prism]).passed
    caps = np.abs(prism.face_normals[:, 2]) > 0.5
    assert (prism.face_normals[caps, 2] * (prism.triangles_center[caps, 2] - 0.005) > 0).all()  # every cap triangle faces out


def test_convex_ngons_keep_trimeshs_fan(meshes):
    # quadknot.obj's quads are convex: nothing rewritten, the volume measured before stays
    (knot,) = parts(meshes, "quadknot.obj")
    assert knot.metadata["ear_clipped_polygons"] == 0
    assert checks.closed_solid([knot]).detail["parts"][0]["volume_m3"] == pytest.approx(1.05731e6, rel=1e-5)


def test_npz_exports_are_welded_and_checked(tmp_path):
    box = trimesh.creation.box([0.2, 0.3, 0.4])
    corners = box.vertices[box.faces].reshape(-1, 3)  # every triangle's own corners, as STL has them
    np.savez(tmp_path / "0.npz", vertices=corners, triangles=np.arange(len(corners)).reshape(-1, 3),
             material_index=np.zeros(12, dtype=np.int64))
    mesh = checks.load_npz(tmp_path / "0.npz")
    assert len(mesh.vertices) == 8 and checks.closed_solid([mesh]).passed
    np.savez(tmp_path / "1.npz", vertices=box.vertices, triangles=box.faces + 5)
    with pytest.raises(checks.MeshFileError, match="names a vertex that does not exist"):
        checks.load_npz(tmp_path / "1.npz")


# -- bodies ----------------------------------------------------------------------------------


def test_bodies_join_through_edges_of_more_than_two_faces(meshes):
    # not_convex.obj's boxes meet along 12 edges of four faces each; trimesh's face_adjacency
    # skips such edges and counted 10 bodies; Blender's linked faces and shells say 1
    (solid,) = parts(meshes, "not_convex.obj")
    assert checks.body_count(solid) == 1
    fan = trimesh.Trimesh([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1]], [[0, 1, 2], [1, 0, 3], [0, 1, 4]], process=False)
    assert checks.body_count(fan) == 1  # three triangles on one edge


def test_solids_touching_at_a_corner_are_two_bodies(tmp_path):
    a = trimesh.creation.box([1, 1, 1])
    b = a.copy()
    b.apply_translation([1, 1, 1])  # shares only the corner (0.5, 0.5, 0.5)
    stl = write_stl(tmp_path / "corner.stl", np.vstack([a.vertices[a.faces], b.vertices[b.faces]]))
    assert checks.bodies(checks.load_parts(stl), 2).passed


# -- the admesh pairs ------------------------------------------------------------------------


def test_fill_holes_pair(meshes):
    bad = checks.closed_solid(parts(meshes, "admesh/block-fill-holes-bad.stl"))
    assert not bad.passed and bad.message == "not a closed solid: 3 open edges (holes)"  # one facet missing
    good = checks.closed_solid(parts(meshes, "admesh/block-fill-holes-good.stl"))
    assert good.detail["parts"][0]["boundary_edges"] == 0  # the hole is filled ...
    assert not good.passed and "wound inconsistently" in good.message  # ... by a facet facing inwards


def test_nearby_pair(meshes):
    # One corner of one facet sits at (-1.868, 1.868, 1.868) instead of (-1.9685, ...): 0.174 away.
    # The "good" file, admesh's output, still has it (only printed with more digits), so both are
    # open at any merge distance below that, and closed above it.
    for name in ("admesh/block-nearby-bad.stl", "admesh/block-nearby-good.stl"):
        verdict = checks.closed_solid(parts(meshes, name))
        assert not verdict.passed and verdict.message == "not a closed solid: 4 open edges (holes)", name
        assert checks.closed_solid(parts(meshes, name, merge_distance_m=0.2)).passed, name


def test_normal_directions_pair(meshes):
    bad = checks.closed_solid(parts(meshes, "admesh/block-normal-directions-bad.stl"))
    assert not bad.passed and "wound inconsistently" in bad.message
    good = checks.closed_solid(parts(meshes, "admesh/block-normal-directions-good.stl"))
    assert not good.passed and "inside out (volume -61.0237 m³" in good.message  # consistent, every face inwards
    assert good.detail["parts"][0]["signed_volume_m3"] < 0


def test_remove_unconnected_pair(meshes):
    bad = parts(meshes, "admesh/block-remove-unconnected-bad.stl")
    assert checks.bodies(bad, 2).detail["bodies"] == 3  # two blocks and a stray facet
    assert "3 open edges" in checks.closed_solid(bad).message
    good = parts(meshes, "admesh/block-remove-unconnected-good.stl")
    assert checks.bodies(good, 2).passed and checks.closed_solid(good).passed


def test_hourglass_is_wound_inconsistently(meshes):
    verdict = checks.closed_solid(parts(meshes, "admesh/hourglass.stl"))
    assert not verdict.passed and verdict.message == "not a closed solid: faces wound inconsistently (some normals flipped)"
    assert verdict.detail["parts"][0]["boundary_edges"] == 0


# -- trimesh's broken and multi-object models ------------------------------------------------


def test_two_objects_obj_keeps_its_objects_apart(meshes):
    two = parts(meshes, "two_objects.obj")  # a cube and a tetrahedron sharing three corners
    assert sorted(len(p.faces) for p in two) == [4, 12]
    assert checks.closed_solid(two).passed and checks.bodies(two, 2).passed


def test_multibody_stl_solids_are_parts(meshes):
    multibody = parts(meshes, "multibody.stl")
    assert len(multibody) == 2 and checks.bodies(multibody, 2).passed
    verdict = checks.closed_solid(multibody)
    assert not verdict.passed and "wound inconsistently" in verdict.message and "(part 1 of 2; 2 failing)" in verdict.message


def test_shared_broken_files_raise_what_is_wrong(meshes):
    with pytest.raises(checks.MeshFileError, match=r"has no faces \(an ASCII STL without a single facet\)"):
        parts(meshes, "empty.stl")
    with pytest.raises(checks.MeshFileError, match=r"line 9 is a face with 2 corner\(s\); a face needs at least 3"):
        parts(meshes, "notenoughindices.obj")


# -- malformed files -------------------------------------------------------------------------

CUBE_V = "v 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\n"
TETRA_F = "f 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n"


@pytest.mark.parametrize("name, text, words", [
    ("oob.obj", CUBE_V + "f 1 3 2\nf 1 2 9\n", r"line 6: face corner '9' names no vertex \(vertices 1 to 4"),
    ("zero.obj", CUBE_V + "f 0 2 3\n", r"line 5: face corner '0' names no vertex.*indices start at 1"),
    ("word.obj", CUBE_V + "f 1 2 x\n", r"face corner 'x' names no vertex"),
    ("short.obj", CUBE_V + "f 1 3 2\nf 1 2\n", r"line 6 is a face with 2 corner"),
    ("late.obj", "v 0 0 0\nv 1 0 0\nv 0 1 0\nf -3 -2 -1\nv 0 0 1\n", r"line 4 uses relative \(negative\) vertex indices"),
    ("lines.obj", CUBE_V + "l 1 2\n", r"has no faces"),
])
def test_malformed_obj_files_say_where(tmp_path, name, text, words):
    (tmp_path / name).write_text(text)
    with pytest.raises(checks.MeshFileError, match=words):
        checks.load_parts(tmp_path / name)


def test_obj_continuations_groups_and_materials_load(tmp_path):
    text = ("mtllib missing.mtl\no tetra\n" + CUBE_V + "vt 0 0\nvt 1 0\nvt 0 1\nvn 0 0 1\n"
            "g first\nusemtl A\nf 1/1/1 3/2/1 \\\n  2/3/1\nf 1 2 4\ng second\nusemtl B\nf 1//1 4//1 3//1\nf 2 3 4\n")
    (tmp_path / "t.obj").write_text(text)
    (tetra,) = checks.load_parts(tmp_path / "t.obj")  # one object: groups and materials do not split it
    assert len(tetra.faces) == 4 and checks.closed_solid([tetra]).passed
    relative = "o r\n" + CUBE_V + "f -4 -2 -3\nf -4 -3 -1\nf -4 -1 -2\nf -3 -2 -1\n"
    (tmp_path / "r.obj").write_text(relative)
    assert checks.closed_solid(checks.load_parts(tmp_path / "r.obj")).passed


def test_malformed_stl_files_say_why(tmp_path):
    (tmp_path / "zero.stl").write_bytes(b"")
    with pytest.raises(checks.MeshFileError, match=r"empty file \(0 bytes\)"):
        checks.load_parts(tmp_path / "zero.stl")
    triangle = struct.pack("<12fH", 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0)
    (tmp_path / "cut.stl").write_bytes(b"\0" * 80 + struct.pack("<I", 10) + triangle * 2)
    with pytest.raises(checks.MeshFileError, match=r"declares 10 triangles, 584 bytes, but the file has 184: truncated"):
        checks.load_parts(tmp_path / "cut.stl")
    write_stl(tmp_path / "nan.stl", [[[0, 0, 0], [float("nan"), 0, 0], [0, 1, 0]]])
    with pytest.raises(checks.MeshFileError, match="infinite or NaN"):
        checks.load_parts(tmp_path / "nan.stl")
    (tmp_path / "bad.glb").write_bytes(b"glTF" + b"\0" * 20)
    with pytest.raises(checks.MeshFileError, match="could not be read as a mesh"):
        checks.load_parts(tmp_path / "bad.glb")
