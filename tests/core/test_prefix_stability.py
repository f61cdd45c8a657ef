"""The prompt prefix stays byte-stable for a whole run, so a model server's prefix cache keeps working.

A 30-step episode of the test plugin (``notes``, ``tests/notes_plugin``) runs through the real
OpenAI policy, loop, plugin, sandbox and run store against a recording fake server on loopback
(``tests/core/policy/episode.py``; ``bench/prefix_cache.py`` records a coding episode the same
way). Every request must extend the previous one: the tool list identical, the previous request's
messages a byte-identical prefix of this one's (key order included), the assistant turn in between
exactly what the server returned, one cache salt for the whole run. Compaction (not yet in the loop) will be the one allowed exception, at a recorded step.
"""

from __future__ import annotations

import json

import pytest

from core.policy import OpenAIServerPolicy
from tests.core.policy.episode import NOTES_PLUGIN, run_episode
from tests.core.policy.fault_server import FaultServer

STEPS = 30


def dump(value: object) -> str:
    """The JSON text a server's chat template renders from: key order kept, nothing normalised."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def without_nulls(message: dict) -> dict:
    return {k: v for k, v in message.items() if v is not None}


@pytest.fixture(scope="module")
def episode(tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:  # the notes_plugin fixture's install, for the whole module
        patch.syspath_prepend(str(NOTES_PLUGIN))
        return run_episode(tmp_path_factory.mktemp("prefix"), STEPS)


def test_episode_ran_all_steps_through_the_real_loop(episode):
    result, server, calls = episode
    assert result.steps == STEPS and result.exit_status.value == "submitted" and result.reward == 1.0
    assert len(server.requests) == STEPS and all(kind == "ok" for kind, _ in server.requests)
    cut = [m["content"] for _, b in server.requests for m in b["messages"] if m["role"] == "tool" and " not shown (one call's output is cut" in m["content"]]
    assert cut, "no observation was long enough to be cut"
    assert "view_file path=.horizon/observations/" in cut[0]  # the cut names the call that shows the lines left out
    tools = [c["tool"] for s in calls for c in s["tool_calls"]]
    assert {"view_file", "shell", "edit_file", "finish", "view_fil"} <= set(tools)


def test_each_request_extends_the_previous_one_byte_for_byte(episode):
    _, server, _ = episode
    bodies = [body for _, body in server.requests]
    for n in range(1, len(bodies)):
        prev, cur = bodies[n - 1], bodies[n]
        assert dump(cur["tools"]) == dump(prev["tools"]), f"request {n + 1}: the tool list changed"
        assert cur["messages"][0] == prev["messages"][0], f"request {n + 1}: the system prompt changed"
        k = len(prev["messages"])
        assert len(cur["messages"]) > k, f"request {n + 1}: the history shrank"
        assert dump(cur["messages"][:k]) == dump(prev["messages"]), f"request {n + 1}: an earlier message was rewritten"
        # the model's turn comes back exactly as the server sent it
        assert dump(without_nulls(cur["messages"][k])) == dump(without_nulls(server.replies[n - 1])), f"request {n + 1}"
        for key in ("model", "temperature", "max_tokens", "tool_choice", "user", "cache_salt"):
            assert cur.get(key) == prev.get(key), f"request {n + 1}: {key} changed"


def test_raw_request_bodies_share_the_previous_messages_bytes(episode):
    """On the wire too: request N's messages array, less its closing bracket, is in request N+1's bytes."""
    _, server, _ = episode
    raws = server.raw_requests
    for n in range(1, len(raws)):
        prev = json.loads(raws[n - 1])["messages"]
        head = b'"messages":' + dump(prev)[:-1].encode()  # the client (httpx) writes compact, non-ASCII JSON
        assert head in raws[n - 1], "the client serialises messages in a way this test does not know"
        assert head in raws[n], f"request {n + 1}: the bytes of the earlier messages changed"


def test_one_cache_salt_and_user_for_the_whole_run(episode):
    _, server, _ = episode
    bodies = [body for _, body in server.requests]
    salts = {b.get("cache_salt") for b in bodies}
    users = {b.get("user") for b in bodies}
    assert len(salts) == 1 and None not in salts and len(next(iter(salts))) >= 32  # vLLM: sent, one per run
    assert len(users) == 1 and None not in users


def test_cached_prompt_share_is_high_when_estimated(episode):
    """No cached_tokens in the server's usage: the policy estimates them from the common prefix."""
    _, _, calls = episode
    prompt = sum(c["usage"].prompt_tokens for c in calls)
    cached = sum(c["usage"].cached_prompt_tokens for c in calls)
    assert calls[0]["usage"].cached_prompt_tokens == 0  # nothing before the first call
    assert all(c["usage"].cached_prompt_tokens <= c["usage"].prompt_tokens for c in calls)
    assert cached / prompt > 0.9


@pytest.mark.parametrize("owned_by, salted", [(None, False), ("llamacpp", False), ("vllm", True)])
def test_cache_salt_only_for_a_server_that_takes_one(owned_by, salted):
    """The engine is read once from /v1/models; only vLLM gets ``cache_salt``, every server ``user``."""
    with FaultServer(owned_by=owned_by) as server:
        policy = OpenAIServerPolicy(server.url, "m")
        for _ in range(2):
            policy.complete([{"role": "user", "content": "hi"}], [])
    bodies = [body for _, body in server.requests]
    assert all(("cache_salt" in b) == salted for b in bodies)
    assert len({b["user"] for b in bodies}) == 1 and len({b.get("cache_salt") for b in bodies}) == 1
    assert all(b.get("cache_prompt") is (True if owned_by == "llamacpp" else None) for b in bodies)
