"""What a request to ``agent server`` (and ``agent ui``'s start form) may choose, and its sizes
(issue 26, build items 2 and 4; ``core.service.bounds``).

Each test is an attack a network client (or a page filling the UI's form) tried on the service:
a repository outside the server's roots, a model server of its choosing (the key and the
repository's content would go there), the sandbox off, bodies and queues without end, and the
failures the service must name in one line: a damaged queue, a damaged run store, a full disk.
The HTTP API is the real app served by uvicorn on 127.0.0.1 (``serve_api``) or Starlette's test
client; the start-up and the full disk go through the real command line in its own process.
"""

from __future__ import annotations

import errno
import json
import os
import random
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("uvicorn", reason="the service extra is not installed (pip install -e '.[service]')")

import httpx
import uvicorn
from starlette.testclient import TestClient

from core.errors import HorizonError
from core.service import worker
from core.service.app import create_app
from core.service.bounds import LIST_MAX, MAX_BODY_BYTES, TASK_LISTED_CHARS, Bounds
from core.service.queue import RunQueue, queue_path
from core.ui import actions
from core.ui.app import create_app as create_ui

ROOT = Path(__file__).resolve().parents[2]
NOTES_PLUGIN = ROOT / "tests" / "notes_plugin"
AGENT = "import sys; from core.cli import main; sys.argv[0] = 'agent'; main()"  # the `agent` command, this checkout's code

TOKEN = "test-token-of-the-service-bounds-0123456789"  # the API's bearer token (core.netguard)
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FIX = [{"tool": "edit_file", "arguments": {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}},
       {"tool": "finish", "arguments": {"summary": "the answer is written"}}]  # fmt: skip


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def agent_env(home: Path) -> dict[str, str]:
    """An ``agent`` process's environment: this checkout first, the test plugin, the test's home."""
    env = {**os.environ, "HORIZON_HOME": str(home), "HORIZON_TEST_ENV": "horizon",
           "PYTHONPATH": os.pathsep.join((str(ROOT), str(NOTES_PLUGIN)))}  # fmt: skip
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    return env


def agent(home: Path, *args: str, cwd: Path = ROOT, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", AGENT, *args], cwd=cwd, env=agent_env(home), capture_output=True, text=True,
                          timeout=timeout, check=False)


@pytest.fixture
def roots(tmp_path: Path, notes_plugin: str) -> dict[str, Path]:
    """A server root holding a ``notes`` repository and a script; outside it, a folder with a secret."""
    root = tmp_path / "repos"
    repo = root / "notes"
    repo.mkdir(parents=True)
    (repo / "log.md").write_text("# Log\n")
    (repo / "ANSWER.txt").write_text("todo\n")
    script = root / "fix.jsonl"
    script.write_text("".join(json.dumps(c) + "\n" for c in FIX))
    secret = tmp_path / "elsewhere"
    secret.mkdir()
    (secret / "id_rsa").write_text("PRIVATE KEY\n")
    (secret / "ANSWER.txt").write_text("todo\n")
    (secret / "calls.jsonl").write_text("".join(json.dumps(c) + "\n" for c in FIX))
    return {"root": root, "repo": repo, "script": script, "secret": secret}


def client_for(home: Path, bounds: Bounds, **kwargs) -> TestClient:  # type: ignore[no-untyped-def]
    """A test client of the service's app, addressed and authorised as netguard wants (Host 127.0.0.1, the token)."""
    return TestClient(create_app(RunQueue(queue_path(home)), home, token=TOKEN, bounds=bounds), base_url="http://127.0.0.1:8766",
                      headers=AUTH, **kwargs)


@contextmanager
def serve_api(home: Path, bounds: Bounds) -> Iterator[str]:
    """The service's real HTTP app under uvicorn on 127.0.0.1 in a thread (no Ray: the scheduler
    is not what is attacked); yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(RunQueue(queue_path(home)), home, token=TOKEN, bounds=bounds), host="127.0.0.1",
                                           port=port, log_level="warning", lifespan="off"))  # fmt: skip
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


class Recorder:
    """A model server on 127.0.0.1 that records every request (path, headers, body) and answers
    500, so that a run using it ends at once with a model error."""

    def __init__(self) -> None:
        self.requests: list[dict] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                recorder.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body.decode("utf-8", "replace")})
                self.send_response(500)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "recorded"}}')

            do_GET = do_POST = do_PUT = _any

            def log_message(self, *args) -> None:  # type: ignore[no-untyped-def]
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def seen(self) -> str:
        return json.dumps(self.requests)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.attack("SB01", "a submit names a repository (or script) outside the server's --repo-root folders, or a link under a root that points out",
                    "400 'outside the folders this server may read'; nothing queued; the UI's start form refuses the same")
def test_repositories_and_scripts_only_under_the_roots(horizon_home, roots, tmp_path, observe):
    root, repo, secret = roots["root"], roots["repo"], roots["secret"]
    (root / "link-out").symlink_to(secret)  # a folder link under the root, out of it
    (root / "notes-link").symlink_to(repo)  # a link that stays inside: fine
    (repo / "script-out.jsonl").symlink_to(secret / "calls.jsonl")
    bounds = Bounds.make([root])
    client = client_for(horizon_home, bounds)
    base = {"plugin": "notes", "task": "write done", "policy": "scripted", "script": str(roots["script"])}
    outside = [{"repo": "/etc"}, {"repo": str(secret)}, {"repo": str(Path.home())}, {"repo": str(root / "link-out")},
               {"repo": str(root / ".." / "elsewhere")}, {"repo": "~"}, {"repo": str(repo), "script": str(secret / "calls.jsonl")},
               {"repo": str(repo), "script": str(repo / "script-out.jsonl")}]  # fmt: skip
    answers = [client.post("/api/runs", json={**base, **given}) for given in outside]
    observe("; ".join(f"{a.status_code} {a.json().get('error', '')[:60]}" for a in answers[:3]))
    for given, answer in zip(outside, answers, strict=True):
        assert answer.status_code == 400 and "outside the folders this server may read" in answer.json()["error"], (given, answer.json())
    queue = RunQueue(queue_path(horizon_home))
    assert queue.count() == 0
    queue.record_bounds(bounds.to_json())  # as agent server does at start: the UI checks its form against them
    for repo_given in ("/etc", str(secret), str(root / "link-out")):
        with pytest.raises(Exception, match="outside the folders this server may read"):
            actions.start_run({**base, "repo": repo_given}, horizon_home)
    assert RunQueue(queue_path(horizon_home)).count() == 0

    inside = client.post("/api/runs", json={**base, "repo": str(root / "notes-link")})
    assert inside.status_code == 201, inside.json()
    row = RunQueue(queue_path(horizon_home)).get(inside.json()["run_id"])
    assert row["request"]["repo"] == str(repo) and row["request"]["isolated"] is True  # resolved: the link's target


@pytest.mark.attack("SB02", "a submit sets base_url (or names an unconfigured model_server) to send the run to a model server of its choosing",
                    "400 saying how to configure a named server; a configured name is taken, with that server's own key")
def test_model_servers_only_by_configured_name(horizon_home, roots, monkeypatch, observe):
    (horizon_home).mkdir(parents=True, exist_ok=True)
    (horizon_home / "config.toml").write_text('[model_servers.gpu2]\nbase_url = "http://gpu-2:8000/v1"\nmodel = "big"\n'
                                              'api_key_env = "GPU2_KEY"\n')  # fmt: skip
    monkeypatch.setenv("HORIZON_BASE_URL", "http://configured:8000/v1")
    monkeypatch.setenv("HORIZON_MODEL", "small")
    client = client_for(horizon_home, Bounds.make([roots["root"]]))
    base = {"plugin": "notes", "task": "write done", "repo": str(roots["repo"])}
    by_url = client.post("/api/runs", json={**base, "base_url": "http://attacker.example/v1"})
    observe(f"{by_url.status_code} {by_url.json().get('error', '')[:120]}")
    assert by_url.status_code == 400 and "[model_servers.NAME]" in by_url.json()["error"] and "model_server" in by_url.json()["error"]
    unknown = client.post("/api/runs", json={**base, "model_server": "http://attacker.example/v1"})
    assert unknown.status_code == 400 and "no model server named" in unknown.json()["error"] and "gpu2" in unknown.json()["error"]
    queue = RunQueue(queue_path(horizon_home))
    assert queue.count() == 0

    named = client.post("/api/runs", json={**base, "model_server": "gpu2"})
    default = client.post("/api/runs", json={**base, "model": "other-model"})
    assert named.status_code == default.status_code == 201, (named.json(), default.json())
    spec = queue.get(named.json()["run_id"])["request"]["policy"]
    assert (spec["kind"], spec["base_url"], spec["model"], spec["api_key_env"]) == ("openai", "http://gpu-2:8000/v1", "big", "GPU2_KEY")
    spec = queue.get(default.json()["run_id"])["request"]["policy"]
    assert (spec["base_url"], spec["model"]) == ("http://configured:8000/v1", "other-model") and "api_key_env" not in spec


@pytest.mark.attack("SB03", "a submit sets isolated: false (its shell would run on the host as the server's user)",
                    "400 on every server; a --no-sandbox server takes runs only from 127.0.0.1 and only binds loopback")
def test_the_sandbox_is_never_a_requests_choice(horizon_home, roots, observe):
    base = {"plugin": "notes", "task": "write done", "repo": str(roots["repo"]), "policy": "scripted", "script": str(roots["script"])}
    sandboxed = client_for(horizon_home, Bounds.make([roots["root"]]))
    off = sandboxed.post("/api/runs", json={**base, "isolated": False})
    observe(f"{off.status_code} {off.json().get('error', '')[:100]}")
    assert off.status_code == 400 and "cannot turn the sandbox off" in off.json()["error"]
    assert sandboxed.post("/api/runs", json={**base, "isolated": True}).status_code == 201

    unsandboxed = Bounds.make([roots["root"]], sandbox=False)
    local = client_for(horizon_home, unsandboxed, client=("127.0.0.1", 5000))
    remote = client_for(horizon_home, unsandboxed, client=("192.0.2.7", 5000))
    assert local.post("/api/runs", json={**base, "isolated": False}).status_code == 400  # refused there too: the owner's flag decides
    assert local.post("/api/runs", json={**base, "isolated": True}).status_code == 400  # a sandbox it would not get
    # refused before the route: a loopback Host from a peer that is not loopback is a forged one (421, WB06)
    assert remote.post("/api/runs", json=base).status_code in (403, 421)
    taken = local.post("/api/runs", json=base)
    assert taken.status_code == 201
    assert RunQueue(queue_path(horizon_home)).get(taken.json()["run_id"])["request"]["isolated"] is False

    wide = agent(horizon_home, "server", "--no-sandbox", "--host", "0.0.0.0", "--port", str(free_port()), "--repo-root", str(roots["root"]))
    assert wide.returncode != 0 and "--no-sandbox" in wide.stdout and "Traceback" not in wide.stdout + wide.stderr, wide


@pytest.mark.attack("SB04", "every field of a submit and of the UI's start form names a model server on 127.0.0.1 that records what it gets",
                    "it never receives a request: not the key, not the repository; the configured servers get their own keys only")
def test_the_key_and_the_repository_never_reach_a_server_a_request_names(horizon_home, roots, monkeypatch, observe):
    attacker, configured, named = Recorder(), Recorder(), Recorder()
    token = "REPO-CONTENT-7f3a9c"
    (roots["repo"] / f"{token}.md").write_text(f"{token}\n")  # the setup text lists the files: in the first model request
    for var, value in {"HORIZON_BASE_URL": configured.url, "HORIZON_MODEL": "m", "HORIZON_API_KEY": "sk-user-secret-1",
                       "SECOND_KEY": "sk-second-2", "HORIZON_RETRY_MAX_ATTEMPTS": "1"}.items():  # fmt: skip
        monkeypatch.setenv(var, value)
    url = attacker.url
    base = {"plugin": "notes", "task": "write done", "repo": str(roots["repo"])}
    bodies = [{**base, "base_url": url}, {**base, "base_url": url, "policy": "openai"}, {**base, "model_server": url},
              {**base, "model": url}, {**base, "tool_format": url}, {**base, "policy": url}, {**base, "repo": url},
              {**base, "script": url, "policy": "scripted"}, {**base, "api_base": url}, {**base, "openai_base_url": url},
              {**base, "limits": {"base_url": url}}, {**base, "task": f"use {url}"}, base]  # fmt: skip
    forms = [{**base, "base_url": url}, {**base, "model_server": url}, {**base, "model": url}]
    queue = RunQueue(queue_path(horizon_home))
    bounds = Bounds.make([roots["root"]])
    queue.record_bounds(bounds.to_json())  # as agent server does: the UI's form is checked inside the same roots
    client = client_for(horizon_home, bounds)

    def submit_and_run(bodies: list[dict], forms: list[dict]) -> list[int | str]:
        """Each body's status code, then each form's outcome ("queued" or the refusal); then every queued run executed."""
        codes: list[int | str] = [client.post("/api/runs", json=body).status_code for body in bodies]
        for form in forms:
            try:
                actions.start_run({k: str(v) for k, v in form.items()}, horizon_home)
                codes.append("queued")
            except HorizonError as exc:  # a refusal is what is hoped for; only what reaches the recorder counts
                codes.append(str(exc))
        for row in queue.rows():  # what was taken runs, as the service's worker runs it
            if row["state"] == "queued":
                worker.execute_queued_run(row["run_id"], row["request"], str(horizon_home))
                queue.set_state(row["run_id"], "done")
        return codes

    try:
        codes = submit_and_run(bodies, forms)
        shown = [c if isinstance(c, int) or c == "queued" else "refused" for c in codes]
        observe(f"API: {' '.join(map(str, shown[:len(bodies)]))}; UI form: {' '.join(map(str, shown[len(bodies):]))}; "
                f"the recorder got {len(attacker.requests)} request(s)")
        assert attacker.requests == [], attacker.seen()[:2000]
        assert configured.requests and token in configured.seen()  # the runs called the configured server (not vacuous)
        assert all(r["headers"].get("authorization") == "Bearer sk-user-secret-1" for r in configured.requests)
        assert codes[:3] == [400, 400, 400] and "model_servers.NAME" in codes[len(bodies)]  # the form's base_url: refused too
        assert "no model server named" in codes[len(bodies) + 1] and codes[len(bodies) + 2] == "queued"  # a model *name*: run

        # a named server gets its own key, never the user's; naming it with a URL beside it changes nothing
        (horizon_home / "config.toml").write_text(f'[model_servers.second]\nbase_url = "{named.url}"\nmodel = "m2"\n'
                                                  'api_key_env = "SECOND_KEY"\n')  # fmt: skip
        codes = submit_and_run([{**base, "model_server": "second", "base_url": url}, {**base, "model_server": "second"}],
                               [{**base, "model_server": "second", "base_url": url}])
        assert codes[:2] == [400, 201] and "model_servers.NAME" in codes[2] and attacker.requests == [], attacker.seen()[:2000]
        assert named.requests and token in named.seen()
        assert all(r["headers"].get("authorization") == "Bearer sk-second-2" for r in named.requests)
    finally:
        for recorder in (attacker, configured, named):
            recorder.close()


def _rss_kib() -> int:
    return int(next(line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmRSS:")).split()[1])


def _send_until_answered(url: str, head: bytes, chunk: bytes, most: int) -> tuple[bytes, int]:
    """Send ``head`` then ``chunk`` after chunk (up to ``most`` bytes) until the server answers;
    return (the answer's first bytes, body bytes sent before it came)."""
    host, port = url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(head)
        sock.setblocking(False)
        sent, answer = 0, b""
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                answer += sock.recv(65536)
                if answer:
                    break
            except BlockingIOError:
                pass
            if sent < most:
                try:
                    sent += sock.send(chunk)
                except BlockingIOError:
                    time.sleep(0.001)
                except (BrokenPipeError, ConnectionResetError):
                    break
            else:
                time.sleep(0.01)
        sock.setblocking(True)
        sock.settimeout(10)
        try:
            while b"\r\n\r\n" not in answer:
                more = sock.recv(65536)
                if not more:
                    break
                answer += more
        except (TimeoutError, ConnectionResetError):
            pass
    return answer, sent


@pytest.mark.attack("SB05", "a 400 MB submit (one task of 400 MB), with a Content-Length and chunked without one",
                    "413 after at most the cap was read: the rest is never read or held in memory")
def test_a_huge_body_is_refused_before_it_is_read(horizon_home, roots, observe):
    big = 400 * 1024 * 1024
    chunk = b"a" * 65536
    before = _rss_kib()
    with serve_api(horizon_home, Bounds.make([roots["root"]])) as url:
        head = (b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\n"
                b"Content-Length: %d\r\n\r\n{\"plugin\": \"notes\", \"task\": \"" % (TOKEN.encode(), big))  # fmt: skip
        answer, sent = _send_until_answered(url, head, chunk, 64 * 1024 * 1024)
        head_chunked = (b"POST /api/runs HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAuthorization: Bearer %s\r\n"
                        b"Transfer-Encoding: chunked\r\n\r\n" % TOKEN.encode())  # fmt: skip
        framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        chunked_answer, chunked_sent = _send_until_answered(url, head_chunked, framed, 64 * 1024 * 1024)
        with httpx.Client(base_url=url, headers=AUTH) as client:  # a task over its size in a body under the cap: 400, named
            long_task = client.post("/api/runs", json={"plugin": "notes", "task": "x" * 100_001, "repo": str(roots["repo"])})
    grew_mib = (_rss_kib() - before) / 1024
    observe(f"Content-Length: {answer[:12]!r} after {sent / 2**20:.1f} MiB sent; chunked: {chunked_answer[:12]!r} after "
            f"{chunked_sent / 2**20:.1f} MiB; memory grew {grew_mib:.0f} MiB")
    assert answer.startswith(b"HTTP/1.1 413") and sent < 32 * 1024 * 1024, (answer[:200], sent)
    assert chunked_answer.startswith(b"HTTP/1.1 413"), chunked_answer[:200]
    assert chunked_sent < 32 * 1024 * 1024  # answered once the cap (1 MiB) was read, not after 64 MiB
    assert grew_mib < 100  # loosely: the 400 MB were never held
    assert long_task.status_code == 400 and "task" in long_task.json()["error"]
    assert RunQueue(queue_path(horizon_home)).count() == 0
    assert MAX_BODY_BYTES <= 1024 * 1024


@pytest.mark.attack("SB06", "GET /api/runs over many runs with long tasks, and a page larger than the maximum",
                    "a page of at most the limit (default 100, at most 1000), tasks clipped, Link to the next page; limit 5000: 400")
def test_the_listing_pages_and_clips(horizon_home, roots, observe):
    client = client_for(horizon_home, Bounds.make([roots["root"]]))
    body = {"plugin": "notes", "task": "x" * 5000, "repo": str(roots["repo"]), "policy": "scripted", "script": str(roots["script"])}
    ids = [client.post("/api/runs", json=body).json()["run_id"] for _ in range(5)]
    first = client.get("/api/runs", params={"limit": 2})
    observe(f"{len(first.json())} rows, Link {first.headers.get('link')}, task {len(first.json()[0]['task'])} chars")
    assert [r["run_id"] for r in first.json()] == ids[:2]
    assert first.headers["x-total-count"] == "5" and 'offset=2>; rel="next"' in first.headers["link"]
    assert all(len(r["task"]) == TASK_LISTED_CHARS and r["task_chars"] == 5000 for r in first.json())
    last = client.get("/api/runs", params={"limit": 2, "offset": 4})
    assert [r["run_id"] for r in last.json()] == ids[4:] and "link" not in last.headers
    assert len(client.get(f"/api/runs/{ids[0]}").json()["task"]) == 5000  # the run itself: all of it
    for bad in ({"limit": LIST_MAX + 1}, {"limit": 0}, {"limit": "ten"}, {"offset": -1}):
        answer = client.get("/api/runs", params=bad)
        assert answer.status_code == 400 and ("limit" in answer.json()["error"] or "offset" in answer.json()["error"]), bad


@pytest.mark.attack("SB07", "1,000 submits at once against a server whose cap is the default (100 runs queued or running)",
                    "exactly 100 taken, the other 900 answered 429 with Retry-After and a message naming --max-queued")
def test_the_queue_has_a_cap(horizon_home, roots, observe):
    body = {"plugin": "notes", "task": "write done", "repo": str(roots["repo"]), "policy": "scripted", "script": str(roots["script"])}
    bounds = Bounds.make([roots["root"]])  # the default cap
    with serve_api(horizon_home, bounds) as url, httpx.Client(base_url=url, timeout=120, headers=AUTH,
                                                              limits=httpx.Limits(max_connections=16)) as client:  # fmt: skip
        with ThreadPoolExecutor(16) as pool:
            answers = list(pool.map(lambda _: client.post("/api/runs", json=body), range(1000)))
        codes = [a.status_code for a in answers]
        observe(f"{codes.count(201)} taken, {codes.count(429)} answered 429")
        full = next(a for a in answers if a.status_code == 429)
        assert codes.count(201) == bounds.max_queued == 100 and codes.count(429) == 900
        assert full.headers["retry-after"].isdigit() and "--max-queued 100" in full.json()["error"]
    queue = RunQueue(queue_path(horizon_home))
    assert queue.count() == queue.active() == 100
    queue.set_state(queue.rows()[0]["run_id"], "done")  # one ended: room for one more, from the UI's form too
    form = {k: str(v) for k, v in body.items()}
    queue.record_bounds(bounds.to_json())  # as agent server does at start
    actions.start_run(form, horizon_home)
    with pytest.raises(Exception, match="the queue is full"):
        actions.start_run(form, horizon_home)
    assert queue.active() == 100


def _garbled(path: Path) -> bytes:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(random.Random(26).randbytes(64 * 1024))
    return path.read_bytes()


def _truncated(path: Path) -> bytes:
    queue = RunQueue(path)
    for i in range(300):
        queue.submit({"plugin": "notes", "task": f"task {i} " + "y" * 2000, "repo": "", "policy": {"kind": "scripted"}})
    import sqlite3

    with sqlite3.connect(path) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    return path.read_bytes()


@pytest.mark.parametrize("damage", [_garbled, _truncated], ids=["random-bytes", "truncated"])
@pytest.mark.attack("SB08", "queue.sqlite garbled (random bytes) or cut in half, then agent server started (and agent ui's page shown)",
                    "one line 'damaged: <file> (...)' with what to do, a non-zero exit (the UI: the line on its page), the file kept byte for byte")
def test_a_damaged_queue_is_one_line_and_kept(horizon_home, damage, observe):
    path = queue_path(horizon_home)
    before = damage(path)
    done = agent(horizon_home, "server", "--port", str(free_port()))
    out = (done.stdout + done.stderr).strip()
    observe(f"exit {done.returncode}: {out.splitlines()[-1][:300] if out else ''}")
    lines = [line for line in out.splitlines() if line.strip()]
    assert done.returncode != 0 and len(lines) == 1, out
    assert lines[0].startswith(f"error: damaged: {path}") and "mv " in lines[0], out
    assert "Traceback" not in out and "bug in Horizon" not in out
    page = TestClient(create_ui(horizon_home), base_url="http://127.0.0.1:8765").get("/")  # agent ui over the same home: the line, and the runs page still served
    assert page.status_code == 200 and f"damaged: {path}" in page.text
    assert path.read_bytes() == before  # kept, byte for byte


@pytest.mark.attack("SB08b", "a run's trajectory.duckdb garbled under a running service, then the run asked for",
                    "store_status 'damaged' and the store's one line ('damaged: <file> ...') in GET /api/runs/{id}")
def test_a_damaged_run_store_is_named_by_the_api(horizon_home, roots, observe):
    client = client_for(horizon_home, Bounds.make([roots["root"]]))
    run_id = client.post("/api/runs", json={"plugin": "notes", "task": "write done", "repo": str(roots["repo"]), "policy": "scripted",
                                            "script": str(roots["script"])}).json()["run_id"]  # fmt: skip
    store = horizon_home / "runs" / run_id / "trajectory.duckdb"
    store.parent.mkdir(parents=True)
    store.write_bytes(random.Random(8).randbytes(300_000))
    shown = client.get(f"/api/runs/{run_id}").json()
    observe(f"{shown['store_status']}: {shown.get('store_error', '')[:120]}")
    assert shown["store_status"] == "damaged" and shown["store_error"].startswith(f"damaged: {store}")


@contextmanager
def small_disk(where: Path, size: str) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted at ``where`` (root only; skipped where mounting is refused)."""
    where.mkdir(parents=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)], capture_output=True, text=True,
                             check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here (needs root and mount permission): {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.attack("SB09", "HORIZON_HOME on a 24 MiB disk; a notes run's command fills it in the middle of the run",
                    "one line naming the run's folder and 'agent resume RUN_ID', a non-zero exit; after freeing space the resume "
                    "finishes with every step once")
def test_a_full_disk_mid_run_is_one_line_and_resumable(tmp_path, notes_plugin, notes_folder, observe):
    with small_disk(tmp_path / "disk", "24m") as disk:
        home = disk / "home"
        calls = [{"tool": "edit_file", "arguments": {"path": "log.md", "old_text": "<!-- end -->", "new_text": "step one\n<!-- end -->"}},
                 # fills the disk once (a resumed run that repeats the step does not fill it again)
                 {"tool": "shell", "arguments": {"command": "[ -e once ] || { touch once; head -c 64M /dev/zero > fill.bin; }; echo filled"}},
                 FIX[0], FIX[1]]  # fmt: skip
        script = tmp_path / "calls.jsonl"
        script.write_text("".join(json.dumps(c) + "\n" for c in calls))
        stopped = agent(home, "run", "notes", "write done", "--repo", str(notes_folder), "--policy", "scripted", "--script", str(script))
        out = stopped.stdout + stopped.stderr
        (run_id,) = [p.name for p in (home / "runs").iterdir()]
        folder = home / "runs" / run_id
        errors = [line for line in out.splitlines() if line.startswith("error:")]
        observe(f"exit {stopped.returncode}: {errors[0][:250] if errors else out[-250:]}")
        assert stopped.returncode != 0 and len(errors) == 1, out
        assert "no space left" in errors[0] and str(folder) in errors[0] and f"agent resume {run_id}" in errors[0], out
        assert "Traceback" not in out and "bug in Horizon" not in out, out
        with pytest.raises(OSError) as full:
            (disk / "probe").write_bytes(b"x" * 65536)
        assert full.value.errno == errno.ENOSPC  # the disk was full indeed

        (folder / "workspace" / "fill.bin").unlink()  # free space
        resumed = agent(home, "resume", run_id)
        assert resumed.returncode == 0, resumed.stdout + resumed.stderr
        from core.runs import reading_store

        with reading_store(run_id, home) as store:
            run, tools = store.run(), store.tool_call_records()
        assert run["status"] == "finished" and run["reward"] == 1.0, run
        assert [t["tool"] for t in tools] == ["edit_file", "shell", "edit_file", "finish"]  # each step once, none lost
        assert (folder / "workspace" / "log.md").read_text() == "# Log\nstep one\n<!-- end -->\n"


@pytest.mark.attack("SB09b", "HORIZON_HOME on an 8 MiB disk; agent run on a repository of 16 MiB (the copy fills the disk before the run exists)",
                    "one line naming the runs folder, a non-zero exit, no half-made run folder left behind")
def test_a_full_disk_while_a_run_is_made_is_one_line(tmp_path, notes_plugin, notes_folder, observe):
    (notes_folder / "big.bin").write_bytes(os.urandom(16 * 1024 * 1024))
    script = tmp_path / "calls.jsonl"
    script.write_text("".join(json.dumps(c) + "\n" for c in FIX))
    with small_disk(tmp_path / "disk", "8m") as disk:
        home = disk / "home"
        done = agent(home, "run", "notes", "write done", "--repo", str(notes_folder), "--policy", "scripted", "--script", str(script))
        out = done.stdout + done.stderr
        errors = [line for line in out.splitlines() if line.startswith("error:")]
        observe(f"exit {done.returncode}: {errors[0][:200] if errors else out[-200:]}")
        assert done.returncode != 0 and len(errors) == 1 and "no space left" in errors[0] and str(home / "runs") in errors[0], out
        assert "Traceback" not in out and "bug in Horizon" not in out, out
        assert list((home / "runs").iterdir()) == []  # the half-made run is gone: nothing for agent runs to trip over
