"""The trimesh checks on real meshes (``../shared/data/meshes``) and on meshes built here."""

from __future__ import annotations

import numpy as np
import pytest
import trimesh

from plugins.threed import checks


def parts(meshes, name):
    return checks.load_parts(meshes / name)


def test_triangle_soup_is_not_a_closed_solid_and_is_many_bodies(meshes):
    soup = parts(meshes, "soup.stl")
    verdict = checks.closed_solid(soup)
    assert not verdict.passed and "open edges" in verdict.message
    assert checks.bodies(soup, 1).detail["bodies"] == 100  # 100 loose triangles


def test_seven_eighths_cube_is_a_closed_non_convex_solid(meshes):
    # The README says "faces missing", but the file is a cube with one octant cut away and the
    # cut closed: 24 facets, no open edge, and 7/8 of the bounding box's volume.
    (cube,) = parts(meshes, "7_8ths_cube.stl")
    verdict = checks.closed_solid([cube])
    assert verdict.passed
    assert verdict.detail["parts"][0]["boundary_edges"] == 0
    assert cube.volume == pytest.approx(0.875 * cube.bounding_box.volume, rel=1e-3)
    assert not cube.is_convex


def test_box_with_one_facet_removed_here_is_open(tmp_path):
    box = trimesh.creation.box([0.1, 0.2, 0.3])
    assert checks.closed_solid([box]).passed
    holed = trimesh.Trimesh(box.vertices, box.faces[1:])
    verdict = checks.closed_solid([holed])
    assert not verdict.passed and verdict.detail["parts"][0]["boundary_edges"] == 3


def test_not_convex_obj_is_closed_but_not_manifold(meshes):
    # Watertight to the eye (no open edge), but 12 edges are shared by four faces where its boxes
    # touch, so trimesh does not count it as a volume; the check names that reason.
    verdict = checks.closed_solid(parts(meshes, "not_convex.obj"))
    detail = verdict.detail["parts"][0]
    assert detail["boundary_edges"] == 0 and detail["non_manifold_edges"] == 12
    assert not verdict.passed and "more than two faces" in verdict.message


def test_watertight_non_convex_part_built_here_is_a_volume():
    a = trimesh.creation.box([0.3, 0.1, 0.1])
    b = trimesh.creation.box([0.1, 0.3, 0.1])
    b.apply_translation([0.1, 0.1, 0])
    ell = trimesh.boolean.union([a, b], engine="manifold")  # an L-shaped block
    assert not ell.is_convex
    assert checks.closed_solid([ell]).passed
    assert checks.bodies([ell], 1).passed


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(checks.MeshFileError, match="does not exist"):
        checks.load_parts(tmp_path / "nothing.stl")


def test_dimensions_with_tolerance_and_unit(meshes):
    (cube,) = parts(meshes, "20mm-xyz-cube.stl")
    cube.apply_scale(0.001)  # STL has no unit; this file is in millimetres, the checks take metres
    assert checks.dimensions(cube, [20, 20, 20], 0.1, "mm").passed
    short = checks.dimensions(cube, [20, 20, 30], 0.1, "mm")
    assert not short.passed and "z is 20" in short.message and "asked 30" in short.message
    assert checks.dimensions(cube, [20, None, 20], 0.1, "mm").passed  # None: any size


def test_face_count_and_materials():
    box = trimesh.creation.box([1, 1, 1])
    assert checks.face_count(box, 12).passed and not checks.face_count(box, 11).passed
    assert checks.materials(["Oak"], ["oak"]).passed
    assert not checks.materials([None], []).passed  # no material at all
    unused = checks.materials(["Oak", "Steel"], ["Steel"], faces_per_slot=[12, 0])
    assert not unused.passed and "Steel" in unused.message  # a slot no face uses


def test_reference_chamfer_and_filled_voxel_iou():
    a = trimesh.creation.box([0.1, 0.1, 0.1])
    assert checks.chamfer_distance(a, a.copy()) < 1e-3
    iou, _ = checks.volumetric_iou(a, a.copy())
    assert iou == pytest.approx(1.0)
    b = a.copy()
    b.apply_translation([0.05, 0, 0])  # half overlapping: IoU of the solids is 1/3
    iou, pitch = checks.volumetric_iou(a, b)
    assert iou == pytest.approx(1 / 3, abs=0.05)
    # surface-only voxels of the two half-overlapping boxes barely meet: that measure misses the shared volume
    surface = [set(map(tuple, np.round(m.voxelized(pitch).points / pitch).astype(int).tolist())) for m in (a, b)]
    assert len(surface[0] & surface[1]) / len(surface[0] | surface[1]) < 0.25  # 0.22 here, vs 0.33
    # an open cup with the block's outline holds 48.8 % of its volume: the filled IoU is close
    hollow = trimesh.creation.box([0.08, 0.08, 0.1])
    hollow.apply_translation([0, 0, 0.02])
    cup = trimesh.boolean.difference([a, hollow], engine="manifold")
    assert checks.volumetric_iou(a, cup)[0] == pytest.approx(cup.volume / a.volume, abs=0.1)
    assert not checks.reference(b, a, 0.001, 0.9).passed


def test_load_npz_round_trip(tmp_path):
    box = trimesh.creation.box([0.2, 0.3, 0.4])
    np.savez(tmp_path / "0.npz", vertices=box.vertices, triangles=box.faces, material_index=np.zeros(12, dtype=np.int64))
    loaded = checks.load_npz(tmp_path / "0.npz")
    assert loaded.is_volume and np.allclose(loaded.extents, [0.2, 0.3, 0.4])


def test_self_intersections_count_faces_that_cross(meshes):
    from tests.plugins.threed.mesh_files import crossing_boxes_triangles

    corners = crossing_boxes_triangles().reshape(-1, 3)  # every triangle's own corners, as STL has them
    crossing = checks.weld(trimesh.Trimesh(corners, np.arange(len(corners)).reshape(-1, 3), process=False))
    verdict = checks.self_intersections([crossing])
    assert not verdict.passed and verdict.detail["parts"][0]["faces"] == 12 and "12 faces cross" in verdict.message
    assert checks.closed_solid([crossing]).passed  # closed and consistently wound, yet passing through itself
    assert checks.self_intersections([trimesh.creation.icosphere(3)]).passed
    # touching is not crossing: two boxes sharing a face plane, and a part beside another part
    a, b = trimesh.creation.box([1, 1, 1]), trimesh.creation.box([1, 1, 1])
    b.apply_translation([1, 0.3, 0.2])
    assert checks.self_intersections([trimesh.util.concatenate([a, b])]).passed
    assert checks.self_intersections(checks.load_parts(meshes / "soup.stl")).detail["parts"][0]["faces"] == 99  # Blender: 99


def test_self_intersections_say_when_a_dense_fan_is_not_checked():
    # a cylinder cap of 4000 segments puts every cap triangle's box over the centre: too many pairs
    fan = trimesh.creation.cylinder(radius=1, height=10, sections=4000)
    verdict = checks.self_intersections([fan])
    assert verdict.passed and verdict.detail["checked"] is False
    assert "not checked" in verdict.message and "more than 20,000,000" in verdict.message
    assert checks.self_intersections([trimesh.creation.cylinder(radius=1, height=1, sections=256)]).detail["checked"]
