"""Typed episode data: messages, tool calls, token usage, limits and the loop's control state.

Messages follow the OpenAI chat-completions format (roles ``system``, ``user``, ``assistant``,
``tool``; assistant ``tool_calls`` with JSON-text ``arguments``), which every supported model
server and the RL exporters read.
"""

from __future__ import annotations

from enum import Enum
from typing import Any, Literal

from pydantic import BaseModel, Field

from core import defaults


class ToolCall(BaseModel):
    """One tool call the model asked for.

    Attributes:
        id: the call id the server gave (or one Horizon made), echoed in the ``tool`` message.
        name: the tool's name as the model wrote it (may name no tool: that is an error observation).
        arguments: the arguments as JSON text, exactly as the model produced them.
    """

    id: str
    name: str
    arguments: str = "{}"

    def to_openai(self) -> dict[str, Any]:
        """Return the chat-completions form ``{"id", "type": "function", "function": {...}}``."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


class Message(BaseModel):
    """One chat message of the trajectory."""

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[ToolCall] = []
    tool_call_id: str | None = None
    name: str | None = None

    def to_openai(self) -> dict[str, Any]:
        """Return the message as a chat-completions request dict (no empty fields)."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.tool_calls:
            out["tool_calls"] = [c.to_openai() for c in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.name is not None and self.role == "tool":
            out["name"] = self.name
        return out


class Usage(BaseModel):
    """Tokens of one model call (or a sum of calls).

    Attributes:
        prompt_tokens: input tokens, cached ones included.
        cached_prompt_tokens: input tokens served from the engine's prefix cache: what the
            server reports (``usage.prompt_tokens_details.cached_tokens``), else the OpenAI
            policy's estimate from the prefix shared with the run's previous call
            (``core.policy.prefix.estimate_cached_tokens``); 0 for the embedded model and scripts.
        completion_tokens: output tokens.
    """

    prompt_tokens: int = 0
    cached_prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            cached_prompt_tokens=self.cached_prompt_tokens + other.cached_prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
        )


class Pricing(BaseModel):
    """Price per million tokens, in the user's currency (default 0: a local model costs nothing).

    ``Settings`` holds the configured table (default cached 1.3, uncached 13.0, output 68.0) and
    gives it to model-server runs only (``Settings.pricing_for``).
    """

    input_per_mtok: float = 0.0
    cached_input_per_mtok: float = 0.0
    output_per_mtok: float = 0.0

    def cost(self, usage: Usage) -> float:
        """Cost of ``usage``: uncached input, cached input and output each at their own price."""
        uncached = usage.prompt_tokens - usage.cached_prompt_tokens
        return (
            uncached * self.input_per_mtok
            + usage.cached_prompt_tokens * self.cached_input_per_mtok
            + usage.completion_tokens * self.output_per_mtok
        ) / 1e6


class Limits(BaseModel):
    """Budgets of one episode; reaching any ends it with the matching ``ExitStatus``."""

    max_steps: int = Field(defaults.MAX_STEPS, ge=1, description="model calls (steps) per episode")
    max_tokens: int = Field(defaults.MAX_TOKENS, ge=1, description="prompt plus completion tokens over all calls")
    max_wall_s: float = Field(defaults.MAX_WALL_S, gt=0, description="active wall-clock seconds (time while resumed counts, downtime not)")
    max_cost: float = Field(defaults.MAX_COST, ge=0, description="spend in the pricing's currency")
    max_format_errors: int = Field(defaults.MAX_FORMAT_ERRORS, ge=1, description="consecutive malformed model outputs before giving up")
    compact_at_tokens: int = Field(
        defaults.COMPACT_AT_TOKENS, ge=0, description="estimated prompt tokens at which old turns are compacted into one summary (0: never)"
    )


class ExitStatus(str, Enum):
    """Why an episode ended. Every run ends with exactly one of these."""

    SUBMITTED = "submitted"  # the model called finish
    STEP_LIMIT = "step_limit"
    TOKEN_LIMIT = "token_limit"
    TIME_LIMIT = "time_limit"
    COST_LIMIT = "cost_limit"
    FORMAT_ERRORS = "format_errors"  # too many malformed outputs in a row
    STUCK = "stuck"  # the same actions over and over (core.stuck)
    MODEL_ERROR = "model_error"  # the model server died or refused; resumable
    INTERRUPTED = "interrupted"  # Ctrl-C; resumable
    CRASHED = "crashed"  # a bug in Horizon or a plugin; the message says where


class EpisodeState(BaseModel):
    """The loop's control state, checkpointed after every node.

    The message history is not here: it lives, append-only, in the run store, so a checkpoint
    stays a few hundred bytes however long the episode runs.

    Attributes:
        step: model calls completed so far.
        n_messages: messages of the history the loop has accounted for.
        usage: tokens summed over all model calls.
        cost: spend so far, in the pricing's currency.
        active_s: wall-clock seconds spent running (summed across resumes).
        format_errors: consecutive malformed model outputs.
        pending: tool calls of the last assistant message not yet executed.
        done: set when the episode must stop; ``exit_status`` says why.
        verified: set once the plugin's reward has judged the episode.
        reward: the reward in [0, 1]; None before that, or when the reward was not applicable.
        correct: whether the reward counts the task as solved (None likewise).
    """

    step: int = 0
    n_messages: int = 0
    usage: Usage = Usage()
    cost: float = 0.0
    active_s: float = 0.0
    format_errors: int = 0
    pending: list[ToolCall] = []
    done: bool = False
    exit_status: ExitStatus | None = None
    exit_detail: str = ""
    verified: bool = False
    reward: float | None = None
    correct: bool | None = None
