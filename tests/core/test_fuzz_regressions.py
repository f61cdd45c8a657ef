"""Regression tests for what the model-output fuzzing (test_fuzz_model_output.py) found.

Fixed in ``core/loop.py`` (one episode below covers them all):

- lone surrogates in a reply (content, tool name, arguments, call id) crashed the run store
  (DuckDB refuses them in VARCHAR and in JSON escapes) and were turned into ``?`` by the
  checkpoint serializer; the loop now makes each turn and each tool result UTF-8-safe;
- a call id with ``/``, ``..``, NUL or 1,000 characters named the file of a long observation:
  a crash, or a file written outside ``.horizon/observations``; the file is now named by a hash;
- a model-given id equal to the id the loop itself would give a later id-less call produced
  two observations with one id; the loop now picks an id not yet used;
- ``Tool.parse`` let out ``ValueError`` (an integer of over 4,300 digits) and ``RecursionError``
  (arrays nested 20,000 deep) and a tool ``OSError``/``ValueError`` (a NUL byte or a 300-byte
  name in a path): the run crashed, and crashed again on every resume; they are observations now.

The episode runs the ``notes`` test plugin (``tests/notes_plugin``) on the ``notes_folder``
fixture: what is tested is core's loop and ``Tool.parse``. The coding tools' own rejections of
bad paths and commands moved to ``tests/plugins/coding/test_coding_fuzz.py``.
"""

from __future__ import annotations

import json
from contextlib import closing

import pytest

from core import workspace as ws
from core.compaction import compacted_steps
from core.plugin import Task
from core.policy.base import PolicyResponse
from core.runner import Run, open_store
from core.state import ExitStatus, Limits, Message, Pricing, ToolCall
from tests.notes_plugin.horizon_notes import NotesPlugin

TOOLS = {t.name: t for t in NotesPlugin().tools()}
VIEW = json.dumps({"path": "log.md", "end_line": 2})


def turn(*calls: tuple[str, str, str], content: str | None = None) -> Message:
    return Message(role="assistant", content=content, tool_calls=[ToolCall(id=i, name=n, arguments=a) for i, n, a in calls])


NASTY = [
    # 1: lone surrogates everywhere, with NUL, RTL mark and emoji that must survive as they are
    turn(("\ud800", "view\udfffile", '{"path": "\ud800"}'), content="text \udcff\x00 \u202e 😀"),
    # 2-3: paths the OS refuses
    turn(("a/b/../../c", "view_file", json.dumps({"path": "a\x00b"}))),
    turn(("\x00", "view_file", json.dumps({"path": "p" * 300}))),
    # 4: a 1 MB path: the error echoes it, so the observation is cut and saved under the call id
    turn(("../../escape", "view_file", json.dumps({"path": "y" * (1 << 20)}))),
    # 5-6: JSON that json.loads cannot take
    turn(("big", "view_file", '{"path": ' + "1" * 5000 + "}")),
    turn(("deep", "view_file", "[" * 20000)),
    # 7: an id the loop would give the second call of step 7, then that id-less second call
    turn(("call_7_1_h", "view_file", VIEW), ("", "view_file", VIEW)),
    # 8: a tool output with a lone surrogate (a file name of undecodable bytes)
    turn(("mk", "write_file", json.dumps({"path": "new\udcff.txt", "text": "hello\n"}))),
    turn(("end", "finish", json.dumps({"summary": "done"}))),
]


class Nasty:
    name = "nasty"

    def complete(self, messages, tools):
        step = sum(1 for m in messages if m["role"] == "assistant")
        if len(messages) > 2 and messages[2]["role"] == "user":  # the 1 MB path gets the history compacted
            step += compacted_steps(messages[2]["content"])
        json.dumps(messages, ensure_ascii=False).encode("utf-8")  # what a server gets must encode
        return PolicyResponse(message=NASTY[step], model="nasty")


def test_nasty_replies_become_observations_and_the_store_reads_back(notes_folder, notes_plugin):
    started = Run.start(Task(plugin=notes_plugin, instruction="x", repo=notes_folder), Nasty(), policy_config={"kind": "test"},
                        limits=Limits(max_steps=20), pricing=Pricing())
    try:
        result = started.execute()
    finally:
        started.close()
    run_dir = result.patch_path.parent
    assert not (run_dir / "crash.txt").exists()
    assert (result.status, result.exit_status, result.steps) == ("finished", ExitStatus.SUBMITTED, len(NASTY))
    with closing(open_store(result.run_id)) as store:
        history = store.messages()
        rows = store.con.execute("SELECT tool_call_id, tool, output, is_error, data FROM tool_calls ORDER BY seq").fetchall()
    calls = [c for m in history if m.role == "assistant" for c in m.tool_calls]
    by_id = {cid: (out, err, json.loads(data)) for cid, _, out, err, data in rows}
    assert [r[0] for r in rows] == [c.id for c in calls] and len(set(by_id)) == len(calls) == 10

    first = history[2]
    assert first.content == "text \ufffd\x00 \u202e 😀"
    assert (first.tool_calls[0].id, first.tool_calls[0].name, first.tool_calls[0].arguments) == ("\ufffd", "view\ufffdile", '{"path": "\ufffd"}')
    assert "unknown tool 'view\ufffdile'" in by_id["\ufffd"][0] and by_id["\ufffd"][2]["malformed"]

    out, is_error, data = by_id["a/b/../../c"]
    assert is_error and not data["malformed"] and "embedded null byte" in out
    out, is_error, data = by_id["\x00"]
    assert is_error and not data["malformed"] and "File name too long" in out

    out, is_error, _ = by_id["../../escape"]
    assert len(out) < 8200 and "[long lines were shortened (one call's output is cut at 8,000 characters); the whole output is in .horizon/observations/call-" in out
    saved = list((run_dir / "workspace" / ".horizon" / "observations").iterdir())
    assert len(saved) == 1 and saved[0].name.startswith("call-") and saved[0].stat().st_size > 1 << 20
    assert not (run_dir / "escape.txt").exists() and not (run_dir.parent / "escape.txt").exists()

    for cid in ("big", "deep"):
        out, is_error, data = by_id[cid]
        assert is_error and data["malformed"] and "arguments of view_file could not be read" in out

    step7 = [m for m in history if m.role == "assistant"][6].tool_calls
    assert [c.id for c in step7] == ["call_7_1_h", "call_7_1_h1"]
    assert all(not by_id[c.id][1] for c in step7)

    out, is_error, data = by_id["mk"]
    # a lone surrogate names no file in UTF-8: refused as a path, nothing created
    assert is_error and "is not a usable path" in out and not data["malformed"]
    assert not any("new" in p.name for p in (run_dir / "workspace").iterdir())
    assert result.reward == 0.0  # ANSWER.txt still says todo


# -- bad input that Tool.parse and the workspace must turn into errors, not crashes ----------------------


@pytest.mark.parametrize("arguments", ['{"path": ' + "1" * 5000 + "}", "[" * 20000])
def test_tool_parse_reports_json_beyond_its_limits_as_a_tool_error(arguments):
    from core.errors import ToolError

    with pytest.raises(ToolError):
        TOOLS["view_file"].parse(arguments)


def test_the_final_patch_of_a_file_that_is_not_utf8(tmp_path):
    work = tmp_path / "ws"
    work.mkdir()
    (work / "legacy.txt").write_bytes(b"caf\xe9\n")
    ws.snapshot(work, tmp_path / "baseline.git")
    (work / "legacy.txt").write_bytes(b"caf\xe9 au lait\n")
    patch = ws.diff(work, tmp_path / "baseline.git")
    assert "legacy.txt" in patch
