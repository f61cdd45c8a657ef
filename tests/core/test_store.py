"""The DuckDB run store: steps readable as written, atomic writes, read-only opening."""

import duckdb
import pytest

from core.state import Message, ToolCall, Usage
from core.store import RunStore


def test_history_and_calls_round_trip(tmp_path):
    store = RunStore(tmp_path / "t.duckdb")
    store.create_run("r1", plugin="notes", task="fix", config={"a": 1}, steps=0)
    store.append_message(0, 0, Message(role="system", content="sys"))
    call = ToolCall(id="c1", name="view_file", arguments='{"path": "a.py"}')
    store.append_model_turn(1, 1, Message(role="assistant", tool_calls=[call]), Usage(prompt_tokens=10, cached_prompt_tokens=4, completion_tokens=3),
                            model="m", latency_s=0.5, finish_reason="tool_calls")
    store.append_observation(2, 1, Message(role="tool", content="1: x", tool_call_id="c1", name="view_file"), call,
                             is_error=False, data={"done": False}, duration_s=0.01)
    store.update_run(status="finished", reward=1.0)
    store.close()

    ro = RunStore(tmp_path / "t.duckdb", read_only=True)
    messages = ro.messages()
    assert [m.role for m in messages] == ["system", "assistant", "tool"]
    assert messages[1].tool_calls == [call]
    assert ro.model_call_usage(1) == Usage(prompt_tokens=10, cached_prompt_tokens=4, completion_tokens=3)
    assert ro.tool_call_outcome("c1") == (False, False)
    steps = ro.steps()
    assert steps[0]["tool_calls"][0]["output"] == "1: x"
    run = ro.run()
    assert run["status"] == "finished" and run["reward"] == 1.0 and run["config"] == {"a": 1}


def test_a_repeated_write_is_refused_whole(tmp_path):
    store = RunStore(tmp_path / "t.duckdb")
    call = ToolCall(id="c1", name="t")
    msg = Message(role="tool", content="x", tool_call_id="c1")
    store.append_observation(0, 1, msg, call, is_error=False, data={}, duration_s=0)
    # a second write at the same position (a step run twice) is refused, and nothing is half-kept
    with pytest.raises(duckdb.ConstraintException):
        store.append_observation(0, 1, msg, call, is_error=False, data={}, duration_s=0)
    with pytest.raises(duckdb.ConstraintException):
        store.append_opening([Message(role="user", content="new"), Message(role="user", content="dup")])
    assert len(store.messages()) == 1


def test_open_run_is_locked_for_other_processes(tmp_path):
    import subprocess
    import sys

    store = RunStore(tmp_path / "t.duckdb")
    store.create_run("r1", steps=0)
    code = "import duckdb,sys; duckdb.connect(sys.argv[1], read_only=True)"
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.duckdb")], capture_output=True, text=True)
    assert proc.returncode != 0 and "lock" in proc.stderr.lower()
    store.close()
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "t.duckdb")], capture_output=True, text=True)
    assert proc.returncode == 0
