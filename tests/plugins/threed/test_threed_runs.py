"""Whole episodes through the real runner (``core.runner.Run``): the example scripts, a wrong
script, and an episode full of bad input; each ends verified with its reward and named checks."""

from __future__ import annotations

import json
import os
import signal
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from core.config import load_settings
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.policy.scripted import load_script
from core.runner import Run, RunResult, open_store
from core.state import ExitStatus, Limits, Pricing

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "threed"


def run_episode(repo: Path, turns: list[dict[str, Any]], on_event=None, holder: list | None = None) -> tuple[RunResult, dict[str, Any]]:
    started = Run.start(
        Task(plugin="threed", instruction="build the scene in task.json", repo=repo), ScriptedPolicy(turns),
        policy_config={"kind": "scripted", "script": "inline"}, limits=Limits(max_steps=len(turns) + 2), pricing=Pricing(),
        on_event=on_event,
    )
    if holder is not None:
        holder.append(started)
    try:
        result = started.execute()
    finally:
        started.close()
    with closing(open_store(result.run_id)) as store:
        stored = {"rewards": store.rewards(), "messages": store.messages(), "row": store.run()}
    stored["crash"] = (started.folder / "crash.txt").is_file()
    stored["workspace"] = started.folder / "workspace"
    return result, stored


def without_renders(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The script minus its render_preview calls (renders cost seconds and no reward)."""
    return [t for t in turns if t.get("tool") != "render_preview"]


def test_low_table_script_builds_the_table_with_reward_1():
    turns = without_renders(load_script(EXAMPLES / "low-table.jsonl"))  # render_preview has its own tests
    result, stored = run_episode(EXAMPLES / "low-table", turns)
    assert not stored["crash"], result.exit_detail
    assert result.exit_status == ExitStatus.SUBMITTED and result.reward == 1.0
    rewards = stored["rewards"]
    assert {"Tabletop/closed_solid", "Leg.BR/dimensions", "scene/overall_dimensions", "scene/lights", "scene/camera"} <= set(rewards)
    assert {"assembly/contacts", "assembly/stands", "assembly/symmetry", "assembly/in_view"} <= set(rewards)
    assert all(c["value"] == 1.0 for c in rewards.values() if c["weight"] > 0)
    assert rewards["assembly/cavity"]["weight"] == 0 and rewards["assembly/cavity"]["detail"]["status"] == "not_applicable"
    assert (stored["workspace"] / "scene.blend").is_file()
    assert not (EXAMPLES / "low-table" / "scene.blend").exists()  # the example folder itself is untouched


def worker_processes() -> list[int]:
    """Blender workers whose parent is this test process."""
    found = []
    for status in Path("/proc").glob("[0-9]*/status"):
        try:
            ppid = int(next(line for line in status.read_text().splitlines() if line.startswith("PPid:")).split()[1])
            cmdline = (status.parent / "cmdline").read_bytes()
        except (OSError, StopIteration, ValueError):
            continue
        if ppid == os.getpid() and b"plugins.threed.worker" in cmdline:
            found.append(int(status.parent.name))
    return found


def test_verification_stops_the_worker():
    turns = [{"tool": "add_primitive", "arguments": {"name": "Tabletop", "kind": "cube", "size": [1.2, 0.6, 0.04]}},
             {"tool": "finish", "arguments": {"summary": "only the top"}}]
    result, stored = run_episode(EXAMPLES / "low-table", turns)
    # judged (the top alone, grey under the start scene's light: the oak look the request asks
    # fails, which gates the reward to 0, threed-geometry/6), and the worker is gone afterwards
    assert result.reward == 0.0 and stored["row"]["reward_summary"].startswith("the requested look fails"), stored["row"]
    assert "Tabletop/material_look" in stored["row"]["reward_summary"]
    assert worker_processes() == []


def test_an_interrupted_run_resumes_from_the_saved_scene(tmp_path):
    turns = without_renders(load_script(EXAMPLES / "low-table.jsonl"))
    script = tmp_path / "table.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    holder: list[Run] = []

    def stop_after_the_legs(kind: str, data: dict[str, Any]) -> None:
        if kind == "tool" and data["call"] is not None and "Leg.BR" in data["call"].arguments:
            holder[0].episode.stop_requested = True  # as the first Ctrl-C does

    started = Run.start(
        Task(plugin="threed", instruction="a low table", repo=EXAMPLES / "low-table"), ScriptedPolicy(turns),
        policy_config={"kind": "scripted", "script": str(script)}, limits=Limits(max_steps=len(turns) + 2), pricing=Pricing(),
        on_event=stop_after_the_legs,
    )
    holder.append(started)
    try:
        first = started.execute()
    finally:
        started.close()
    assert first.status == "interrupted" and first.steps == 7
    resumed = Run.open(first.run_id, settings=load_settings())  # a new episode object: a fresh worker loads scene.blend
    try:
        final = resumed.execute()
    finally:
        resumed.close()
    assert final.status == "finished" and final.reward == 1.0
    with closing(open_store(first.run_id)) as store:
        calls = [c["tool"] for s in store.steps() for c in s["tool_calls"]]
    assert calls.count("add_mesh") == 4  # nothing built before the stop was built again


def test_a_leg_10_cm_too_short_scores_lower_and_names_the_check():
    turns = without_renders(load_script(EXAMPLES / "low-table-short-leg.jsonl"))
    result, stored = run_episode(EXAMPLES / "low-table", turns)
    assert result.exit_status == ExitStatus.SUBMITTED
    assert 0 < result.reward < 1.0
    failing = {name for name, c in stored["rewards"].items() if c["value"] < 1.0 and c["weight"] > 0}
    # it hangs 10 cm below the top: joined to nothing, the drop test (threed-geometry/7) sees the table fall apart
    assert failing == {"Leg.BR/dimensions", "assembly/contacts", "assembly/connected", "physics/stands"}
    dropped = stored["rewards"]["physics/stands"]["detail"]
    assert dropped["verdict"] == "fell apart" and dropped["apart"][0]["parts"] == ["Leg.BR"], dropped
    assert result.reward <= 0.25 and "it does not stand" in stored["row"]["reward_summary"]
    detail = stored["rewards"]["Leg.BR/dimensions"]["detail"]
    assert detail["measured"][2] == 0.31 and "z is 0.31 m, asked 0.41" in detail["message"]


def test_pen_holder_matches_its_reference_mesh():
    turns = without_renders(load_script(EXAMPLES / "pen-holder.jsonl"))
    result, stored = run_episode(EXAMPLES / "pen-holder", turns)
    assert result.reward == 1.0, stored["rewards"]
    ref = stored["rewards"]["PenHolder/reference"]["detail"]
    assert ref["chamfer_m"] < 0.0005 and ref["iou"] > 0.9
    held = stored["rewards"]["assembly/cavity"]["detail"]["held_m3"]
    assert 0.00025 < held < 0.000309  # the inside is pi * 34 mm² * 85 mm = 309 cm³; voxel walls take a little


def test_bad_input_gives_clear_observations_and_the_run_goes_on(tmp_path):
    repo = tmp_path / "block"
    repo.mkdir()
    (repo / "task.json").write_text(json.dumps({
        "objects": [{"name": "Block", "dimensions": [0.5, 0.5, 0.5], "materials": ["Steel"]}],
    }))
    turns = [
        {"tool": "add_primitive", "arguments": {"name": "Block", "kind": "cube", "size": [0.5, 0.5, 0.5]}},
        {"tool": "set_material", "arguments": {"object": "Block", "material": "Vibranium"}},
        {"tool": "add_mesh", "arguments": {"name": "Sheet", "vertices": [[0, 0, 0], [1, 0, 0], [0, 1, 0]], "faces": [[0, 1, 2]]}},
        {"tool": "add_modifier", "arguments": {"name": "Block", "kind": "boolean", "object": "Sheet"}},
        {"tool": "set_camera", "arguments": {"location": [2, -2, 2], "target": [0, 0, 0]}},
        {"tool": "render_preview", "arguments": {"width": 640, "height": 480, "samples": 1024, "time_limit_s": 1}},
        {"tool": "delete_object", "arguments": {"name": "Sheet"}},  # the worker is killed after this call
        {"tool": "set_material", "arguments": {"object": "Block", "material": "Steel", "preset": "steel"}},
        {"tool": "finish", "arguments": {"summary": "a steel block"}},
    ]
    holder: list[Run] = []

    def kill_worker_after_delete(kind: str, data: dict[str, Any]) -> None:
        if kind == "tool" and data["call"] is not None and data["call"].name == "delete_object":
            worker = holder[0].episode.ctx.plugin_state["worker"]
            os.kill(worker.pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while worker.pid is not None and time.monotonic() < deadline:  # dead between calls, not during one
                time.sleep(0.05)

    result, stored = run_episode(repo, turns, kill_worker_after_delete, holder)
    assert not stored["crash"]
    observations = [m.content for m in stored["messages"] if m.role == "tool"]
    assert len(observations) == len(turns)
    assert "material 'Vibranium' does not exist" in observations[1]
    assert "boolean needs closed solids" in observations[3] and "'Sheet' has 3 non-manifold edges" in observations[3]
    assert "time limit of 1 s" in observations[5]
    assert "worker had stopped, killed by SIGKILL" in observations[7] and "created and assigned 'Steel'" in observations[7]
    assert result.exit_status == ExitStatus.SUBMITTED and result.reward == 1.0


def test_scene_without_task_json_is_graded_free_form(tmp_path):
    repo = tmp_path / "free"
    repo.mkdir()
    turns = [
        {"tool": "add_primitive", "arguments": {"name": "Ball", "kind": "uv_sphere", "radius": 0.2}},
        {"tool": "add_primitive", "arguments": {"name": "Card", "kind": "plane", "size": [0.2, 0.1]}},
        {"tool": "set_material", "arguments": {"object": "Ball", "material": "Glass", "preset": "glass"}},
        {"tool": "finish", "arguments": {"summary": "a ball and a card"}},
    ]
    result, stored = run_episode(repo, turns)
    failing = sorted(n for n, c in stored["rewards"].items() if c["value"] < 1 and c["weight"] > 0)
    assert failing == ["Card/closed_solid", "Card/materials"]
    assert result.reward == 0.5
    unjudged = {n: c for n, c in stored["rewards"].items() if n.startswith("assembly/")}
    assert len(unjudged) == 7 and all(c["weight"] == 0 and c["value"] == 0 and c["detail"]["status"] == "not_applicable"
                                      for c in unjudged.values())
    assert "no task.json states the intended object" in unjudged["assembly/stands"]["detail"]["message"]


def test_bookshelf_builds_mirrored_sides_and_an_array_of_shelves():
    result, stored = run_episode(EXAMPLES / "bookshelf", without_renders(load_script(EXAMPLES / "bookshelf.jsonl")))
    assert result.reward == 1.0, {n: c["detail"].get("message") for n, c in stored["rewards"].items() if c["value"] < 1}
    assert stored["rewards"]["Shelves/bodies"]["detail"]["bodies"] == 5
    assert stored["rewards"]["Sides/bodies"]["detail"]["bodies"] == 2


def test_examples_are_unchanged_by_runs():
    for folder in ("low-table", "pen-holder", "bookshelf"):
        names = sorted(p.name for p in (EXAMPLES / folder).iterdir())
        assert "scene.blend" not in names and "task.json" in names


def test_a_reference_mesh_overwritten_by_the_agent_is_not_what_the_reward_reads():
    # reward hacking: a solid cylinder (no cavity) exported over the task's reference.stl; the
    # reward must compare against the reference as set-up saved it, outside the agent's reach
    turns = without_renders(load_script(EXAMPLES / "pen-holder.jsonl"))
    solid = [t for t in turns if t["arguments"].get("name") != "Cutter" and t["tool"] != "add_modifier"]
    hack = {"tool": "export_scene", "arguments": {"path": "reference.stl", "format": "stl"}}
    result, stored = run_episode(EXAMPLES / "pen-holder", [*solid[:2], hack, *solid[2:]])  # exported while alone in the scene
    assert (stored["workspace"] / "reference.stl").read_bytes() != (EXAMPLES / "pen-holder" / "reference.stl").read_bytes()
    ref = stored["rewards"]["PenHolder/reference"]
    assert ref["value"] < 1.0 and result.reward < 1.0, ref  # the solid is not the cup
    assert stored["rewards"]["assembly/cavity"]["value"] == 0.0  # and holds no water
