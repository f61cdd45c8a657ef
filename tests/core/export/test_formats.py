"""Every export format, written from real runs and read back by its consumer's library or schema.

The runs are of ``notes``, the test plugin (conftest.py): issue 17 moved these tests off the coding
plugin with the same assertions (``fix``/``other_fix`` stand where ``py_fix``/``java_fix`` did)."""

from __future__ import annotations

import json
import statistics

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import yaml
from datasets import load_dataset

from core.errors import UserError
from core.export import export_runs, load_run
from core.export.openai_ft import validate_line
from core.export.tokens import default_retokenizer
from tests.core.export.notes_task import NOTES_PLUGIN

EXPECTED = {"fix", "other_fix", "view", "edit", "shell", "view_edit", "view_log"}  # pass every gate
FIRST_GROUP = EXPECTED - {"other_fix"}


@pytest.fixture(scope="module")
def exported(episodes, tmp_path_factory):
    """Every format, exported once from all eleven runs (the gates leave seven)."""
    out = tmp_path_factory.mktemp("exports")
    ids = list(episodes.ids.values())
    results = {}
    with pytest.MonkeyPatch.context() as mp:  # the export reads the plugin's tool schemas and checker inputs
        mp.syspath_prepend(str(NOTES_PLUGIN))
        for fmt, name in [("sft-jsonl", "sft.jsonl"), ("sft-parquet", "sft.parquet"), ("openai", "openai.jsonl"),
                          ("verl", "verl.parquet"), ("skyrl", "skyrl.parquet"), ("tokens", "tokens.parquet"), ("grpo", "grpo.jsonl")]:
            results[fmt] = export_runs(ids, fmt, out / name, home=episodes.home)
    return results


def names(episodes, run_ids):
    by_id = {v: k for k, v in episodes.ids.items()}
    return {by_id[r] for r in run_ids}


def read_jsonl(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_gates_leave_out_the_flagged_runs(episodes, exported):
    for fmt, result in exported.items():
        duplicate = {"view_again"} if fmt == "grpo" else set()  # a GRPO group keeps its duplicates (flagged): they are samples
        assert names(episodes, result.exported) == EXPECTED | duplicate
        assert names(episodes, result.left_out) == {"infra_setup", "infra_mid", "check_edit", "view_again"} - duplicate


def test_sft_jsonl_rows_are_the_stored_conversations(episodes, exported):
    rows = read_jsonl(exported["sft-jsonl"].files[0])
    assert len(rows) == 7
    row = next(r for r in rows if r["run_id"] == episodes.ids["fix"])
    assert [m["role"] for m in row["messages"]] == ["system", "user"] + ["assistant", "tool"] * 6
    calls = [m["tool_calls"][0] for m in row["messages"] if m["role"] == "assistant"]
    assert [c["function"]["name"] for c in calls] == [t["tool"] for t in episodes.scripts["fix"]]
    assert calls[3]["function"]["arguments"] == episodes.scripts["fix"][3]["arguments"]  # a dict, as TRL's docs write it
    answers = [m["tool_call_id"] for m in row["messages"] if m["role"] == "tool"]
    assert answers == [c["id"] for c in calls]
    tool_names = {t["function"]["name"] for t in row["tools"]}
    assert {c["function"]["name"] for c in calls} <= tool_names and all(t["type"] == "function" for t in row["tools"])
    assert (row["reward"], row["correct"], row["plugin"]) == (1.0, True, "notes")
    assert "holds" in load_run(row["run_id"], episodes.home).row["reward_summary"] and row["exit_status"] == "submitted"


def test_sft_parquet_loads_with_datasets_and_matches_the_jsonl(exported):
    ds = load_dataset("parquet", data_files=str(exported["sft-parquet"].files[0]), split="train")
    assert len(ds) == 7 and set(ds.column_names) >= {"messages", "tools", "reward", "run_id"}
    jsonl = {r["run_id"]: r for r in read_jsonl(exported["sft-jsonl"].files[0])}
    for row in ds:
        for parquet_m, jsonl_m in zip(row["messages"], jsonl[row["run_id"]]["messages"], strict=True):
            calls = [{**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}}
                     for c in parquet_m["tool_calls"] or []]  # JSON text in Parquet, a dict in JSONL
            assert {**parquet_m, "tool_calls": calls or None} == jsonl_m
        assert json.loads(row["tools"]) == jsonl[row["run_id"]]["tools"]


def test_openai_fine_tuning_lines_follow_the_documented_format(exported):
    lines = read_jsonl(exported["openai"].files[0])
    assert len(lines) == 7
    for line in lines:
        assert validate_line(line) == []
        assert set(line) == {"messages", "tools", "parallel_tool_calls"} and line["parallel_tool_calls"] is False
    broken = json.loads(json.dumps(lines[0]))
    broken["messages"][3]["tool_call_id"] = "nobody"
    broken["messages"].append({"role": "robot", "content": "x"})
    problems = validate_line(broken)
    assert any("answers no earlier" in p for p in problems) and any("robot" in p for p in problems)


def test_verl_task_parquet_and_tool_config(episodes, exported):
    result = exported["verl"]
    parquet, config, _lengths = result.files
    ds = load_dataset("parquet", data_files=str(parquet), split="train")
    assert len(ds) == 2  # two tasks: the first (six runs) and the other
    assert set(ds.column_names) == {"data_source", "prompt", "ability", "reward_model", "extra_info", "agent_name"}
    tools = yaml.safe_load(config.read_text())["tools"]
    tool_names = {t["tool_schema"]["function"]["name"] for t in tools}
    for row in ds:
        assert row["data_source"] == "horizon/notes" and row["ability"] == "notes" and row["agent_name"] == "tool_agent"
        assert [m["role"] for m in row["prompt"]] == ["system", "user"] and "say done" in row["prompt"][1]["content"]
        assert row["reward_model"]["style"] == "rule"
        truth = json.loads(row["reward_model"]["ground_truth"])
        assert truth["plugin"] == "notes" and truth["start_tree"]
        kwargs = row["extra_info"]["tools_kwargs"]
        assert set(kwargs) >= tool_names and row["extra_info"]["need_tools_kwargs"] is True
        assert all(kwargs[n]["create_kwargs"]["start_tree"] == truth["start_tree"] for n in tool_names)
    assert sorted(len(r["extra_info"]["run_ids"]) for r in ds) == [1, 6]
    assert all(t["class_name"] and t["config"]["type"] == "native" for t in tools)
    info_type = pq.read_schema(parquet).field("extra_info").type
    assert info_type.field("correct").type.value_type == pa.bool_() and info_type.field("reward_version").type.value_type == pa.string()
    assert_reward_labels_per_run(episodes, ds)


def assert_reward_labels_per_run(episodes, ds):
    """Each task row's ``extra_info`` names, per run of ``run_ids``, the reward that judged it, how, and the outcome."""
    solved = {"fix", "other_fix", "edit", "view_edit"}
    for row in ds:
        info = row["extra_info"]
        assert info["reward_version"] == ["notes/1"] * len(info["run_ids"])
        assert info["reward_status"] == ["scored"] * len(info["run_ids"])
        assert info["correct"] == [name in solved for name in [next(n for n, i in episodes.ids.items() if i == r) for r in info["run_ids"]]]


def test_skyrl_rows_follow_skyrls_dataset_format(episodes, exported):
    ds = load_dataset("parquet", data_files=str(exported["skyrl"].files[0]), split="train")
    assert_reward_labels_per_run(episodes, ds)
    assert len(ds) == 2
    assert {"data_source", "prompt", "env_class", "reward_spec"} <= set(ds.column_names)
    for row in ds:
        assert row["env_class"] == "horizon_notes" and row["reward_spec"]["method"] == "rule"
        assert json.loads(row["reward_spec"]["ground_truth"])["start_tree"]
        assert all(isinstance(m["content"], str) and m["role"] in ("system", "user") for m in row["prompt"])


def test_token_loss_mask_covers_exactly_the_models_tokens(episodes, exported):
    tok = default_retokenizer()
    rows = pq.read_table(exported["tokens"].files[0]).to_pylist()
    for name in ("fix", "other_fix"):
        run = load_run(episodes.ids[name], episodes.home)
        mine = [r for r in rows if r["run_id"] == run.run_id]
        whole = next(r for r in mine if r["kind"] == "trajectory")
        steps = sorted((r for r in mine if r["kind"] == "step"), key=lambda r: r["step"])
        # what the model wrote, rendered independently of the exporter: each call as the embedded
        # policy's JSON, closed by the end-of-turn token
        said = []
        for m in run.messages:
            if m.role == "assistant":
                call = m.tool_calls[0]
                said.append(json.dumps({"name": call.name, "arguments": json.loads(call.arguments)}) + "<|im_end|>")
        masked = [t for t, keep in zip(whole["response_ids"], whole["loss_mask"]) if keep]
        assert tok.decode(masked) == "".join(said)
        unmasked = tok.decode([t for t, keep in zip(whole["response_ids"], whole["loss_mask"]) if not keep])
        assert "<|im_start|>tool" in unmasked and "Finished: done" in unmasked  # observations are there, unmasked
        assert not any(s.removesuffix("<|im_end|>") in unmasked for s in said)
        assert len(whole["loss_mask"]) == len(whole["response_ids"]) and set(whole["loss_mask"]) == {0, 1}
        assert tok.decode(whole["prompt_ids"]).endswith("<|im_start|>assistant\n")
        assert tok.decode(whole["prompt_ids"]).startswith("<|im_start|>system\n")
        assert whole["loss_mask"][whole["reward_index"]] == 1 and not any(whole["loss_mask"][whole["reward_index"] + 1:])
        assert whole["reward"] == 1.0 and whole["logprobs"] is None and whole["token_source"] == "retokenized"
        assert all(r["chat_template"] == f"{tok.name}:tokenizer.chat_template (tool calls as the embedded policy's JSON)" for r in mine)
        for r in mine:  # step rows and the trajectory row alike
            assert (r["reward_version"], r["reward_status"], r["correct"]) == ("notes/1", "scored", True)
        assert [tok.decode(s["response_ids"]) for s in steps] == said
        assert all(set(s["loss_mask"]) == {1} for s in steps)
        assert [s["reward"] for s in steps] == [0.0] * (len(steps) - 1) + [1.0]
        # each step's prompt is the whole trajectory's text up to that point
        full = whole["prompt_ids"] + whole["response_ids"]
        for s in steps:
            n = len(s["prompt_ids"])
            assert full[:n] == s["prompt_ids"] and full[n:n + len(s["response_ids"])] == s["response_ids"]


def test_grpo_groups_have_group_normalised_advantages(episodes, exported):
    rows = read_jsonl(exported["grpo"].files[0])
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["group_id"], []).append(r)
    sizes = sorted(len(g) for g in groups.values())
    assert sizes == [1, 7]  # the first task's six distinct runs and view_again, view's duplicate: a sample like any other
    first = next(g for g in groups.values() if len(g) == 7)
    assert names(episodes, [r["run_id"] for r in first]) == FIRST_GROUP | {"view_again"}
    by_name = {n: r for n in FIRST_GROUP | {"view_again"} for r in first if r["run_id"] == episodes.ids[n]}
    assert {n: r["reward"] for n, r in by_name.items()} == {
        "fix": 1.0, "edit": 1.0, "view_edit": 1.0, "view": 0.0, "shell": 0.0, "view_log": 0.0, "view_again": 0.0}
    rewards = [r["reward"] for r in first]
    mean, std = sum(rewards) / 7, statistics.stdev(rewards)
    for r in first:
        assert r["advantage"] == pytest.approx((r["reward"] - mean) / (std + 1e-6))
    assert by_name["fix"]["advantage"] == pytest.approx((1 - 3 / 7) / std, rel=1e-5)
    assert by_name["view_again"]["quality_flags"] == [f"near_duplicate: same task, tool calls and observations as run {episodes.ids['view']}"]
    assert all(r["quality_flags"] == [] for n, r in by_name.items() if n != "view_again")
    (other,) = next(g for g in groups.values() if len(g) == 1)
    assert other["advantage"] == 0.0 and other["group_size"] == 1
    assert exported["grpo"].warnings == [(  # a group of one teaches nothing: said, not silent
        "1 of 2 GRPO groups hold a single run, whose advantage is 0 (no contrast, nothing to learn from): "
        "run each task several times (agent eval --attempts k) before exporting")]
    assert exported["sft-jsonl"].warnings == []
    for name, r in {**by_name, "other_fix": other}.items():
        assert (r["reward_version"], r["reward_status"]) == ("notes/1", "scored")
        assert r["correct"] is (r["reward"] == 1.0), name


def test_bad_requests_are_clear_errors_and_lose_nothing(episodes, exported, tmp_path):
    existing = exported["openai"].files[0]
    before = existing.read_bytes()
    with pytest.raises(UserError, match="exists; choose another --out or pass --overwrite"):
        export_runs([episodes.ids["fix"]], "openai", existing, home=episodes.home)
    assert existing.read_bytes() == before
    with pytest.raises(UserError, match="unknown export format 'csv'"):
        export_runs([episodes.ids["fix"]], "csv", tmp_path / "x", home=episodes.home)
    with pytest.raises(UserError, match="--format tokens writes Parquet, not JSON Lines; name the file x.parquet"):
        export_runs([episodes.ids["fix"]], "tokens", tmp_path / "x.jsonl", home=episodes.home)
    with pytest.raises(UserError, match="--format sft-jsonl writes JSON Lines, not Parquet; name the file x.jsonl"):
        export_runs([episodes.ids["fix"]], "sft-jsonl", tmp_path / "x.parquet", home=episodes.home)
    assert not (tmp_path / "x.jsonl").exists() and not (tmp_path / "x.parquet").exists()
    with pytest.raises(UserError, match="no run 'nope'"):
        export_runs(["nope"], "openai", tmp_path / "y.jsonl", home=episodes.home)
    assert not (tmp_path / "y.jsonl").exists()


def test_keep_flagged_exports_flagged_runs_with_their_reasons(episodes, tmp_path):
    ids = [episodes.ids[n] for n in ("fix", "check_edit", "infra_mid")]
    result = export_runs(ids, "sft-jsonl", tmp_path / "all.jsonl", home=episodes.home, keep_flagged=True)
    rows = {r["run_id"]: r for r in read_jsonl(result.files[0])}
    assert set(rows) == set(ids) and result.left_out == {}
    assert rows[episodes.ids["fix"]]["quality_flags"] == []
    assert rows[episodes.ids["check_edit"]]["quality_flags"][0].startswith("reward_hacking: ")
    crashed = rows[episodes.ids["infra_mid"]]
    assert crashed["quality_flags"][0].startswith("infrastructure_failure: run crashed")
    assert crashed["reward"] is None and crashed["correct"] is None  # never verified: not applicable, not 0
    # a run that crashed before its first model turn has nothing to train on, flagged or not
    setup = export_runs([episodes.ids["infra_setup"]], "sft-jsonl", tmp_path / "none.jsonl", home=episodes.home, keep_flagged=True)
    assert setup.exported == [] and "no model turn" in setup.left_out[episodes.ids["infra_setup"]]


def test_grpo_says_which_runs_it_left_out_for_want_of_a_reward(episodes, tmp_path):
    from dataclasses import replace

    from core.export.grpo import left_out_reason, write_grpo

    runs = [load_run(episodes.ids[n], episodes.home) for n in ("fix", "view", "infra_setup", "infra_mid")]
    inapplicable = replace(runs[1], run_id="inapplicable", row={**runs[1].row, "reward": None, "reward_status": "not_applicable",
                                                                "correct": None, "reward_summary": "no tests to run"})
    assert write_grpo([*runs, inapplicable], tmp_path / "grpo.jsonl") == 2 and len(read_jsonl(tmp_path / "grpo.jsonl")) == 2
    assert [left_out_reason(r) for r in runs[:2]] == [None, None]
    assert left_out_reason(inapplicable) == ("reward not applicable", "no tests to run")
    assert left_out_reason(runs[3])[0] == "not judged" and left_out_reason(runs[3])[1].startswith("run crashed")
    # through export_runs (the CLI's call, which prints left_out): the run without a reward is named
    result = export_runs([episodes.ids[n] for n in ("fix", "infra_mid")], "grpo", tmp_path / "all.jsonl", home=episodes.home,
                         keep_flagged=True)
    assert result.rows == 1 and result.exported == [episodes.ids["fix"]]
    assert result.left_out[episodes.ids["infra_mid"]].startswith("not judged: run crashed")


def test_task_parquet_keeps_correct_a_bool_list_when_no_run_was_judged(tmp_path):
    from core.export.tasks import write_task_parquet

    write_task_parquet([{"extra_info": {"run_ids": ["a"], "reward_status": ["not_judged"], "correct": [None]}}], tmp_path / "t.parquet")
    info = pq.read_schema(tmp_path / "t.parquet").field("extra_info").type
    assert info.field("correct").type.value_type == pa.bool_()


def test_every_format_carries_the_quality_flags_of_its_runs(episodes, tmp_path):
    """With --keep-flagged every format's rows say why their runs were flagged (OpenAI's format has
    no field for it: its lines' flags are in the length report, line by line)."""
    names_ = ("fix", "check_edit", "view", "view_again")
    ids = [episodes.ids[n] for n in names_]
    hacked = "reward_hacking: the final patch changes the checker's inputs: CHECK.txt"
    duplicate = f"near_duplicate: same task, tool calls and observations as run {episodes.ids['view']}"
    want = {episodes.ids["fix"]: [], episodes.ids["check_edit"]: [hacked], episodes.ids["view"]: [], episodes.ids["view_again"]: [duplicate]}
    for fmt, name in [("sft-jsonl", "s.jsonl"), ("sft-parquet", "s.parquet"), ("openai", "o.jsonl"), ("verl", "v.parquet"),
                      ("skyrl", "k.parquet"), ("tokens", "t.parquet"), ("grpo", "g.jsonl")]:
        result = export_runs(ids, fmt, tmp_path / name, home=episodes.home, keep_flagged=True)
        assert set(result.exported) == set(ids), fmt
        data = result.files[0]
        if fmt in ("verl", "skyrl"):
            got = {}
            for row in pq.read_table(data).to_pylist():
                got.update(zip(row["extra_info"]["run_ids"], row["extra_info"]["quality_flags"]))
        elif fmt == "openai":
            got = {r["run_ids"][0]: r["quality_flags"] for r in result.lengths["rows"]}
            assert len(result.lengths["rows"]) == len(read_jsonl(data))  # one report row per line, in order
        elif data.suffix == ".parquet":
            got = {r["run_id"]: r["quality_flags"] for r in pq.read_table(data).to_pylist()}
        else:
            got = {r["run_id"]: r["quality_flags"] for r in read_jsonl(data)}
        assert got == want, fmt


def test_openai_lines_end_with_the_assistants_last_turn(exported):
    for line in read_jsonl(exported["openai"].files[0]):
        assert line["messages"][-1]["role"] == "assistant"
        assert line["messages"][-1]["tool_calls"][0]["function"]["name"] == "finish"  # its answer ("Finished: done") is not trained on
        calls = [c for m in line["messages"] for c in m.get("tool_calls", [])]
        assert calls and all(isinstance(c["function"]["arguments"], str) for c in calls)  # JSON text, as the format defines it


def test_max_prompt_tokens_leaves_out_longer_prompts_and_says_why(episodes, tmp_path):
    ids = [episodes.ids[n] for n in ("fix", "other_fix")]
    full = export_runs(ids, "sft-jsonl", tmp_path / "all.jsonl", home=episodes.home)
    assert full.lengths["tokenizer"] == "SmolLM2-135M-Instruct.Q4_1.gguf" and full.lengths["chat_template"] == "qwen3_training"
    prompts = {r["run_ids"][0]: r["prompt_tokens"] for r in full.lengths["rows"]}
    limit = max(prompts.values())
    fits = export_runs(ids, "sft-jsonl", tmp_path / "fits.jsonl", home=episodes.home, max_prompt_tokens=limit)
    assert fits.exported == ids and fits.lengths["max_prompt_tokens"] == limit
    cut = export_runs(ids, "sft-jsonl", tmp_path / "cut.jsonl", home=episodes.home, max_prompt_tokens=limit - 1)
    longest = [r for r in ids if prompts[r] == limit]
    assert set(cut.exported) == set(ids) - set(longest) and (tmp_path / "cut.jsonl").exists() == bool(cut.exported)
    for run_id in longest:
        assert cut.left_out[run_id] == (f"prompt_too_long: {limit} tokens (with its tools; SmolLM2-135M-Instruct.Q4_1.gguf, "
                                        f"qwen3_training template) > --max-prompt-tokens {limit - 1}")
    with pytest.raises(UserError, match="--max-prompt-tokens does not apply to --format tokens"):
        export_runs(ids, "tokens", tmp_path / "t.parquet", home=episodes.home, max_prompt_tokens=10)
    with pytest.raises(UserError, match="--chat-template nope: no such file and no bundled template of that name"):
        export_runs(ids, "sft-jsonl", tmp_path / "x.jsonl", home=episodes.home, chat_template="nope")
