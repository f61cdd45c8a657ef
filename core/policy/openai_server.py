"""A policy served by any OpenAI-compatible chat-completions server with tool calling.

Works with vLLM, SGLang, llama.cpp's server and Ollama (``/v1`` endpoints); uses the official
``openai`` client. Cached prompt tokens are read from ``usage.prompt_tokens_details.cached_tokens``
where the server reports them (vLLM and SGLang do when prefix caching is on).
"""

from __future__ import annotations

import time
from typing import Any

import openai

from core.errors import ModelUnavailable
from core.policy.base import PolicyResponse
from core.state import Message, ToolCall, Usage


class OpenAIServerPolicy:
    """Calls ``POST {base_url}/chat/completions`` with ``tools`` and ``tool_choice="auto"``.

    Args:
        base_url: the server's OpenAI-compatible root, e.g. ``http://localhost:8000/v1``.
        model: the served model name.
        api_key: sent as a bearer token; local servers accept any value.
        temperature: sampling temperature.
        max_tokens: completion tokens per call.
        timeout_s: seconds to wait for one call.
        max_retries: retries on connection errors and 429/5xx (the client backs off exponentially).
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
        max_retries: int = 2,
    ) -> None:
        self.base_url = base_url
        self.model = model
        self.name = f"openai:{model}@{base_url}"
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=max_retries
        )

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """Return the server's next assistant turn; see ``Policy.complete``.

        Raises:
            ModelUnavailable: the server is unreachable, timed out, or refused the request
                (the message gives the URL, the status and what to check).
        """
        start = time.perf_counter()
        try:
            resp = self._client.chat.completions.create(
                model=self.model,
                messages=messages,
                tools=tools or openai.NOT_GIVEN,
                tool_choice="auto" if tools else openai.NOT_GIVEN,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
            )
        except (openai.APIConnectionError, openai.APITimeoutError) as exc:
            raise ModelUnavailable(
                f"cannot reach the model server at {self.base_url} ({exc}); start it, or check --base-url"
            ) from exc
        except openai.APIStatusError as exc:
            raise ModelUnavailable(
                f"the model server at {self.base_url} refused the request: HTTP {exc.status_code} {exc.message}"
            ) from exc
        if not resp.choices:
            raise ModelUnavailable(f"the model server at {self.base_url} returned no choices")
        choice = resp.choices[0]
        msg = choice.message
        calls = [
            ToolCall(id=c.id or f"call_{i}", name=c.function.name or "", arguments=c.function.arguments or "")
            for i, c in enumerate(msg.tool_calls or [])
            if getattr(c, "function", None) is not None
        ]
        usage = Usage()
        if resp.usage is not None:
            details = getattr(resp.usage, "prompt_tokens_details", None)
            usage = Usage(
                prompt_tokens=resp.usage.prompt_tokens or 0,
                cached_prompt_tokens=(getattr(details, "cached_tokens", None) or 0) if details else 0,
                completion_tokens=resp.usage.completion_tokens or 0,
            )
        return PolicyResponse(
            message=Message(role="assistant", content=msg.content, tool_calls=calls),
            usage=usage,
            latency_s=time.perf_counter() - start,
            model=resp.model or self.model,
            finish_reason=choice.finish_reason,
        )
