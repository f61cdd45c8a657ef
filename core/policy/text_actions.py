"""Tool calls as plain text, for model servers without native tool calling.

Some servers (an old llama.cpp build, a completion-only endpoint, a model without a tool-call
parser configured) take no ``tools`` parameter and return no ``tool_calls``. For those, the tools
are described in the system message and the model writes each call as a block, in the Hermes
format that most open chat models were trained on (Qwen, Hermes, many Llama fine-tunes)::

    <tool_call>
    {"name": "view_file", "arguments": {"path": "users/service.py"}}
    </tool_call>

Results go back as ``user`` messages wrapping ``<tool_response>`` blocks (servers without tool
support often refuse the ``tool`` role). The history keeps its usual form; only what is sent is
rewritten, deterministically, so the prompt prefix stays byte-identical from call to call, and the
assistant's text goes back exactly as the model wrote it.

This module owns the JSON shape of a tool call written as text (``read_call``, ``write_call``):
the embedded model (``core/policy/embedded.py``) writes the same object, bare, under a grammar.
"""

from __future__ import annotations

import json
import re
from typing import Any

from core.state import ToolCall

BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)

INSTRUCTIONS = """\

# Tools

You act only by calling tools. To call one, write a block like this (one block per call; JSON
inside, with the tool's name and its arguments):

<tool_call>
{"name": "TOOL_NAME", "arguments": {"ARGUMENT": "VALUE"}}
</tool_call>

Each result comes back in a <tool_response> block. The tools, as JSON Schema:
"""


def tools_prompt(tools: list[dict[str, Any]]) -> str:
    """The text appended to the system message: how to call tools, and each tool's schema.

    Args:
        tools: OpenAI function schemas (``Tool.schema()``), in their fixed order.

    Returns:
        The same text for the same tools (keys sorted), so the system message never changes.
    """
    lines = [json.dumps(t.get("function", t), sort_keys=True, ensure_ascii=False) for t in tools]
    return INSTRUCTIONS + "\n".join(lines)


def to_text_wire(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rewrite a chat-completions history for a server without tool calling.

    Args:
        messages: the history as ``Message.to_openai()`` dicts (system first).
        tools: the tool schemas to describe in the system message.

    Returns:
        New message dicts: the tools appended to the system message, assistant turns as their
        text only (which holds the model's own ``<tool_call>`` blocks), and each run of tool
        results folded into one ``user`` message of ``<tool_response>`` blocks.
    """
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message["role"]
        if role == "system":
            out.append({"role": "system", "content": (message.get("content") or "") + tools_prompt(tools)})
        elif role == "assistant":
            out.append({"role": "assistant", "content": message.get("content") or ""})
        elif role == "tool":
            block = f"<tool_response>\n{json.dumps({'name': message.get('name'), 'content': message.get('content') or ''}, ensure_ascii=False)}\n</tool_response>"
            if out and out[-1]["role"] == "user" and out[-1].get("_tool_results"):
                out[-1]["content"] += "\n" + block
            else:
                out.append({"role": "user", "content": block, "_tool_results": True})
            if message.get("images"):  # a render: the folded message carries it on (core.policy.images)
                out[-1].setdefault("images", []).extend(message["images"])
        else:
            out.append({"role": role, "content": message.get("content") or ""})
            if message.get("images"):
                out[-1]["images"] = list(message["images"])
    for message in out:
        message.pop("_tool_results", None)
    return out


def parse_tool_calls(content: str | None, step_key: str) -> list[ToolCall]:
    """The ``<tool_call>`` blocks of a reply, in order, as tool calls.

    Args:
        content: the assistant's text.
        step_key: makes the ids unique in the run (e.g. the number of assistant turns so far).

    Returns:
        One ``ToolCall`` per block (an unclosed last block counts: a reply cut at the token limit).
        A block that is not ``{"name": ..., "arguments": ...}`` JSON still becomes a call, named
        ``invalid_tool_call`` with the block's text as arguments, so the loop tells the model what
        was wrong instead of the call vanishing.
    """
    calls = []
    for i, match in enumerate(BLOCK.finditer(content or "")):
        text = match.group(1)
        name, arguments = read_call(text) or ("invalid_tool_call", text)
        calls.append(ToolCall(id=f"text_{step_key}_{i}", name=name, arguments=arguments))
    return calls


def read_call(text: str) -> tuple[str, str] | None:
    """One tool call written as JSON, ``{"name": NAME, "arguments": {...}}`` (the shape of a
    ``<tool_call>`` block and of the embedded model's constrained reply).

    Returns:
        ``(name, arguments as JSON text)`` (missing arguments are ``{}``; arguments given as a
        string are kept as that string, for the tool's parser to judge), or None when ``text`` is
        not such an object (not JSON, cut off, nested too deep, no string ``name``).
    """
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str):
        return None
    args = parsed.get("arguments", {})
    return parsed["name"], args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def write_call(name: str, arguments: str) -> str:
    """The JSON text of one tool call, as ``read_call`` reads it: ``arguments`` (JSON text) as an
    object when it parses, else as the string the model wrote."""
    try:
        args: Any = json.loads(arguments)
    except (ValueError, RecursionError):
        args = arguments
    return json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
