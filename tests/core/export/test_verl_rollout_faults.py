"""``HorizonTool`` where a rollout goes wrong in ways the newcomer found: a plugin reward that
raises, an exported repository that is gone from this machine.

Issue 17: the Terminal-Bench task's files at /app (a coding-plugin format) moved unchanged to
tests/plugins/coding/test_coding_export.py; the other two run on ``notes``, the test plugin, with
the same assertions."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from core.errors import UserError
from core.export import export_runs
from core.plugin import load_plugin
from core.trainers import verl as adapter
from core.trainers.verl import HorizonTool

FINISH = {"summary": "done"}


class _AgentData:
    """What verl's ``ToolAgentLoop`` passes to ``execute`` as ``agent_data`` (the fields a tool may use)."""

    def __init__(self, request_id: str):
        self.request_id = request_id
        self.extra_fields: dict = {}


def verl_export(run_id: str, home: Path, out: Path) -> tuple[dict, dict[str, HorizonTool]]:
    """The verl export of one run: its row, and one ``HorizonTool`` per tool config entry."""
    result = export_runs([run_id], "verl", out, home=home)
    parquet, config, _lengths = result.files
    (row,) = pq.read_table(parquet).to_pylist()
    tools = {}
    for entry in yaml.safe_load(config.read_text())["tools"]:
        tool = HorizonTool(config={**entry["config"], "horizon_home": str(home)}, tool_schema=entry["tool_schema"])
        tools[tool.name] = tool
    return row, tools


def create_kwargs(row: dict, name: str) -> dict:
    return row["extra_info"]["tools_kwargs"][name]["create_kwargs"]


@pytest.fixture
def closing_episodes():
    yield
    adapter.close_all()


@pytest.fixture
def notes_export(notes_plugin, notes_run, tmp_path_factory):
    """The real notes run that made the fix (conftest.py), with the notes plugin installed: its id, home and an export path."""
    out = tmp_path_factory.mktemp("verl-faults") / "tasks.parquet"
    return notes_run.run_id, notes_run.home, out


def test_a_reward_that_raises_is_an_observation_not_a_crash(notes_export, tmp_path, monkeypatch, closing_episodes):
    run_id, home, _out = notes_export
    row, tools = verl_export(run_id, home, tmp_path / "tasks.parquet")
    plugin_class = type(load_plugin("notes"))

    def broken(self, task, trajectory):
        raise RuntimeError("the test runner is gone")

    monkeypatch.setattr(plugin_class, "reward", broken)
    agent_data = _AgentData("r")

    async def finish():
        instance_id, _ = await tools["finish"].create(create_kwargs=create_kwargs(row, "finish"))
        try:
            return await tools["finish"].execute(instance_id, FINISH, agent_data=agent_data)
        finally:
            await tools["finish"].release(instance_id)

    seen, reward, metrics = asyncio.run(finish())
    assert "reward failed" in seen.text and "RuntimeError: the test runner is gone" in seen.text
    assert reward == 0.0 and metrics["done"] == 1.0 and metrics["reward_failed"] == 1.0
    assert agent_data.extra_fields[adapter.REWARD_FIELD] == 0.0 and agent_data.extra_fields[adapter.SCORED_FIELD] is False
    assert "the test runner is gone" in agent_data.extra_fields[adapter.REWARD_ERROR_FIELD]
    assert adapter.compute_score("horizon/notes", "", "{}", extra_info={**row["extra_info"], **agent_data.extra_fields}) == {
        "score": 0.0, "horizon_scored": False}

    async def per_trajectory():  # verl's SGLang rollout asks calc_reward at the end: 0.0, not an exception
        kwargs = create_kwargs(row, "finish")
        await tools["finish"].create("req-r", **kwargs)
        try:
            await tools["finish"].execute("req-r", FINISH)
            return await tools["finish"].calc_reward("req-r")
        finally:
            await tools["finish"].release("req-r")

    assert asyncio.run(per_trajectory()) == 0.0


def test_a_moved_repository_names_the_exported_path(notes_export, tmp_path, closing_episodes):
    run_id, home, _ = notes_export
    row, tools = verl_export(run_id, home, tmp_path / "tasks.parquet")
    gone = tmp_path / "moved-away" / "notes"
    kwargs = {**create_kwargs(row, "view_file"), "repo": str(gone)}

    async def start():
        with pytest.raises(UserError) as caught:
            await tools["view_file"].create("req-m", **kwargs)
        instance_id, _ = await tools["view_file"].create(create_kwargs=kwargs)
        seen = await tools["view_file"].execute(instance_id, {"path": "ANSWER.txt"}, agent_data=_AgentData("m"))
        return caught.value, seen

    error, (seen, _, metrics) = asyncio.run(start())
    for text in (str(error), seen.text):
        assert f"starting repository {gone}" in text and "missing on this machine" in text
        assert "same path" in text and "--repo" not in text
    assert metrics["is_error"] == 1.0
