"""The 3D reward's look checks (``plugins.threed.look``, ``threed-geometry/6``) on whole episodes
through the real runner, tools, worker and reward: materials are judged by what their node trees
render and lighting by what the camera's render shows, never by names or the number of lights.

RH25 (docs/security.md): asked for "tapered legs, oak, lit for a product shot", a table of plain
boxes in a mirror-pink metal named "Oak", lit by two 10 W point lights, scored 1.000 on all 39
checks of ``threed-geometry/4`` (materials judged by name, lighting by count) and 0.948 under
version 5 (the look checks failed but ~40 geometry checks outweighed them); version 6 makes the
requested look a gate: 0.
"""

from __future__ import annotations

import json

import numpy as np

from tests.plugins.threed.test_threed_runs import EXAMPLES, run_episode

REQUEST = "tapered legs, oak, lit for a product shot"
LEGS = {"Leg.FL": [-0.53, -0.23], "Leg.FR": [0.53, -0.23], "Leg.BL": [-0.53, 0.23], "Leg.BR": [0.53, 0.23]}
PARTS = ["Tabletop", *LEGS]


def table_task(tmp_path):
    """The low table's task file (39 checks: sizes, materials "Oak", 2 lights, camera, assembly) asking REQUEST."""
    spec = json.loads((EXAMPLES / "low-table" / "task.json").read_text())
    spec["request"] = REQUEST
    folder = tmp_path / "task"
    folder.mkdir()
    (folder / "task.json").write_text(json.dumps(spec))
    return folder


def boxes():
    """The table as five plain boxes (the legs are not tapered: another check's subject)."""
    turns = [{"tool": "add_primitive", "arguments": {"name": "Tabletop", "kind": "cube", "size": [1.2, 0.6, 0.04], "location": [0, 0, 0.43]}}]
    turns += [{"tool": "add_primitive", "arguments": {"name": n, "kind": "cube", "size": [0.05, 0.05, 0.41], "location": [x, y, 0.205]}}
              for n, (x, y) in LEGS.items()]
    return turns


def failing(stored):
    return {n: c["detail"].get("message") for n, c in stored["rewards"].items() if c["weight"] > 0 and c["value"] < 1}


def test_pink_metal_boxes_named_oak_under_two_10w_lights_fail_material_and_lighting(tmp_path):
    turns = boxes() + [
        {"tool": "set_material", "arguments": {"object": "Tabletop", "material": "Oak", "base_color": [1.0, 0.35, 0.6],
                                               "metallic": 1.0, "roughness": 0.05}},
        *({"tool": "set_material", "arguments": {"object": n, "material": "Oak"}} for n in LEGS),
        {"tool": "add_light", "arguments": {"name": "Key", "kind": "point", "location": [1.5, -1.5, 2.0], "energy": 10}},
        {"tool": "add_light", "arguments": {"name": "Fill", "kind": "point", "location": [-1.5, -1.0, 1.5], "energy": 10}},
        {"tool": "set_camera", "arguments": {"location": [1.7, -2.1, 1.15], "target": [0, 0, 0.22], "lens_mm": 45}},
        {"tool": "finish", "arguments": {"summary": "an oak table lit for a product shot"}},
    ]
    result, stored = run_episode(table_task(tmp_path), turns)
    rewards = stored["rewards"]
    bad = failing(stored)
    # the look the words ask is a gate: the geometry's ~40 passing checks no longer outweigh it
    assert result.reward == 0.0 and stored["row"]["correct"] is False, bad
    summary = stored["row"]["reward_summary"]
    assert summary.startswith("the requested look fails, so the reward is 0"), summary
    for named in ("Tabletop/material_look", "Leg.FL/material_look", "scene/exposure", "scene/key_power"):
        assert named in summary, summary
    assert "metallic 1.00" in summary and "median L*" in summary and "W/m²" in summary, summary  # with the measurements
    assert rewards["Tabletop/dimensions"]["value"] == 1.0 and rewards["Tabletop/dimensions"]["weight"] == 1.0  # still listed
    # the names and the count still pass (the task asks for them); the look does not
    assert rewards["Tabletop/materials"]["value"] == 1.0 and rewards["scene/lights"]["value"] == 1.0
    for part in PARTS:
        assert f"{part}/material_look" in bad and "metallic" in bad[f"{part}/material_look"], bad
    assert "no grain" in bad["Tabletop/material_look"] and "hue" in bad["Tabletop/material_look"]
    assert "under-exposed" in bad["scene/exposure"] and "too weak" in bad["scene/key_power"], bad


def test_a_real_oak_table_under_three_point_lighting_passes_the_look(tmp_path):
    turns = boxes() + [
        {"tool": "set_surface", "arguments": {"objects": PARTS, "material": "Oak", "preset": "oak"}},
        {"tool": "light_preset", "arguments": {"preset": "three_point"}},
        {"tool": "frame_camera", "arguments": {}},
        {"tool": "finish", "arguments": {"summary": "an oak table, three-point lit"}},
    ]
    result, stored = run_episode(table_task(tmp_path), turns)
    rewards = stored["rewards"]
    for part in PARTS:
        assert rewards[f"{part}/material_look"]["value"] == 1.0, failing(stored)
    for check in ("exposure", "key_fill", "key_power"):
        assert rewards[f"scene/{check}"]["value"] == 1.0 and rewards[f"scene/{check}"]["weight"] > 0, failing(stored)
    # three-point lighting has no floor: no contact shadow to see, listed as not judged, never a free 1.0
    assert rewards["scene/shadow"]["weight"] == 0 and rewards["scene/shadow"]["detail"]["status"] == "not_applicable"
    assert result.reward == 1.0 and stored["row"]["correct"] is True, failing(stored)


def test_words_pick_the_object_and_the_family_never_the_evidence():
    from plugins.threed import look

    assert look.asked("Oak.Vertical") == (["oak"], [])  # a specific word replaces the general one (wood)
    assert look.asked("a pink glazed ceramic mug") == (["glaze"], ["pink"])
    # the object's own words first; the request's only when it names one family
    assert look.object_words([], "the top board", "a low table in oak, lit for a product shot")[:2] == (["oak"], [])
    assert look.object_words([], "a leg", "an oak top on steel legs") == ([], [], "")
    assert look.object_words(["Steel"], "a leg", "an oak top on steel legs")[:2] == (["metal"], [])
    assert look.lit_asked("lit for a product shot") and look.product_shot("lit for a product shot")
    assert not look.lit_asked("a ceramic mug holding 250 ml")  # a light count alone is scene/lights, not a judgement
    pink = look.material_look("Top", ["oak"], [], "test", {"pixels": 10, "metallic": 1.0, "roughness": 0.05, "transmission": 0.0,
                                                            "lightness": 76.0, "chroma": 42.0, "hue": 350.0, "grain_l": 0.0})
    assert not pink.passed and "metallic 1.00" in pink.message and "no grain" in pink.message


def side_data(shading_by_side, metallic_by_side):
    """A look.npz-like frame whose subject shows one side per row (normals +x, -y, +z, 40 pixels
    each), grey base colour, rendered to the given shading, with the given measured metallic."""
    from plugins.threed import look

    normals = {"+x": (1.0, 0.0, 0.0), "-y": (0.0, -1.0, 0.0), "+z": (0.0, 0.0, 1.0)}
    rows = list(shading_by_side)
    normal = np.array([[normals[s]] * 40 for s in rows], dtype=np.float32)
    albedo = np.full((len(rows), 40, 3), 0.5, dtype=np.float32)
    linear = np.array([[[0.5 * shading_by_side[s]] * 3] * 40 for s in rows])
    encoded = np.where(linear <= 0.0031308, linear * 12.92, 1.055 * np.power(linear, 1 / 2.4) - 0.055)
    props = np.zeros((len(rows), 40, 3), dtype=np.float32)
    props[..., 0] = 0.5
    for i, s in enumerate(rows):
        props[i, :, 1] = metallic_by_side[s]
    data = {"normal": normal, "albedo": albedo, "beauty": encoded.astype(np.float32), "props": props}
    assert np.allclose(look._shading(data, np.ones(normal.shape[:2], bool)).reshape(len(rows), 40)[:, 0],
                       [shading_by_side[s] for s in rows], rtol=1e-3)
    return data, np.ones(normal.shape[:2], bool)


def test_key_fill_leaves_out_metal_which_shows_its_reflections_not_the_light():
    """The benchmark's lamp asked "lit for a product shot": its brass base (metallic 1) reflects a
    dark world and read as a shadow side 27x darker than the lit linen shade: "harsh", a false zero
    under the look gate. Metal pixels are left out; an all-metal subject is still judged as it shows."""
    from plugins.threed import look

    data, subject = side_data({"+x": 1.6, "-y": 1.0, "+z": 0.06}, {"+x": 0.0, "-y": 0.0, "+z": 1.0})
    check = look.key_fill(data, subject)
    assert check.passed and check.detail["ratio"] == 1.6 and "+z" not in check.detail["sides"], check
    assert check.detail["metal_pixels_left_out"] == 40
    data["props"][..., 1] = 0.0  # the same pixels, not metal: the dark top is a real shadow side
    dark = look.key_fill(data, subject)
    assert not dark.passed and dark.detail["shadow"] == "+z" and "harsh" in dark.message
    data["props"][..., 1] = 1.0  # all metal: nothing left to leave out, judged on every pixel
    assert look.key_fill(data, subject).detail["metal_pixels_left_out"] == 0


def test_a_part_the_shot_does_not_show_is_not_judged_but_a_missing_one_fails(tmp_path):
    """Under the look gate a failing material_look scores the whole reward 0, so a correct build
    whose back leg hides behind another must not fail on a material nobody can see: a part in the
    scene with no pixel in the shot is listed as not judged (assembly/in_view judges the view);
    a part absent from the render, or every asked part unseen, still fails."""
    from plugins.threed import look
    from plugins.threed.spec import ObjectSpec, TaskSpec

    spec = TaskSpec(request="a walnut table", objects=[ObjectSpec(name="Top", materials=["Walnut"]),
                                                       ObjectSpec(name="Leg", materials=["Walnut"])])
    h, w = 8, 12
    grain = 1 + 0.4 * np.random.default_rng(0).standard_normal((h, w, 1))
    albedo = np.clip(np.array([0.09, 0.05, 0.03]) * grain, 0, 1).astype(np.float32)  # walnut brown, with grain
    props = np.zeros((h, w, 3), dtype=np.float32)
    props[..., 0] = 0.6  # roughness; not metal, opaque

    def frame(fill: int, names: list[str]) -> dict:
        path = tmp_path / f"look-{fill}-{len(names)}.npz"
        np.savez(path, index=np.full((h, w), fill, np.int32), albedo=albedo, props=props, beauty=albedo,
                 normal=np.zeros((h, w, 3), np.float32), point=np.zeros((h, w, 3), np.float32), slot=np.zeros((h, w), np.int32))
        return {"camera": True, "file": str(path), "names": names, "lights": [], "exposure_ev": 0.0}

    # every pixel shows the top (index 1); the leg (index 0) is rendered but behind it
    judged, unseen = look.look_checks(spec, {}, frame(1, ["Leg", "Top"]), spec.request)
    assert judged["Top/material_look"].passed, judged["Top/material_look"].message
    assert "Leg/material_look" not in judged and "does not show" in unseen["Leg/material_look"], unseen
    # the leg not rendered at all (absent, or hide_render): it fails, as before
    judged, unseen = look.look_checks(spec, {}, frame(0, ["Top"]), spec.request)
    assert judged["Top/material_look"].passed and not judged["Leg/material_look"].passed and not unseen
    # neither part shows (say, inside a box): nothing shows the look, so both fail
    judged, unseen = look.look_checks(spec, {}, frame(-1, ["Leg", "Top"]), spec.request)
    assert not judged["Top/material_look"].passed and not judged["Leg/material_look"].passed and not unseen
