"""TRL's ``GRPOTrainer(environment_factory=...)`` drives real Horizon episodes (``core.trainers.trl``).

The trainer, its tool-calling loop, its response parser, its reward plumbing and its loss are
TRL's own (trl 1.16, on CPU with the tiny Qwen3-format model of ``core.trainers.tiny``); only the
model's sampled tokens are scripted (``ScriptedGRPOTrainer._generate_single_turn``), so that the
episodes call tools at all: the tool calls, the sandbox, the plugin's set-up and reward and the
workspaces are real (the ``notes`` test plugin's suite). Needs the ``train`` extra, which setup.sh
installs: never skipped.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from core.errors import UserError
from core.trainers import trl as horizon_trl
from core.trainers.episodes import episodes_dir

SUITE = Path(__file__).resolve().parents[1] / "notes_plugin" / "suite"


def _scripted_trainer_class():
    from trl import GRPOTrainer

    class ScriptedGRPOTrainer(GRPOTrainer):
        """GRPOTrainer whose policy's tokens are scripted: turn 1 runs ``shell`` (the even sample
        writes the right answer, the odd one a wrong one), turn 2 calls ``finish``, turn 3 says so."""

        def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
            tok = self.processing_class
            response = tok.convert_tokens_to_ids("<tool_response>")
            replies = []
            for index, ids in enumerate(prompt_ids):
                turn = ids.count(response)
                if turn == 0:
                    answer = "done" if index % 2 == 0 else "nope"
                    command = f"printf '{answer}\\n' > ANSWER.txt; test -e {SUITE}/write-done/task.json && echo suite-visible || echo suite-hidden"
                    text = "<tool_call>\n" + json.dumps({"name": "shell", "arguments": {"command": command}}) + "\n</tool_call>"
                elif turn == 1:
                    text = "<tool_call>\n" + json.dumps({"name": "finish", "arguments": {"summary": "wrote ANSWER.txt"}}) + "\n</tool_call>"
                else:
                    text = "The task is done."
                replies.append(tok.encode(text, add_special_tokens=False) + [tok.eos_token_id])
            open_now = [env.episode.folder for env in self.environments if env.episode is not None]
            assert open_now and all(folder.is_dir() for folder in open_now), "a rollout's episode has no workspace"
            self.seen_folders = {*getattr(self, "seen_folders", set()), *open_now}
            return replies, None

    return ScriptedGRPOTrainer


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from core.trainers.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen3"))


def test_grpo_trainer_drives_two_horizon_episodes(notes_plugin, horizon_home, tiny_model, tmp_path):
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig

    rows = horizon_trl.suite_rows(SUITE, only=["write-done"])
    assert [r["plugin"] for r in rows] == ["notes"] and rows[0]["prompt"][1]["content"] == rows[0]["instruction"]
    dataset = Dataset.from_list(rows * 2)  # two rows of one task: one training step of one prompt x 2 generations
    args = GRPOConfig(output_dir=str(tmp_path / "out"), per_device_train_batch_size=2, num_generations=2, max_steps=1,
                      max_completion_length=1024, max_tool_calling_iterations=4, logging_steps=1, report_to=[],
                      save_strategy="no", use_cpu=True, bf16=False, beta=0.0, seed=0, dataloader_num_workers=0)  # fmt: skip
    trainer = _scripted_trainer_class()(
        model=str(tiny_model), args=args, train_dataset=dataset, processing_class=AutoTokenizer.from_pretrained(tiny_model),
        environment_factory=horizon_trl.environment_class("notes"), callbacks=[horizon_trl.closing_callback()],
    )
    trainer.train()

    envs = trainer._environment_pool[None]
    used = [env for env in envs if env.tool_calls]
    assert len(used) == 2, "both rollouts of the step ran their episode's tool calls"
    for env in used:
        tools = [call["tool"] for call in env.tool_calls]
        assert tools == ["shell", "finish"]
        shell = env.tool_calls[0]["observation"]
        assert "suite-hidden" in shell and "[exit 0]" in shell, shell  # ran in bwrap, which hides the suite as agent eval does
        assert env.exit_status == "submitted"
        assert env.verdict is not None and env.verdict.version == "notes/1"
    assert sorted(env.verdict.reward for env in used) == [0.0, 1.0]  # the plugin's reward on each episode's files
    logged = [entry for entry in trainer.state.log_history if "rewards/HorizonNotesEnvironment/mean" in entry]
    assert logged and math.isclose(logged[0]["rewards/HorizonNotesEnvironment/mean"], 0.5)
    assert logged[0]["tools/call_frequency"] == 2.0 and logged[0]["tools/failure_frequency"] == 0.0
    assert trainer.seen_folders and all(str(f).startswith(str(episodes_dir())) for f in trainer.seen_folders)
    assert not any(f.exists() for f in trainer.seen_folders), "the episodes' workspaces are deleted when training ends"
    assert list(episodes_dir().iterdir()) == []


def test_trl_reads_the_same_schema_as_horizons_tool(notes_plugin):
    """transformers' get_json_schema (what TRL renders into the prompt) of each generated method
    keeps the tool's name, description, arguments, types, enums and required list; the rest of an
    argument's schema is in its description."""
    from transformers.utils import get_json_schema

    from core.plugin import load_plugin

    cls = horizon_trl.environment_class("notes")
    env = cls()
    for tool in load_plugin("notes").tools():
        ours, theirs = tool.schema()["function"], get_json_schema(getattr(env, tool.name))["function"]
        assert theirs["name"] == ours["name"] and theirs["description"] == ours["description"]
        params = ours["parameters"]
        assert list(theirs["parameters"]["properties"]) == list(params["properties"])
        assert theirs["parameters"].get("required", []) == params.get("required", [])
        for name, prop in params["properties"].items():
            got = theirs["parameters"]["properties"][name]
            kind = prop.get("type") or next(b["type"] for b in prop["anyOf"] if b["type"] != "null")
            assert got["type"] == kind and got["description"].startswith(prop["description"])
            assert got.get("nullable", False) == any(b.get("type") == "null" for b in prop.get("anyOf", []))
    view = get_json_schema(env.view_file)["function"]["parameters"]["properties"]["start_line"]
    assert view["description"] == "first line shown (1-based) (default: 1; minimum: 1)"


def test_reset_refuses_a_row_of_another_plugin_and_tools_need_identifiers(notes_plugin):
    from core.errors import PluginNotFound

    with pytest.raises(PluginNotFound, match="no plugin named 'nope'"):
        horizon_trl.environment_class("nope")
    with pytest.raises(UserError, match="has no task named missing"):
        horizon_trl.suite_rows(SUITE, only=["missing"])
    env = horizon_trl.environment_class("notes")()
    with pytest.raises(UserError, match="environment_factories"):
        env.reset(plugin="elsewhere", instruction="x")
    with pytest.raises(RuntimeError, match="before reset"):
        env.shell(command="true")
    bad = {"type": "function", "function": {"name": "view-file", "description": "x", "parameters": {"properties": {}}}}
    with pytest.raises(UserError, match="not a Python identifier"):
        horizon_trl.tool_method(bad)
    keyword_arg = {"type": "function", "function": {"name": "f", "description": "x", "parameters": {"properties": {"from": {"type": "string"}}}}}
    with pytest.raises(UserError, match="'from'"):
        horizon_trl.tool_method(keyword_arg)


def test_an_episode_closes_on_reset_with_and_garbage_collection(notes_plugin, horizon_home):
    import gc

    row = horizon_trl.suite_rows(SUITE, only=["write-done"])[0]
    env = horizon_trl.environment_class("notes")()
    assert env.reset(**row).startswith("\n\nFiles: ")
    first = env.episode.folder
    assert "wrote ANSWER.txt" in env.write_file(path="ANSWER.txt", text="done\n")
    assert env.get_reward() == 1.0
    env.reset(**row)
    assert not first.exists() and env.episode.folder.is_dir() and env.tool_calls == []
    with env:
        second = env.episode.folder
    assert not second.exists()
    env.reset(**row)
    third = env.episode.folder
    del env
    gc.collect()
    assert not third.exists()
