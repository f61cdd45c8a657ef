"""The whole-object checks derived from the request's words and the scene, with no ``assembly``
section (``plugins.threed.structure``, ``threed-geometry/8``): the words' parts and counts, and
on a real Blender worker stacked legs, a solid mug, a floating shade and boards passing through
the sides fail, the right builds pass, and a failure caps the reward (the gate)."""

from __future__ import annotations

import pytest

from plugins.threed import physics, structure, tools
from plugins.threed.reward import GATE_CAP, grade
from plugins.threed.spec import TaskSpec
from tests.plugins.threed.test_threed_physics import LEGS, bookcase, chair, cube, lamp
from tests.plugins.threed.tool_calls import call


@pytest.mark.parametrize(("text", "objects", "counts", "named"), [
    ("a four-legged wooden chair with a backrest, seat 45 cm high", ["chair"], {"leg": 4}, {"leg", "back", "seat"}),
    ("a dining table 1.2 m by 0.6 m, 0.75 m high, four square legs", ["table"], {"leg": 4}, {"leg"}),
    ("a bookshelf 1.2 m tall, five walnut shelves between two side panels", ["bookshelf"], {"shelf": 5, "side": 2}, {"shelf", "side"}),
    ("a table lamp: a round base, a thin pole, a conical shade", ["lamp"], {}, {"base", "pole", "shade"}),  # a table lamp is a lamp
    ("a side table with 3 legs", ["table"], {"leg": 3}, {"leg"}),  # a side table has no sides
    ("a table top 4 cm thick, legs 70 cm long", ["table"], {}, {"top"}),  # a size is no count
    ("build the scene in task.json", [], {}, set()),
])
def test_the_words_name_the_object_its_parts_and_their_counts(text, objects, counts, named):
    asked = structure.read_request(text)
    assert asked.objects == objects and asked.counts == counts and asked.named == named
    assert asked.applies == bool(objects)


def test_vessels_and_volumes_and_part_names():
    mug = structure.read_request("a ceramic mug holding at least 250 ml")
    assert mug.vessel == "mug" and mug.volume_m3 == pytest.approx(250e-6)
    assert structure.read_request("a wine glass").vessel == "glass"
    assert structure.read_request("a glass sphere").vessel is None  # glass the material
    assert structure.read_request("a vase holding 1.5 litres").volume_m3 == pytest.approx(1.5e-3)
    kinds = {n: structure.part_kind(n) for n in ("Leg.FL", "LegFrontLeft", "Tabletop", "Board.3", "Post.L", "Side.R", "Cube.001")}
    assert kinds == {"Leg.FL": "leg", "LegFrontLeft": "leg", "Tabletop": "top", "Board.3": "shelf", "Post.L": "back", "Side.R": "side",
                     "Cube.001": None}


def paint(ctx):
    """A material on every mesh (free-form: every mesh must have one)."""
    for name in tools.worker(ctx).call("mesh_data", {"folder": str(ctx.scratch / "names"), "relations": False}, save=False)["meshes"]:
        call(tools.set_material, ctx, object=name["name"], material="Oak", preset="oak")


def judge(ctx, request, folder):
    """The reward of the scene as the plugin scores it with only ``request`` in task.json."""
    paint(ctx)
    spec = TaskSpec.model_validate({"request": request})
    exported = tools.worker(ctx).call("mesh_data", {"folder": str(ctx.scratch / folder)}, save=False)
    dropped = None
    if physics.applies(spec, request):
        dropped = tools.worker(ctx).call("drop_test", physics.drop_args(spec, {m["name"] for m in exported["meshes"]}), save=False,
                                         timeout_s=120)
    return grade(spec, exported, ctx.workspace, None, request, dropped)


def judged(verdict):
    return {n: c for n, c in verdict.components.items() if n.startswith("structure/") and c.weight > 0}


CHAIR = "a four-legged wooden chair with a backrest, seat 45 cm high"


def test_the_right_chair_passes_and_stacked_legs_fail_with_the_request_alone(scene_ctx):
    chair(scene_ctx)
    right = judge(scene_ctx, CHAIR, "right")
    checks = judged(right)
    assert {"structure/parts", "structure/distinct", "structure/through", "structure/connected", "structure/on_floor"} <= set(checks)
    assert right.reward == 1.0 and right.correct, right.summary
    assert right.components["structure/parts"].detail["parts"]["leg"] == {"found": 4, "asked": 4}
    assert right.version == "threed-geometry/8"
    tools.worker(scene_ctx).call("new_scene", {})
    cube(scene_ctx, "Seat", [0.45, 0.45, 0.04], [0, 0, 0.43])
    cube(scene_ctx, "Back", [0.45, 0.04, 0.45], [0, 0.205, 0.675])
    for name in LEGS:  # every leg at the seat's centre
        cube(scene_ctx, name, [0.04, 0.04, 0.41], [0, 0, 0.205])
    stacked = judge(scene_ctx, CHAIR, "stacked")
    distinct = stacked.components["structure/distinct"]
    assert distinct.value == 0 and "coincide" in distinct.detail["message"] and len(distinct.detail["coincident"]) == 6
    assert stacked.components["structure/parts"].value == 1.0  # four legs are there, all in one place
    assert stacked.reward <= GATE_CAP and "capped at 0.25" in stacked.summary
    assert right.reward - stacked.reward >= 0.3


def test_a_chair_missing_a_leg_fails_the_count(scene_ctx):
    chair(scene_ctx, legs=("Leg.FL", "Leg.FR", "Leg.BL"))
    three = judge(scene_ctx, CHAIR, "three")
    parts = three.components["structure/parts"]
    assert parts.value < 1 and "3 legs (asked 4)" in parts.detail["message"]
    assert three.reward <= GATE_CAP


def mug(ctx, hollow=True):
    call(tools.add_primitive, ctx, name="Body", kind="cylinder", radius=0.04, depth=0.1, location=[0, 0, 0.05], segments=48)
    if hollow:
        call(tools.add_primitive, ctx, name="Inside", kind="cylinder", radius=0.034, depth=0.085, location=[0, 0, 0.0625], segments=48)
        call(tools.add_modifier, ctx, name="Body", kind="boolean", object="Inside", operation="difference")
    call(tools.add_primitive, ctx, name="Handle", kind="torus", radius=0.025, minor_radius=0.005, location=[0.066, 0, 0.055],
         rotation_deg=[90, 0, 0], segments=32)


def test_a_solid_mug_fails_the_cavity_a_mug_needs(scene_ctx):
    request = "a ceramic mug with a handle, 8 cm across, 10 cm tall"
    mug(scene_ctx)
    right = judge(scene_ctx, request, "hollow")
    cavity = right.components["structure/cavity"]
    assert cavity.value == 1.0 and cavity.weight > 0 and cavity.detail["held_m3"] > 250e-6, cavity.detail
    assert right.reward == 1.0, right.summary
    tools.worker(scene_ctx).call("new_scene", {})
    mug(scene_ctx, hollow=False)
    solid = judge(scene_ctx, request, "solid")
    assert solid.components["structure/cavity"].value == 0 and solid.reward <= GATE_CAP, solid.summary


def test_a_floating_shade_fails_with_the_request_alone(scene_ctx):
    request = "a table lamp: a round base, a thin pole, a conical shade, 60 cm tall"
    lamp(scene_ctx)
    right = judge(scene_ctx, request, "lamp")
    assert right.reward == 1.0, right.summary
    assert right.components["structure/through"].value == 1.0  # the pole ends inside the solid shade: a joint
    tools.worker(scene_ctx).call("new_scene", {})
    lamp(scene_ctx, shade_z=0.66)
    floating = judge(scene_ctx, request, "floating")
    connected = floating.components["structure/connected"]
    assert connected.value < 1 and "Shade" in connected.detail["message"], connected.detail
    assert floating.reward <= GATE_CAP


def test_boards_passing_through_the_sides_fail_and_boards_between_them_pass(scene_ctx):
    request = "a bookshelf 0.8 m wide, 0.3 m deep, 1 m tall, two side panels and four boards"
    bookcase(scene_ctx)
    right = judge(scene_ctx, request, "shelf")
    assert right.reward == 1.0, right.summary
    tools.worker(scene_ctx).call("new_scene", {})
    cube(scene_ctx, "Side.L", [0.02, 0.3, 1.0], [-0.39, 0, 0.5])
    cube(scene_ctx, "Side.R", [0.02, 0.3, 1.0], [0.39, 0, 0.5])
    for i, z in enumerate((0.03, 0.34, 0.66, 0.97)):
        cube(scene_ctx, f"Board.{i + 1}", [0.86, 0.3, 0.02], [0, 0, z])  # 3 cm out past each side
    wide = judge(scene_ctx, request, "wide")
    crossing = wide.components["structure/through"]
    assert crossing.value == 0 and "Board.1 passes through Side.L" in crossing.detail["message"] and "stub of 3%" in crossing.detail["message"]
    assert wide.reward <= GATE_CAP


def test_a_task_assembly_adds_to_the_derived_checks_and_states_its_own(scene_ctx):
    """With an ``assembly`` that states connected and on_floor, those are the assembly's; the
    derived count, coincidence and passing-through still run."""
    chair(scene_ctx, legs=("Leg.FL", "Leg.FR", "Leg.BL"))
    paint(scene_ctx)
    exported = tools.worker(scene_ctx).call("mesh_data", {"folder": str(scene_ctx.scratch / "asm")}, save=False)
    names = ["Seat", "Back", "Leg.FL", "Leg.FR", "Leg.BL"]
    spec = TaskSpec.model_validate({"request": CHAIR, "objects": [{"name": n} for n in names],
                                    "assembly": {"on_floor": ["Leg.FL", "Leg.FR", "Leg.BL"]}})
    verdict = grade(spec, exported, scene_ctx.workspace, None, CHAIR)
    assert verdict.components["assembly/connected"].weight > 0 and verdict.components["structure/connected"].weight == 0
    assert "assembly/connected" in verdict.components["structure/connected"].detail["message"]
    assert verdict.components["structure/parts"].value < 1 and verdict.reward <= GATE_CAP


def box(size, centre):
    import trimesh

    mesh = trimesh.creation.box(size)
    mesh.apply_translation(centre)
    return mesh


def test_a_stub_poking_through_passes_through_a_part_continuing_past_does_not():
    """Boolean volumes (manifold3d) on meshes, not boxes: a leg 2 cm out through the seat passes
    through it; a back leg rising through the seat into a 45 cm post continues past it; a leg
    ending inside the seat is a joint; two legs in one place coincide."""
    seat = box([0.45, 0.45, 0.04], [0, 0, 0.43])
    cases = {
        "poking": box([0.04, 0.04, 0.47], [0.2, 0.2, 0.235]),
        "post": box([0.04, 0.04, 0.9], [0.2, 0.2, 0.45]),
        "sunk": box([0.04, 0.04, 0.43], [0.2, 0.2, 0.215]),
    }
    verdicts = {what: structure.through(structure.overlaps({"Seat": seat, "Leg.BR": leg})) for what, leg in cases.items()}
    assert [w for w, c in verdicts.items() if not c.passed] == ["poking"], {w: c.message for w, c in verdicts.items()}
    assert verdicts["poking"].detail["pairs"][0]["stub_share"] == pytest.approx(0.02 / 0.47, abs=1e-3)
    legs = {"Leg.FL": box([0.04, 0.04, 0.41], [0, 0, 0.205]), "Leg.FR": box([0.04, 0.04, 0.41], [0, 0, 0.205])}
    same = structure.distinct(structure.overlaps(legs), {"Leg.FL": "leg", "Leg.FR": "leg"}, {}, 0.002)
    assert not same.passed and same.detail["coincident"][0]["share"] == pytest.approx(1.0, abs=1e-6)
    apart = {"Leg.FL": legs["Leg.FL"], "Leg.FR": box([0.04, 0.04, 0.41], [0.3, 0, 0.205])}
    assert structure.distinct(structure.overlaps(apart), {"Leg.FL": "leg", "Leg.FR": "leg"}, {}, 0.002).passed


def test_the_low_table_scripts_scored_with_the_request_alone(tmp_path):
    """examples/threed's low table (a modelled floor plane under it: a support, no part of the
    table) passes every derived check with only its request in task.json; the same script with
    one leg 10 cm short, standing on the floor and touching nothing else, fails ``connected``."""
    import json

    from core.policy.scripted import load_script
    from tests.plugins.threed.test_threed_runs import EXAMPLES, run_episode, without_renders

    request = json.loads((EXAMPLES / "low-table" / "task.json").read_text())["request"]
    folder = tmp_path / "task"  # not tmp_path itself: the run's home is under it
    folder.mkdir()
    (folder / "task.json").write_text(json.dumps({"request": request}))
    scored = {}
    for name in ("low-table", "low-table-short-leg"):
        result, stored = run_episode(folder, without_renders(load_script(EXAMPLES / f"{name}.jsonl")))
        scored[name] = (result.reward, stored["rewards"])
    reward, rewards = scored["low-table"]
    derived = {n: c for n, c in rewards.items() if n.startswith("structure/") and c["weight"] > 0}
    assert set(derived) == {"structure/parts", "structure/distinct", "structure/through", "structure/connected", "structure/on_floor"}
    assert all(c["value"] == 1.0 for c in derived.values()), derived
    assert "all 5 parts joined" in derived["structure/connected"]["detail"]["message"]  # the Floor plane is not one of them
    short, short_rewards = scored["low-table-short-leg"]
    assert "Leg.BR" in short_rewards["structure/connected"]["detail"]["message"]
    assert short <= 0.25 * reward + 1e-9 and reward - short >= 0.3
