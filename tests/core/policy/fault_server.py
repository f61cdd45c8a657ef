"""A fake OpenAI-compatible chat-completions server on loopback that fails on request.

Real HTTP (``http.server`` in a thread), so the ``openai`` client, its transport and its error
mapping are all exercised. Tell it which faults to inject for the next requests, in order; once
those are used up it answers properly::

    with FaultServer() as server:
        server.inject("status", times=2, status=503, retry_after="0")
        server.inject("cut")
        policy = OpenAIServerPolicy(server.url, "m", retry=...)
        policy.complete(...)          # succeeds on the 4th request
        assert server.count == 4

Faults (``kind``):

- ``ok``: a proper answer (to let some requests through before a fault);
- ``timeout``: wait ``delay_s`` (default 2) before answering, longer than the client's timeout;
- ``status``: answer HTTP ``status`` with an OpenAI-style error body, and ``Retry-After:
  retry_after`` / ``retry-after-ms: retry_after_ms`` when given;
- ``cut``: send the headers and half of a proper body, then close the connection;
- ``drop``: close the connection without answering at all;
- ``invalid_json``: 200 with a ``Content-Type: application/json`` body that is not JSON;
- ``html``: 200 with an HTML page (a proxy's error page);
- ``empty_choices``: 200 with ``"choices": []``; ``no_choices``: 200 without ``choices``;
- ``length``: a reply cut at the token limit: ``finish_reason="length"`` and the tool call's
  arguments truncated mid-JSON.

The proper answer comes from ``responder(request_body) -> reply dict``; the default replies
with one ``view_file`` call. ``requests`` records every request body (None when unreadable)
with the fault it got, ``raw_requests`` the bytes of each; ``counts`` tallies the kinds handed
out; ``on_request(kind, options, body)``, when given, is called for every request.

``GET /v1/models`` answers a model list whose ``owned_by`` is the ``owned_by`` argument (what
vLLM, SGLang and llama.cpp's servers say there: ``vllm``, ``sglang``, ``llamacpp``); with
``owned_by=None`` (the default) it answers 404, like a server that has no such route.

Random faults, for soak runs (``bench/soak.py``): once the planned faults are used up,
``random_faults(rate, kinds)`` answers each request with a fault drawn from ``kinds`` with
probability ``rate``, properly otherwise. Pass ``keep_requests=False`` to a long-running server so
that ``requests`` stays empty (``counts`` and ``count`` still work).
"""

from __future__ import annotations

import json
import random
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

Responder = Callable[[dict[str, Any]], dict[str, Any]]
Fault = tuple[str, dict[str, Any]]


def completion(tool_calls: list[dict[str, Any]] | None = None, *, content: str | None = None, finish_reason: str = "tool_calls",
               usage: dict[str, Any] | None = None) -> dict[str, Any]:
    """A chat-completion body; ``tool_calls`` are ``{"name", "arguments" (JSON text), "id"?}``."""
    calls = [
        {"id": c.get("id", f"call_{i}"), "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
        for i, c in enumerate(tool_calls or [])
    ]
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-fault", "object": "chat.completion", "created": 0, "model": "fault-model",
        "choices": [{"index": 0, "finish_reason": finish_reason, "message": message}],
        "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


DEFAULT_REPLY = completion([{"name": "view_file", "arguments": json.dumps({"path": "users/service.py", "end_line": 3})}])


class LoopbackServer:
    """A ``ThreadingHTTPServer`` on a free loopback port, served from a thread while used as a
    context manager; ``url`` is its ``/v1`` root. Subclasses call ``_serve`` with their handler."""

    def _serve(self, handler: type[BaseHTTPRequestHandler], *, block_on_close: bool = True) -> None:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = block_on_close
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._httpd.server_port}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class FaultServer(LoopbackServer):
    """The server; use as a context manager (``url`` is valid inside)."""

    def __init__(self, responder: Responder | None = None, *, keep_requests: bool = True,
                 on_request: Callable[[str, dict[str, Any], dict[str, Any] | None], None] | None = None,
                 owned_by: str | None = None) -> None:
        self.responder = responder or (lambda body: DEFAULT_REPLY)
        self.owned_by = owned_by
        self.requests: list[tuple[str, dict[str, Any] | None]] = []
        self.raw_requests: list[bytes] = []
        self.counts: Counter[str] = Counter()
        self.keep_requests = keep_requests
        self.on_request = on_request
        self._plan: deque[Fault] = deque()
        self._random: tuple[float, list[Fault], random.Random] | None = None
        self._lock = threading.Lock()
        self._serve(self._handler_class(), block_on_close=False)  # a handler still sleeping in a timeout fault is not waited for

    @property
    def count(self) -> int:
        """Requests received so far."""
        return self.counts.total()

    def inject(self, kind: str, times: int = 1, **options: Any) -> FaultServer:
        """Answer the next ``times`` requests (after those already planned) with fault ``kind``."""
        with self._lock:
            self._plan.extend([(kind, options)] * times)
        return self

    def random_faults(self, rate: float, kinds: Sequence[Fault], seed: int | None = None) -> FaultServer:
        """After the planned faults, answer each request with one of ``kinds`` (``(kind, options)``,
        drawn uniformly) with probability ``rate``; ``rate`` 0 switches random faults off."""
        with self._lock:
            self._random = (rate, list(kinds), random.Random(seed)) if rate > 0 and kinds else None
        return self

    def clear(self) -> None:
        """Drop the faults not yet used, random ones included: answer properly from now on."""
        with self._lock:
            self._plan.clear()
            self._random = None

    def _next(self, body: dict[str, Any] | None, raw: bytes = b"") -> Fault:
        with self._lock:
            if self._plan:
                kind, options = self._plan.popleft()
            elif self._random is not None and self._random[2].random() < self._random[0]:
                kind, options = self._random[2].choice(self._random[1])
            else:
                kind, options = "ok", {}
            self.counts[kind] += 1
            if self.keep_requests:
                self.requests.append((kind, body))
                self.raw_requests.append(raw)
        if self.on_request is not None:
            self.on_request(kind, options, body)
        return kind, options

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # else each answer waits ~40 ms for a delayed ACK

            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: bytes, content_type: str = "application/json",
                      headers: dict[str, str] | None = None, close: bool = False) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                if close:
                    self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(body)
                self.wfile.flush()

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models") and server.owned_by is not None:
                    models = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": server.owned_by}]}
                    self._send(200, json.dumps(models).encode())
                else:
                    self._send(404, b'{"error": {"message": "not found"}}')

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                kind, opts = server._next(body, raw)
                try:
                    self._answer(kind, opts, body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up first (timeout fault)

            def _answer(self, kind: str, opts: dict[str, Any], body: dict[str, Any] | None) -> None:
                good = json.dumps(server.responder(body or {})).encode()
                if kind == "ok":
                    self._send(200, good)
                elif kind == "timeout":
                    time.sleep(opts.get("delay_s", 2.0))
                    self._send(200, good, close=True)
                    self.close_connection = True
                elif kind == "status":
                    status = opts["status"]
                    headers = {}
                    if "retry_after" in opts:
                        headers["Retry-After"] = str(opts["retry_after"])
                    if "retry_after_ms" in opts:
                        headers["retry-after-ms"] = str(opts["retry_after_ms"])
                    error = {"error": {"message": opts.get("message", f"injected HTTP {status}"), "type": "fault", "code": status}}
                    self._send(status, json.dumps(error).encode(), headers=headers)
                elif kind == "cut":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(good)))
                    self.end_headers()
                    self.wfile.write(good[: len(good) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                elif kind == "drop":
                    self.close_connection = True
                elif kind == "invalid_json":
                    self._send(200, b'{"id": "x", "choices": [{"message": {"role": "assistant", "content": nul')
                elif kind == "html":
                    self._send(200, b"<html><body><h1>502 Bad Gateway</h1></body></html>", content_type="text/html")
                elif kind == "empty_choices":
                    self._send(200, json.dumps({**json.loads(good), "choices": []}).encode())
                elif kind == "no_choices":
                    self._send(200, json.dumps({"id": "x", "object": "chat.completion", "model": "m"}).encode())
                elif kind == "length":
                    reply = json.loads(good)
                    choice = reply["choices"][0]
                    choice["finish_reason"] = "length"
                    for call in choice["message"].get("tool_calls") or []:
                        call["function"]["arguments"] = call["function"]["arguments"][: max(1, len(call["function"]["arguments"]) // 2)]
                    self._send(200, json.dumps(reply).encode())
                else:
                    raise ValueError(f"unknown fault {kind!r}")

        return Handler
