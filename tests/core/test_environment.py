"""One ``Environment`` behind every driver: the loop and the verl adapter show a policy the same observations.

One scripted episode of the test plugin (``notes``) goes through ``agent run``'s loop (``core.runner.Run``),
is exported for verl, and the same tool calls are replayed through ``core.trainers.verl.HorizonTool``
as verl's per-trajectory rollout drives it. The episode exercises what used to differ between the
two paths: an output over the cap (cut, saved whole, the note naming the lines), an error, a
malformed call, a repeated call (the stuck detector's warning), a fix and ``finish``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
from contextlib import closing

import pyarrow.parquet as pq
import yaml

from core.export import export_runs
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run
from core.runs import open_store
from core.state import Limits, Pricing
from core.trainers import verl as adapter

VIEW = {"tool": "view_file", "arguments": {"path": "log.md", "start_line": 1, "end_line": 2}}
CALLS = [
    {"tool": "shell", "arguments": {"command": "seq 1 4000"}},  # ~19 kB: over the 8,000-character cap
    {"tool": "view_file", "arguments": {"path": "missing.txt"}},  # an error
    {"tool": "edit_file", "arguments": {"path": "ANSWER.txt"}},  # malformed: old_text and new_text missing
    VIEW, VIEW, VIEW,  # the third repeat draws the stuck detector's warning
    {"tool": "edit_file", "arguments": {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}},  # what the reward reads
    {"tool": "finish", "arguments": {"summary": "answered"}},
]  # fmt: skip
#: The loop's budget note after each step's last observation (``core.loop.Episode.budget_note``): the driver's, not the environment's.
BUDGET_NOTE = re.compile(r"\n\n\[\d+ steps? and [\d,]+ tokens left\]$")


def test_the_loop_and_verl_show_the_same_observations_of_one_episode(tmp_path, monkeypatch, notes_plugin, notes_folder):
    home = tmp_path / "home"
    monkeypatch.setenv("HORIZON_HOME", str(home))
    run = Run.start(Task(plugin=notes_plugin, instruction="write done in ANSWER.txt", repo=notes_folder),
                    ScriptedPolicy(CALLS, name="parity"), policy_config={"kind": "scripted", "script": "parity"},
                    limits=Limits(max_steps=20), pricing=Pricing(), home=home)  # fmt: skip
    try:
        result = run.execute()
    finally:
        run.close()
    assert result.reward == 1.0, result.exit_detail
    with closing(open_store(result.run_id, home)) as store:
        loop_seen = [m.content for m in store.messages() if m.role == "tool"]
    assert len(loop_seen) == len(CALLS)

    parquet, config = export_runs([result.run_id], "verl", tmp_path / "tasks.parquet", home=home).files[:2]  # and the length report
    row = pq.read_table(parquet).to_pylist()[0]
    tools = {}
    for entry in yaml.safe_load(config.read_text())["tools"]:
        module, name = entry["class_name"].rsplit(".", 1)
        tool = getattr(importlib.import_module(module), name)(config={**entry["config"], "horizon_home": str(home)},
                                                              tool_schema=entry["tool_schema"])  # fmt: skip
        tools[tool.name] = tool

    async def rollout() -> tuple[list[str], list[float]]:
        kwargs = row["extra_info"]["tools_kwargs"]["view_file"]["create_kwargs"]
        await asyncio.gather(*(t.create("trajectory-1", **kwargs) for t in tools.values()))
        seen = []
        for call in CALLS:
            response, _, _ = await tools[call["tool"]].execute("trajectory-1", json.dumps(call["arguments"]))
            seen.append(response.text)
        rewards = [await tools["finish"].calc_reward("trajectory-1")]
        for t in tools.values():
            await t.release("trajectory-1")
        return seen, rewards

    try:
        verl_seen, rewards = asyncio.run(rollout())
    finally:
        adapter.close_all()

    for i, (loop_text, verl_text) in enumerate(zip(loop_seen, verl_seen, strict=True)):
        assert BUDGET_NOTE.sub("", loop_text) == verl_text, f"call {i + 1} ({CALLS[i]['tool']}) differs"
    # What the two paths now share, each present in this episode:
    assert "[lines " in verl_seen[0] and "view_file path=.horizon/observations/call-1.txt" in verl_seen[0] and len(verl_seen[0]) < 8200
    assert "does not exist" in verl_seen[1] or "not found" in verl_seen[1].lower()
    assert "invalid arguments for edit_file" in verl_seen[2]
    assert "[" in verl_seen[5][len(verl_seen[4]):] and verl_seen[5] != verl_seen[4]  # the warning after the third repeat
    assert rewards == [1.0]
