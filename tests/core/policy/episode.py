"""A long coding episode replayed through the real OpenAI policy against a recording fake server.

Shared by ``tests/core/test_prefix_stability.py`` and ``bench/prefix_cache.py``. The server
(``FaultServer``, real HTTP on loopback) answers request N (N = assistant messages in it) with
the N-th turn of ``coding_turns(steps)``: real tool calls on ``examples/python-user-service``
(search, symbols, views, shell commands, an observation long enough to be cut, a malformed call, a text reply without a tool call, the
fix, two test runs, ``finish`` last). The replies vary in shape the way real servers' do (text
next to a tool call, server-made call ids, arguments without spaces, non-ASCII text), so a
test can check that each assistant turn is sent back exactly as the server returned it.

Every reply's ``usage.prompt_tokens`` is the request's serialised size divided by 4 (a stated
approximation: no tokenizer runs in the server), and no ``cached_tokens`` is reported, so the
policy's own prefix estimate is what gets recorded.
"""

from __future__ import annotations

import json
import shutil
from contextlib import closing
from pathlib import Path
from typing import Any

from core.plugin import Task
from core.policy import OpenAIServerPolicy
from core.policy.retry import RetryConfig
from core.runner import Run, RunResult, open_store
from core.state import Limits, Pricing
from tests.core.policy.fault_server import FaultServer

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "python-user-service"
OLD = "        nickname = user.nickname.strip()"
NEW = '        nickname = (user.nickname or "").strip()'

# Read-only actions an agent takes while it explores; cycled to fill a long episode.
EXPLORE: list[dict[str, Any]] = [
    {"tool": "search_code", "arguments": {"pattern": "nickname", "path": "users"}},
    {"tool": "view_file", "arguments": {"path": "users/service.py"}},
    {"tool": "find_symbol", "arguments": {"name": "display_name", "kind": "definition"}},
    {"tool": "view_file", "arguments": {"path": "users/models.py"}},
    {"tool": "view_file", "arguments": {"path": "tests/test_service.py", "start_line": 1, "end_line": 40}},
    {"tool": "search_code", "arguments": {"pattern": "def ", "path": "users/repository.py"}},
    {"tool": "view_file", "arguments": {"path": "users/repository.py"}},
    {"tool": "find_symbol", "arguments": {"name": "nickname", "kind": "reference"}},
    {"tool": "view_file", "arguments": {"path": "users/validation.py"}},
    {"tool": "view_file", "arguments": {"path": "tests/test_repository.py"}},
]


def coding_turns(steps: int) -> list[dict[str, Any]]:
    """``steps`` scripted turns (at least 8): exploration, odd turns, the fix, tests, ``finish`` last.

    Each turn is ``{"tool": name, "arguments": {...}}``, or ``{"content": text}`` for a reply
    without a tool call, or ``{"tool": name, "raw_arguments": text}`` for malformed arguments.
    """
    if steps < 8:
        raise ValueError(f"a coding episode needs at least 8 steps, not {steps}")
    special = [
        {"tool": "run_tests", "arguments": {}},
        {"tool": "shell", "arguments": {"command": "ls -la users && git status --short"}},
        {"tool": "shell", "arguments": {"command": "cat users/*.py tests/*.py"}},  # over 8,000 characters: cut, full text saved
        {"tool": "view_fil", "arguments": {"path": "users/service.py"}},  # unknown tool: an error observation
        {"content": "Let me think about where nickname can be None."},  # no tool call: a nudge follows
        {"tool": "edit_file", "raw_arguments": '{"path": "users/service.py", "old_text": '},  # cut-off JSON
    ]
    ending = [
        {"tool": "edit_file", "arguments": {"path": "users/service.py", "old_text": OLD, "new_text": NEW}},
        {"tool": "run_tests", "arguments": {}},
        {"tool": "finish", "arguments": {"summary": "nickname may be None: fall back to an empty string"}},
    ]
    middle = steps - len(special) - len(ending)
    explore = [EXPLORE[i % len(EXPLORE)] for i in range(middle)]
    # spread the special turns through the exploration
    turns: list[dict[str, Any]] = []
    gap = max(1, middle // (len(special) + 1))
    for i, turn in enumerate(explore):
        turns.append(turn)
        if (i + 1) % gap == 0 and special:
            turns.append(special.pop(0))
    return turns + special + ending


def reply_shape(turn: dict[str, Any], index: int) -> dict[str, Any]:
    """The server's assistant message for ``turn`` (step ``index``), in one of several real shapes."""
    if "tool" not in turn:
        return {"role": "assistant", "content": turn["content"]}
    if "raw_arguments" in turn:
        arguments = turn["raw_arguments"]
    elif index % 3 == 1:
        arguments = json.dumps(turn["arguments"], separators=(",", ":"))  # no spaces, as some servers send
    else:
        arguments = json.dumps(turn["arguments"], ensure_ascii=False)
    content = None if index % 4 else f"Étape {index}: je regarde {turn['tool']} ✓"  # text next to the call
    return {
        "role": "assistant", "content": content,
        "tool_calls": [{"id": f"chatcmpl-tool-{index:04d}{'ab' * (index % 3)}", "type": "function",
                        "function": {"name": turn["tool"], "arguments": arguments}}],
    }


class EpisodeServer(FaultServer):
    """A ``FaultServer`` that replays ``turns`` and keeps every request's raw bytes and parsed body.

    Attributes:
        replies: the assistant message sent for each request, in order.
    """

    def __init__(self, turns: list[dict[str, Any]], *, owned_by: str | None = "vllm", report_cached: bool = False) -> None:
        super().__init__(responder=self._reply, owned_by=owned_by)
        self.turns = turns
        self.report_cached = report_cached
        self.replies: list[dict[str, Any]] = []

    def _reply(self, body: dict[str, Any]) -> dict[str, Any]:
        index = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        message = reply_shape(self.turns[index], index)
        self.replies.append(message)
        prompt = len(json.dumps(body.get("messages", [])) + json.dumps(body.get("tools", []))) // 4
        usage: dict[str, Any] = {"prompt_tokens": prompt, "completion_tokens": 20 + index, "total_tokens": prompt + 20 + index}
        return {
            "id": f"chatcmpl-{index}", "object": "chat.completion", "created": 0, "model": "episode-model",
            "choices": [{"index": 0, "finish_reason": "tool_calls" if "tool_calls" in message else "stop", "message": message}],
            "usage": usage,
        }


def run_episode(workdir: Path, steps: int, *, owned_by: str | None = "vllm") -> tuple[RunResult, EpisodeServer, list[dict[str, Any]]]:
    """Run a ``steps``-step coding episode on a fresh copy of the example through the OpenAI policy.

    Args:
        workdir: a scratch folder (the repository copy goes there).
        steps: model calls; the last one is ``finish``.
        owned_by: what the server's ``/v1/models`` says owns the model (``vllm``: cache salt sent).

    Returns:
        The run's result, the server (requests, raw bodies, replies) and the stored model calls
        (``RunStore.steps()``).
    """
    repo = Path(shutil.copytree(EXAMPLE, workdir / f"python-user-service-{steps}"))
    turns = coding_turns(steps)
    with EpisodeServer(turns, owned_by=owned_by) as server:
        policy = OpenAIServerPolicy(server.url, "episode-model", timeout_s=30, retry=RetryConfig(max_attempts=2, base_delay_s=0.01))
        started = Run.start(
            Task(plugin="coding", instruction="fix NPE in user module", repo=repo), policy,
            policy_config={"kind": "openai", "base_url": server.url, "model": "episode-model"},
            limits=Limits(max_steps=steps, max_format_errors=steps), pricing=Pricing(),
        )
        try:
            result = started.execute()
        finally:
            started.close()
    with closing(open_store(result.run_id)) as store:
        calls = store.steps()
    return result, server, calls
