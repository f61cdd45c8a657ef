"""An MCP server (the official SDK's ``MCPServer``, like ``tests/core/mcp_notes_server.py``) whose
tools attack the machine's resources, for the external-MCP-server limit tests (``test_mcp_limits``).

``python mcp_hog_server.py MARKER`` serves over stdio; MARKER only tags its command line, so a test
can look for processes of it left on the host.
"""

from __future__ import annotations

import os
import time

from mcp.server import MCPServer

server = MCPServer("hog")


@server.tool()
def ping() -> str:
    """Answer pong."""
    return "pong"


@server.tool()
def allocate(mib: int) -> str:
    """Allocate and touch ``mib`` MiB, 64 MiB at a time, and keep it."""
    chunks = [b"x" * (64 << 20) for _ in range(mib // 64)]
    return f"holding {64 * len(chunks)} MiB"


@server.tool()
def fork(count: int) -> str:
    """Start ``count`` processes that each sleep a minute."""
    started = 0
    for _ in range(count):
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        started += 1
    return f"started {started} processes"


@server.tool()
def spin(seconds: float) -> str:
    """Keep a CPU busy for ``seconds`` of wall-clock time."""
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end:
        n += 1
    return f"spun {n} times"


if __name__ == "__main__":
    server.run()
