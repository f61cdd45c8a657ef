"""Horizon's checks against Blender's 3D-print checks (bmesh in bpy, a child process): on every
shared real mesh, on a UV-seamed cube and on two cubes touching at a corner."""

from __future__ import annotations

import numpy as np
import trimesh

from plugins.threed import compare
from plugins.threed.compare import Verdict
from tests.plugins.threed.mesh_files import (
    back_to_back_triangles,
    crossing_boxes_triangles,
    l_prism_obj,
    notched_block_obj,
    seam_cube_obj,
    write_stl,
)


def both(paths):
    blender = compare.run_blender(paths)
    out = {}
    for path in paths:
        verdicts, numbers = compare.blender_verdicts(blender[str(path)])
        out[path.name] = (compare.compare(compare.horizon_verdicts(path), verdicts, numbers), numbers)
    return out


def test_horizon_and_blender_agree_on_every_shared_mesh_or_differ_by_definition(meshes):
    files = compare.mesh_files(meshes)
    assert len(files) >= 20
    results = both(files)
    unexplained = [(name, c.check, c.horizon.reason, c.blender.reason) for name, (cs, _) in results.items()
                   for c in cs if c.agree is False and not c.explained]
    assert unexplained == []
    differ = {(name, c.check) for name, (cs, _) in results.items() for c in cs if c.agree is False}
    assert differ == {("block-normal-directions-good.stl", "closed_solid"),  # inside out: Blender's volume < 0
                      ("notenoughindices.obj", "file"),  # Blender drops the 2-corner face and reads the rest
                      ("teapot.stl", "bodies")}  # pieces touching at vertices: one shell, two edge-linked pieces
    agree = sum(c.agree is True for cs, _ in results.values() for c in cs)
    assert agree >= 4 * len(files) - 3 - 6  # the rest: the two files refused, whose other checks did not run
    crossing = {name: next(c for c in cs if c.check == "self_intersections") for name, (cs, _) in results.items()}
    assert (crossing["soup.stl"].horizon.count, crossing["teapot.stl"].horizon.count) == (99, 51)
    # Blender's own counts name the defects Horizon names
    numbers = {name: n for name, (_, n) in results.items()}
    assert numbers["block-fill-holes-bad.stl"]["boundary_edges"] == 3
    assert numbers["block-normal-directions-bad.stl"]["bad_contiguous_edges"] == 3
    assert numbers["block-nearby-good.stl"]["boundary_edges"] == 4
    assert numbers["block-remove-unconnected-bad.stl"]["shells"] == 3
    assert numbers["block-normal-directions-good.stl"]["volume_m3"] < 0
    assert numbers["angle_block.STL"]["merged_vertices"] == 46  # what Horizon's weld merges beyond exact twins


def test_blender_sees_a_seamed_cube_closed_and_corner_contact_as_one_shell(tmp_path):
    seams = seam_cube_obj(tmp_path / "seams.obj")
    a = trimesh.creation.box([1, 1, 1])
    b = a.copy()
    b.apply_translation([1, 1, 1])
    corner = write_stl(tmp_path / "corner.stl", np.vstack([a.vertices[a.faces], b.vertices[b.faces]]))
    results = both([seams, corner])
    (file_, solid, bodies, _), _ = results["seams.obj"]
    assert file_.agree and solid.horizon.ok and solid.blender.ok and bodies.agree
    (file_, solid, bodies, _), numbers = results["corner.stl"]
    assert file_.agree and solid.agree and solid.horizon.ok
    assert (bodies.horizon.count, numbers["shells"], numbers["edge_islands"]) == (2, 1, 2)
    assert bodies.agree is False and "touch only at a vertex" in bodies.explained


def test_a_difference_no_rule_explains_is_reported_as_one():
    horizon = {"file": Verdict(True, ""), "closed_solid": Verdict(False, "3 open edges"), "bodies": Verdict(None, "", 2)}
    blender = {"file": Verdict(True, ""), "closed_solid": Verdict(True, "solid"), "bodies": Verdict(None, "", 1)}
    numbers = {"volume_m3": 1.0, "edge_islands": 1}  # a positive volume; one piece by edges too
    file_, solid, bodies, crossing = compare.compare(horizon, blender, numbers)
    assert crossing.agree is None  # not given: not compared
    assert file_.agree and solid.agree is False and solid.explained is None
    assert bodies.agree is False and bodies.explained is None
    file_, solid, bodies, _ = compare.compare(horizon, blender, {"volume_m3": -1.0, "edge_islands": 2})
    assert "inside out" in solid.explained and "touch only at a vertex" in bodies.explained


def test_blender_agrees_on_the_weld_fixes_and_self_intersections(tmp_path):
    # n-gons that trimesh's fan gets wrong, a back-to-back pair the weld makes, two boxes through each other
    paths = [notched_block_obj(tmp_path / "notched.obj"), l_prism_obj(tmp_path / "l.obj"),
             write_stl(tmp_path / "slivers.stl", back_to_back_triangles()),
             write_stl(tmp_path / "crossing.stl", crossing_boxes_triangles())]
    results = both(paths)
    assert all(c.agree for cs, _ in results.values() for c in cs)
    for name in ("notched.obj", "l.obj", "slivers.stl"):
        (_, solid, _, crossing), numbers = results[name]
        assert solid.horizon.ok and numbers["non_manifold_edges"] == 0 and crossing.horizon.count == 0
    (_, solid, _, crossing), numbers = results["crossing.stl"]
    assert crossing.horizon.count == numbers["intersect_faces"] == 12
