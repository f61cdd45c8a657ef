"""The scripted policy: replays turns by position, so a resumed run continues where it stopped."""

import json

import pytest

from core.errors import ConfigError, ModelUnavailable
from core.policy import ScriptedPolicy, load_script


def test_turns_replay_by_number_of_assistant_messages(tmp_path):
    script = tmp_path / "s.jsonl"
    script.write_text(
        "# a comment\n"
        '{"tool": "view_file", "arguments": {"path": "a.py"}, "usage": {"prompt_tokens": 5}}\n'
        "\n"
        '{"tool_calls": [{"tool": "a", "arguments": {}}, {"tool": "b", "raw_arguments": "{bad"}]}\n'
        '{"content": "just text"}\n'
    )
    policy = ScriptedPolicy.from_file(script)
    first = policy.complete([{"role": "user", "content": "go"}], [])
    assert first.message.tool_calls[0].name == "view_file"
    assert json.loads(first.message.tool_calls[0].arguments) == {"path": "a.py"}
    assert first.usage.prompt_tokens == 5
    second = policy.complete([{"role": "assistant", "content": None}], [])
    assert [c.name for c in second.message.tool_calls] == ["a", "b"]
    assert second.message.tool_calls[1].arguments == "{bad"
    third = policy.complete([{"role": "assistant"}, {"role": "assistant"}], [])
    assert third.message.content == "just text" and not third.message.tool_calls
    with pytest.raises(ModelUnavailable, match="no turn 4"):
        policy.complete([{"role": "assistant"}] * 3, [])


def test_malformed_script_names_the_line(tmp_path):
    script = tmp_path / "s.jsonl"
    script.write_text('{"tool": "a"}\n[1]\n')
    with pytest.raises(ConfigError, match="s.jsonl:2"):
        load_script(script)
    script.write_text("# only a comment\n\n")
    with pytest.raises(ConfigError, match="has no turns"):
        load_script(script)
    with pytest.raises(ConfigError, match="cannot read"):
        load_script(tmp_path / "missing.jsonl")
