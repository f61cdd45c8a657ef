"""``agent mcp``: the MCP SDK's own clients against a plugin's server, on the test plugin (``notes``,
``tests/notes_plugin``). The tools, sandbox, loop and run store are the real ones; an MCP session is
a run like any other (shown, exported, resumed). Each domain plugin's server is tested in its own
folder: ``tests/plugins/coding/test_coding_mcp.py`` (its tools listed and called, its patch
exported), ``tests/plugins/threed/test_threed_mcp.py``, ``tests/plugins/finance/test_finance_mcp.py``."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import anyio
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from typer.testing import CliRunner

from core.cli import app
from core.config import load_settings
from core.mcp import McpSession
from core.mcp.server import build_server
from core.plugin import Task, load_plugin
from core.runner import Run, open_store
from tests.mcp_calls import mcp_session, refusal, result_text

ROOT = Path(__file__).resolve().parents[2]
FIX = {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}  # what the notes reward wants
AGENT = [sys.executable, "-c", "from core.cli import main; main()"]  # this checkout's core, as `agent` would run it


def _copy(tmp_path: Path) -> Path:
    """A folder for a ``notes`` episode: ``log.md`` and ``ANSWER.txt`` (``todo``)."""
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "log.md").write_text("# Log\n<!-- end -->\n")
    (folder / "ANSWER.txt").write_text("todo\n")
    return folder


def _env(home: Path) -> dict[str, str]:
    """What the server subprocess needs beyond the SDK's safe default environment (``PYTHONPATH``:
    the ``notes_plugin`` fixture's, through which ``agent`` finds the test plugin)."""
    return {"HORIZON_HOME": str(home), "HORIZON_TEST_ENV": "horizon", "HORIZON_SOURCES_CACHE": os.environ["HORIZON_SOURCES_CACHE"],
            "PYTHONPATH": os.environ["PYTHONPATH"]}


# -- listing ------------------------------------------------------------------------------------


def test_tools_are_listed_with_the_schemas_a_model_gets_and_no_run_starts(tmp_path, horizon_home, notes_plugin):
    plugin = load_plugin(notes_plugin)
    task = Task(plugin=notes_plugin, instruction="write done in ANSWER.txt", repo=_copy(tmp_path))
    server = build_server(plugin, task, mcp_session(task, horizon_home))

    async def listing():
        async with Client(server) as client:
            return client.instructions, (await client.list_tools()).tools

    instructions, tools = anyio.run(listing)
    assert instructions == plugin.system_prompt(task)
    expected = [t.schema()["function"] for t in plugin.tools()]
    assert [t.name for t in tools] == [f["name"] for f in expected]
    assert {"view_file", "write_file", "edit_file", "shell", "finish"} == {t.name for t in tools}
    for listed, function in zip(tools, expected, strict=True):
        assert listed.input_schema == function["parameters"] and listed.description == function["description"]
    hints = {t.name: t.annotations.read_only_hint for t in tools}
    assert hints["view_file"] is True and hints["edit_file"] is False
    assert not (horizon_home / "runs").exists() or not any((horizon_home / "runs").iterdir())  # listing starts no run


# -- a session over stdio is a run --------------------------------------------------------------


def test_a_stdio_session_is_a_stored_exportable_run(tmp_path, horizon_home, notes_plugin):
    """``agent mcp`` as a subprocess, driven by the SDK's stdio client: read, a refusal, a write the
    sandbox denies, the answer written, a check, finish with its reward; then the run is listed,
    shown and exported."""
    repo = _copy(tmp_path)
    (tmp_path / "outside.txt").write_text("not the repository's\n")
    params = StdioServerParameters(command=AGENT[0], args=[*AGENT[1:], "mcp", notes_plugin, "--repo", str(repo), "--task", "write done in ANSWER.txt"],
                                   env=_env(horizon_home), cwd=str(ROOT))  # fmt: skip
    texts: dict[str, str] = {}
    errors: dict[str, bool] = {}
    info: dict[str, tuple[str, str]] = {}

    async def drive(errlog):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            hello = await session.initialize()
            info["server"] = (hello.server_info.name, hello.server_info.version)
            calls = [
                ("view", "view_file", {"path": "ANSWER.txt"}),
                ("outside", "view_file", {"path": "../outside.txt"}),
                ("bad_args", "view_file", {"start_line": 3}),
                ("denied", "shell", {"command": "echo x > /usr/horizon-mcp-probe"}),
                ("edit", "edit_file", FIX),
                ("check", "shell", {"command": "cat ANSWER.txt"}),
                ("finish", "finish", {"summary": "ANSWER.txt says done"}),
                ("after", "view_file", {"path": "ANSWER.txt"}),
            ]
            for key, name, arguments in calls:
                result = await session.call_tool(name, arguments)
                texts[key], errors[key] = result_text(result), result.is_error

    with open(tmp_path / "server.log", "w") as errlog:  # the server's stderr: its step lines
        anyio.run(drive, errlog)
    from importlib.metadata import version

    assert info["server"] == (f"horizon-{notes_plugin}", version("horizon-agents"))  # a client can tell which Horizon answered
    # the run's first call brings its task message (what set-up found), then the observation
    assert texts["view"].startswith("[Horizon run ") and "Files: ANSWER.txt, log.md" in texts["view"] and "[result]\n1: todo" in texts["view"]
    assert not errors["view"]
    # refusals come back as MCP tool errors with the loop's own text
    assert errors["outside"] and texts["outside"].startswith(refusal("../outside.txt", repo))
    assert "not the repository's" not in texts["outside"]
    assert errors["bad_args"] and texts["bad_args"].startswith("invalid arguments for view_file: path: Field required")
    assert errors["denied"] and "/usr/horizon-mcp-probe: Read-only file system\n[exit 1]" in texts["denied"]
    assert not Path("/usr/horizon-mcp-probe").exists()
    assert not errors["edit"] and texts["edit"].startswith("edited ANSWER.txt")
    assert not errors["check"] and texts["check"].startswith("done\n[exit 0]")
    assert not errors["finish"] and "reward 1.000" in texts["finish"] and "agent apply " in texts["finish"]
    first = texts["view"].split("[Horizon run ", 1)[1].split(":", 1)[0]
    later = texts["after"].split("[Horizon run ", 1)[1].split(":", 1)[0]
    assert later != first and "the next tool call starts a new run" in texts["finish"].lower()
    assert (repo / "ANSWER.txt").read_text() == "todo\n"  # the user's files are untouched

    # the session is a run like any other
    with closing(open_store(first, horizon_home)) as store:
        row, calls, messages = store.run(), store.tool_call_records(), store.messages()
    assert (row["status"], row["exit_status"], row["reward"], row["policy"]) == ("finished", "submitted", 1.0, "mcp")
    assert [c["tool"] for c in calls] == ["view_file", "view_file", "view_file", "shell", "edit_file", "shell", "finish"]
    assert [c["is_error"] for c in calls] == [False, True, True, True, False, False, False]
    stored = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    assert stored[calls[1]["tool_call_id"]] == texts["outside"]  # the client read exactly what was stored
    assert "+done" in (horizon_home / "runs" / first / "patch.diff").read_text().splitlines()
    with closing(open_store(later, horizon_home)) as store:  # the client left during the second run: resumable
        assert store.run()["status"] == "interrupted"
        assert f"agent mcp notes --resume {later}" in store.run()["exit_detail"]

    runner = CliRunner()
    listed = runner.invoke(app, ["runs"])
    assert listed.exit_code == 0 and first in listed.output and later in listed.output
    shown = runner.invoke(app, ["show", first])
    assert shown.exit_code == 0 and "edit_file(" in shown.output and "is outside the repository" in shown.output
    out = tmp_path / "sft.jsonl"
    exported = runner.invoke(app, ["export", first, "--format", "sft-jsonl", "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 1
    names = [c["function"]["name"] for m in rows[0]["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert names == ["view_file", "view_file", "view_file", "shell", "edit_file", "shell", "finish"]


# -- leaving and resuming; agent resume refuses an MCP run ---------------------------------------


def test_a_session_left_before_finish_is_resumed_with_agent_mcp_resume(tmp_path, horizon_home, notes_plugin):
    repo = _copy(tmp_path)
    task = Task(plugin=notes_plugin, instruction="write done in ANSWER.txt", repo=repo)
    session = mcp_session(task, horizon_home)
    edited = session.call("edit_file", FIX)
    assert not edited.is_error and session.run_id is not None
    session.close()
    run_id = session.run_id
    with closing(open_store(run_id, horizon_home)) as store:
        row = store.run()
    assert row["status"] == "interrupted" and f"--resume {run_id}" in row["exit_detail"]

    refused = CliRunner().invoke(app, ["resume", run_id])
    assert refused.exit_code == 2 and f"agent mcp notes --resume {run_id}" in refused.output

    def reopen(policy):
        return Run.open(run_id, settings=load_settings(), policy=policy, home=horizon_home)

    resumed = McpSession(lambda policy: pytest.fail("a new run was started instead of resuming"), resume_run=reopen, plugin=notes_plugin)
    try:
        finished = resumed.call("finish", {"summary": "fixed before the client left"})
    finally:
        resumed.close()
    assert resumed.run_ids == [run_id] and not finished.is_error
    assert finished.ended is not None and finished.ended.reward == 1.0  # the edit made before leaving was kept
    assert finished.text.startswith(f"[Horizon run {run_id}:")


def test_agent_mcp_refuses_what_cannot_work(tmp_path, notes_plugin):
    runner = CliRunner()
    missing = runner.invoke(app, ["mcp", notes_plugin, "--repo", str(tmp_path / "nowhere")])
    assert missing.exit_code == 2 and "is not a folder" in missing.output
    transport = runner.invoke(app, ["mcp", notes_plugin, "--repo", str(tmp_path), "--transport", "sse"])
    assert transport.exit_code == 2 and "--transport must be stdio or http" in transport.output
    unknown = runner.invoke(app, ["mcp", "nosuchplugin", "--repo", str(tmp_path)])
    assert unknown.exit_code == 2 and "no plugin named 'nosuchplugin'" in unknown.output
    root = runner.invoke(app, ["mcp", notes_plugin, "--repo", "/"])
    assert root.exit_code == 2 and "pass --repo PATH to a repository" in root.output
    no_run = runner.invoke(app, ["mcp", notes_plugin, "--resume", "20000101-000000-dead"])
    assert no_run.exit_code == 2 and "20000101-000000-dead" in no_run.output
    # options after the plugin's name are the plugin's (mcp_extension); one without the hook takes none
    foreign = runner.invoke(app, ["mcp", notes_plugin, "--repo", str(tmp_path), "--blender", "9876"])
    assert foreign.exit_code == 2 and f"agent mcp {notes_plugin} takes no option '--blender'" in foreign.output
    with socket.socket() as taken:  # a port in use is refused before the banner, with what to do
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        busy = runner.invoke(app, ["mcp", notes_plugin, "--repo", str(tmp_path), "--transport", "http", "--port", str(port)])
    assert busy.exit_code == 2 and f"cannot listen on 127.0.0.1:{port}" in busy.output and "--port N" in busy.output
    assert "horizon mcp" not in busy.output


# -- streamable HTTP ----------------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_the_http_transport_serves_the_same_tools(tmp_path, horizon_home, notes_plugin):
    repo = _copy(tmp_path)
    port = _free_port()
    log = tmp_path / "server.log"
    with open(log, "w") as out:
        server = subprocess.Popen([*AGENT, "mcp", notes_plugin, "--repo", str(repo), "--transport", "http", "--port", str(port)],
                                  cwd=ROOT, env={**os.environ, **_env(horizon_home)}, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}/mcp"

    async def drive():
        deadline = time.monotonic() + 60
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()
                await anyio.sleep(0.2)
        async with Client(url) as client:
            tools = (await client.list_tools()).tools
            refused = await client.call_tool("view_file", {"path": "/etc/passwd"})
            return tools, refused

    try:
        tools, refused = anyio.run(drive)
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(60)
    assert {"view_file", "write_file", "edit_file", "shell", "finish"} == {t.name for t in tools}
    assert refused.is_error and f"[result]\n{refusal('/etc/passwd', repo)}" in result_text(refused)
    run_id = result_text(refused).split("[Horizon run ", 1)[1].split(":", 1)[0]
    with closing(open_store(run_id, horizon_home)) as store:  # Ctrl-C left the run resumable, its call stored
        assert store.run()["status"] == "interrupted"
        assert [c["tool"] for c in store.tool_call_records()] == ["view_file"]
        assert store.run()["config"]["task_metadata"] == {"instruction_unseen": True}  # no --task: kept out of training data
