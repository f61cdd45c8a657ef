"""End to end: the model server fails past the retry budget mid-episode, the run stops resumably,
the server recovers, and ``agent resume`` (``Run.open(...).execute()``) finishes the episode with
every step stored exactly once. Real HTTP, the test plugin (``notes``, ``tests/notes_plugin``), the
real sandbox and run store."""

from __future__ import annotations

import json
from contextlib import closing

from core.config import load_settings
from core.plugin import Task
from core.policy import OpenAIServerPolicy
from core.policy.retry import RetryConfig
from core.runner import Run, open_store
from core.state import ExitStatus, Limits, Pricing
from tests.core.policy.fault_server import FaultServer, completion

TURNS = [
    ("view_file", {"path": "log.md", "start_line": 1, "end_line": 2}),
    ("shell", {"command": "grep -n todo ANSWER.txt"}),
    ("view_file", {"path": "ANSWER.txt"}),  # served cut at the token limit: the model hears so
    ("edit_file", {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}),
    ("finish", {"summary": "the answer is written"}),
]


def scripted(body: dict) -> dict:
    """Answer turn N (the number of assistant messages in the request) with the N-th scripted call."""
    turn = sum(1 for m in body.get("messages", []) if m["role"] == "assistant")
    name, args = TURNS[turn]
    return completion([{"id": f"srv_{turn}", "name": name, "arguments": json.dumps(args)}],
                      usage={"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110})


def test_model_server_dies_mid_episode_then_resume_finishes_it(notes_plugin, notes_folder):
    with FaultServer(responder=scripted) as server:
        # steps 1-2 answered, step 3 cut at the token limit, step 4 fails three times: the budget
        server.inject("ok", times=2).inject("length").inject("status", times=3, status=503)
        policy = OpenAIServerPolicy(server.url, "fault-model", timeout_s=10,
                                    retry=RetryConfig(max_attempts=3, max_total_s=10, base_delay_s=0.01, max_delay_s=0.02))
        started = Run.start(
            Task(plugin=notes_plugin, instruction="write done in ANSWER.txt", repo=notes_folder), policy,
            policy_config={"kind": "openai", "base_url": server.url, "model": "fault-model"},
            limits=Limits(max_steps=10), pricing=Pricing(),
        )
        try:
            first = started.execute()
        finally:
            started.close()
        assert server.count == 6
        assert first.status == "model_error" and first.exit_status == ExitStatus.MODEL_ERROR
        assert first.steps == 3 and first.reward is None
        detail = first.exit_detail
        assert "HTTP 503" in detail and "gave up after 3 attempts over" in detail and "retry budget: 3 attempts, 10 s" in detail
        assert detail.endswith(f"; continue with: agent resume {first.run_id}") and detail.count("agent resume") == 1
        with closing(open_store(first.run_id)) as store:
            row = store.run()
            assert (row["status"], row["exit_status"], row["steps"]) == ("model_error", "model_error", 3)
            assert [s["step"] for s in store.steps()] == [1, 2, 3]

        server.clear()  # the server is back
        reopened = Run.open(first.run_id, settings=load_settings())
        try:
            second = reopened.execute()
        finally:
            reopened.close()
        assert server.count == 8  # the failed step once more, then finish: no step asked twice
        assert second.status == "finished" and second.exit_status == ExitStatus.SUBMITTED
        assert second.steps == 5 and second.reward == 1.0
        assert second.state.usage.prompt_tokens == 500  # five answered calls, none counted twice
        failed_request = server.requests[3][1]["messages"]
        assert server.requests[6][1]["messages"] == failed_request  # resume asked exactly what had failed

    with closing(open_store(first.run_id)) as store:
        steps = store.steps()
        history = store.messages()
    assert [s["step"] for s in steps] == [1, 2, 3, 4, 5]
    assert [c["tool"] for s in steps for c in s["tool_calls"]] == [name for name, _ in TURNS]
    ids = [m.tool_call_id for m in history if m.role == "tool"]
    assert ids == ["srv_0", "srv_1", "srv_2", "srv_3", "srv_4"]
    assert len([m for m in history if m.role == "assistant"]) == 5
    truncated = [c for s in steps for c in s["tool_calls"]][2]
    assert not truncated["arguments"].endswith("}") and truncated["is_error"]
    assert "arguments of view_file are not valid JSON" in truncated["output"]  # told to the model
    assert "+done" in second.patch_path.read_text().splitlines()
