"""A small real MCP server (the official SDK's ``MCPServer``) for the MCP client tests.

``python mcp_notes_server.py`` serves over stdio; ``--http PORT`` over streamable HTTP at
``http://127.0.0.1:PORT/mcp``. Its tools work on files relative to its working folder (the
episode's workspace when Horizon starts it), so a test can see what the sandbox lets it reach.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("notes")


@server.tool()
def count_words(path: str) -> str:
    """Count the words of a text file (a path relative to the working folder, or absolute)."""
    try:
        return f"{len(Path(path).read_text().split())} words in {path}"
    except OSError as exc:
        raise ToolError(f"cannot read {path}: {exc.strerror}") from None


@server.tool()
def write_note(path: str, text: str) -> str:
    """Write a text file (relative to the working folder)."""
    Path(path).write_text(text)
    return f"wrote {len(text)} characters to {path}"


@server.tool()
def nap(seconds: float) -> str:
    """Sleep, then say so."""
    time.sleep(seconds)
    return f"slept {seconds} s"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the reason given."""
    raise ToolError(reason)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()
