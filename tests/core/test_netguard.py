"""core.netguard's rules on their own: which Host names are this machine's, what counts as the
server's own Origin, which bodies are JSON, and the flag's errors (the attacks on the real apps
are tests/security/test_web_surfaces.py)."""

from __future__ import annotations

import asyncio

import pytest

from core.errors import UserError
from core.netguard import JsonBodies, WebGuard, allowed_hosts, check_host_name


def answer(guard, method: str, headers: dict[str, str], scheme: str = "http") -> int:
    """The status ``guard`` answers (200: it let the request through to the app)."""
    sent = []

    async def app(scope, receive, send):
        sent.append({"type": "http.response.start", "status": 200})

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": method, "scheme": scheme, "path": "/",
             "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()]}
    wrapped = guard(app)
    asyncio.run(wrapped(scope, receive, send))
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def test_host_names_are_normalised_and_bad_ones_refused():
    assert check_host_name(" Horizon.Example.ORG ") == "horizon.example.org"
    assert check_host_name("::1") == "[::1]" and check_host_name("[FD00::0005]") == "[fd00::5]"
    assert check_host_name("192.168.1.5") == "192.168.1.5"
    for bad in ("*", "*.example.org", "horizon.example.org:443", "http://horizon.example.org", "a b", "", "-x.org", "[horizon]"):
        with pytest.raises(UserError, match="--allow-host"):
            check_host_name(bad)
    assert allowed_hosts() == {"127.0.0.1", "localhost", "[::1]"}
    assert allowed_hosts(["box.lan"], bind="10.0.0.5") == {"127.0.0.1", "localhost", "[::1]", "box.lan", "10.0.0.5"}
    assert allowed_hosts(bind="0.0.0.0") == allowed_hosts() == allowed_hosts(bind="::")  # every address: no name of its own


def test_host_header_with_or_without_port_and_look_alikes():
    guard = lambda app: WebGuard(app, allowed_hosts(["box.lan"]), "agent ui")
    for host in ("127.0.0.1", "127.0.0.1:8765", "localhost:1", "LOCALHOST:8765", "[::1]:8765", "[::1]", "box.lan:8765"):
        assert answer(guard, "GET", {"host": host}) == 200, host
    for host in ("localhost.", "localhost:", "localhost:x", "[::1]x", "[::1", "127.0.0.2", "box.lan.evil", "evil.box.lan",
                 "127.0.0.1 :8765", "::1:8765"):
        assert answer(guard, "GET", {"host": host}) == 421, host
    assert answer(guard, "GET", {}) == 421  # no Host at all


def test_origin_must_be_the_servers_own_on_state_changes():
    guard = lambda app: WebGuard(app, allowed_hosts(["box.lan"]), "agent ui")
    own = [("localhost:8765", "http://localhost:8765", "http"), ("[::1]:8765", "http://[::1]:8765", "http"),
           ("box.lan", "https://box.lan", "https"), ("box.lan", "https://box.lan:443", "https"), ("box.lan:80", "http://box.lan", "http")]
    for host, origin, scheme in own:
        assert answer(guard, "POST", {"host": host, "origin": origin}, scheme) == 200, (host, origin)
    foreign = [("localhost:8765", "http://localhost:8766", "http"), ("localhost:8765", "http://127.0.0.1:8765", "http"),
               ("localhost:8765", "https://localhost:8765", "http"), ("box.lan", "http://box.lan", "https"),
               ("localhost:8765", "null", "http"), ("localhost:8765", "file://", "http"), ("localhost:8765", "http://localhost:x", "http")]
    for host, origin, scheme in foreign:
        for method in ("POST", "PUT", "DELETE", "PATCH"):
            assert answer(guard, method, {"host": host, "origin": origin}, scheme) == 403, (method, host, origin)
    assert answer(guard, "GET", {"host": "localhost", "origin": "http://evil.example"}) == 200  # a read changes nothing
    assert answer(guard, "POST", {"host": "localhost"}) == 200  # no Origin: not a browser's cross-site request


def test_only_json_bodies_pass():
    for headers in ({"content-type": "application/json"}, {"content-type": "Application/JSON; charset=utf-8"}, {},
                    {"content-length": "0"}):
        assert answer(JsonBodies, "POST", headers) == 200, headers
    for headers in ({"content-type": "text/plain"}, {"content-type": "application/x-www-form-urlencoded"},
                    {"content-type": "multipart/form-data; boundary=x"}, {"content-type": "application/json-seq"},
                    {"content-type": ""}, {"content-length": "12"}, {"transfer-encoding": "chunked"}):
        assert answer(JsonBodies, "POST", headers) == 415, headers
    assert answer(JsonBodies, "GET", {"content-type": "text/plain"}) == 200
