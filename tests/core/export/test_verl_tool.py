"""``core.trainers.verl.HorizonTool`` driven as verl drives it, on the export of a real run.

verl is not installed here (it imports torch and Ray), so the tests follow its interface as read
from its wheels: ``verl/tools/base_tool.py`` and ``verl/tools/schemas.py`` of verl 0.9.1; the
per-call use of ``verl/experimental/agent_loop/tool_agent_loop.py`` (0.9.1,
``ToolAgentLoop._call_tool``: create, execute with ``agent_data``, release, around each call);
the per-trajectory use of ``verl/workers/rollout/sglang_rollout/sglang_rollout.py`` (0.5.0:
every tool's ``create(request_id, **create_kwargs)``, ``execute(request_id, arguments)`` per call,
every tool's ``calc_reward`` and ``release`` at the end); and ``verl/tools/tool_registry.py``
(0.9.1) for how the tool config is read.

The run is of ``notes``, the test plugin (tests/notes_plugin): issue 17 moved these tests off the
coding plugin; each asserts what it asserted on the coding run (the fix is ANSWER.txt's todo
made done, and ``shell`` stands where ``run_tests`` did).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from pydantic import BaseModel, Field

from core.errors import UserError
from core.export import export_runs
from core.trainers import verl as adapter
from core.trainers.verl import HorizonTool, compute_score
from tests.core.export.notes_task import NOTES_FIX as FIX
from tests.core.export.notes_task import NOTES_PLUGIN, NOTES_TASK

FINISH = {"summary": "ANSWER.txt says done"}


class _Property(BaseModel):  # verl 0.9.1 schemas.py: OpenAIFunctionPropertySchema
    type: str | list[str]
    description: str | None = None
    enum: list[Any] | None = None


class _Parameters(BaseModel):  # OpenAIFunctionParametersSchema (``required`` is mandatory in 0.5.0)
    type: str
    properties: dict[str, _Property]
    required: list[str]


class _Function(BaseModel):
    name: str
    description: str
    parameters: _Parameters = Field(default_factory=lambda: _Parameters(type="object", properties={}, required=[]))


class _ToolSchema(BaseModel):  # OpenAIFunctionToolSchema
    type: str
    function: _Function


class _AgentData:
    """What ``ToolAgentLoop`` passes to ``execute`` as ``agent_data`` (the fields a tool may use)."""

    def __init__(self, request_id: str):
        self.request_id = request_id
        self.extra_fields: dict[str, Any] = {}


@pytest.fixture(scope="module")
def export(notes_run, tmp_path_factory):
    """The verl export of the real notes run that made the fix: its one row and its tool config."""
    out = tmp_path_factory.mktemp("verl-export") / "tasks.parquet"
    with pytest.MonkeyPatch.context() as mp:  # the export reads the plugin's tool schemas
        mp.syspath_prepend(str(NOTES_PLUGIN))
        result = export_runs([notes_run.run_id], "verl", out, home=notes_run.home)
    parquet, config, _lengths = result.files
    rows = pq.read_table(parquet).to_pylist()
    assert len(rows) == 1
    return {"row": rows[0], "config": yaml.safe_load(config.read_text())}


@pytest.fixture
def home(notes_plugin, tmp_path, monkeypatch):
    """A Horizon home for the episodes, with the notes plugin installed; every episode is closed after the test."""
    monkeypatch.setenv("HORIZON_HOME", str(tmp_path / "home"))
    yield tmp_path / "home"
    adapter.close_all()


def make_tools(config: dict, home: Path) -> dict[str, HorizonTool]:
    """One tool per config entry, as ``initialize_tools_from_config`` builds them."""
    tools = {}
    for entry in config["tools"]:
        cls = getattr(importlib.import_module(entry["class_name"].rsplit(".", 1)[0]), entry["class_name"].rsplit(".", 1)[1])
        tool = cls(config={**entry["config"], "horizon_home": str(home)}, tool_schema=entry["tool_schema"])
        tools[tool.name] = tool
    return tools


def create_kwargs(row: dict, name: str = "view_file") -> dict:
    return row["extra_info"]["tools_kwargs"][name]["create_kwargs"]


async def agent_loop_call(tools, row, agent_data, name: str, arguments: Any):
    """One tool call as verl 0.9.1's ``ToolAgentLoop._call_tool`` makes it."""
    tool = tools[name]
    instance_id, _ = await tool.create(create_kwargs=create_kwargs(row, name))
    try:
        return await tool.execute(instance_id, arguments, agent_data=agent_data)
    finally:
        await tool.release(instance_id)


def open_episodes(home: Path) -> list[Path]:
    folder = adapter.episodes_dir(home)
    return sorted(folder.iterdir()) if folder.is_dir() else []


def test_tool_config_loads_and_names_importable_tools_with_verl_schemas(export, home):
    config = export["config"]
    names = {entry["tool_schema"]["function"]["name"] for entry in config["tools"]}
    assert {"view_file", "edit_file", "shell", "finish"} <= names
    for entry in config["tools"]:
        assert entry["class_name"] == "core.trainers.verl.HorizonTool"
        assert entry["config"] == {"type": "native", "plugin": "notes", "plugins": ["notes"]}
        _ToolSchema.model_validate(entry["tool_schema"])  # optional arguments carry a type, required is a list
    view = next(e for e in config["tools"] if e["tool_schema"]["function"]["name"] == "view_file")
    assert view["tool_schema"]["function"]["parameters"]["properties"]["end_line"]["type"] == "integer"
    tools = make_tools(config, home)
    assert set(tools) == names and all(type(t) is HorizonTool for t in tools.values())
    kwargs = create_kwargs(export["row"])
    assert kwargs["plugin"] == "notes" and kwargs["instruction"] == NOTES_TASK and kwargs["start_tree"]
    assert Path(kwargs["repo"]).is_dir() and json.loads(kwargs["metadata"]) == {}


def test_per_trajectory_episode_fixes_the_bug_scores_one_and_is_released(export, home):
    row, tools = export["row"], make_tools(export["config"], home)

    async def trajectory():
        kwargs = create_kwargs(row)
        ids = await asyncio.gather(*(t.create("req-1", **kwargs) for t in tools.values()))
        assert {i for i, _ in ids} == {"req-1"}
        assert len(open_episodes(home)) == 1  # one episode for all the trajectory's tools
        seen, reward, metrics = await tools["view_file"].execute("req-1", {"path": "ANSWER.txt", "start_line": 1, "end_line": 1})
        assert "1: todo" in seen.text and reward == 0.0 and metrics["is_error"] == 0.0
        edited, _, metrics = await tools["edit_file"].execute("req-1", FIX["arguments"])
        assert metrics["is_error"] == 0.0, edited.text
        tested, _, metrics = await tools["shell"].execute("req-1", '{"command": "cat ANSWER.txt"}')
        assert metrics["is_error"] == 0.0 and "done" in tested.text.lower(), tested.text
        _, _, metrics = await tools["finish"].execute("req-1", FINISH)
        assert metrics["done"] == 1.0 and metrics["duration_s"] >= 0
        workspace = open_episodes(home)[0] / "workspace"
        assert (workspace / "ANSWER.txt").read_text() == "done\n"
        rewards = await asyncio.gather(*(t.calc_reward("req-1") for t in tools.values()))
        assert rewards == [1.0] * len(tools)
        for t in list(tools.values())[:-1]:
            await t.release("req-1")
        assert len(open_episodes(home)) == 1  # still held by the last tool
        await list(tools.values())[-1].release("req-1")
        assert open_episodes(home) == []

    asyncio.run(trajectory())


def test_agent_loop_trajectories_are_separate_episodes_judged_at_finish(export, home):
    row, tools = export["row"], make_tools(export["config"], home)
    fixer, idler = _AgentData("det-0"), _AgentData("det-0")  # full_determinism: the same request id

    async def fix(agent_data):
        await agent_loop_call(tools, row, agent_data, "view_file", {"path": "ANSWER.txt"})
        await agent_loop_call(tools, row, agent_data, "edit_file", json.dumps(FIX["arguments"]))
        return await agent_loop_call(tools, row, agent_data, "finish", FINISH)

    async def idle(agent_data):
        await agent_loop_call(tools, row, agent_data, "view_file", {"path": "ANSWER.txt"})
        return await agent_loop_call(tools, row, agent_data, "finish", FINISH)

    async def both(a, b):
        return await asyncio.gather(fix(a), idle(b))

    (_, _, fixed), (_, _, idled) = asyncio.run(both(fixer, idler))
    assert fixed["done"] == 1.0 and idled["done"] == 1.0
    assert fixer.extra_fields[adapter.EPISODE_FIELD] != idler.extra_fields[adapter.EPISODE_FIELD]
    folders = open_episodes(home)
    assert len(folders) == 2  # they outlive each call: they live as long as their trajectory
    texts = {(f / "workspace" / "ANSWER.txt").read_text() for f in folders}
    assert len(texts) == 2 and sum("done" in t for t in texts) == 1  # the fix is in one workspace only
    assert compute_score("horizon/notes", "", "{}", extra_info={**row["extra_info"], **fixer.extra_fields}) == {
        "score": 1.0, "horizon_scored": True}
    assert compute_score("horizon/notes", "", "{}", extra_info={**row["extra_info"], **idler.extra_fields}) == {
        "score": 0.0, "horizon_scored": True}
    assert compute_score("horizon/notes", "", "{}", extra_info=row["extra_info"]) == {"score": 0.0, "horizon_scored": False}
    del fixer
    gc.collect()
    assert len(open_episodes(home)) == 1  # the finished trajectory's episode is gone with its AgentData
    del idler
    gc.collect()
    assert open_episodes(home) == []


def test_bad_calls_are_error_observations_and_the_episode_goes_on(export, home):
    row, tools = export["row"], make_tools(export["config"], home)
    agent_data = _AgentData("r")

    async def calls():
        out = []
        for name, arguments in [("view_file", {"path": 3}), ("view_file", "{not json"), ("view_file", {"path": "../../etc/passwd"}),
                                ("edit_file", {"path": "ANSWER.txt", "old_text": "no such text", "new_text": "x"}),
                                ("view_file", {"path": "log.md", "start_line": 1, "end_line": 2}),
                                ("finish", FINISH), ("view_file", {"path": "ANSWER.txt"})]:
            out.append(await agent_loop_call(tools, row, agent_data, name, arguments))
        return out

    results = asyncio.run(calls())
    assert [m["is_error"] for _, _, m in results] == [1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 1.0]
    assert "invalid arguments for view_file" in results[0][0].text and "not valid JSON" in results[1][0].text
    assert "outside the repository" in results[2][0].text
    assert "episode has ended" in results[6][0].text
    assert agent_data.extra_fields[adapter.REWARD_FIELD] == 0.0


def test_a_changed_repository_is_refused(export, home):
    row, tools = export["row"], make_tools(export["config"], home)
    kwargs = {**create_kwargs(row), "start_tree": "0" * 40}

    async def start():
        with pytest.raises(UserError, match="not the task's starting files"):
            await tools["view_file"].create("req-2", **kwargs)
        instance_id, _ = await tools["view_file"].create(create_kwargs=kwargs)
        return await tools["view_file"].execute(instance_id, {"path": "ANSWER.txt"}, agent_data=_AgentData("x"))

    text, reward, metrics = asyncio.run(start())
    assert "could not start" in text.text and metrics["is_error"] == 1.0 and reward == 0.0
    assert open_episodes(home) == []
