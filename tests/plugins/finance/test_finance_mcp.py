"""``agent mcp finance`` through the MCP SDK's own clients: the finance plugin's tools listed with
their schemas; a stdio session on a real filing (3M's 2018 10-K) with a query the database refuses
(file access), an answer checked against FinanceBench's gold and finish with its reward, which is
then a stored, exported run. (The listing test moved here from ``tests/core/test_mcp.py``; core's
MCP machinery is tested there on the test plugin, ``notes``.)"""

from __future__ import annotations

import json
import re
import sys
from contextlib import closing

import anyio
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from typer.testing import CliRunner

from core.cli import app
from core.mcp.server import build_server
from core.plugin import Task, load_plugin
from core.runner import open_store
from tests.mcp_calls import mcp_session, result_text
from tests.plugins.finance.conftest import FILINGS, ROOT, need_data

AGENT = [sys.executable, "-c", "from core.cli import main; main()"]  # this checkout's core, as `agent` would run it
QUESTION = "financebench_id_03029"  # 3M's FY2018 capital expenditure
ANSWER = {"question_id": QUESTION, "document": "3M_2018_10K", "page": 60, "unit": "USD", "scale": "millions", "value": 1577,
          "formula": "-{3M_2018_10K:p60:l24:c0}"}  # as examples/finance/scripts/financebench.jsonl answers it


def test_the_finance_plugin_lists_its_tools(horizon_home):
    plugin = load_plugin("finance")
    task = Task(plugin="finance", instruction="build it", repo=ROOT / "examples" / "finance" / "financebench")

    async def listing():
        async with Client(build_server(plugin, task, mcp_session(task, horizon_home))) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(listing)
    assert [t.name for t in tools] == [t.name for t in plugin.tools()]
    assert {"list_documents", "get_statement", "answer_question", "write_report", "finish"} <= {t.name for t in tools}
    assert all(t.input_schema.get("type") == "object" for t in tools)


def test_a_finance_session_over_stdio_is_a_scored_exported_run(tmp_path, horizon_home, finance_cache):
    need_data()
    task = tmp_path / "task"
    task.mkdir()
    (task / "task.json").write_text(json.dumps({"filings": [str(FILINGS / "3M_2018_10K.pdf")],
                                                "questions": str(FILINGS / "questions.jsonl"), "question_ids": [QUESTION]}))
    env = {"HORIZON_HOME": str(horizon_home), "HORIZON_FINANCE_CACHE": str(finance_cache)}
    params = StdioServerParameters(command=AGENT[0], args=[*AGENT[1:], "mcp", "finance", "--repo", str(task), "--task", "answer the question"],
                                   env=env, cwd=str(ROOT))  # fmt: skip
    calls = [
        ("documents", "list_documents", {}),
        ("count", "sql", {"query": "SELECT count(*) AS n FROM facts WHERE doc_name = '3M_2018_10K'"}),
        ("file", "sql", {"query": "SELECT * FROM read_csv('/etc/passwd')"}),
        ("wrong", "answer_question", {**ANSWER, "formula": "{3M_2018_10K:p60:l24:c0}"}),  # the sign is wrong: refused
        ("answer", "answer_question", ANSWER),
        ("finish", "finish", {"summary": "answered the capital expenditure question from the cash flow statement"}),
    ]
    texts: dict[str, str] = {}
    errors: dict[str, bool] = {}
    listed: list[str] = []

    async def drive(errlog):
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed.extend(t.name for t in (await session.list_tools()).tools)
            for key, name, arguments in calls:
                result = await session.call_tool(name, arguments)
                texts[key], errors[key] = result_text(result), result.is_error

    with open(tmp_path / "server.log", "w") as errlog:
        anyio.run(drive, errlog)
    print(json.dumps(texts, indent=1))  # shown when an assertion below fails
    assert {"list_documents", "sql", "answer_question", "finish"} <= set(listed)
    assert not errors["documents"] and "3M_2018_10K" in texts["documents"]
    assert not errors["count"] and int(re.search(r"^n\n(\d+)$", texts["count"], re.MULTILINE).group(1)) > 100
    assert errors["file"] and texts["file"].startswith("SQL error") and "root:" not in texts["file"]
    assert errors["wrong"] and not errors["answer"], texts["answer"]
    assert not errors["finish"] and "reward" in texts["finish"]
    run_id = texts["documents"].split("[Horizon run ", 1)[1].split(":", 1)[0]

    with closing(open_store(run_id, horizon_home)) as store:
        row, records, rewards = store.run(), store.tool_call_records(), store.rewards()
    assert (row["status"], row["exit_status"], row["policy"]) == ("finished", "submitted", "mcp")
    assert [c["tool"] for c in records] == [name for _, name, _ in calls]
    assert [c["is_error"] for c in records] == [False, False, True, True, False, False]
    assert rewards["answer_value"]["value"] == 1.0, rewards["answer_value"]["detail"]
    out = tmp_path / "openai.jsonl"
    exported = CliRunner().invoke(app, ["export", run_id, "--format", "openai", "--out", str(out)])
    assert exported.exit_code == 0, exported.output
    (row,) = [json.loads(line) for line in out.read_text().splitlines()]
    called = [c["function"]["name"] for m in row["messages"] if m["role"] == "assistant" for c in m.get("tool_calls", [])]
    assert called == [name for _, name, _ in calls]
