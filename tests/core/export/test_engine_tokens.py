"""Engine token capture: a vLLM-like server's token ids and logprobs reach the run store and the export.

The fake server tokenises like a byte-level tokenizer with a fixed chat template, so prompts
extend one another exactly as a real engine's do when the history is append-only: request N+1's
prompt is request N's prompt, then the sampled completion, then the observations' tokens.
"""

from __future__ import annotations

import json

from core.export.source import load_run
from core.export.tokens import engine_token_rows, write_tokens
from core.plugin import Task
from core.policy import OpenAIServerPolicy
from core.runner import Run
from core.state import ExitStatus, Limits, Pricing
from tests.core.policy.fault_server import FaultServer, completion

CALLS = [
    {"name": "view_file", "arguments": json.dumps({"path": "log.md", "end_line": 3})},
    {"name": "edit_file", "arguments": json.dumps({"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"})},
    {"name": "finish", "arguments": json.dumps({"summary": "answered"})},
]


def render(message: dict) -> str:
    """The fake template: one tag pair per message, assistant turns as their calls' JSON."""
    if message["role"] == "assistant":
        return f"<assistant>{assistant_text(message.get('tool_calls') or [])}</assistant>"
    return f"<{message['role']}>{message.get('content') or ''}</{message['role']}>"


def assistant_text(tool_calls: list[dict]) -> str:
    return json.dumps([[c["function"]["name"], c["function"]["arguments"]] for c in tool_calls])


def tokens(text: str) -> list[int]:
    return list(text.encode("utf-8"))


def reply(body: dict) -> dict:
    messages = body["messages"]
    turn = sum(1 for m in messages if m["role"] == "assistant")
    prompt = tokens("".join(render(m) for m in messages) + "<assistant>")
    call = {**CALLS[turn], "id": f"vllm-{turn}"}
    sampled = tokens(assistant_text([{"function": call}]) + "</assistant>")
    answer = completion([call])
    answer["prompt_token_ids"] = prompt
    answer["choices"][0]["token_ids"] = sampled
    answer["choices"][0]["logprobs"] = {"content": [{"token": "x", "logprob": -0.01 * (i + 1)} for i in range(len(sampled))]}
    return answer


def test_engine_tokens_are_stored_and_exported_with_an_exact_loss_mask(tmp_path, monkeypatch, notes_plugin, notes_folder):
    monkeypatch.setenv("HORIZON_HOME", str(tmp_path / "home"))
    with FaultServer(reply, owned_by="vllm") as server:
        policy = OpenAIServerPolicy(server.url, "served-model")
        run = Run.start(Task(plugin=notes_plugin, instruction="write done in ANSWER.txt", repo=notes_folder), policy,
                        policy_config={"kind": "test"}, limits=Limits(max_steps=5), pricing=Pricing())
        result = run.execute()
        run.close()
        bodies = [b for _, b in server.requests if b]
    assert (result.exit_status, result.reward) == (ExitStatus.SUBMITTED, 1.0)
    assert all(b.get("return_token_ids") is True and b.get("logprobs") is True for b in bodies)  # asked of vLLM

    record = load_run(result.run_id)
    assert [c["step"] for c in record.engine_tokens] == [1, 2, 3]
    assert all(c["prompt_token_ids"] and c["completion_token_ids"] for c in record.engine_tokens)
    rows = engine_token_rows(record)
    trajectory, steps = rows[0], rows[1:]
    assert trajectory["kind"] == "trajectory" and [r["step"] for r in steps] == [1, 2, 3]
    assert all(r["token_source"] == "engine" for r in rows)
    for row, call in zip(steps, record.engine_tokens):
        assert row["response_ids"] == call["completion_token_ids"] and row["loss_mask"] == [1] * len(row["response_ids"])
        assert row["logprobs"] == call["completion_logprobs"]
    # the mask covers exactly the sampled tokens, and the whole row is the last prompt plus the last completion
    trained = bytes(t for t, m in zip(trajectory["response_ids"], trajectory["loss_mask"]) if m).decode()
    assert trained == "".join(bytes(c["completion_token_ids"]).decode() for c in record.engine_tokens)
    assert trajectory["prompt_ids"] + trajectory["response_ids"] == (
        record.engine_tokens[-1]["prompt_token_ids"] + record.engine_tokens[-1]["completion_token_ids"])
    untrained = bytes(t for t, m in zip(trajectory["response_ids"], trajectory["loss_mask"]) if not m).decode()
    assert "<tool>" in untrained and "<assistant>" in untrained  # observations and template glue, mask 0
    assert steps[-1]["reward"] == 1.0 and steps[0]["reward"] == 0.0

    out = tmp_path / "tokens.parquet"
    assert write_tokens([record], out) == 4
    import pyarrow.parquet as pq

    table = pq.read_table(out).to_pylist()
    assert {r["token_source"] for r in table} == {"engine"} and table[0]["loss_mask"] == trajectory["loss_mask"]
