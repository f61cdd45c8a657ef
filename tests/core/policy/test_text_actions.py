"""The plain-text tool-call format for servers without native tool calling."""

import json

from core.policy.embedded import to_plain_chat
from core.policy.text_actions import parse_tool_calls, read_call, to_text_wire, tools_prompt, write_call
from tests.notes_plugin.horizon_notes import NotesPlugin

TOOLS = [t.schema() for t in NotesPlugin().tools()]


def test_blocks_become_calls_in_order_and_bad_ones_are_reported_not_lost():
    reply = (
        "Let me look.\n<tool_call>\n{\"name\": \"view_file\", \"arguments\": {\"path\": \"a.py\"}}\n</tool_call>\n"
        "<tool_call>{\"name\": \"search_code\", \"arguments\": {\"pattern\": \"x\"}}</tool_call>\n"
        "<tool_call>{not json}</tool_call>\n"
        "<tool_call>{\"name\": \"finish\", \"arguments\": {\"summary\": \"cut off"
    )
    calls = parse_tool_calls(reply, "3")
    assert [c.name for c in calls] == ["view_file", "search_code", "invalid_tool_call", "invalid_tool_call"]
    assert json.loads(calls[0].arguments) == {"path": "a.py"}
    assert calls[2].arguments == "{not json}" and calls[3].arguments.startswith('{"name": "finish"')  # cut at the token limit
    assert len({c.id for c in calls}) == 4 and calls[0].id == "text_3_0"
    assert parse_tool_calls("no calls here", "1") == [] and parse_tool_calls(None, "1") == []
    assert parse_tool_calls("<tool_call>" + "[" * 50_000 + "</tool_call>", "1")[0].name == "invalid_tool_call"


def test_one_reader_and_writer_of_a_call_as_json_serve_both_text_formats():
    """``read_call``/``write_call`` own the ``{"name", "arguments"}`` object: the ``<tool_call>``
    blocks and the embedded model's bare replies are read, and written back, the same way."""
    assert read_call('{"name": "view_file", "arguments": {"path": "é.md"}}') == ("view_file", '{"path": "é.md"}')
    assert read_call('{"name": "finish"}') == ("finish", "{}")
    assert read_call('{"name": "view_file", "arguments": "{bad"}') == ("view_file", "{bad")  # the tool's parser judges it
    assert read_call('{"arguments": {}}') is None and read_call("[1]") is None and read_call('{"name": "x", "argu') is None
    assert read_call("[" * 50_000) is None
    assert read_call(write_call("view_file", '{"path": "a"}')) == ("view_file", '{"path": "a"}')
    assert read_call(write_call("view_file", "{bad")) == ("view_file", "{bad")
    call = {"id": "c", "type": "function", "function": {"name": "finish", "arguments": '{"summary": "ü"}'}}
    plain = to_plain_chat([{"role": "system", "content": "s"}, {"role": "assistant", "content": None, "tool_calls": [call]}], TOOLS)
    assert plain[1]["content"] == write_call("finish", '{"summary": "ü"}')
    assert [c.name for c in parse_tool_calls(f"<tool_call>{plain[1]['content']}</tool_call>", "1")] == ["finish"]


def test_the_text_wire_extends_its_prefix_and_keeps_the_models_words():
    history = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": "<tool_call>\n{\"name\": \"view_file\", \"arguments\": {\"path\": \"a\"}}\n</tool_call>",
         "tool_calls": [{"id": "text_0_0", "type": "function", "function": {"name": "view_file", "arguments": "{\"path\": \"a\"}"}}]},
        {"role": "tool", "tool_call_id": "text_0_0", "name": "view_file", "content": "1\tx = 1"},
    ]
    first = to_text_wire(history[:2], TOOLS)
    second = to_text_wire(history, TOOLS)
    assert second[: len(first)] == first  # append-only: the prefix cache keeps hitting
    assert first[0]["content"] == "You fix bugs." + tools_prompt(TOOLS) and '"name": "view_file"' in first[0]["content"]
    assert second[2] == {"role": "assistant", "content": history[2]["content"]}  # exactly as the model wrote it
    assert second[3]["role"] == "user" and second[3]["content"].startswith("<tool_response>") and "x = 1" in second[3]["content"]
    assert all(set(m) == {"role", "content"} for m in second)
    assert tools_prompt(TOOLS) == tools_prompt([json.loads(json.dumps(t)) for t in TOOLS])  # deterministic


def test_a_server_without_tool_calling_drives_a_real_episode_through_text_blocks(notes_plugin, notes_folder):
    """A whole episode, through the OpenAI policy in text mode, against a server that never sees ``tools``."""
    from core.plugin import Task
    from core.policy import OpenAIServerPolicy
    from core.runner import Run
    from core.state import ExitStatus, Limits, Pricing
    from tests.core.policy.fault_server import FaultServer, completion

    calls = [
        {"name": "view_file", "arguments": {"path": "log.md", "end_line": 3}},
        {"name": "edit_file", "arguments": {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}},
        {"name": "finish", "arguments": {"summary": "answered"}},
    ]

    def reply(body):
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        block = json.dumps(calls[turn])
        return completion(content=f"Step {turn}.\n<tool_call>\n{block}\n</tool_call>", finish_reason="stop")

    with FaultServer(reply) as server:
        policy = OpenAIServerPolicy(server.url, "plain-model", tool_format="text", engine="unknown")
        run = Run.start(Task(plugin=notes_plugin, instruction="write done in ANSWER.txt", repo=notes_folder), policy,
                        policy_config={"kind": "test"}, limits=Limits(max_steps=5), pricing=Pricing())
        result = run.execute()
        run.close()
        bodies = [b for _, b in server.requests if b]
    assert (result.exit_status, result.reward) == (ExitStatus.SUBMITTED, 1.0)
    assert all("tools" not in b and all(m["role"] != "tool" for m in b["messages"]) for b in bodies)
    assert "<tool_call>" in bodies[0]["messages"][0]["content"]  # the tools are in the system message
    assert bodies[1]["messages"][2]["content"].startswith("Step 0.\n<tool_call>")  # sent back as written
    assert bodies[2]["messages"][: len(bodies[1]["messages"])] == bodies[1]["messages"]  # the prefix only grows
