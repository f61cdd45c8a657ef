"""The retokenizer's segments on a hand-written history: several calls in a turn, text turns."""

import json

import pytest

from core.errors import UserError
from core.export import export_runs
from core.export.tokens import default_retokenizer

TOOLS = [{"type": "function", "function": {"name": "view_file", "description": "Show a file.",
                                            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}]


def call(i, path):
    return {"id": f"c{i}", "type": "function", "function": {"name": "view_file", "arguments": json.dumps({"path": path})}}


def test_a_turn_with_two_calls_and_a_text_turn_are_masked_exactly():
    tok = default_retokenizer()
    messages = [
        {"role": "system", "content": "You fix bugs."},
        {"role": "user", "content": "fix it"},
        {"role": "assistant", "content": None, "tool_calls": [call(1, "a.py"), call(2, "b.py")]},
        {"role": "tool", "tool_call_id": "c1", "name": "view_file", "content": "1│x = 1"},
        {"role": "tool", "tool_call_id": "c2", "name": "view_file", "content": "1│y = 2"},
        {"role": "assistant", "content": "I am done."},
    ]
    segments = tok.segments(messages, TOOLS)
    trained = [s for s in segments if s.trainable]
    assert [s.step for s in trained] == [1, 2]
    assert tok.decode(trained[0].ids) == '{"name": "view_file", "arguments": {"path": "a.py"}}\n' \
                                         '{"name": "view_file", "arguments": {"path": "b.py"}}<|im_end|>'
    assert tok.decode(trained[1].ids) == "I am done.<|im_end|>"
    everything = tok.decode([t for s in segments for t in s.ids])
    assert everything.startswith("<|im_start|>system\nYou fix bugs.") and everything.endswith("I am done.<|im_end|>\n")
    assert everything.count("<|im_start|>assistant\n") == 2 and everything.count("<|im_start|>tool\n") == 2
    untrained = tok.decode([t for s in segments if not s.trainable for t in s.ids])
    assert "[view_file] 1│x = 1" in untrained and "I am done." not in untrained


def test_a_missing_tokenizer_file_is_a_clear_error(tmp_path):
    with pytest.raises(UserError, match="is not a file; give a GGUF"):
        export_runs(["any"], "tokens", tmp_path / "t.parquet", tokenizer=tmp_path / "missing.gguf")
