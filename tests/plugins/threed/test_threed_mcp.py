"""``agent mcp threed``'s server, through the MCP SDK's own client: the threed plugin's tools are
listed with an object schema each. Moved from ``tests/core/test_mcp.py`` (core's MCP machinery is
tested there on the test plugin, ``notes``)."""

from __future__ import annotations

from pathlib import Path

import anyio
from mcp import Client

from core.mcp.server import build_server
from core.plugin import Task, load_plugin
from tests.mcp_calls import mcp_session

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_the_threed_plugin_lists_its_tools(horizon_home):
    plugin_name, folder, some = "threed", "threed/low-table", {"inspect_scene", "add_primitive", "set_material", "render_preview", "finish"}
    plugin = load_plugin(plugin_name)
    task = Task(plugin=plugin_name, instruction="build it", repo=EXAMPLES / folder)
    server = build_server(plugin, task, mcp_session(task, horizon_home))

    async def listing():
        async with Client(server) as client:
            return (await client.list_tools()).tools

    tools = anyio.run(listing)
    assert [t.name for t in tools] == [t.name for t in plugin.tools()]
    assert some <= {t.name for t in tools}
    assert all(t.input_schema.get("type") == "object" for t in tools)
