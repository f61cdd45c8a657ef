"""A long episode replayed through the real OpenAI policy against a recording fake server.

Shared by ``tests/core/test_prefix_stability.py`` (on the test plugin, ``notes``),
``tests/plugins/coding/episode.py`` and ``bench/prefix_cache.py`` (a coding episode). The server
(``FaultServer``, real HTTP on loopback) answers request N (N = assistant messages in it) with
the N-th scripted turn: real tool calls on a folder, including an observation long enough to be
cut, a malformed call and a text reply without a tool call, ``finish`` last. The replies vary in
shape the way real servers' do (text next to a tool call, server-made call ids, arguments without
spaces, non-ASCII text), so a test can check that each assistant turn is sent back exactly as the
server returned it.

Every reply's ``usage.prompt_tokens`` is the request's serialised size divided by 4 (a stated
approximation: no tokenizer runs in the server), and no ``cached_tokens`` is reported, so the
policy's own prefix estimate is what gets recorded.
"""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any

from core.plugin import Task
from core.policy import OpenAIServerPolicy
from core.policy.retry import RetryConfig
from core.runner import Run, RunResult, open_store
from core.state import Limits, Pricing
from tests.core.policy.fault_server import FaultServer

#: The test plugin's folder (``tests/notes_plugin``): on ``sys.path``, ``notes`` is found as any plugin.
NOTES_PLUGIN = Path(__file__).resolve().parents[2] / "notes_plugin"
CHAPTERS = 6

# Read-only actions an agent takes while it explores the notes folder; cycled to fill a long episode.
EXPLORE: list[dict[str, Any]] = [
    {"tool": "view_file", "arguments": {"path": "log.md"}},
    {"tool": "view_file", "arguments": {"path": "chapters/ch1.md"}},
    {"tool": "shell", "arguments": {"command": "grep -rn todo ."}},
    {"tool": "view_file", "arguments": {"path": "chapters/ch2.md", "start_line": 1, "end_line": 10}},
    {"tool": "shell", "arguments": {"command": "wc -w chapters/*.md"}},
    {"tool": "view_file", "arguments": {"path": "ANSWER.txt"}},
    {"tool": "view_file", "arguments": {"path": "chapters/ch3.md"}},
    {"tool": "shell", "arguments": {"command": "head -n 3 chapters/ch4.md"}},
    {"tool": "view_file", "arguments": {"path": "chapters/ch5.md", "start_line": 20}},
    {"tool": "shell", "arguments": {"command": "grep -c Étape chapters/ch6.md"}},
]


def make_notes_folder(base: Path) -> Path:
    """A ``notes`` folder under ``base``: ``log.md``, ``ANSWER.txt`` (``todo``) and ``CHAPTERS``
    chapter files of 40 lines each (together over 8,000 characters, so ``cat`` of them is cut)."""
    folder = base / "notes"
    (folder / "chapters").mkdir(parents=True)
    (folder / "log.md").write_text("# Log\n<!-- end -->\n")
    (folder / "ANSWER.txt").write_text("todo\n")
    for c in range(1, CHAPTERS + 1):
        (folder / "chapters" / f"ch{c}.md").write_text(
            f"# Chapter {c}\n" + "".join(f"Étape {c}.{n:02d}: a line of notes about the work, kept for the record.\n" for n in range(1, 40)))
    return folder


def spread(explore: list[dict[str, Any]], special: list[dict[str, Any]], ending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The turns of an episode: ``special`` spread evenly through ``explore``, then ``ending``."""
    special = list(special)
    turns: list[dict[str, Any]] = []
    gap = max(1, len(explore) // (len(special) + 1))
    for i, turn in enumerate(explore):
        turns.append(turn)
        if (i + 1) % gap == 0 and special:
            turns.append(special.pop(0))
    return turns + special + ending


def notes_turns(steps: int) -> list[dict[str, Any]]:
    """``steps`` scripted turns (at least 8) of a ``notes`` episode on ``make_notes_folder``'s folder:
    exploration, odd turns, the answer written and checked, ``finish`` last.

    Each turn is ``{"tool": name, "arguments": {...}}``, or ``{"content": text}`` for a reply
    without a tool call, or ``{"tool": name, "raw_arguments": text}`` for malformed arguments.

    Raises:
        ValueError: ``steps`` is under 8.
    """
    if steps < 8:
        raise ValueError(f"a notes episode needs at least 8 steps, not {steps}")
    special = [
        {"tool": "shell", "arguments": {"command": "ls -la && ls -la chapters"}},
        {"tool": "shell", "arguments": {"command": "cat chapters/*.md"}},  # over 8,000 characters: cut, full text saved
        {"tool": "view_fil", "arguments": {"path": "log.md"}},  # unknown tool: an error observation
        {"content": "Let me think about what the answer should say."},  # no tool call: a nudge follows
        {"tool": "edit_file", "raw_arguments": '{"path": "ANSWER.txt", "old_text": '},  # cut-off JSON
    ]
    ending = [
        {"tool": "edit_file", "arguments": {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}},
        {"tool": "shell", "arguments": {"command": "cat ANSWER.txt"}},
        {"tool": "finish", "arguments": {"summary": "ANSWER.txt says done"}},
    ]
    middle = steps - len(special) - len(ending)
    return spread([EXPLORE[i % len(EXPLORE)] for i in range(middle)], special, ending)


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


def replay(task: Task, turns: list[dict[str, Any]], *, owned_by: str | None = "vllm") -> tuple[RunResult, EpisodeServer, list[dict[str, Any]]]:
    """Run ``task`` for ``len(turns)`` model calls through the OpenAI policy against an ``EpisodeServer``
    replaying ``turns`` (the last one ``finish``).

    Args:
        task: the episode's task (its plugin must be installed; its repository is copied by the run).
        turns: the scripted turns (see ``notes_turns``).
        owned_by: what the server's ``/v1/models`` says owns the model (``vllm``: cache salt sent).

    Returns:
        The run's result, the server (requests, raw bodies, replies) and the stored model calls
        (``RunStore.steps()``).
    """
    steps = len(turns)
    with EpisodeServer(turns, owned_by=owned_by) as server:
        policy = OpenAIServerPolicy(server.url, "episode-model", timeout_s=30, retry=RetryConfig(max_attempts=2, base_delay_s=0.01))
        started = Run.start(
            task, policy, policy_config={"kind": "openai", "base_url": server.url, "model": "episode-model"},
            limits=Limits(max_steps=steps, max_format_errors=steps), pricing=Pricing(),
        )
        try:
            result = started.execute()
        finally:
            started.close()
    with closing(open_store(result.run_id)) as store:
        calls = store.steps()
    return result, server, calls


def run_episode(workdir: Path, steps: int, *, owned_by: str | None = "vllm") -> tuple[RunResult, EpisodeServer, list[dict[str, Any]]]:
    """Run a ``steps``-step ``notes`` episode on a fresh folder under ``workdir`` (``replay``'s result).
    The test plugin must be on ``sys.path`` (``NOTES_PLUGIN``; the ``notes_plugin`` fixture puts it there)."""
    task = Task(plugin="notes", instruction="write done in ANSWER.txt", repo=make_notes_folder(workdir))
    return replay(task, notes_turns(steps), owned_by=owned_by)
