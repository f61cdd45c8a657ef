"""Model-server faults: each is retried within the budget, or ends in a ModelUnavailable that says why.

Every test talks real HTTP to ``FaultServer`` on loopback and counts the attempts it saw.
"""

from __future__ import annotations

import json
import random
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest
from pydantic import ValidationError

from core.errors import ModelUnavailable
from core.policy import OpenAIServerPolicy
from core.policy.retry import RetryConfig, backoff_delay, retry_after_s
from core.text import utf8_safe
from tests.core.policy.fault_server import FaultServer

FAST = RetryConfig(max_attempts=4, max_total_s=10.0, base_delay_s=0.01, max_delay_s=0.05)
HISTORY = [{"role": "user", "content": "hi"}]
TOOLS = [{"type": "function", "function": {"name": "view_file", "parameters": {"type": "object"}}}]

#: (fault, options, words the give-up reason must contain)
FAULTS = {
    "timeout": ("timeout", {"delay_s": 1.0}, "did not answer within 0.25 s"),
    "429": ("status", {"status": 429}, "HTTP 429"),
    "500": ("status", {"status": 500}, "HTTP 500"),
    "502": ("status", {"status": 502}, "HTTP 502"),
    "503": ("status", {"status": 503}, "HTTP 503"),
    "408": ("status", {"status": 408}, "HTTP 408"),
    "409": ("status", {"status": 409}, "HTTP 409"),
    "cut": ("cut", {}, "lost the connection to the model server at"),
    "drop": ("drop", {}, "lost the connection to the model server at"),
    "invalid_json": ("invalid_json", {}, "not valid JSON"),
    "html": ("html", {}, "not valid JSON"),
    "empty_choices": ("empty_choices", {}, "an empty 'choices' list"),
    "no_choices": ("no_choices", {}, "no 'choices' list"),
}


class Sleeps(list):
    """A ``sleep`` that records each wait and waits it."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)
        time.sleep(seconds)


def policy(server: FaultServer, retry: RetryConfig = FAST, **kwargs) -> OpenAIServerPolicy:
    return OpenAIServerPolicy(server.url, "m", retry=retry, timeout_s=0.25, rng=random.Random(0), **kwargs)


@pytest.mark.parametrize("name", FAULTS)
def test_fault_is_retried_and_recovered_within_the_budget(name):
    kind, options, _ = FAULTS[name]
    with FaultServer() as server:
        server.inject(kind, times=2, **options)
        resp = policy(server).complete(HISTORY, TOOLS)
        assert server.count == 3  # two faults, then the answer
    assert resp.message.tool_calls[0].name == "view_file"
    assert resp.finish_reason == "tool_calls"
    assert [kind for kind, _ in server.requests] == [kind, kind, "ok"]
    assert all(body["messages"] == HISTORY for _, body in server.requests)  # the same request each time


@pytest.mark.parametrize("name", FAULTS)
def test_fault_past_the_attempt_budget_is_model_unavailable_with_the_reason(name):
    kind, options, words = FAULTS[name]
    with FaultServer() as server:
        server.inject(kind, times=10, **options)
        start = time.monotonic()
        with pytest.raises(ModelUnavailable) as info:
            policy(server, RetryConfig(max_attempts=3, max_total_s=10.0, base_delay_s=0.01, max_delay_s=0.02)).complete(HISTORY, TOOLS)
        took = time.monotonic() - start
        assert server.count == 3
    text = str(info.value)
    assert words in text and server.url in text
    assert "gave up after 3 attempts over " in text and "retry budget: 3 attempts, 10 s" in text
    seconds = float(text.split("gave up after 3 attempts over ")[1].split(" s")[0])
    assert seconds <= took + 0.05


class WaitClock:
    """A monotonic clock that moves only when ``sleep`` waits: the retry budget's arithmetic, free
    of how long each attempt takes on this machine (a loaded CI runner included)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


def test_the_seconds_budget_stops_retrying_before_the_attempts_run_out():
    retry = RetryConfig(max_attempts=1000, max_total_s=0.3, base_delay_s=0.02, max_delay_s=0.05)
    clock = WaitClock()
    with FaultServer() as server:
        server.inject("status", times=1000, status=503)
        with pytest.raises(ModelUnavailable, match="would pass the .* left of the retry budget") as info:
            policy(server, retry, sleep=clock.sleep, clock=clock).complete(HISTORY, TOOLS)
    # the waits are the seeded backoff's, stopped at the first that would pass the 0.3 s budget
    rng, expected = random.Random(0), []
    while True:
        delay = backoff_delay(len(expected), retry, rng)
        if sum(expected) + delay > retry.max_total_s:
            break
        expected.append(delay)
    assert clock.waits == expected and sum(clock.waits) <= 0.3
    assert server.count == len(expected) + 1 and 2 < server.count < 1000  # the attempts never ran out
    assert f"gave up after {server.count} attempts" in str(info.value) and "retry budget: 1000 attempts, 0.3 s" in str(info.value)


def test_retry_after_is_honoured():
    sleeps = Sleeps()
    with FaultServer() as server:
        server.inject("status", status=429, retry_after="0.1").inject("status", status=503, retry_after_ms="50")
        resp = policy(server, sleep=sleeps).complete(HISTORY, TOOLS)
        assert server.count == 3
    assert resp.message.tool_calls
    assert sleeps == [0.1, 0.05]  # exactly what the server asked, not the (tiny) backoff


def test_retry_after_beyond_the_budget_gives_up_at_once():
    sleeps = Sleeps()
    with FaultServer() as server:
        server.inject("status", times=5, status=429, retry_after="3600")
        with pytest.raises(ModelUnavailable) as info:
            policy(server, sleep=sleeps).complete(HISTORY, TOOLS)
        assert server.count == 1
    assert sleeps == []
    text = str(info.value)
    assert "HTTP 429" in text and "Retry-After 3600 s" in text and "the next wait (3600.0 s) would pass the" in text
    assert "gave up after 1 attempt over" in text


def test_waits_between_attempts_are_full_jitter_backoff():
    sleeps = Sleeps()
    retry = RetryConfig(max_attempts=6, max_total_s=10.0, base_delay_s=0.01, max_delay_s=0.04)
    with FaultServer() as server:
        server.inject("status", times=5, status=500)
        policy(server, retry, sleep=sleeps).complete(HISTORY, TOOLS)
        assert server.count == 6
    assert len(sleeps) == 5
    for retry_number, wait in enumerate(sleeps):
        assert 0 <= wait <= min(0.04, 0.01 * 2**retry_number)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_a_bad_request_is_not_retried(status):
    with FaultServer() as server:
        server.inject("status", times=5, status=status, message="model 'm' does not exist")
        with pytest.raises(ModelUnavailable) as info:
            policy(server).complete(HISTORY, TOOLS)
        assert server.count == 1
    text = str(info.value)
    assert f"rejected the request with HTTP {status}" in text and "does not exist" in text
    assert "bad request" in text and "not retried" in text


def test_a_reply_cut_at_the_token_limit_is_returned_not_retried():
    with FaultServer() as server:
        server.inject("length")
        resp = policy(server).complete(HISTORY, TOOLS)
        assert server.count == 1
    assert resp.finish_reason == "length"
    call = resp.message.tool_calls[0]
    assert call.name == "view_file" and call.arguments.startswith('{"path": ') and not call.arguments.endswith("}")


def test_mixed_faults_in_a_row_recover():
    with FaultServer() as server:
        for kind, options, _ in FAULTS.values():
            server.inject(kind, **options)
        retry = RetryConfig(max_attempts=len(FAULTS) + 1, max_total_s=30.0, base_delay_s=0.001, max_delay_s=0.01)
        resp = policy(server, retry).complete(HISTORY, TOOLS)
        assert server.count == len(FAULTS) + 1
    assert resp.message.tool_calls


def test_lone_surrogates_in_the_history_do_not_break_every_request():
    history = [{"role": "user", "content": "bytes \udcff\udcfe from a file"},
               {"role": "tool", "tool_call_id": "c", "content": "ok \ud83d\ude00 and \ud800"}]
    with FaultServer() as server:
        policy(server).complete(history, TOOLS)
        sent = server.requests[0][1]["messages"]
    assert sent[0]["content"] == "bytes \ufffd\ufffd from a file"
    assert sent[1]["content"] == "ok \U0001F600 and \ufffd"
    same = [{"role": "user", "content": "plain"}]
    assert utf8_safe(same) is same  # nothing copied when nothing needs it


def test_odd_but_usable_bodies_are_read_tolerantly():
    odd = {
        "choices": [{"message": {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
                                 "tool_calls": [{"function": {"name": "view_file", "arguments": {"path": "x"}}},
                                                {"id": 7, "function": None}, "garbage"]}}],
        "usage": {"prompt_tokens": "12", "completion_tokens": 3, "prompt_tokens_details": None},
    }
    with FaultServer(responder=lambda body: odd) as server:
        resp = policy(server).complete(HISTORY, TOOLS)
    assert resp.message.content == "ab"
    calls = resp.message.tool_calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [("", "view_file", '{"path": "x"}'), ("7", "", ""), ("", "", "")]
    assert (resp.usage.prompt_tokens, resp.usage.completion_tokens, resp.usage.cached_prompt_tokens) == (0, 3, 0)
    assert resp.model == "m" and resp.finish_reason is None


def test_retry_config_is_validated():
    assert RetryConfig() == RetryConfig(max_attempts=6, max_total_s=120.0, base_delay_s=1.0, max_delay_s=30.0)
    for bad in ({"max_attempts": 0}, {"max_total_s": 0}, {"base_delay_s": -1}, {"base_delay_s": 5, "max_delay_s": 1},
                {"max_attempts": "many"}, {"retries": 3}):
        with pytest.raises(ValidationError):
            RetryConfig(**bad)
    assert OpenAIServerPolicy("http://127.0.0.1:1/v1", "m", retry=RetryConfig(max_attempts=3)).retry.max_attempts == 3


def test_backoff_is_full_jitter_under_a_doubling_cap():
    config = RetryConfig(base_delay_s=1.0, max_delay_s=8.0)
    rng = random.Random(42)
    for retry in range(8):
        ceiling = min(8.0, 2.0**retry)
        waits = [backoff_delay(retry, config, rng) for _ in range(2000)]
        assert all(0 <= w <= ceiling for w in waits)
        assert abs(sum(waits) / len(waits) - ceiling / 2) < ceiling * 0.05  # uniform over [0, ceiling]
        assert min(waits) < ceiling * 0.05 and max(waits) > ceiling * 0.95
    assert backoff_delay(10_000, config, rng) <= 8.0  # no overflow however many retries


def test_retry_after_parsing():
    assert retry_after_s({"retry-after": "7"}) == 7.0
    assert retry_after_s({"retry-after": "1.5"}) == 1.5
    assert retry_after_s({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert retry_after_s({"retry-after": "-3"}) is None
    assert retry_after_s({"retry-after": "soon"}) is None
    assert retry_after_s({"retry-after": "inf"}) is None
    assert retry_after_s({}) is None and retry_after_s(None) is None
    now = datetime(2030, 1, 1, tzinfo=UTC)
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_s({"retry-after": date}, now=now.timestamp()) == pytest.approx(30.0)
    past = format_datetime(now - timedelta(seconds=30), usegmt=True)
    assert retry_after_s({"retry-after": past}, now=now.timestamp()) == 0.0


def test_requests_carry_the_tools_and_the_model():
    with FaultServer() as server:
        policy(server).complete(HISTORY, TOOLS)
        body = server.requests[0][1]
    assert body["model"] == "m" and body["tools"] == TOOLS and body["tool_choice"] == "auto"
    assert json.dumps(body["messages"]) == json.dumps(HISTORY)
