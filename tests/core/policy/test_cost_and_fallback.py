"""Cost accounting on every call (reported, token-id and text-prefix cached counts; the default
price table) and the fallback endpoint, against real HTTP servers on loopback."""

from __future__ import annotations

import json

import pytest

from core.config import load_settings
from core.errors import ModelUnavailable
from core.policy import EndpointFailed, FallbackPolicy, OpenAIServerPolicy, with_fallback
from core.policy.prefix import cache_fields, common_prefix_len, engine_from_models, estimate_cached_tokens
from core.policy.retry import RetryConfig
from core.state import Pricing, Usage
from tests.core.policy.fault_server import FaultServer, completion

TOOLS = [{"type": "function", "function": {"name": "view_file", "parameters": {"type": "object"}}}]
FAST = RetryConfig(max_attempts=2, max_total_s=5, base_delay_s=0.01, max_delay_s=0.02)


def history(turns: int) -> list[dict]:
    """A growing history: system, task, then ``turns`` assistant/tool pairs."""
    messages = [{"role": "system", "content": "You fix bugs. " * 50}, {"role": "user", "content": "fix NPE"}]
    for i in range(turns):
        call = {"id": f"c{i}", "type": "function", "function": {"name": "view_file", "arguments": json.dumps({"path": f"f{i}.py"})}}
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": f"c{i}", "content": f"line {i}\n" * 40}]
    return messages


def test_default_price_table_and_cost_of_a_call(horizon_home):
    served = load_settings(base_url="http://localhost:8000/v1", model="m")
    assert (served.cached_input_per_mtok, served.input_per_mtok, served.output_per_mtok) == (1.3, 13.0, 68.0)
    usage = Usage(prompt_tokens=100_000, cached_prompt_tokens=90_000, completion_tokens=1_000)
    # 10,000 uncached at 13.0 + 90,000 cached at 1.3 + 1,000 out at 68.0, per million
    assert served.pricing.cost(usage) == pytest.approx(0.13 + 0.117 + 0.068)
    assert load_settings().pricing.cost(usage) == 0.0  # no server: the embedded model, in-process
    assert served.pricing_for("embedded") == Pricing() and served.pricing_for("scripted") == Pricing()


def test_cached_tokens_from_the_server_win_over_the_estimate():
    reply = completion([{"name": "view_file", "arguments": "{}"}],
                       usage={"prompt_tokens": 500, "completion_tokens": 5, "prompt_tokens_details": {"cached_tokens": 7}})
    with FaultServer(responder=lambda body: reply) as server:
        policy = OpenAIServerPolicy(server.url, "m", retry=FAST)
        policy.complete(history(1), TOOLS)
        second = policy.complete(history(2), TOOLS)
    assert second.cached_reported and second.usage.cached_prompt_tokens == 7


def test_cached_tokens_from_token_ids_when_the_server_returns_them():
    """vLLM's prompt_token_ids: the exact longest common token prefix with the previous call."""
    prompts = iter([[1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 9, 9, 9, 9], [1, 2, 3, 4, 9, 9, 9, 9, 7, 7]])

    def reply(body):
        ids = next(prompts)
        return {**completion([{"name": "view_file", "arguments": "{}"}], usage={"prompt_tokens": len(ids), "completion_tokens": 1}),
                "prompt_token_ids": ids}

    with FaultServer(responder=reply) as server:
        policy = OpenAIServerPolicy(server.url, "m", retry=FAST)
        counts = [policy.complete(history(n), TOOLS).usage.cached_prompt_tokens for n in range(3)]
    assert counts == [0, 4, 8]


def test_cached_tokens_estimated_from_the_serialised_prompt():
    """No cached count and no ids: prompt_tokens x (common prefix chars / prompt chars)."""
    reply = completion([{"name": "view_file", "arguments": "{}"}], usage={"prompt_tokens": 1000, "completion_tokens": 5})
    with FaultServer(responder=lambda body: reply) as server:
        policy = OpenAIServerPolicy(server.url, "m", retry=FAST)
        first = policy.complete(history(3), TOOLS)
        grown = policy.complete(history(4), TOOLS)  # append-only: most of it is shared
        rewritten = policy.complete([{"role": "system", "content": "2026-11-30T09:00:00 " + history(4)[0]["content"]}]
                                    + history(4)[1:], TOOLS)  # a timestamp up front: almost nothing shared
    assert first.usage.cached_prompt_tokens == 0 and not first.cached_reported
    assert 700 < grown.usage.cached_prompt_tokens < 1000
    assert rewritten.usage.cached_prompt_tokens < 50


def test_prefix_helpers():
    assert common_prefix_len("abcdef" * 2000, "abcdef" * 1999 + "abcxef") == 6 * 1999 + 3
    assert common_prefix_len([1, 2], [1, 2, 3]) == 2 and common_prefix_len("", "a") == 0
    assert estimate_cached_tokens(100, None, "abc", ids=False) == 0
    assert estimate_cached_tokens(100, "abcd", "abcdefgh", ids=False) == 50
    assert estimate_cached_tokens(3, [1, 2, 3, 4], [1, 2, 3, 4, 5], ids=True) == 3  # never above prompt_tokens
    assert engine_from_models("http://x/v1", {"data": [{"owned_by": "sglang"}]}) == "sglang"
    assert engine_from_models("https://api.openai.com/v1", None) == "openai"
    assert engine_from_models("http://x/v1", {"data": "nonsense"}) == "unknown"
    assert set(cache_fields("unknown", "s" * 43)) == {"user"}
    assert cache_fields("vllm", "s" * 43)["cache_salt"] == "s" * 43
    assert cache_fields("llama.cpp", "s" * 43)["cache_prompt"] is True
    assert "prompt_cache_key" in cache_fields("openai", "s" * 43)


def endpoints(primary: FaultServer, fallback: FaultServer) -> FallbackPolicy:
    return FallbackPolicy(OpenAIServerPolicy(primary.url, "big", retry=FAST, timeout_s=5),
                          OpenAIServerPolicy(fallback.url, "small", retry=FAST, timeout_s=5))


def test_fallback_after_the_primary_spends_its_retries_and_stays_there():
    with FaultServer() as primary, FaultServer() as fallback:
        primary.inject("status", times=10, status=503)
        policy = endpoints(primary, fallback)
        first = policy.complete(history(1), TOOLS)
        second = policy.complete(history(2), TOOLS)
        assert primary.count == 2 and fallback.count == 2  # two attempts on the primary, then never again
        assert first.message.tool_calls[0].name == "view_file" and second.model == "fault-model"
        assert "HTTP 503" in policy.switched and "gave up after 2 attempts" in policy.switched
        assert fallback.requests[0][1]["model"] == "small"


def test_429_over_quota_goes_to_the_fallback_at_once():
    with FaultServer() as primary, FaultServer() as fallback:
        primary.inject("status", status=429, message="You exceeded your current quota (insufficient_quota)")
        policy = endpoints(primary, fallback)
        policy.complete(history(1), TOOLS)
        assert primary.count == 1 and fallback.count == 1
        assert "over its quota" in policy.switched


def test_without_a_fallback_over_quota_is_a_clear_error_and_a_bad_request_never_falls_back():
    with FaultServer() as primary, FaultServer() as fallback:
        primary.inject("status", status=402, message="insufficient credits")
        with pytest.raises(EndpointFailed, match="over its quota.*fallback_base_url"):
            OpenAIServerPolicy(primary.url, "m", retry=FAST).complete(history(1), TOOLS)
        primary.inject("status", status=400, message="context length exceeded")
        with pytest.raises(ModelUnavailable, match="HTTP 400") as caught:
            endpoints(primary, fallback).complete(history(1), TOOLS)
        assert not isinstance(caught.value, EndpointFailed) and fallback.count == 0


def test_both_endpoints_failing_names_both(horizon_home):
    with FaultServer() as primary, FaultServer() as fallback:
        primary.inject("status", times=5, status=500)
        fallback.inject("status", times=5, status=502)
        with pytest.raises(EndpointFailed, match="fallback endpoint failed too.*HTTP 502.*primary had failed.*HTTP 500"):
            endpoints(primary, fallback).complete(history(1), TOOLS)


def test_with_fallback_reads_the_router_settings(horizon_home):
    primary = OpenAIServerPolicy("http://a/v1", "big")
    assert with_fallback(primary, load_settings()) is primary
    routed = with_fallback(primary, load_settings(fallback_base_url="http://b/v1"))
    assert isinstance(routed, FallbackPolicy) and routed.fallback.base_url == "http://b/v1" and routed.fallback.model == "big"
    routed.close()
