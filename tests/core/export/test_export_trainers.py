"""Horizon's exports read by the trainers' own loading code, not by a copy of their rules.

- TRL 1.16: ``datasets.load_dataset("json")`` on the SFT export, then ``SFTTrainer`` with
  ``assistant_only_loss=True`` (its dataset preparation swaps in TRL's ``qwen3_training``
  template, the export's default) for two optimizer steps on the tiny Qwen3 model
  (``core.trainers.tiny``); ``max_length`` is what the export's length report says.
- verl 0.8's schema class (``OpenAIFunctionToolSchema``) on every format's tools, and its tool
  loader (``get_tool_class``) on a worker where Horizon cannot be imported. Its ``RLHFDataset``
  and ``initialize_tools_from_config`` on an export that mixes plugins are in
  tests/plugins/coding/test_coding_export_trainers.py (a core test names no domain plugin).

The runs are real: scripted policies through ``core.runner.Run`` (conftest.py's ``episodes``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from core.export import export_runs
from tests.core.export.notes_task import NOTES_PLUGIN

torch = pytest.importorskip("torch", reason="the trainers' tests need the train extra (torch, transformers, trl, verl)")
trl = pytest.importorskip("trl")
verl = pytest.importorskip("verl")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """The tiny Qwen3-format model and tokenizer, saved once for the module."""
    from core.trainers.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny-qwen3"))


@pytest.fixture
def notes(monkeypatch):
    """``notes`` importable: exporting reads its tool schemas."""
    monkeypatch.syspath_prepend(str(NOTES_PLUGIN))


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_trl_sft_trainer_trains_on_the_sft_export_with_assistant_only_loss(episodes, tiny, notes, tmp_path):
    from datasets import load_dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    ids = [episodes.ids[n] for n in ("fix", "other_fix", "view_edit")]
    result = export_runs(ids, "sft-jsonl", tmp_path / "sft.jsonl", home=episodes.home, tokenizer=tiny)
    report = json.loads((tmp_path / "sft.lengths.json").read_text())
    assert report == result.lengths and report["chat_template"] == "qwen3_training" and report["tokenizer"] == str(tiny)
    max_length = report["settings"]["trl (1.16)"]["SFTConfig.max_length"]
    assert max_length == max(r["tokens"] for r in report["rows"]) > 1024  # TRL's default max_length would cut every row

    tokenizer = AutoTokenizer.from_pretrained(tiny)
    dataset = load_dataset("json", data_files=str(result.files[0]), split="train").select_columns(["messages", "tools"])
    args = SFTConfig(output_dir=str(tmp_path / "out"), max_length=max_length, assistant_only_loss=True, max_steps=2,
                     per_device_train_batch_size=1, learning_rate=1e-3, logging_steps=1, report_to=[], save_strategy="no",
                     use_cpu=True, dataloader_num_workers=0, seed=0)  # fmt: skip
    trainer = SFTTrainer(model=AutoModelForCausalLM.from_pretrained(tiny), args=args, train_dataset=dataset, processing_class=tokenizer)
    prepared = trainer.train_dataset
    rows = read_jsonl(result.files[0])
    for row, example, lengths in zip(rows, prepared, report["rows"], strict=True):
        assert lengths["run_ids"] == [row["run_id"]]
        assert len(example["input_ids"]) == lengths["tokens"]  # the report counts what TRL tokenises: nothing truncated
        # TRL's labels: the token where its assistant mask is 1, -100 (no loss) elsewhere
        trained = tokenizer.decode([t for t, label in zip(example["input_ids"], example["labels"]) if label != -100])
        untrained = tokenizer.decode([t for t, label in zip(example["input_ids"], example["labels"]) if label == -100])
        calls = [c for m in row["messages"] if m["role"] == "assistant" for c in m["tool_calls"]]
        for call in calls:  # every tool call is in the loss, its arguments rendered once (a dict, not JSON text in a string)
            text = f'<tool_call>\n{{"name": "{call["function"]["name"]}", "arguments": {json.dumps(call["function"]["arguments"])}}}\n</tool_call>'
            assert text in trained
        assert trained.count("<tool_call>") == len(calls) and "<tool_response>" not in trained and "# Tools" not in trained
        assert untrained.count("<tool_response>") == len(calls)  # the observations are context, not targets
    trainer.train()
    losses = [log["loss"] for log in trainer.state.log_history if "loss" in log]
    assert len(losses) == 2 and all(math.isfinite(loss) for loss in losses)


def test_every_format_shows_the_tools_as_verl_keeps_them(episodes, notes, tmp_path):
    """verl's schema class drops ``default``, ``minimum``, ``anyOf``... from what the model sees; every
    format's tools are already in the form it keeps (constraints written into the descriptions), so
    SFT and RL prompts show the same tools."""
    from verl.tools.schemas import OpenAIFunctionToolSchema

    def as_verl(schema: dict) -> dict:
        return OpenAIFunctionToolSchema.model_validate(schema).model_dump(exclude_unset=True, exclude_none=True)

    result = export_runs([episodes.ids["fix"]], "sft-jsonl", tmp_path / "sft.jsonl", home=episodes.home)
    openai = export_runs([episodes.ids["fix"]], "openai", tmp_path / "o.jsonl", home=episodes.home)
    (row,) = read_jsonl(result.files[0])
    (line,) = read_jsonl(openai.files[0])
    assert row["tools"] == line["tools"] == [as_verl(t) for t in row["tools"]]
    view = next(t for t in row["tools"] if t["function"]["name"] == "view_file")["function"]["parameters"]["properties"]
    assert view["start_line"] == {"type": "integer", "description": "first line shown (1-based) (default 1; minimum 1)"}
    assert view["end_line"]["type"] == "integer" and "may be null" in view["end_line"]["description"]
    import yaml

    tasks = export_runs([episodes.ids["fix"]], "verl", tmp_path / "tasks.parquet", home=episodes.home)
    config = yaml.safe_load(tasks.files[1].read_text())["tools"]
    assert [entry["tool_schema"] for entry in config] == row["tools"]  # what verl shows the model is what the SFT row shows


def test_the_default_training_template_is_trls_own(tiny):
    """The export's default template is TRL's qwen3_training byte for byte, so TRL recognises it, and
    its prompts render as the tiny tokenizer's own Qwen3 template renders them."""
    from transformers import AutoTokenizer

    from core.export.lengths import load_chat_template, render

    template = load_chat_template()
    assert template.source == (Path(trl.__file__).parent / "chat_templates" / "qwen3_training.jinja").read_text()
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": "fix it"}]
    tools = [{"type": "function", "function": {"name": "shell", "description": "run", "parameters": {"type": "object", "properties": {}}}}]
    assert render(template, messages, tools, add_generation_prompt=True) == tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=False)
    turn = [*messages, {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "shell", "arguments": '{"a": 1}'}}]}]
    assert render(template, turn, tools) == tokenizer.apply_chat_template(turn, tools=tools, tokenize=False, chat_template=template.source)


def test_a_failed_import_of_horizon_in_verl_says_what_failed(tmp_path):
    """verl's ``get_tool_class`` keeps a half-imported module: its second try (the agent loop's, after
    ``RLHFDataset`` logged the first) must still name the import that failed, not "no attribute"."""
    import os
    import subprocess
    import sys

    script = """
import sys
sys.modules["core.environment"] = None  # a worker where part of Horizon cannot be imported
from verl.tools.tool_registry import get_tool_class
try:
    get_tool_class("core.trainers.verl.HorizonTool")  # RLHFDataset: caught and logged
except Exception as exc:
    print("first:", type(exc).__name__)
cls = get_tool_class("core.trainers.verl.HorizonTool")  # the agent loop's worker
try:
    cls(config={"type": "native"}, tool_schema=None)
except ImportError as exc:
    print("second:", exc)
"""
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, timeout=120, check=False,
                         env={**os.environ, "PYTHONPATH": str(root)})
    assert "second: core.trainers.verl.HorizonTool: Horizon could not be imported in this process" in out.stdout, out.stdout + out.stderr
    assert "core.environment" in out.stdout and "install Horizon where verl's workers run" in out.stdout
