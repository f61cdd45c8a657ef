"""verl's own loaders on a verl export that mixes plugins (the coding plugin and ``notes``, the test plugin).

verl 0.8's ``initialize_tools_from_config`` on the tool config and its ``RLHFDataset`` (the
length filter, with ``data.max_prompt_length`` from the export's length report, and the rows as
its agent loop gets them: ``tools_kwargs``, ``extra_info.tool_selection``); the prompt each row's
rollout renders (``ToolAgentLoop``: the tokenizer's own template, the row's selected tools) is
counted as the report counts it. The tokenizer is the tiny Qwen3-format one
(``core.trainers.tiny``). Here, not in tests/core/, because it needs a domain plugin.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from core.export import export_runs
from core.plugin import Task
from core.policy import ScriptedPolicy, load_script
from core.runner import Run
from core.state import Limits, Pricing
from tests.core.export.conftest import FINISH, OTHER_TASK, notes_folder, view
from tests.core.export.notes_task import NOTES_FIX, NOTES_PLUGIN, NOTES_TASK

pytest.importorskip("torch", reason="the trainers' tests need the train extra (torch, transformers, trl, verl)")
pytest.importorskip("verl")

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """The tiny Qwen3-format model and tokenizer, saved once for the module."""
    from core.trainers.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture(scope="module")
def mixed(tiny, tmp_path_factory):
    """A verl export of four real runs, measured with the tiny tokenizer: the example script that
    fixes the coding NPE (reward 1), and three of ``notes``: two attempts at one task (``fix``,
    reward 1; ``view``, reward 0) and one at another. Coding's run comes first, so the tool config
    holds coding's schemas for the names both plugins have."""
    root = tmp_path_factory.mktemp("mixed")
    home = root / "home"
    repo = Path(shutil.copytree(EXAMPLES / "python-user-service", root / "python-user-service"))
    first, other = notes_folder(root, "notes"), notes_folder(root, "other-notes", other=True)
    runs = [("coding", "fix NPE in user module", repo, load_script(EXAMPLES / "scripts" / "fix-python-npe.jsonl"), 1.0),
            ("notes", NOTES_TASK, first, [view(), NOTES_FIX, FINISH], 1.0), ("notes", NOTES_TASK, first, [view(), FINISH], 0.0),
            ("notes", OTHER_TASK, other, [view("draft.md"), NOTES_FIX, FINISH], 1.0)]
    ids = []
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(NOTES_PLUGIN))
        mp.setenv("HORIZON_TEST_ENV", "horizon")  # the example repository needs only pytest (tests/conftest.py)
        for plugin, instruction, folder, script, reward in runs:
            run = Run.start(Task(plugin=plugin, instruction=instruction, repo=folder), ScriptedPolicy(script, name="scripted"),
                            policy_config={"kind": "scripted"}, limits=Limits(max_steps=10), pricing=Pricing(), home=home)
            try:
                result = run.execute()
            finally:
                run.close()
            assert (result.status, result.reward) == ("finished", reward), result
            ids.append(result.run_id)
        return export_runs(ids, "verl", root / "out" / "tasks.parquet", home=home, tokenizer=tiny)


def test_verl_loads_a_mixed_export_once_per_tool_with_each_rows_own_tools(mixed, tiny, notes_plugin, tmp_path):
    from omegaconf import OmegaConf
    from transformers import AutoTokenizer
    from verl.tools.tool_registry import initialize_tools_from_config
    from verl.utils.dataset.rl_dataset import RLHFDataset

    from core.trainers.verl import HorizonTool

    parquet, config, lengths = mixed.files
    tools = initialize_tools_from_config(str(config))
    names = [t.name for t in tools]
    assert len(names) == len(set(names)) and names.count("finish") == 1 and all(type(t) is HorizonTool for t in tools)
    by_name = {t.name: t for t in tools}
    assert lengths.name == "tasks.lengths.json" and json.loads(lengths.read_text()) == mixed.lengths
    # the names notes shares with coding have different schemas: verl shows coding's; said, not silent
    assert any(w.startswith("the view_file tool of coding and notes has different schemas") for w in mixed.warnings)

    report = mixed.lengths
    limit = report["settings"]["verl (0.8.0, 0.9.1)"]["data.max_prompt_length"]
    assert limit == max(r["filter_prompt_tokens"] for r in report["rows"]) > 512  # verl's default keeps none of them
    tokenizer = AutoTokenizer.from_pretrained(tiny)

    def dataset(max_prompt_length: int) -> RLHFDataset:
        cfg = OmegaConf.create({"max_prompt_length": max_prompt_length, "tool_config_path": str(config), "filter_overlong_prompts": True,
                                "filter_overlong_prompts_workers": 1, "cache_dir": str(tmp_path / "cache"), "return_raw_chat": True})
        return RLHFDataset(data_files=[str(parquet)], tokenizer=tokenizer, config=cfg)

    kept = dataset(limit)
    assert len(kept) == len(report["rows"]) == 3  # the coding task and notes' two (fix and view are one task)
    assert kept.tool_schemas == [json.loads(json.dumps(t.tool_schema.model_dump(exclude_unset=True, exclude_none=True))) for t in tools]
    longest = max(report["rows"], key=lambda r: r["filter_prompt_tokens"])
    assert len(dataset(longest["filter_prompt_tokens"] - 1)) == len(report["rows"]) - 1  # the report counts as verl's filter does
    rows = {tuple(r["run_ids"]): r for r in report["rows"]}
    from core.export.lengths import load_chat_template, render

    for i in range(len(kept)):
        item = kept[i]
        info = item["extra_info"]
        plugin = item["data_source"].removeprefix("horizon/")
        own = [t["function"]["name"] for t in _plugin_tools(plugin)]
        assert info["tool_selection"] == own and set(own) <= set(by_name)
        for name in by_name:  # what ToolAgentLoop._call_tool reads: tools_kwargs.get(name, {}).get("create_kwargs", {})
            assert item["tools_kwargs"][name]["create_kwargs"]["plugin"] == plugin
        assert info["quality_flags"] == [[] for _ in info["run_ids"]]
        assert tuple(info["run_ids"]) in rows
        shown = [by_name[n].tool_schema.model_dump(exclude_unset=True, exclude_none=True) for n in info["tool_selection"]]
        # the rollout's prompt as ToolAgentLoop makes it (the tokenizer's own template, the row's tools): the report's prompt_tokens
        prompt = tokenizer.apply_chat_template(list(item["raw_prompt"]), tools=shown, add_generation_prompt=True, tokenize=False)
        assert prompt == render(load_chat_template(), list(item["raw_prompt"]), shown, add_generation_prompt=True)
        assert len(tokenizer(prompt, add_special_tokens=False)["input_ids"]) == rows[tuple(info["run_ids"])]["prompt_tokens"]


def _plugin_tools(plugin: str) -> list[dict]:
    from core.export.source import plugin_tools

    return [json.loads(s) for s in plugin_tools(plugin)[0]]


