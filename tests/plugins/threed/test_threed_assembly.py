"""The whole-object checks (``plugins.threed.assembly``) on scenes built in Blender by the
plugin's tools: a pass and a fail for each, and the reward's not-judged components."""

from __future__ import annotations

import numpy as np
import pytest

from plugins.threed import assembly, tools
from plugins.threed.reward import ASSEMBLY_CHECKS, grade, load_scene_meshes
from plugins.threed.spec import TaskSpec

TOL = 0.002


def call(scene_ctx, tool_name: str, **arguments):
    result = getattr(tools, tool_name)(arguments, scene_ctx)
    assert not result.is_error, result.output
    return result


def cube(scene_ctx, name, size, location):
    call(scene_ctx, "add_primitive", name=name, kind="cube", size=size, location=location)


def exported(scene_ctx, folder="m"):
    data = tools.worker(scene_ctx).call("mesh_data", {"folder": str(scene_ctx.scratch / folder)}, save=False)
    return data, {n: m for n, (m, _) in load_scene_meshes(data).items()}


def table(scene_ctx, legs, top_z=0.43):
    """A 1 m x 0.6 m top on 4 cm legs at ``legs`` (x, y), its underside at ``top_z - 0.02``."""
    cube(scene_ctx, "Top", [1.0, 0.6, 0.04], [0, 0, top_z])
    for i, (x, y) in enumerate(legs):
        cube(scene_ctx, f"Leg{i}", [0.04, 0.04, 0.41], [x, y, 0.205])


CORNERS = [(-0.45, -0.25), (0.45, -0.25), (-0.45, 0.25), (0.45, 0.25)]


def test_contacts_and_connection_come_from_blender_distances(scene_ctx):
    table(scene_ctx, CORNERS[:2])
    cube(scene_ctx, "Loose", [0.04, 0.04, 0.41], [0.0, 0.25, 0.185])  # its top 2 cm below the top's underside
    data, _ = exported(scene_ctx)
    distances = assembly.contact_distances(data["contacts"])
    assert distances[frozenset(("Top", "Leg0"))] == pytest.approx(0.0, abs=1e-6)
    assert distances[frozenset(("Top", "Loose"))] == pytest.approx(0.02, abs=1e-4)
    assert frozenset(("Leg0", "Leg1")) not in distances  # 0.9 m apart: beyond the probe's 5 cm
    good = assembly.touching_pairs([("Top", "Leg0"), ("Top", "Leg1")], distances, TOL)
    bad = assembly.touching_pairs([("Top", "Leg0"), ("Top", "Loose")], distances, TOL)
    assert good.passed and good.value == 1.0
    assert not bad.passed and bad.value == 0.5 and "Top-Loose 20.0 mm apart" in bad.message
    joined = assembly.connected(["Top", "Leg0", "Leg1"], distances, TOL)
    apart = assembly.connected(["Top", "Leg0", "Leg1", "Loose"], distances, TOL)
    assert joined.passed and not apart.passed and apart.value == 0.75 and "Loose" in apart.message


def test_on_floor_finds_a_floating_leg_and_a_sunken_one(scene_ctx):
    table(scene_ctx, CORNERS)
    call(scene_ctx, "transform", name="Leg1", translate=[0, 0, 0.03])
    call(scene_ctx, "transform", name="Leg3", translate=[0, 0, -0.05])
    _, meshes = exported(scene_ctx)
    assert assembly.on_floor(meshes, ["Leg0", "Leg2"], 0.0, TOL).passed is False  # Leg3 sinks, whoever is asked
    floating = assembly.on_floor({n: meshes[n] for n in ("Top", "Leg0", "Leg1")}, ["Leg0", "Leg1"], 0.0, TOL)
    assert not floating.passed and floating.value == 0.5 and "Leg1 floats 30.0 mm above the floor" in floating.message
    assert assembly.on_floor({n: meshes[n] for n in ("Top", "Leg0", "Leg2")}, ["Leg0", "Leg2"], 0.0, TOL).passed


def test_a_table_stands_and_one_with_its_legs_stacked_at_the_centre_does_not(scene_ctx):
    table(scene_ctx, CORNERS)
    _, meshes = exported(scene_ctx)
    good = assembly.stands(list(meshes.values()), 0.0, TOL, 10.0)
    tools.worker(scene_ctx).call("new_scene", {})
    table(scene_ctx, [(0.0, 0.0)] * 4)
    _, meshes = exported(scene_ctx, "m2")
    stacked = assembly.stands(list(meshes.values()), 0.0, TOL, 10.0)
    assert good.passed and good.detail["inset_m"] == pytest.approx(0.27, abs=2e-3)  # y: legs at 0.25 plus half a leg
    assert good.detail["tip_angle_deg"] > 25
    assert not stacked.passed and stacked.detail["inset_m"] == pytest.approx(0.02, abs=1e-3) and stacked.detail["tip_angle_deg"] < 5


def test_an_object_resting_on_nothing_does_not_stand(scene_ctx):
    cube(scene_ctx, "Box", [0.2, 0.2, 0.2], [0, 0, 0.5])
    _, meshes = exported(scene_ctx)
    check = assembly.stands(list(meshes.values()), 0.0, TOL, 10.0)
    assert not check.passed and check.value == 0.0 and "nothing rests on the floor" in check.message


def test_a_boolean_cup_holds_water_and_a_solid_or_upturned_one_does_not(scene_ctx):
    call(scene_ctx, "add_primitive", name="Cup", kind="cylinder", radius=0.04, depth=0.1, location=[0, 0, 0.05], segments=48)
    call(scene_ctx, "add_primitive", name="Hole", kind="cylinder", radius=0.034, depth=0.085, location=[0, 0, 0.0625], segments=48)
    call(scene_ctx, "add_primitive", name="Solid", kind="cylinder", radius=0.04, depth=0.1, location=[0.3, 0, 0.05], segments=48)
    call(scene_ctx, "add_modifier", name="Cup", kind="boolean", object="Hole")
    _, meshes = exported(scene_ctx)
    cup = assembly.cavity("Cup", meshes["Cup"], 0.0002)
    assert cup.passed and 0.00025 < cup.detail["held_m3"] < np.pi * 0.034**2 * 0.08  # 290 cm³ inside, less the walls' voxels
    solid = assembly.cavity("Solid", meshes["Solid"], 0.0002)
    assert not solid.passed and solid.detail["held_m3"] == 0.0
    call(scene_ctx, "transform", name="Hole", location=[0, 0, 0.0375])  # the cup upside down: its opening at the floor
    _, meshes = exported(scene_ctx, "m2")
    assert assembly.water_volume(meshes["Cup"])[0] == 0.0


def test_symmetry_of_a_table_and_of_one_with_a_leg_moved(scene_ctx):
    table(scene_ctx, CORNERS)
    _, meshes = exported(scene_ctx)
    from plugins.threed import checks

    assert assembly.symmetry(checks.combine(list(meshes.values())), "x", 0.005).passed
    call(scene_ctx, "transform", name="Leg0", translate=[0.2, 0, 0])
    _, meshes = exported(scene_ctx, "m2")
    moved = assembly.symmetry(checks.combine(list(meshes.values())), "x", 0.005)
    assert not moved.passed and moved.detail["chamfer_m"] > 0.005


def test_the_camera_sees_the_object_not_when_it_is_inside_a_cube_or_behind_the_camera(scene_ctx):
    table(scene_ctx, CORNERS)
    call(scene_ctx, "set_camera", location=[2.0, -2.4, 1.5], target=[0, 0, 0.3])
    parts = ["Top", "Leg0", "Leg1", "Leg2", "Leg3"]

    def view(folder):
        data, _ = exported(scene_ctx, folder)
        depth = np.load(data["view"]["file"])["depth"]
        return assembly.in_view(depth, [m["name"] for m in data["meshes"]], parts, 0.05, 0.8)

    seen = view("m1")
    assert seen.passed and seen.detail["coverage"] > 0.1 and seen.detail["visible"] == 1.0
    cube(scene_ctx, "Cube", [2.0, 2.0, 2.0], [0, 0, 0.99])
    hidden = view("m2")
    assert not hidden.passed and hidden.detail["visible"] == 0.0 and hidden.detail["hidden_by"] == ["Cube"]
    call(scene_ctx, "delete_object", name="Cube")
    call(scene_ctx, "set_camera", location=[2.0, -2.4, 1.5], target=[4.0, -4.8, 1.5])
    away = view("m3")
    assert not away.passed and away.detail["coverage"] == 0.0 and "out of the camera's view" in away.message


def test_without_an_assembly_every_whole_object_check_is_listed_not_judged(scene_ctx):
    table(scene_ctx, CORNERS)
    call(scene_ctx, "set_material", object="Top", material="Oak", preset="oak")
    data = tools.worker(scene_ctx).call("mesh_data", {"folder": str(scene_ctx.scratch / "g")}, save=False)
    spec = TaskSpec.model_validate({"objects": [{"name": "Top", "dimensions": [1.0, 0.6, 0.04]}]})
    verdict = grade(spec, data, scene_ctx.workspace)
    for name in ASSEMBLY_CHECKS:
        c = verdict.components[f"assembly/{name}"]
        assert c.weight == 0 and c.value == 0 and c.detail["status"] == "not_applicable"
    assert verdict.reward == 1.0 and "not judged: contacts, connected" in verdict.summary
    judged = TaskSpec.model_validate({"objects": [{"name": "Top"}, {"name": "Leg0"}], "assembly": {"touch": [["Top", "Leg0"]]}})
    verdict = grade(judged, data, scene_ctx.workspace)
    assert verdict.components["assembly/contacts"].weight >= 1 and verdict.components["assembly/stands"].weight >= 1
    assert verdict.components["assembly/cavity"].weight == 0 and verdict.version == "threed-geometry/8"
