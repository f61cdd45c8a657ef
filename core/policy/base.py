"""The policy interface: given the history and the tool schemas, produce the next assistant turn."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from core.state import Message, Usage


class PolicyResponse(BaseModel):
    """One model call's result.

    Attributes:
        message: the assistant message, exactly as the model produced it (tool-call arguments
            are kept as raw JSON text, even when malformed; the loop validates them).
        usage: tokens of this call (prompt, cached prompt where reported, completion).
        latency_s: wall-clock seconds the call took.
        model: the model name the backend reports.
        finish_reason: the server's finish reason (``stop``, ``length``, ``tool_calls``), if any.
        cached_reported: True when the server itself reported the cached prompt tokens; False
            when ``usage.cached_prompt_tokens`` is 0 or Horizon's estimate.
        prompt_token_ids: the prompt's token ids, when the server returns them (vLLM with
            ``return_token_ids``); used for an exact cached-prefix count, and stored.
        completion_token_ids: the sampled token ids, as the engine generated them (vLLM's
            ``choices[0].token_ids``); stored for token-level RL export.
        completion_logprobs: the sampled tokens' log probabilities (natural log), from
            ``choices[0].logprobs.content[i].logprob``; stored.
    """

    message: Message
    usage: Usage = Usage()
    latency_s: float = 0.0
    model: str = ""
    finish_reason: str | None = None
    cached_reported: bool = False
    prompt_token_ids: list[int] | None = None
    completion_token_ids: list[int] | None = None
    completion_logprobs: list[float] | None = None


@runtime_checkable
class Policy(Protocol):
    """Anything that can play the assistant: a model server, an embedded model, a script."""

    name: str

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """Return the next assistant turn.

        Args:
            messages: the history in chat-completions form (``Message.to_openai()``).
            tools: OpenAI function schemas (``Tool.schema()``), in a fixed order.

        Raises:
            ModelUnavailable: the model cannot be reached or loaded; the run can be resumed later.
        """
        ...
