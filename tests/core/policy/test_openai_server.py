"""The OpenAI-compatible backend against a real HTTP server on loopback, and against a dead port."""

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import ClassVar

import pytest

from core.errors import ModelUnavailable
from core.policy import OpenAIServerPolicy
from core.policy.retry import RetryConfig

REPLY = {
    "id": "x", "object": "chat.completion", "created": 0, "model": "served-model",
    "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
        "role": "assistant", "content": None,
        "tool_calls": [{"id": "call_9", "type": "function", "function": {"name": "view_file", "arguments": "{\"path\": \"a\""}}],
    }}],
    "usage": {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127, "prompt_tokens_details": {"cached_tokens": 96}},
}


class Handler(BaseHTTPRequestHandler):
    requests: ClassVar[list] = []

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Handler.requests.append((self.path, body))
        data = json.dumps(REPLY).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def server():
    httpd = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_port}/v1"
    httpd.shutdown()


def test_tool_calls_and_cached_tokens_are_read(server):
    policy = OpenAIServerPolicy(server, "served-model")
    tools = [{"type": "function", "function": {"name": "view_file", "parameters": {"type": "object"}}}]
    resp = policy.complete([{"role": "user", "content": "hi"}], tools)
    path, body = Handler.requests[-1]
    assert path == "/v1/chat/completions"
    assert body["tools"] == tools and body["tool_choice"] == "auto"
    call = resp.message.tool_calls[0]
    assert (call.id, call.name) == ("call_9", "view_file")
    assert call.arguments == '{"path": "a"'  # malformed JSON is kept verbatim for the loop to report
    assert (resp.usage.prompt_tokens, resp.usage.cached_prompt_tokens, resp.usage.completion_tokens) == (120, 96, 7)


def test_dead_server_is_a_clear_model_unavailable():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens there
    policy = OpenAIServerPolicy(f"http://127.0.0.1:{port}/v1", "m", retry=RetryConfig(max_attempts=1), timeout_s=5)
    with pytest.raises(ModelUnavailable, match=f"cannot reach the model server at http://127.0.0.1:{port}/v1"):
        policy.complete([{"role": "user", "content": "hi"}], [])
