"""The MCP server of one plugin, on the official ``mcp`` SDK's low-level ``Server``.

The low-level server, not ``MCPServer``: the tools' input schemas must be the plugin's own
(``Tool.schema()``'s ``parameters``, the JSON schema a model is given), not ones derived again
from Python signatures, and the arguments must reach the loop unvalidated, so that a bad call
gets the loop's refusal text, as a model's would.

Transports: stdio (``serve_stdio``; the SDK points fd 1 at stderr while it serves, so stray output
of a tool or a library cannot corrupt the protocol) and streamable HTTP (``serve_http``, at
``http://HOST:PORT/mcp`` under uvicorn).
"""

from __future__ import annotations

import socket
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

from core.errors import UserError
from core.mcp.session import McpSession
from core.plugin import Plugin, Task

#: Where the streamable HTTP transport answers.
HTTP_PATH = "/mcp"


def tool_listing(plugin: Plugin) -> list[types.Tool]:
    """The plugin's tools as MCP tools, in the plugin's order.

    Returns:
        One ``mcp_types.Tool`` per plugin tool: its name, its description (the docstring's first
        paragraph), its pydantic argument model's JSON schema exactly as a model gets it, and
        ``readOnlyHint`` for the tools that never change the workspace.
    """
    listing = []
    for tool in plugin.tools():
        function = tool.schema()["function"]
        listing.append(types.Tool(name=function["name"], description=function["description"], input_schema=function["parameters"],
                                  annotations=types.ToolAnnotations(read_only_hint=tool.read_only)))  # fmt: skip
    return listing


def horizon_version() -> str:
    """The installed Horizon's version (``horizon-agents``' metadata), ``"unknown"`` from a bare checkout."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("horizon-agents")
    except PackageNotFoundError:
        return "unknown"


def build_server(plugin: Plugin, task: Task, session: McpSession, *, version: str | None = None) -> Server[Any]:
    """An MCP server offering ``plugin``'s tools, each call run by ``session``.

    Args:
        plugin: the plugin (its tools are listed once, here).
        task: the task the session's runs are given; its system prompt is the server's
            ``instructions``, which a client passes to its model as a model run would get it.
        session: runs the calls (``McpSession.call``), each in a worker thread, since a call
            blocks until the loop has run it.
        version: the server version reported at initialisation (``serverInfo.version``; default:
            Horizon's, ``horizon_version``).

    Returns:
        The SDK's ``Server``; serve it with ``serve_stdio`` or ``serve_http``, or connect the SDK's
        ``Client`` to it in-process.
    """
    listing = tool_listing(plugin)

    async def on_list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        return types.ListToolsResult(tools=listing)

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        outcome = await anyio.to_thread.run_sync(session.call, params.name, params.arguments)
        return types.CallToolResult(content=[types.TextContent(text=outcome.text)], is_error=outcome.is_error)

    return Server(f"horizon-{plugin.name}", version=version or horizon_version(), description=plugin.description,
                  instructions=plugin.system_prompt(task), on_list_tools=on_list_tools, on_call_tool=on_call_tool)  # fmt: skip


def serve_stdio(server: Server[Any]) -> None:
    """Serve one client over this process's stdin and stdout until it closes stdin."""

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    anyio.run(main)


def bind_http(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` for ``serve_http``, bound before anything is printed.

    Raises:
        UserError: the address cannot be bound (in use, not this machine's), saying which and what to do.
    """
    try:
        info = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(info[0], socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does: a port in TIME_WAIT is free
        sock.bind(info[4])
        sock.listen(128)
    except OSError as exc:
        raise UserError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; pick another with --port N "
                        "(or stop what uses it)") from None
    return sock


def serve_http(server: Server[Any], sock: socket.socket) -> None:
    """Serve streamable HTTP at ``http://HOST:PORT/mcp`` on ``sock`` (``bind_http``) until Ctrl-C (or SIGTERM)."""
    import uvicorn

    from core.netguard import WebGuard, allowed_hosts

    host = sock.getsockname()[0]
    # The SDK's own checks match "127.0.0.1:*" as a prefix (any local port's Origin, "127.0.0.1:80@elsewhere" as Host):
    # Horizon's guard answers first with exact names (421) and this server's own Origin only (403), as agent ui does.
    app = WebGuard(server.streamable_http_app(streamable_http_path=HTTP_PATH, host=host), hosts=allowed_hosts(bind=host),
                   command="agent mcp --transport http", every_method=True, allow_flag=False)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
