"""A person answers each model request in place of a model, over the same wire.

``agent run --policy human`` serves an OpenAI-compatible chat-completions endpoint on 127.0.0.1
(an ephemeral port) inside the run's own process, and the run's policy is the ordinary
``OpenAIServerPolicy`` pointed at it. So the request a person answers is exactly what a model
server would get (system prompt, tool schemas, compacted history, budget notes), and the run is
stored like any other: harness changes can be judged with a capable driver, and the runs kept as
expert demonstrations.

The exchange is a folder (``Exchange``): each request is written as ``req-NNNN.json``; the person,
in another terminal (or a program playing a strong model), reads what is new with
``agent human wait DIR`` and answers with ``agent human answer DIR --tool NAME --args JSON``
(repeated for parallel tool calls) or ``--content TEXT``; the answer, ``resp-NNNN.json``, is what
the endpoint returns. Files are replaced atomically, so a reader never sees half a request.
Token counts in the reply's ``usage`` are estimates (characters / 4): no tokenizer is involved.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any

from core.errors import UserError

if TYPE_CHECKING:
    from core.policy.base import PolicyResponse

#: The model name the endpoint reports (``GET /v1/models``) and the run records.
MODEL_NAME = "human"
#: How long the endpoint waits for an answer before replying 504 (seconds): a person may pause.
ANSWER_TIMEOUT_S = 6 * 3600.0


@dataclass
class ToolCallAnswer:
    """One tool call of an answer: the tool's name and its arguments (a JSON object)."""

    name: str
    arguments: dict[str, Any]


class Exchange:
    """The folder through which requests and answers pass (see the module docstring).

    Args:
        folder: made if missing; requests ``req-NNNN.json``, answers ``resp-NNNN.json``, numbered from 1.
    """

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def _path(self, kind: str, number: int) -> Path:
        return self.folder / f"{kind}-{number:04d}.json"

    def _numbers(self) -> list[int]:
        return sorted(int(p.stem.split("-")[1]) for p in self.folder.glob("req-*.json") if p.stem.split("-")[1].isdigit())

    def pending(self) -> int | None:
        """The newest request without an answer, or None."""
        waiting = [n for n in self._numbers() if not self._path("resp", n).exists()]
        return waiting[-1] if waiting else None

    def put_request(self, body: dict[str, Any]) -> int:
        """Store a chat-completions request and return its number. The same messages sent again
        while unanswered (a client's retry) join the pending request instead of making a new one."""
        key = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
        with self._lock:
            waiting = self.pending()
            if waiting is not None and json.loads(self._path("req", waiting).read_text()).get("_key") == key:
                return waiting
            numbers = self._numbers()
            number = (numbers[-1] + 1) if numbers else 1
            _write_atomic(self._path("req", number), {**body, "_key": key})
            return number

    def await_answer(self, number: int, timeout_s: float = ANSWER_TIMEOUT_S, poll_s: float = 0.2) -> dict[str, Any] | None:
        """The answer to request ``number`` once it is written, or None after ``timeout_s`` seconds."""
        path, deadline = self._path("resp", number), time.monotonic() + timeout_s
        while not path.exists():
            if time.monotonic() > deadline:
                return None
            time.sleep(poll_s)
        return json.loads(path.read_text())

    def answer(self, content: str | None, calls: list[ToolCallAnswer]) -> int:
        """Answer the pending request with text and/or tool calls; return its number.

        Raises:
            UserError: no request is waiting, or the answer is empty.
        """
        number = self.pending()
        if number is None:
            raise UserError(f"no request is waiting in {self.folder}; `agent human wait {self.folder}` waits for the next one")
        if not content and not calls:
            raise UserError("an answer needs --content TEXT or at least one --tool NAME --args JSON")
        _write_atomic(self._path("resp", number), {"content": content, "tool_calls": [c.__dict__ for c in calls]})
        return number

    def describe(self, number: int) -> str:
        """What request ``number`` adds to the conversation, as text for the person answering:
        the system prompt and tools on the first request (or when earlier messages changed, e.g.
        after a compaction), then only the messages added since the previous request."""
        request = json.loads(self._path("req", number).read_text())
        messages = request.get("messages") or []
        start, lines = 0, []
        previous = self._path("req", number - 1)
        if previous.exists():
            before = json.loads(previous.read_text()).get("messages") or []
            if messages[: len(before)] == before:
                start = len(before)
            else:
                lines.append("=== earlier messages changed (the history was compacted): the whole conversation follows")
        lines.append(f"=== request {number}: {len(messages)} messages, about {len(json.dumps(messages)) // 4} tokens")
        if start == 0:
            for tool in request.get("tools") or []:
                function = tool.get("function", tool)
                lines.append(f"* tool {function.get('name')}: {function.get('description', '')}\n"
                             f"  parameters: {json.dumps(function.get('parameters', {}))}")  # fmt: skip
        for message in messages[start:]:
            lines.append(_render(message))
        lines.append(f"=== answer: agent human answer {self.folder} --tool NAME --args JSON [--tool ...] | --content TEXT")
        return "\n".join(lines)


def _write_atomic(path: Path, data: dict[str, Any]) -> None:
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(json.dumps(data))
    os.replace(temporary, path)


def _render(message: dict[str, Any]) -> str:
    head = f"--- {message.get('role')}" + (f" (result of {message['tool_call_id']})" if message.get("tool_call_id") else "")
    content = message.get("content")
    if isinstance(content, list):  # content parts: text shown, images named
        content = "\n".join(p.get("text", f"[{p.get('type')}]") if isinstance(p, dict) else str(p) for p in content)
    lines = [head] + ([str(content)] if content else [])
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        lines.append(f"[tool call {call.get('id')}] {function.get('name')}({function.get('arguments')})")
    return "\n".join(lines)


def _reply(number: int, request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions response body carrying the person's answer."""
    message: dict[str, Any] = {"role": "assistant", "content": answer.get("content")}
    calls = [{"id": f"call_{number}_{i}", "type": "function",
              "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments") or {})}}
             for i, c in enumerate(answer.get("tool_calls") or [])]  # fmt: skip
    if calls:
        message["tool_calls"] = calls
    prompt, completion = len(json.dumps(request.get("messages"))) // 4, len(json.dumps(message)) // 4
    return {"id": f"chatcmpl-human-{number}", "object": "chat.completion", "created": int(time.time()), "model": MODEL_NAME,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}  # fmt: skip


class HumanEndpoint:
    """The OpenAI-compatible endpoint on 127.0.0.1 that hands each request to ``exchange``.

    Serves ``GET /v1/models`` and ``POST /v1/chat/completions`` on a background thread;
    ``base_url`` is ``http://127.0.0.1:PORT/v1``. ``close()`` stops it.
    """

    def __init__(self, exchange: Exchange, answer_timeout_s: float = ANSWER_TIMEOUT_S) -> None:
        self.exchange = exchange

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # the run's terminal shows steps, not HTTP lines
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    return self._send(200, {"object": "list", "data": [{"id": MODEL_NAME, "object": "model", "owned_by": "horizon"}]})
                self._send(404, {"error": {"message": f"not found: {self.path}"}})

            def do_POST(self) -> None:
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"not found: {self.path}"}})
                request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                number = exchange.put_request(request)
                answer = exchange.await_answer(number, answer_timeout_s)
                if answer is None:
                    return self._send(504, {"error": {"message": f"no answer to request {number} in {answer_timeout_s:.0f} s"}})
                self._send(200, _reply(number, request, answer))

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, name="human-endpoint", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()


class HumanPolicy:
    """The policy ``human``: an ``OpenAIServerPolicy`` talking to a ``HumanEndpoint`` over ``exchange``.

    Args:
        folder: the exchange folder (``Exchange``).
        answer_timeout_s: how long one request waits for its answer (seconds); the client's own
            timeout is a minute longer, and a timed-out request is not retried (the run stops,
            resumably, as with a dead model server).
    """

    def __init__(self, folder: Path, answer_timeout_s: float = ANSWER_TIMEOUT_S) -> None:
        self.exchange = Exchange(folder)
        self.endpoint = HumanEndpoint(self.exchange, answer_timeout_s)
        from core.policy.openai_server import OpenAIServerPolicy  # the wire client: only the run side needs it
        from core.policy.retry import RetryConfig

        self._server = OpenAIServerPolicy(self.endpoint.base_url, MODEL_NAME, timeout_s=answer_timeout_s + 60,
                                          retry=RetryConfig(max_attempts=1), engine="unknown")  # fmt: skip
        self.name = f"human:{folder}"

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """The person's next assistant turn; see ``Policy.complete``."""
        return self._server.complete(messages, tools)

    def close(self) -> None:
        """Close the client and stop the endpoint."""
        self._server.close()
        self.endpoint.close()
