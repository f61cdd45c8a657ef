"""A policy served by any OpenAI-compatible chat-completions server with tool calling.

Works with vLLM, SGLang, llama.cpp's server and Ollama (``/v1`` endpoints); uses the official
``openai`` client for the HTTP request and reads the response body itself, tolerantly (servers
differ in which fields they fill).

Prefix caching (``core.policy.prefix``): every request carries the run's cache fields (``user``
always; vLLM's ``cache_salt`` and the like only where the engine, detected once from ``GET
/v1/models``, is documented to take them). Cached prompt tokens are read from
``usage.prompt_tokens_details.cached_tokens`` where the server reports them (vLLM with
``--enable-prompt-tokens-details``, SGLang); otherwise they are estimated from the longest common
prefix with the previous call of the run: over ``prompt_token_ids`` when the server returns them,
else over the serialised request (an approximation; see ``estimate_cached_tokens``).

Faults and retries. The client's own retry is switched off (``max_retries=0``): it retries only
transport and status errors, its jitter shortens a wait by at most 25% (so clients that failed
together retry nearly together), and it has no budget in seconds. Instead ``complete`` retries,
within a ``RetryConfig`` budget and with full-jitter backoff (see ``core.policy.retry``):

- a timeout, a refused or broken connection (including one cut in the middle of the response);
- HTTP 408, 409, 429 and 5xx, waiting what ``Retry-After`` asks for when the server sends it;
- a 2xx response whose body is not valid JSON, or has no or an empty ``choices`` list.

Any other HTTP status (400, 401, 403, 404, 422, ...) means the request itself is wrong, and
sending it again would fail again: it raises ``ModelUnavailable`` at once. An account over its
quota (HTTP 402, or 429 whose error says ``insufficient_quota``/quota/credit/billing) will not
recover within a retry budget either: it raises ``EndpointFailed`` at once. When the budget is
spent, ``EndpointFailed`` says what failed, how many attempts were made over how many seconds;
a ``FallbackPolicy`` (``core.policy.router``) then turns to its fallback endpoint, and without
one the runner stops the run resumably (``model_error``) and adds the ``agent resume`` command.

Images (``core.policy.images``): a wire message may carry Horizon's ``images`` key (a tool's
render). With ``vision=True`` the latest two go to the server as ``image_url`` parts (base64 data
URLs) in a ``user`` message after the tool results; with ``vision=False`` (the default) the key is
dropped and the model reads the observation's text, which describes the image.

A reply cut off by the token limit (``finish_reason="length"``) is not a fault: it is returned
as it is, truncated tool-call arguments included, and the loop tells the model they are not
valid JSON.
"""

from __future__ import annotations

import json
import logging
import random
import re
import secrets
import time
from collections.abc import Callable
from typing import Any

import openai

from core.errors import ModelUnavailable
from core.policy.base import PolicyResponse
from core.policy.images import attach_images
from core.policy.prefix import cache_fields, engine_from_models, estimate_cached_tokens, serialise_prompt
from core.policy.retry import RetryConfig, backoff_delay, retry_after_s
from core.policy.text_actions import parse_tool_calls, to_text_wire
from core.state import Message, ToolCall, Usage
from core.text import utf8_safe

log = logging.getLogger(__name__)

#: HTTP statuses worth retrying: request timeout, conflict (a busy lock), rate limit; 5xx too.
RETRIED_STATUSES = frozenset({408, 409, 429})
#: words in a 429's error that mean an exhausted account, not a momentary rate limit
QUOTA_WORDS = re.compile(r"insufficient_quota|quota|credit|billing", re.IGNORECASE)


class EndpointFailed(ModelUnavailable):
    """The endpoint failed past its retry budget, or its account is over quota: a fallback endpoint may serve instead.

    A ``ModelUnavailable`` that is not an ``EndpointFailed`` (a 400, 401, 404: the request or the
    settings are wrong) would fail on any endpoint.
    """


class _Retryable(Exception):
    """One failed attempt that a later one may not repeat; ``reason`` says what happened."""

    def __init__(self, reason: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class OpenAIServerPolicy:
    """Calls ``POST {base_url}/chat/completions`` with ``tools`` and ``tool_choice="auto"``.

    Args:
        base_url: the server's OpenAI-compatible root, e.g. ``http://localhost:8000/v1``.
        model: the served model name.
        api_key: sent as a bearer token; local servers accept any value.
        temperature: sampling temperature.
        max_tokens: completion tokens per call.
        timeout_s: seconds to wait for one attempt.
        retry: the retry budget and backoff (default ``RetryConfig()``: 6 attempts, 120 s).
        sleep: how to wait between attempts (tests pass a recorder).
        clock: seconds on a monotonic clock, read for the retry budget's elapsed time (tests pass
            one that advances only when ``sleep`` waits, so that the budget's arithmetic does not
            depend on how fast the machine is).
        rng: the random source of the backoff jitter (tests pass a seeded one).
        engine: the serving engine (``vllm``, ``sglang``, ``llama.cpp``, ``llama-cpp-python``,
            ``openai``, ``unknown``) for the cache fields; None: ask ``GET /v1/models`` once.
        cache_salt: the run's cache secret; default a fresh random one per policy (the runner
            records one per run, so a resumed run keeps its cache).
        tool_format: ``native`` (the server's tool calling: ``tools`` and ``tool_calls``) or
            ``text`` (tools described in the system message, calls written as ``<tool_call>``
            blocks; for servers without tool calling, see ``core.policy.text_actions``).
        vision: the served model sees images: a tool's images go as ``image_url`` parts
            (``core.policy.images``); False: as the observation's text alone.

    Raises:
        ValueError: an unknown ``tool_format``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 2048,
        timeout_s: float = 300.0,
        retry: RetryConfig | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        engine: str | None = None,
        cache_salt: str | None = None,
        tool_format: str = "native",
        vision: bool = False,
    ) -> None:
        if tool_format not in ("native", "text"):
            raise ValueError(f"tool_format must be 'native' or 'text', not {tool_format!r}")
        self.tool_format = tool_format
        self.vision = vision
        self.base_url = base_url
        self.model = model
        self.name = f"openai:{model}@{base_url}"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.retry = retry or RetryConfig()
        self._sleep = sleep
        self._clock = clock
        self._rng = rng or random.Random()
        self._client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)
        self.engine = engine
        self.cache_salt = cache_salt or secrets.token_urlsafe(32)
        self._previous: tuple[bool, list[int] | str] | None = None  # (token ids?, prompt) of the last call

    def _engine(self) -> str:
        """The serving engine, asked once from ``GET /v1/models`` (``unknown`` if it will not say)."""
        if self.engine is None:
            try:
                page = self._client.with_options(timeout=min(10.0, self.timeout_s)).models.with_raw_response.list()
                self.engine = engine_from_models(self.base_url, json.loads(page.http_response.content))
            except (openai.APIConnectionError, openai.APITimeoutError):
                return "unknown"  # asked again next call; the request itself reports the fault
            except (openai.APIStatusError, ValueError, RecursionError):
                self.engine = engine_from_models(self.base_url, None)
        return self.engine

    def close(self) -> None:
        """Close the HTTP client's connection pool (a long-lived process runs many episodes)."""
        self._client.close()

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """Return the server's next assistant turn, retrying transient faults; see ``Policy.complete``.

        Raises:
            EndpointFailed: the retry budget is spent (the message gives the last fault, the
                attempts and the seconds), or the account is over its quota.
            ModelUnavailable: the server rejected the request with a 4xx that is not retried.
        """
        messages = utf8_safe(messages)  # a lone surrogate in the history would fail every request
        if self.tool_format == "text":
            return self._complete_as_text(messages, tools)
        return self._complete(messages, tools)

    def _complete_as_text(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """Send the history rewritten for a server without tool calling; read the calls from the text."""
        response = self._complete(to_text_wire(messages, tools), [])
        turn = sum(1 for m in messages if m["role"] == "assistant")
        calls = parse_tool_calls(response.message.content, str(turn))
        return response.model_copy(update={"message": response.message.model_copy(update={"tool_calls": calls})})

    def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        budget = self.retry
        start = self._clock()
        attempt = 0
        while True:
            attempt += 1
            try:
                response = self._attempt(messages, tools)
                return self._account(response, messages, tools)
            except _Retryable as fault:
                elapsed = self._clock() - start
                if attempt >= budget.max_attempts:
                    raise self._gave_up(fault.reason, attempt, elapsed) from None
                if fault.retry_after is not None:
                    delay, why = fault.retry_after, "as the server asked (Retry-After)"
                else:
                    delay, why = backoff_delay(attempt - 1, budget, self._rng), "backoff with jitter"
                if elapsed + delay > budget.max_total_s:
                    left = max(0.0, budget.max_total_s - elapsed)
                    raise self._gave_up(f"{fault.reason}; the next wait ({delay:.1f} s) would pass the "
                                        f"{left:.1f} s left of the retry budget", attempt, elapsed) from None
                log.warning("model call attempt %d of %d failed: %s; retrying in %.2f s (%s)",
                            attempt, budget.max_attempts, fault.reason, delay, why)
                self._sleep(delay)

    def _account(self, response: PolicyResponse, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """Fill in cached prompt tokens the server did not report, from the prefix shared with the previous call."""
        ids = response.prompt_token_ids
        current: list[int] | str = ids if ids is not None else serialise_prompt(messages, tools)
        previous = self._previous[1] if self._previous is not None and self._previous[0] == (ids is not None) else None
        self._previous = (ids is not None, current)
        if response.cached_reported:
            return response
        usage = response.usage
        cached = estimate_cached_tokens(usage.prompt_tokens, previous, current, ids=ids is not None)
        return response.model_copy(update={"usage": usage.model_copy(update={"cached_prompt_tokens": cached})})

    def _gave_up(self, reason: str, attempts: int, elapsed: float) -> ModelUnavailable:
        budget = self.retry
        return EndpointFailed(
            f"{reason}; gave up after {attempts} attempt{'s' if attempts != 1 else ''} over {elapsed:.1f} s "
            f"(retry budget: {budget.max_attempts} attempts, {budget.max_total_s:g} s)"
        )  # the runner adds "continue with: agent resume RUN_ID", which it alone knows

    def _attempt(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """One request. Raises ``_Retryable`` for a fault worth retrying, ``ModelUnavailable`` for one that is not."""
        url = self.base_url
        engine = self._engine()
        if engine == "llama-cpp-python":  # its request schema refuses "content": null, its templates need a content
            messages = [{**m, "content": ""} if m.get("content", "") is None else m for m in messages]
        # Here, not in ``complete``: the prefix estimate (``_account``) compares the requests with
        # each image as its path, not as the hundred kilobytes of base64 that stand for it.
        messages = attach_images(messages, vision=self.vision)
        t0 = time.perf_counter()
        try:
            raw = self._client.chat.completions.with_raw_response.create(
                model=self.model,
                messages=messages,
                tools=tools or openai.NOT_GIVEN,
                tool_choice="auto" if tools else openai.NOT_GIVEN,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                logprobs=True if engine in TOKEN_ENGINES else openai.NOT_GIVEN,
                extra_body={**cache_fields(engine, self.cache_salt), **token_fields(engine)},
            )
            body = raw.http_response.content
        except openai.APITimeoutError:
            raise _Retryable(f"the model server at {url} did not answer within {self.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:  # refused, reset, or cut in the middle of the response
            why = str(exc.__cause__ or "") or str(exc)
            if type(exc.__cause__).__name__ == "ConnectError":  # httpx's (or httpx2's): nothing answered
                raise _Retryable(f"cannot reach the model server at {url} ({why}); start it, or check --base-url") from None
            raise _Retryable(f"lost the connection to the model server at {url} ({why})") from None
        except openai.APIStatusError as exc:
            status = exc.status_code
            detail = _short(exc.message.removeprefix(f"Error code: {status} - "))
            if status == 402 or (status == 429 and QUOTA_WORDS.search(exc.message or "")):
                raise EndpointFailed(
                    f"the model server at {url} answered HTTP {status} ({detail}): the account is over its quota, "
                    "which retrying will not fix; add credit, or set fallback_base_url and fallback_model"
                ) from None
            if status in RETRIED_STATUSES or status >= 500:
                wait = retry_after_s(exc.response.headers)
                asked = f", Retry-After {wait:g} s" if wait is not None else ""
                raise _Retryable(f"the model server at {url} answered HTTP {status} ({detail}{asked})", wait) from None
            raise ModelUnavailable(
                f"the model server at {url} rejected the request with HTTP {status} ({detail}); a 4xx status other "
                "than 408, 409 and 429 means a bad request, which would fail again, so it was not retried: check "
                "--model, the API key and the server's limits"
            ) from None
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:  # JSONDecodeError; UnicodeDecodeError; nesting too deep
            raise _Retryable(
                f"the model server at {url} sent a response body that is not valid JSON ({exc}): {_short(body)}"
            ) from None
        message, finish_reason = _choice(data, url)
        usage, reported = _usage(data.get("usage"))
        completion_ids, logprobs = _completion_tokens(data)
        return PolicyResponse(
            message=message,
            usage=usage,
            cached_reported=reported,
            prompt_token_ids=_int_list(data.get("prompt_token_ids")),
            completion_token_ids=completion_ids,
            completion_logprobs=logprobs,
            latency_s=time.perf_counter() - t0,
            model=data["model"] if isinstance(data.get("model"), str) and data["model"] else self.model,
            finish_reason=finish_reason,
        )


# Engines that return the tokens they sampled, for RL training data: vLLM gives prompt and
# completion ids with ``return_token_ids`` (vLLM >= 0.10.2) and logprobs; SGLang gives logprobs.
# llama.cpp's servers and the embedded model give neither ids nor aligned logprobs here, so their
# runs are text-only (export re-tokenises them and says so).
TOKEN_ENGINES = ("vllm", "sglang")


def token_fields(engine: str) -> dict[str, Any]:
    """Extra body fields asking ``engine`` for its token ids (none for engines that lack them)."""
    return {"return_token_ids": True} if engine == "vllm" else {}


def _int_list(value: Any) -> list[int] | None:
    if isinstance(value, list) and all(isinstance(i, int) and not isinstance(i, bool) for i in value):
        return value
    return None


def _completion_tokens(data: Any) -> tuple[list[int] | None, list[float] | None]:
    """``choices[0].token_ids`` and the logprobs of ``choices[0].logprobs.content``, where well-formed."""
    choice = (data.get("choices") or [{}])[0] if isinstance(data, dict) else {}
    choice = choice if isinstance(choice, dict) else {}
    ids = _int_list(choice.get("token_ids"))
    content = choice.get("logprobs").get("content") if isinstance(choice.get("logprobs"), dict) else None
    logprobs = None
    if isinstance(content, list) and content:
        values = [item.get("logprob") if isinstance(item, dict) else None for item in content]
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            logprobs = [float(v) for v in values]
    return ids, logprobs


def _short(text: str | bytes | None, limit: int = 200) -> str:
    """A one-line excerpt of a server's text for an error message."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = " ".join((text or "").split())
    return repr(text[:limit] + ("…" if len(text) > limit else ""))


def _choice(data: Any, url: str) -> tuple[Message, str | None]:
    """The assistant message and finish reason of ``choices[0]``; ``_Retryable`` when there is none."""
    if not isinstance(data, dict):
        raise _Retryable(f"the model server at {url} sent JSON that is not a completion object: {_short(json.dumps(data))}")
    choices = data.get("choices")
    if not isinstance(choices, list):
        problem = f"an error: {_short(json.dumps(data['error']))}" if "error" in data else "no 'choices' list"
        raise _Retryable(f"the model server at {url} sent a response with {problem}")
    if not choices:
        raise _Retryable(f"the model server at {url} sent a response with an empty 'choices' list")
    choice = choices[0]
    msg = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(msg, dict):
        raise _Retryable(f"the model server at {url} sent a choice without a 'message' object")
    calls = []
    for item in msg.get("tool_calls") or []:
        item = item if isinstance(item, dict) else {}
        fn = item.get("function") if isinstance(item.get("function"), dict) else {}
        arguments = fn.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            arguments = json.dumps(arguments)  # some servers send an object instead of JSON text
        calls.append(ToolCall(id=_text(item.get("id")), name=_text(fn.get("name")), arguments=arguments or ""))
    reason = choice.get("finish_reason")
    return Message(role="assistant", content=_content(msg.get("content")), tool_calls=calls), reason if isinstance(reason, str) else None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value)


def _content(value: Any) -> str | None:
    """Message content as text: a string, the text parts of a list of parts, or None."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list):
        return "".join(p.get("text", "") if isinstance(p, dict) and isinstance(p.get("text"), str) else "" for p in value)
    return json.dumps(value)


def _usage(value: Any) -> tuple[Usage, bool]:
    """Token counts from a ``usage`` object (missing or garbled fields count 0), and whether it
    reported cached tokens (``prompt_tokens_details.cached_tokens`` present as a count)."""
    if not isinstance(value, dict):
        return Usage(), False

    def count(obj: Any, key: str) -> int:
        n = obj.get(key) if isinstance(obj, dict) else None
        return n if isinstance(n, int) and not isinstance(n, bool) and n >= 0 else 0

    details = value.get("prompt_tokens_details")
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    reported = isinstance(cached, int) and not isinstance(cached, bool) and cached >= 0
    usage = Usage(
        prompt_tokens=count(value, "prompt_tokens"),
        cached_prompt_tokens=count(details, "cached_tokens"),
        completion_tokens=count(value, "completion_tokens"),
    )
    return usage, reported
