"""The run store's live mirror: what another process rebuilds while a run is written equals the
store itself, at every point (after each write, inside and after a transaction, after a resume)."""

from __future__ import annotations

import pytest

from core.reward import RewardComponent, RewardResult
from core.state import Message, ToolCall, Usage
from core.store import RunStore
from core.store_mirror import mirror_path


def snapshot(store: RunStore) -> tuple:
    return store.run(), store.messages(), store.steps(), store.rewards()


def test_the_mirror_rebuilds_the_store_after_every_write(tmp_path):
    path = tmp_path / "trajectory.duckdb"
    store = RunStore(path)
    writes = [
        lambda: store.create_run("r", plugin="notes", task="t", policy="scripted", config={"pricing": {}}),
        lambda: store.append_opening([Message(role="system", content="s"), Message(role="user", content="u")]),
        lambda: store.append_model_turn(2, 1, Message(role="assistant", content="a", tool_calls=[ToolCall(id="c", name="view_file", arguments="{}")]),
                                        Usage(prompt_tokens=7, cached_prompt_tokens=2, completion_tokens=3), model="m", latency_s=0.5,
                                        finish_reason="tool_calls", prompt_token_ids=[1, 2, 3]),
        lambda: store.append_observation(3, 1, Message(role="tool", content="out", tool_call_id="c", name="view_file"),
                                         ToolCall(id="c", name="view_file", arguments="{}"), is_error=True, data={"x": 1}, duration_s=0.25),
        lambda: store.update_run(steps=1, prompt_tokens=7, cost=0.5),
        lambda: store.set_reward(RewardResult.scored("v/1", {"a": RewardComponent(value=1.0, weight=1), "b": RewardComponent(value=0.5, weight=0.0)},
                                                     True, "ok")),
        lambda: store.update_run(status="finished", exit_status="submitted"),
    ]
    for write in writes:
        write()
        live = RunStore.from_mirror(path)
        assert live.live and snapshot(live) == snapshot(store)
        if len(live.messages()) > 2:
            assert live.model_call_tokens()[0]["prompt_token_ids"] is None  # left out of the mirror, by design
        live.close()
    store.close()
    assert not mirror_path(path).exists()
    with pytest.raises(FileNotFoundError):
        RunStore.from_mirror(path)


def test_a_reopened_store_seeds_its_mirror_and_a_torn_last_line_is_ignored(tmp_path):
    path = tmp_path / "trajectory.duckdb"
    first = RunStore(path)
    first.create_run("r", plugin="notes", task="t")
    first.append_opening([Message(role="system", content="s"), Message(role="user", content="u")])
    first.close()
    resumed = RunStore(path)  # agent resume: the mirror starts from what the store holds
    live = RunStore.from_mirror(path)
    assert snapshot(live) == snapshot(resumed)
    live.close()
    with mirror_path(path).open("a") as mirror:
        mirror.write('{"table": "messages", "insert": {"seq": 9')  # a write caught half-way
    live = RunStore.from_mirror(path)
    assert len(live.messages()) == 2
    live.close()
    with mirror_path(path).open("a") as mirror:
        mirror.write('\nnot json\n')
    with pytest.raises(ValueError, match="not a run-store mirror entry"):
        RunStore.from_mirror(path)
    resumed.close()


def test_two_stores_of_one_process_share_the_mirror(tmp_path):
    """DuckDB lets one process open a file twice; the first close must not drop the other's mirror."""
    path = tmp_path / "trajectory.duckdb"
    first = RunStore(path)
    first.create_run("r", plugin="notes", task="t")
    second = RunStore(path)
    first.close()
    second.append_opening([Message(role="system", content="s"), Message(role="user", content="u")])
    live = RunStore.from_mirror(path)
    assert len(live.messages()) == 2 and live.run()["task"] == "t"
    live.close()
    second.close()
    second.close()  # idempotent
    assert not mirror_path(path).exists()
