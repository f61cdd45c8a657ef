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


def _block_size(path):
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.execute("PRAGMA database_size").fetchone()[2]
    finally:
        con.close()


def _write_steps(store, first_seq, steps):
    for step in steps:
        call = ToolCall(id=f"c{step}", name="view_file", arguments=f'{{"start_line": {step}}}')
        seq = first_seq + 2 * (step - steps[0])
        store.append_model_turn(seq, step, Message(role="assistant", tool_calls=[call]), Usage(prompt_tokens=step), model="m",
                                latency_s=0.1, finish_reason="tool_calls")
        store.append_observation(seq + 1, step, Message(role="tool", content=f"line {step}", tool_call_id=call.id, name="view_file"),
                                 call, is_error=False, data={"done": False}, duration_s=0.01)


def test_a_new_store_uses_small_blocks_and_a_short_run_stays_small(tmp_path):
    from core.store import BLOCK_SIZE

    path = tmp_path / "trajectory.duckdb"
    store = RunStore(path)
    store.create_run("r1", plugin="notes", task="fix", config={"a": 1})
    store.append_opening([Message(role="system", content="s" * 2000), Message(role="user", content="task")])
    _write_steps(store, 2, [1, 2, 3])
    store.update_run(status="finished", steps=3)
    store.close()
    assert BLOCK_SIZE == 16384 and _block_size(path) == BLOCK_SIZE
    # DuckDB's default (256 KiB blocks) made such a file 1.8 to 2.1 MB, eight nearly empty blocks
    assert path.stat().st_size < 400_000, path.stat().st_size
    assert [m.content for m in RunStore(path, read_only=True).messages() if m.role == "tool"] == ["line 1", "line 2", "line 3"]


def test_a_store_written_with_256_kib_blocks_is_resumed_in_place(tmp_path, monkeypatch):
    import core.store

    path = tmp_path / "trajectory.duckdb"
    monkeypatch.setattr(core.store, "BLOCK_SIZE", 262144)  # a run written before the block size changed
    store = RunStore(path)
    store.create_run("r1", steps=0)
    _write_steps(store, 0, [1, 2])
    store.close()
    monkeypatch.undo()
    assert _block_size(path) == 262144

    store = RunStore(path)  # resumed with today's settings: the file keeps its blocks, the history goes on
    _write_steps(store, 4, [3])
    store.close()
    assert _block_size(path) == 262144
    assert [m.content for m in RunStore(path, read_only=True).messages() if m.role == "tool"] == ["line 1", "line 2", "line 3"]
