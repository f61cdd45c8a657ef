"""A tiny real HTTP server on loopback whose ``GET /v1/models`` answers what a test says.

For the model-server probe (``core.policy.probe``): a server that lists models, answers 500, or
answers garbage; ``POST`` (a chat completion) answers ``post_status`` with an OpenAI-style error
body, so a run that gets past the probe stops at its first model call::

    with ModelsServer(status=500, body=b"boom") as server:
        probe_model_server(server.url)       # raises ModelServerUnreachable
"""

from __future__ import annotations

import json
import socket
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.core.policy.fault_server import LoopbackServer

MODEL_LIST = json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "vllm"}]}).encode()


def closed_port() -> int:
    """A loopback port with nothing listening: bound once by the OS, then released."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class ModelsServer(LoopbackServer):
    """The server; a context manager (``url``, the ``/v1`` root, is valid inside); ``paths``
    records each request's method and path."""

    def __init__(self, status: int = 200, body: bytes = MODEL_LIST, *, content_type: str = "application/json", post_status: int = 400) -> None:
        self.status, self.body, self.content_type, self.post_status = status, body, content_type, post_status
        self.paths: list[str] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, content_type: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                server.paths.append(f"GET {self.path}")
                self._send(server.status, server.body, server.content_type)

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                server.paths.append(f"POST {self.path}")
                self._send(server.post_status, b'{"error": {"message": "this test server completes nothing"}}', "application/json")

        self._serve(Handler)
