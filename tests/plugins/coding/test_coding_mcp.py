"""``agent mcp coding``: the MCP SDK's own clients against the coding plugin's server. The coding
tools are listed with the schemas a model gets, and called over stdio (a fix, the tests, the
reward, the exported patch). Moved unchanged from ``tests/core/test_mcp.py``, which tests core's
MCP machinery on the test plugin (``notes``)."""

from __future__ import annotations

import json
import os
import shutil
import sys
from contextlib import closing
from pathlib import Path

import anyio
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from typer.testing import CliRunner

from core.cli import app
from core.mcp.server import build_server
from core.plugin import Task, load_plugin
from core.runner import open_store
from tests.mcp_calls import mcp_session, refusal, result_text

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples"
FIX = {"path": "users/service.py", "old_text": "nickname = user.nickname.strip()", "new_text": 'nickname = (user.nickname or "").strip()'}
AGENT = [sys.executable, "-c", "from core.cli import main; main()"]  # this checkout's core, as `agent` would run it


def _copy(tmp_path: Path) -> Path:
    return Path(shutil.copytree(EXAMPLES / "python-user-service", tmp_path / "repo", ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache")))


def _env(home: Path) -> dict[str, str]:
    """What the server subprocess needs beyond the SDK's safe default environment."""
    return {"HORIZON_HOME": str(home), "HORIZON_TEST_ENV": "horizon", "HORIZON_SOURCES_CACHE": os.environ["HORIZON_SOURCES_CACHE"]}


def test_coding_tools_are_listed_with_the_schemas_a_model_gets_and_no_run_starts(tmp_path, horizon_home):
    plugin = load_plugin("coding")
    task = Task(plugin="coding", instruction="fix NPE in user module", repo=_copy(tmp_path))
    server = build_server(plugin, task, mcp_session(task, horizon_home))

    async def listing():
        async with Client(server) as client:
            return client.instructions, (await client.list_tools()).tools

    instructions, tools = anyio.run(listing)
    assert instructions == plugin.system_prompt(task)
    expected = [t.schema()["function"] for t in plugin.tools()]
    assert [t.name for t in tools] == [f["name"] for f in expected]
    assert {"view_file", "edit_file", "run_tests", "shell", "finish"} <= {t.name for t in tools}
    for listed, function in zip(tools, expected, strict=True):
        assert listed.input_schema == function["parameters"] and listed.description == function["description"]
    hints = {t.name: t.annotations.read_only_hint for t in tools}
    assert hints["view_file"] is True and hints["edit_file"] is False
    assert not (horizon_home / "runs").exists() or not any((horizon_home / "runs").iterdir())  # listing starts no run


def test_a_stdio_session_is_a_stored_exportable_run(tmp_path, horizon_home):
    """``agent mcp`` as a subprocess, driven by the SDK's stdio client: read, a refusal, a write the
    sandbox denies, a fix, the tests, finish with its reward; then the run is listed, shown and exported."""
    repo = _copy(tmp_path)
    (tmp_path / "outside.txt").write_text("not the repository's\n")
    params = StdioServerParameters(command=AGENT[0], args=[*AGENT[1:], "mcp", "coding", "--repo", str(repo), "--task", "fix NPE in user module"],
                                   env=_env(horizon_home), cwd=str(ROOT))  # fmt: skip
    texts: dict[str, str] = {}
    errors: dict[str, bool] = {}

    async def drive(errlog):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            calls = [
                ("view", "view_file", {"path": "users/service.py"}),
                ("outside", "view_file", {"path": "../outside.txt"}),
                ("bad_args", "view_file", {"start_line": 3}),
                ("denied", "shell", {"command": "echo x > /usr/horizon-mcp-probe", "timeout_s": 60}),
                ("edit", "edit_file", FIX),
                ("tests", "run_tests", {}),
                ("finish", "finish", {"summary": "a missing nickname falls back to the full name"}),
                ("after", "view_file", {"path": "users/service.py"}),
            ]
            for key, name, arguments in calls:
                result = await session.call_tool(name, arguments)
                texts[key], errors[key] = result_text(result), result.is_error

    with open(tmp_path / "server.log", "w") as errlog:  # the server's stderr: its step lines
        anyio.run(drive, errlog)
    # the run's first call brings its task message (what set-up found), then the observation
    assert texts["view"].startswith("[Horizon run ") and "2 fail now" in texts["view"] and "[result]\nusers/service.py" in texts["view"]
    assert "nickname = user.nickname.strip()" in texts["view"] and not errors["view"]
    # refusals come back as MCP tool errors with the loop's own text
    assert errors["outside"] and texts["outside"].startswith(refusal("../outside.txt", repo))
    assert "not the repository's" not in texts["outside"]
    assert errors["bad_args"] and texts["bad_args"].startswith("invalid arguments for view_file: path: Field required")
    assert errors["denied"] and texts["denied"].startswith("exit code 1") and "/usr/horizon-mcp-probe: Read-only file system" in texts["denied"]
    assert not Path("/usr/horizon-mcp-probe").exists()
    assert not errors["edit"] and "+        nickname = (user.nickname or \"\").strip()" in texts["edit"]
    assert not errors["tests"] and texts["tests"].startswith("pytest: 26 tests: 26 passed")
    assert not errors["finish"] and "reward 1.000" in texts["finish"] and "agent apply " in texts["finish"]
    first = texts["view"].split("[Horizon run ", 1)[1].split(":", 1)[0]
    later = texts["after"].split("[Horizon run ", 1)[1].split(":", 1)[0]
    assert later != first and "the next tool call starts a new run" in texts["finish"].lower()
    assert (repo / "users" / "service.py").read_text().count("user.nickname.strip()") == 1  # the user's files are untouched

    # the session is a run like any other
    with closing(open_store(first, horizon_home)) as store:
        row, calls, messages = store.run(), store.tool_call_records(), store.messages()
    assert (row["status"], row["exit_status"], row["reward"], row["policy"]) == ("finished", "submitted", 1.0, "mcp")
    assert [c["tool"] for c in calls] == ["view_file", "view_file", "view_file", "shell", "edit_file", "run_tests", "finish"]
    assert [c["is_error"] for c in calls] == [False, True, True, True, False, False, False]
    stored = {m.tool_call_id: m.content for m in messages if m.role == "tool"}
    assert stored[calls[1]["tool_call_id"]] == texts["outside"]  # the client read exactly what was stored
    assert "+        nickname = (user.nickname or \"\").strip()" in (horizon_home / "runs" / first / "patch.diff").read_text()
    with closing(open_store(later, horizon_home)) as store:  # the client left during the second run: resumable
        assert store.run()["status"] == "interrupted"
        assert f"agent mcp coding --resume {later}" in store.run()["exit_detail"]

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
    assert names == ["view_file", "view_file", "view_file", "shell", "edit_file", "run_tests", "finish"]
