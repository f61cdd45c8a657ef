"""The chair and the mug of ``examples/threed`` built by their scripted runs with the artist's
toolset (renders left out: they cost a minute each and no reward), judged by their task files'
assembly sections; and a mug whose lathe profile is not hollowed, which must lose the cavity."""

from __future__ import annotations

import copy

from core.policy.scripted import load_script
from tests.plugins.threed.test_threed_runs import EXAMPLES, run_episode, without_renders


def failing(stored):
    return {n: c["detail"].get("message") for n, c in stored["rewards"].items() if c["value"] < 1}


def test_chair_script_builds_a_standing_symmetric_oak_chair_with_reward_1():
    result, stored = run_episode(EXAMPLES / "chair", without_renders(load_script(EXAMPLES / "chair.jsonl")))
    assert result.reward == 1.0, failing(stored)
    rewards = stored["rewards"]
    for check in ("contacts", "connected", "on_floor", "stands", "symmetry", "in_view"):
        assert rewards[f"assembly/{check}"]["value"] == 1.0 and rewards[f"assembly/{check}"]["weight"] > 0
    assert rewards["Leg.BR/dimensions"]["value"] == 1.0  # the duplicated leg kept the turned leg's size


def test_mug_script_holds_water_and_a_solid_lathe_profile_does_not():
    turns = without_renders(load_script(EXAMPLES / "mug.jsonl"))
    result, stored = run_episode(EXAMPLES / "mug", turns)
    assert result.reward == 1.0, failing(stored)
    cavity = stored["rewards"]["assembly/cavity"]
    assert cavity["value"] == 1.0 and cavity["weight"] > 0
    solid = copy.deepcopy(turns)
    lathe = next(t for t in solid if t["tool"] == "lathe")
    # the same outside, but the profile closes over the top instead of going down inside: a solid
    lathe["arguments"]["profile"] = [[0, 0], [0.036, 0], [0.0385, 0.001], [0.0397, 0.004], [0.04, 0.008], [0.04, 0.097],
                                     [0.0397, 0.0993], [0.039, 0.1], [0, 0.1]]
    wrong, wrong_stored = run_episode(EXAMPLES / "mug", solid)
    assert wrong.reward < result.reward
    assert wrong_stored["rewards"]["assembly/cavity"]["value"] < 1.0, failing(wrong_stored)


def test_a_run_that_builds_nothing_scores_0_though_the_start_scene_has_a_light_and_a_camera():
    """Only looking, or only failed changes: reward 0 (threed-geometry/4), not the starting
    scene's light and camera checks nor a half-connected empty assembly."""
    turns = [{"tool": "lathe", "arguments": {"name": "Body", "profile": [[-1, 0]]}},  # refused: a failed change
             {"tool": "inspect_scene", "arguments": {}},
             {"tool": "finish", "arguments": {"summary": "looked"}}]  # fmt: skip
    result, stored = run_episode(EXAMPLES / "mug", turns)
    assert result.reward == 0.0
    assert list(stored["rewards"]) == ["scene/built"], stored["rewards"]
    assert "built nothing" in stored["rewards"]["scene/built"]["detail"]["message"]


def test_lamp_and_glass_scripts_build_closed_solids_with_a_glowing_bulb_and_a_cloth_shade(tmp_path):
    """The glowing lamp and the smooth glass (no task folder: the generic checks) still build:
    closed lathed solids, the bulb's material glowing and the shade's translucent, read back."""
    empty = tmp_path / "empty"
    empty.mkdir()
    said = {}
    for name in ("glowing-lamp", "smooth-glass"):
        result, stored = run_episode(empty, without_renders(load_script(EXAMPLES / f"{name}.jsonl")))
        assert result.reward == 1.0, (name, failing(stored))
        said[name] = [str(m.content).replace(" ", "") for m in stored["messages"]]
        lathes = [c for c in said[name] if c.startswith("lathed")]
        assert lathes and all("(closedsolid)" in c for c in lathes), name
    lamp = said["glowing-lamp"]
    assert any('"emission_strength":12.0' in c and c.startswith("createdandassigned'Bulb'") for c in lamp)
    assert any('"translucency":0.45' in c and c.startswith("createdandassigned'Linen'") for c in lamp)
    assert any('"revolved":111' in c for c in said["smooth-glass"])  # 11 segments x 10 + the last point
