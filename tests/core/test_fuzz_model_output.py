"""Fuzzing core's tools and loop with malformed model output: 10,000 seeded replies through every tool, and the real loop.

The replies come from ``tests/core/fuzz_replies.py`` (invalid JSON arguments, wrong types,
unknown tools, 1 MB strings, unicode oddities, missing, duplicate and empty call ids, replies
without calls, many calls in one turn, ``None`` content, nested garbage), written for the tools
of the ``notes`` test plugin (``tests/notes_plugin``): what is tested is core's ``Tool`` and
loop, not a domain plugin. The Python example serves as the folder of text files.

1. Every call goes through ``Tool.parse`` of every notes tool, and ``Tool.__call__`` where that
   is cheap and has no side effects; nothing but ``ToolError`` may come out (core's ``Tool`` and
   ``ToolContext.resolve`` turn bad JSON and unusable paths into tool errors).
2. Episodes of a few hundred of those replies run through the real loop (``core.runner.Run``,
   the notes plugin, sandbox, run store) and must finish normally, with one observation per call
   (or one nudge per reply without calls), the malformed count the replies call for, and a
   store that reads back what was sent.

The same 10,000 replies for the coding tools, whose subject is the coding plugin's tools (with
the exceptions they still let out), are in ``tests/plugins/coding/test_coding_fuzz.py``.
"""

from __future__ import annotations

import json
import random
from contextlib import closing
from pathlib import Path

import pytest

from core.compaction import compacted_steps, is_compaction
from core.plugin import Task
from core.policy.base import PolicyResponse
from core.runner import Run, open_store
from core.sandbox import open_sandbox
from core.state import ExitStatus, Limits, Message, Pricing, ToolCall
from core.text import utf8_safe
from core.tools import ToolContext
from tests.core.fuzz_replies import Expect, Reply, Vocabulary, parse_malformed, replies, through_every_tool, weird
from tests.notes_plugin.horizon_notes import NotesPlugin

SEED = 20261201
N_REPLIES = 10_000


def valid_args(rng: random.Random, name: str) -> dict:
    """Arguments that validate for a notes tool (view_file's also run quickly) on the Python example's files."""
    if name == "view_file":
        return {"path": rng.choice(["users/service.py", "users/models.py", "README.md", "missing.py", "tests"]),
                "start_line": rng.randint(1, 90), "end_line": rng.choice([None, rng.randint(1, 120)])}
    if name == "write_file":
        # UTF-8 text only: a file of other bytes breaks the final patch
        return {"path": f"fuzz/note_{rng.randint(0, 10**9)}.txt", "text": utf8_safe(weird(rng))}
    if name == "edit_file":
        return {"path": "README.md", "old_text": "# python-user-service", "new_text": "# python-user-service " + utf8_safe(weird(rng))}
    if name == "shell":
        return {"command": rng.choice(["true", "echo fuzz", "exit 3"])}
    return {"summary": "done"}


NOTES = Vocabulary(
    tools={t.name: t for t in NotesPlugin().tools()},
    read_only=("view_file",),
    side_effects=("write_file", "edit_file", "shell", "finish"),
    valid_args=valid_args,
    field_names=("path", "text", "old_text", "new_text", "start_line", "summary", "command"),
    text_fields={"view_file": "path"},
    second_text_fields={},
    huge_targets=("view_file", "view_file", "write_file", "edit_file", "shell", "nope"),
    huge_keys={"view_file": ("path", "end_line"), "write_file": "text", "edit_file": "old_text", "shell": "timeout_s", "nope": "x"},
    real=("shell", "write_file", "edit_file"),
)


# -- 1. every call through every tool's parse and call -----------------------------------------


def test_ten_thousand_replies_through_every_notes_tool(python_repo, tmp_path):
    generated = replies(NOTES, SEED, N_REPLIES)
    assert len(generated) == N_REPLIES
    calls = [c for r in generated for c in r.message.tool_calls]
    assert len(calls) > N_REPLIES  # no-call replies, single calls and many-call turns
    (tmp_path / "scratch").mkdir()
    ctx = ToolContext(workspace=python_repo, sandbox=open_sandbox(python_repo, tmp_path / "scratch"), scratch=tmp_path / "scratch")
    parsed_ok, ran, escapes = through_every_tool(list(NOTES.tools.values()), calls, ctx, {"view_file": 400})
    assert parsed_ok > 1000 and ran["view_file"] > 10
    assert escapes == {}  # only ToolError came out
    assert not (python_repo / "fuzz").exists()  # nothing with side effects ran


# -- 2. replies through the real loop ----------------------------------------------------------


class FuzzPolicy:
    """Plays the generated replies in order (by the number of assistant turns so far)."""

    name = "fuzz"

    def __init__(self, replies: list[Reply]) -> None:
        self.replies = replies
        self.checked = 0

    def complete(self, messages, tools) -> PolicyResponse:
        turn = sum(1 for m in messages if m["role"] == "assistant")
        if len(messages) > 2 and messages[2]["role"] == "user":  # huge replies get the history compacted
            turn += compacted_steps(messages[2]["content"])
        if len(messages) < self.checked:  # compacted: a new wire
            self.checked = 0
        # what the loop hands over must be sendable to a real server: JSON, encodable as UTF-8
        json.dumps(messages[self.checked:], ensure_ascii=False).encode("utf-8")
        self.checked = len(messages)
        return PolicyResponse(message=self.replies[turn].message, model="fuzz", finish_reason="tool_calls")


def run_episode(plugin: str, repo: Path, plays: list[Reply], finish: bool):
    limits = Limits(max_steps=len(plays), max_format_errors=len(plays) + 1, max_wall_s=600)
    started = Run.start(Task(plugin=plugin, instruction="fuzz the loop", repo=repo), FuzzPolicy(plays),
                        policy_config={"kind": "fuzz"}, limits=limits, pricing=Pricing())
    try:
        result = started.execute()
    finally:
        started.close()
    crash = (result.patch_path.parent / "crash.txt")
    assert result.status == "finished", f"{result.status}: {result.exit_detail}\n{crash.read_text() if crash.exists() else ''}"
    assert result.exit_status == (ExitStatus.SUBMITTED if finish else ExitStatus.STEP_LIMIT), result.exit_detail
    assert result.steps == len(plays)
    return result


def check_store(result, plays: list[Reply]) -> None:
    with closing(open_store(result.run_id)) as store:
        history = store.messages()
        steps = store.steps()
        row = store.run()
        tool_rows = store.con.execute("SELECT tool_call_id, data FROM tool_calls ORDER BY seq").fetchall()
        assert store.con.execute("SELECT count(*) FROM messages").fetchone()[0] == len(history)
    assert row["status"] == "finished" and row["steps"] == len(plays)
    assert [s["step"] for s in steps] == list(range(1, len(plays) + 1))
    body = [m for m in history[2:] if not is_compaction(m)]  # after the system prompt and the task
    position, malformed_turns = 0, []
    all_ids: list[str] = []
    data_by_position = iter(tool_rows)
    for play in plays:
        assistant = body[position]
        assert assistant.role == "assistant"
        sent = play.message
        assert assistant.content == utf8_safe(sent.content)  # NUL, RTL marks and emoji kept; lone surrogates replaced
        assert [(c.name, c.arguments) for c in assistant.tool_calls] == [(utf8_safe(c.name), utf8_safe(c.arguments)) for c in sent.tool_calls]
        position += 1
        if not sent.tool_calls:
            nudge = body[position]
            assert nudge.role == "user" and "no tool call" in nudge.content
            position += 1
            malformed_turns.append(True)
            continue
        turn_bad = False
        for call, expect in zip(assistant.tool_calls, play.expects):
            observation = body[position]
            assert observation.role == "tool" and observation.tool_call_id == call.id and observation.content
            cid, data = next(data_by_position)
            assert cid == call.id
            bad = json.loads(data)["malformed"]
            # ``call`` is what the loop saw: lone surrogates already replaced, so parse that
            want = expect.malformed if expect.malformed is not None else parse_malformed(NOTES, call.name, call.arguments)
            assert bad == want, (call.name, call.arguments[:200], observation.content[:300])
            turn_bad |= bad
            all_ids.append(call.id)
            position += 1
        malformed_turns.append(turn_bad)
    assert position == len(body)  # every message accounted for: nothing missing, nothing extra
    assert len(set(all_ids)) == len(all_ids) and all(all_ids)  # each observation answers exactly one call
    trailing = 0
    for bad in reversed(malformed_turns):
        if not bad:
            break
        trailing += 1
    assert result.state.format_errors == trailing


@pytest.mark.parametrize("episode", [0, 1])
def test_fuzzed_episodes_through_the_loop(python_repo, notes_plugin, episode):
    """Two episodes of 200 fuzzed replies each, on the Python example's files; the second ends with a valid finish.

    A few calls really run (shell, write_file making a file, edit_file changing the README), so
    that valid calls among the garbage are seen to work too.
    """
    real = {"shell": 2, "write_file": 2, "edit_file": 1}
    plays = replies(NOTES, SEED + 1 + episode, 200, real=real)
    finish = episode == 1
    if finish:
        plays[-1] = Reply(Message(role="assistant", content=None, tool_calls=[ToolCall(id="last", name="finish", arguments='{"summary": "fuzzed"}')]),
                          [Expect(False)])
    n_calls = sum(len(p.message.tool_calls) for p in plays)
    result = run_episode(notes_plugin, python_repo, plays, finish)
    check_store(result, plays)
    assert n_calls > len(plays)
