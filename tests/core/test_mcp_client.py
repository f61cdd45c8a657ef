"""External MCP servers' tools in an episode (``core.mcp.client``), against a real MCP server.

The server is ``mcp_notes_server.py`` (the official SDK's ``MCPServer``), started over stdio
through the episode's bwrap sandbox, or over streamable HTTP. A scripted episode of the test plugin
(``notes``, ``tests/notes_plugin``) calls its tools next to the plugin's own; the run store must hold every call with the
observation the model saw, and the failures (a timeout, the server's own error, arguments that
break its schema, a file outside the sandbox) must be observations, not crashes.
"""

from __future__ import annotations

import json
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from contextlib import closing
from pathlib import Path

import pytest

from core.errors import UserError
from core.export import export_runs
from core.mcp.client import McpToolset, parse_servers
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run
from core.runs import open_store
from core.sandbox import open_sandbox
from core.state import Limits, Pricing

SERVER = Path(__file__).resolve().parent / "mcp_notes_server.py"
BUDGET_NOTE = re.compile(r"\n\n\[\d+ steps? and [\d,]+ tokens left\]$")  # the loop's, after each step
# The stdio server is started from the episode's workspace (the test copies it into the folder the
# run works on): the sandbox hides /tmp, so a checkout there could not start it from tests/.
STDIO = {"name": "notes", "command": [sys.executable, SERVER.name], "timeout_s": 20}


@pytest.fixture
def server_folder(notes_folder):
    """``notes_folder`` with the notes MCP server's script in it: the episode's workspace holds it."""
    shutil.copy(SERVER, notes_folder / SERVER.name)
    return notes_folder


def run_episode(calls, servers, home, folder):
    run = Run.start(Task(plugin="notes", instruction="count the words of log.md", repo=folder, metadata={"mcp_servers": servers}),
                    ScriptedPolicy(calls, name="mcp-client"), policy_config={"kind": "scripted", "script": "mcp-client"},
                    limits=Limits(max_steps=20), pricing=Pricing(), home=home)  # fmt: skip
    try:
        tools = sorted(run.episode.env.tools)
        result = run.execute()
    finally:
        run.close()
    with closing(open_store(result.run_id, home)) as store:
        records = store.tool_call_records()
        seen = [BUDGET_NOTE.sub("", m.content) for m in store.messages() if m.role == "tool"]
    return tools, records, seen


def test_a_stdio_servers_tools_run_in_the_episodes_sandbox_and_are_recorded(tmp_path, horizon_home, notes_plugin, server_folder):
    notes_folder = server_folder
    secret = tmp_path / "outside.txt"  # outside the workspace: the sandbox hides it (tmp is its own tmpfs)
    secret.write_text("host secret")
    words = len((notes_folder / "log.md").read_text().split())
    calls = [
        {"tool": "notes__count_words", "arguments": {"path": "log.md"}},
        {"tool": "notes__write_note", "arguments": {"path": "NOTES.md", "text": "counted"}},
        {"tool": "notes__count_words", "arguments": {"path": str(secret)}},
        {"tool": "notes__count_words", "arguments": {"file": "log.md"}},  # breaks the server's schema
        {"tool": "notes__fail", "arguments": {"reason": "the index is stale"}},
        {"tool": "notes__nap", "arguments": {"seconds": 30}},  # past the 3 s limit
        {"tool": "notes__count_words", "arguments": {"path": "NOTES.md"}},  # the server still answers after a timeout
        {"tool": "finish", "arguments": {"summary": "counted the words"}},
    ]
    spec = {**STDIO, "timeout_s": 3}
    tools, records, seen = run_episode(calls, [spec], horizon_home, notes_folder)

    assert {"notes__count_words", "notes__write_note", "notes__nap", "notes__fail", "view_file", "finish"} <= set(tools)
    assert [r["tool"] for r in records] == [c["tool"] for c in calls]
    assert seen[0] == f"{words} words in log.md"
    assert records[0]["data"]["mcp_server"] == "notes" and records[0]["data"]["mcp_tool"] == "count_words"
    assert not records[1]["is_error"]
    assert records[2]["is_error"] and f"cannot read {secret}: No such file or directory" in seen[2] and "host secret" not in seen[2]
    assert records[3]["is_error"] and "invalid arguments for notes__count_words" in seen[3] and "'path' is a required property" in seen[3]
    assert records[4]["is_error"] and "the index is stale" in seen[4]
    assert records[5]["is_error"] and "did not answer nap within 3 s" in seen[5]
    assert seen[6] == "1 words in NOTES.md"


def test_the_note_a_stdio_server_wrote_is_in_the_runs_patch_and_its_export(tmp_path, horizon_home, notes_plugin, server_folder):
    notes_folder = server_folder
    calls = [{"tool": "notes__write_note", "arguments": {"path": "NOTES.md", "text": "hello from MCP"}},
             {"tool": "finish", "arguments": {"summary": "wrote a note"}}]  # fmt: skip
    run = Run.start(Task(plugin=notes_plugin, instruction="write a note", repo=notes_folder, metadata={"mcp_servers": [STDIO]}),
                    ScriptedPolicy(calls, name="mcp-note"), policy_config={"kind": "scripted", "script": "mcp-note"},
                    limits=Limits(max_steps=5), pricing=Pricing(), home=horizon_home)  # fmt: skip
    try:
        result = run.execute()
    finally:
        run.close()
    patch = result.patch_path.read_text()
    assert "+++ b/NOTES.md" in patch and "+hello from MCP" in patch
    # exported for training, the rows list the server's tools next to the plugin's
    rows = [json.loads(line) for line in export_runs([result.run_id], "openai", tmp_path / "sft.jsonl", home=horizon_home, keep_flagged=True).files[0].read_text().splitlines()]
    names = {t["function"]["name"] for t in rows[0]["tools"]}
    assert {"notes__write_note", "notes__count_words", "view_file"} <= names
    called = [c["function"]["name"] for m in rows[0]["messages"] for c in m.get("tool_calls") or []]
    assert "notes__write_note" in called


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_http_servers_tools_are_read_only_and_answer(tmp_path):
    port = free_port()
    server = subprocess.Popen([sys.executable, str(SERVER), "--http", str(port)], cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            time.sleep(0.2)
        (tmp_path / "words.txt").write_text("one two three")
        workspace = tmp_path / "ws"
        workspace.mkdir()
        toolset = McpToolset(parse_servers([{"name": "remote", "url": f"http://127.0.0.1:{port}/mcp"}], "test"), open_sandbox(workspace, tmp_path / "scratch"))
        try:
            tools = {t.name: t for t in toolset.tools}
            assert all(t.read_only for t in tools.values())  # it cannot touch the workspace: no snapshot per call
            assert tools["remote__count_words"].schema()["function"]["parameters"]["required"] == ["path"]
            result = tools["remote__count_words"].fn(tools["remote__count_words"].parse('{"path": "words.txt"}'), None)
            assert result.output == "3 words in words.txt"  # the server's own folder, not the workspace
        finally:
            toolset.close()
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_a_server_that_does_not_start_is_a_clear_error_before_the_run(tmp_path, horizon_home, notes_plugin, notes_folder):
    dead = {"name": "dead", "command": ["/nonexistent/mcp-server"], "timeout_s": 10}
    with pytest.raises(UserError, match=r"MCP server 'dead' \(/nonexistent/mcp-server\) could not be reached"):
        run_episode([{"tool": "finish", "arguments": {"summary": "x"}}], [dead], horizon_home, notes_folder)
    assert not list((horizon_home / "runs").iterdir())  # no half-made run left behind


@pytest.mark.parametrize(("raw", "message"), [
    ({"name": "x"}, "must be a list of tables"),
    ([{"name": "x", "command": ["a"], "url": "http://h/mcp"}], "give exactly one of command"),
    ([{"name": "bad name", "command": ["a"]}], "name: String should match"),
    ([{"name": "a", "command": ["a"]}, {"name": "a", "url": "http://h/mcp"}], "two MCP servers share a name"),
    ([{"name": "a", "command": ["a"], "timeout": 5}], "timeout: Extra inputs are not permitted"),
])  # fmt: skip
def test_server_specs_that_cannot_work_are_refused_with_the_reason(raw, message):
    with pytest.raises(UserError, match=message):
        parse_servers(raw, "horizon.toml")


def test_the_config_names_servers_for_agent_run(tmp_path, monkeypatch):
    from core.cli import _mcp_metadata
    from core.config import load_settings
    from core.trust import trust

    monkeypatch.chdir(tmp_path)
    (tmp_path / "horizon.toml").write_text('[[mcp_servers]]\nname = "notes"\ncommand = ["python3", "server.py"]\n')
    assert _mcp_metadata(load_settings()) == {}  # the working folder's file starts nothing until trusted
    trust(tmp_path / "horizon.toml")
    assert _mcp_metadata(load_settings()) == {"mcp_servers": [{"name": "notes", "command": ["python3", "server.py"]}]}
    (tmp_path / "horizon.toml").write_text('[[mcp_servers]]\nname = "notes"\n')
    trust(tmp_path / "horizon.toml")
    with pytest.raises(UserError, match=f"mcp_servers from {tmp_path / 'horizon.toml'}.*give exactly one of command"):
        _mcp_metadata(load_settings())


def test_a_stdio_server_under_tmp_is_refused_with_what_to_do(tmp_path, horizon_home, notes_plugin, notes_folder):
    """issue 30: the sandbox's private /tmp hides a server installed under /tmp; the error says so."""
    folder = Path(tempfile.mkdtemp(prefix="horizon-mcp-", dir="/tmp"))
    try:
        shutil.copy(SERVER, folder / "server.py")
        spec = {"name": "notes", "command": [sys.executable, str(folder / "server.py")], "timeout_s": 20}
        with pytest.raises(UserError) as caught:
            run_episode([{"tool": "finish", "arguments": {"summary": "x"}}], [spec], horizon_home, notes_folder)
    finally:
        shutil.rmtree(folder)
    message = str(caught.value)
    assert "could not be reached" in message and str(folder) in message and " is under /tmp, which the sandbox replaces" in message, message
    assert "move the server into the workspace or a folder outside /tmp" in message
