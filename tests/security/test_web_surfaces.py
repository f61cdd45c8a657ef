"""Attacks of a web page on ``agent server`` and ``agent ui`` (issue 26; ``core/netguard.py``).

The attacker is any page the user opens in a browser: it can send a form or a CORS-"simple"
``fetch`` to 127.0.0.1 without reading the answer, and, by DNS rebinding (its own name re-pointed
at 127.0.0.1), send requests whose ``Host`` and ``Origin`` are its own name and read the answers.
It cannot set ``Authorization``, read an HttpOnly cookie, or make the browser send a
``SameSite=Strict`` cookie with its own requests.

Each app is the real one (``core.service.app.create_app``, ``core.ui.app.create_app``) over a real
queue and run store in the test's ``HORIZON_HOME``, driven with Starlette's ``TestClient``; the
runs are episodes of the test plugin (``notes``). The routes are read from the apps themselves, so
a route added later is attacked too.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from starlette.routing import Mount, Route
from starlette.testclient import TestClient

from core.service.queue import RunQueue, queue_path
from core.ui.app import create_app as ui_app
from tests.security.web import FIX, UI, finished_run, ui_token

TOKEN = "web-surfaces-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
API = "http://127.0.0.1:8766"
#: Host headers of a page that is not this machine (a rebinding page's own name, look-alikes).
FOREIGN_HOSTS = ["attacker.example:8766", "attacker.example", "localhost.attacker.example:8766", "127.0.0.1.nip.io:8766",
                 "127.0.0.1:8766@attacker.example", ""]


@pytest.fixture
def submit(notes_plugin, notes_folder, tmp_path) -> dict:
    """A submit that ``POST /api/runs`` accepts (a scripted ``notes`` run): what the attacker sends."""
    script = tmp_path / "fix.jsonl"
    script.write_text("".join(json.dumps(call) + "\n" for call in FIX))
    return {"plugin": notes_plugin, "task": "write done in ANSWER.txt", "repo": str(notes_folder), "policy": "scripted",
            "script": str(script)}


@pytest.fixture
def queue(horizon_home) -> RunQueue:
    return RunQueue(queue_path(horizon_home))


@pytest.fixture
def api(queue, horizon_home, tmp_path):
    """The service's app (the token is the one ``agent server`` would read from its token file;
    the test's folder is its repository root, so a well-formed submit is accepted)."""
    from core.service.app import create_app
    from core.service.bounds import Bounds

    return create_app(queue, horizon_home, token=TOKEN, bounds=Bounds.make([tmp_path]))


def concrete_requests(app) -> list[tuple[str, str]]:
    """(method, path) for every route of ``app`` and every method it takes, parameters filled in."""
    found = []
    for route in app.routes:
        if isinstance(route, Route):
            path = re.sub(r"\{[^}:]+:path\}", "a/b.png", route.path)
            path = re.sub(r"\{[^}]+\}", "r1", path)
            found += [(method, path) for method in sorted(route.methods or {"GET"})]
        elif isinstance(route, Mount):
            found += [("GET", route.path + "/style.css"), ("HEAD", route.path + "/style.css")]
        else:
            pytest.fail(f"a route of a kind this test does not know ({route!r}): teach concrete_requests about it")
    return found


def status_of(client: TestClient, method: str, path: str, **kwargs) -> tuple[int, str]:
    """The status and the first bytes of the answer (streamed: an event stream never ends by itself)."""
    with client.stream(method, path, **kwargs) as answer:
        if answer.headers.get("content-type", "").startswith("text/event-stream"):
            return answer.status_code, ""
        return answer.status_code, answer.read()[:2000].decode(errors="replace")




# --------------------------------------------------------------------------------------------
# agent server: forms and simple requests


@pytest.mark.attack(
    "WS01",
    "a web page POSTs a valid submit to agent server's /api/runs as a CORS-simple request: Content-Type "
    "text/plain, an HTML form (urlencoded, text/plain), or no Content-Type; with and without the token",
    "415 before the body is read, nothing queued",
)
def test_form_and_simple_posts_to_the_api_are_refused(api, queue, submit, observe):
    client = TestClient(api, base_url=API)
    as_json = json.dumps(submit)
    attempts = {
        "text/plain": ({"content-type": "text/plain"}, as_json),
        "text/plain form": ({"content-type": "text/plain"}, f"{as_json[:-1]}, \"x\": \"=\"}}"),  # name=value, as a form sends it
        "urlencoded form": ({"content-type": "application/x-www-form-urlencoded"}, as_json),
        "no Content-Type": ({}, as_json),
    }
    seen = []
    for with_token in (False, True):
        for name, (headers, body) in attempts.items():
            answer = client.post("/api/runs", content=body.encode(), headers={**headers, **(AUTH if with_token else {})})
            seen.append(f"{name}{' +token' if with_token else ''}: {answer.status_code}")
            assert answer.status_code == 415, (name, with_token, answer.status_code, answer.text)
            assert "application/json" in answer.json()["error"]
    assert queue.rows() == []
    control = client.post("/api/runs", json=submit, headers=AUTH)  # the documented client works
    assert control.status_code == 201, control.text
    observe("; ".join(seen) + f"; queued by them: 0; a JSON submit with the token: {control.status_code}")


# --------------------------------------------------------------------------------------------
# DNS rebinding: a foreign Host on every route


@pytest.mark.attack(
    "WS02",
    "a DNS-rebinding page requests every route of agent server and agent ui (each method, read from the apps' "
    "routes) with its own name as Host (attacker.example:PORT, look-alikes of localhost, none), the token and a "
    "valid form cookie and token included",
    "421 Misdirected Request naming the host and --allow-host, nothing queued; the same requests with Host "
    "127.0.0.1 are served",
)
def test_a_foreign_host_gets_421_on_every_route_of_both_apps(api, queue, horizon_home, observe):
    ui = ui_app(horizon_home, poll_s=0.05)
    own_ui = TestClient(ui, base_url=UI)
    csrf = ui_token(own_ui.get("/").text)  # a real cookie and form token, as the user's own tab has them
    assert csrf and "horizon_form" in own_ui.cookies
    counted = 0
    for app, base, extra in ((api, API, AUTH), (ui, UI, {})):
        client = TestClient(app, base_url=base, cookies=own_ui.cookies if app is ui else None)
        requests = concrete_requests(app)
        assert len(requests) >= (7 if app is api else 15), requests
        for method, path in requests:
            body = {"data": {"csrf": csrf}} if method == "POST" and app is ui else {}
            for host in FOREIGN_HOSTS:
                status, text = status_of(client, method, path, headers={**extra, "host": host}, **body)
                assert status == 421, (method, path, host, status, text)
                if method != "HEAD":
                    assert "--allow-host" in text and f"Host {host!r}" in text, text
                counted += 1
            own, _ = status_of(client, method, path, headers=extra, **body)
            assert own != 421, (method, path)
    assert queue.rows() == []
    observe(f"{counted} requests over {len(concrete_requests(api))} service and {len(concrete_requests(ui))} UI "
            "(method, route) pairs: all 421; nothing queued; with Host 127.0.0.1 none 421")


@pytest.mark.attack(
    "WS03",
    "DNS rebinding end to end: the page (Host and Origin attacker.example) reads the UI's runs page for the form "
    "token and the service's run list, then uses what it read: starts a run through the UI and the API, "
    "reviews and applies a finished run's patch",
    "every step refused (421): no token, no run list, nothing queued, the repository unchanged",
)
def test_a_rebinding_page_reads_nothing_and_changes_nothing(api, queue, horizon_home, notes_folder, submit, observe):
    run_id = finished_run(horizon_home, notes_folder)
    queue.submit({"plugin": "notes", "task": "a secret task", "repo": "/srv/secret-repo", "policy": {"kind": "scripted"}})
    steps = []
    origin_ui, origin_api = "http://attacker.example:8765", "http://attacker.example:8766"
    browser_ui = TestClient(ui_app(horizon_home), base_url=origin_ui, headers={"origin": origin_ui})
    browser_api = TestClient(api, base_url=origin_api, headers={"origin": origin_api})

    page = browser_ui.get("/")  # 1. read the form token the runs page embeds
    steps.append(f"GET / {page.status_code}")
    assert page.status_code == 421 and ui_token(page.text) is None and "horizon_form" not in browser_ui.cookies
    review = browser_ui.get(f"/runs/{run_id}/apply")
    steps.append(f"GET apply {review.status_code}")
    assert review.status_code == 421 and ui_token(review.text) is None and "ANSWER.txt" not in review.text
    runs = browser_api.get("/api/runs")  # 2. read every run (tasks, repository paths)
    steps.append(f"GET /api/runs {runs.status_code}")
    assert runs.status_code == 421 and "secret" not in runs.text
    token = ui_token(page.text) or "no-token-was-read"  # 3. use what it read
    started = browser_ui.post("/runs", data={**{k: v for k, v in submit.items()}, "csrf": token})
    applied = browser_ui.post(f"/runs/{run_id}/apply", data={"csrf": ui_token(review.text) or token})
    queued = browser_api.post("/api/runs", content=json.dumps(submit), headers={"content-type": "text/plain"})
    steps += [f"POST /runs {started.status_code}", f"POST apply {applied.status_code}", f"POST /api/runs {queued.status_code}"]
    assert (started.status_code, applied.status_code, queued.status_code) == (421, 421, 421)
    assert [r["task"] for r in (row["request"] for row in queue.rows())] == ["a secret task"]  # nothing more queued
    assert (notes_folder / "ANSWER.txt").read_text() == "todo\n"
    observe("; ".join(steps) + "; queued: nothing new; ANSWER.txt still todo")


# --------------------------------------------------------------------------------------------
# agent server: the bearer token


@pytest.mark.attack(
    "WS04",
    "a client calls every route of agent server without Authorization, with a wrong token, a longer one, "
    "Basic credentials, or the token without the Bearer scheme",
    "401 with WWW-Authenticate: Bearer, nothing queued; the right token is served",
)
def test_the_api_needs_its_bearer_token_on_every_route(api, queue, submit, observe):
    client = TestClient(api, base_url=API)
    wrong = [{}, {"Authorization": "Bearer wrong-token-0123456789abcdef"}, {"Authorization": f"Bearer {TOKEN}x"},
             {"Authorization": "Basic dXNlcjpwYXNz"}, {"Authorization": TOKEN}, {"Authorization": "Bearer"}]
    counted = 0
    for method, path in concrete_requests(api):
        body = {"json": submit} if method == "POST" else {}
        for headers in wrong:
            answer = client.request(method, path, headers=headers, **body)
            assert answer.status_code == 401, (method, path, headers, answer.status_code)
            assert answer.headers["www-authenticate"].startswith('Bearer realm="horizon"')
            if method != "HEAD":
                assert "server.token" in answer.json()["error"]
            counted += 1
    assert queue.rows() == []
    assert client.get("/api/runs", headers={"Authorization": f"bearer {TOKEN}"}).status_code == 200  # the scheme is case-insensitive
    assert client.post("/api/runs", json=submit, headers=AUTH).status_code == 201
    observe(f"{counted} requests without the right token: all 401 with WWW-Authenticate; with it: 200 and 201")


# --------------------------------------------------------------------------------------------
# agent ui: the form token is bound to the browser's cookie


@pytest.mark.attack(
    "WS05",
    "POSTs to agent ui's start form: with a token read from a page but without the browser's cookie, with "
    "another browser's cookie, with the cookie and token but a foreign Origin (or Origin null)",
    "403 each, nothing queued; the page's own browser (cookie + token + own Origin) starts the run",
)
def test_ui_posts_need_the_browsers_cookie_and_their_own_origin(horizon_home, queue, submit, observe, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no server has recorded its roots: the UI bounds a start by its own working folder
    app = ui_app(horizon_home)
    alice, mallory = TestClient(app, base_url=UI), TestClient(app, base_url=UI)
    alice_token, mallory_token = ui_token(alice.get("/").text), ui_token(mallory.get("/").text)
    cookie = alice.cookies["horizon_form"]
    set_cookie = TestClient(app, base_url=UI).get("/").headers["set-cookie"]
    assert "HttpOnly" in set_cookie and "SameSite=Strict" in set_cookie
    assert alice_token and mallory_token and alice_token != mallory_token  # one token per browser, not per process
    assert cookie not in alice.get("/").text  # the page shows an HMAC of the cookie, not the cookie
    form = {**submit, "csrf": alice_token}
    no_cookie = TestClient(app, base_url=UI)
    answers = {
        "token, no cookie": no_cookie.post("/runs", data=form),
        "token, another browser's cookie": mallory.post("/runs", data=form),
        "cookie, no token": alice.post("/runs", data=submit),
        "cookie and token, Origin attacker": alice.post("/runs", data=form, headers={"origin": "http://attacker.example"}),
        "cookie and token, Origin of another port": alice.post("/runs", data=form, headers={"origin": "http://127.0.0.1:9999"}),
        "cookie and token, Origin null": alice.post("/runs", data=form, headers={"origin": "null"}),
    }
    for name, answer in answers.items():
        assert answer.status_code == 403, (name, answer.status_code, answer.text[:300])
    assert queue.rows() == []
    done = alice.post("/runs", data=form, headers={"origin": UI}, follow_redirects=False)
    assert done.status_code == 303 and len(queue.rows()) == 1
    observe("; ".join(f"{name}: {a.status_code}" for name, a in answers.items()) + f"; own page: {done.status_code}, queued")


# --------------------------------------------------------------------------------------------
# agent server: the token file


@pytest.mark.attack(
    "WS06",
    "the token file: made at first start; then a symbolic link planted at its path (to a file holding a token "
    "the attacker knows, or dangling), a token file others can read, a world-writable folder",
    "a new file of mode 0600, reused by the next start; each planted case refused with a one-line error, the "
    "link neither followed nor written through, the attacker's token never used",
)
def test_the_token_file_is_private_and_never_followed_through_a_link(horizon_home, tmp_path, observe):
    from typer.testing import CliRunner

    from core.cli import app as cli
    from core.errors import UserError
    from core.netguard import server_token, token_path

    path = token_path(horizon_home)
    token = server_token(path)
    assert os.stat(path).st_mode & 0o777 == 0o600 and path.read_text().strip() == token and len(token) >= 32
    assert server_token(path) == token  # reused by a later start

    known = tmp_path / "attacker.token"
    known.write_text("attacker-knows-this-token-0123456789\n")
    os.chmod(known, 0o600)
    link = tmp_path / "home2" / "server.token"
    link.parent.mkdir(mode=0o700)
    os.symlink(known, link)
    with pytest.raises(UserError, match="symbolic link"):
        server_token(link)
    dangling = tmp_path / "home3" / "server.token"
    dangling.parent.mkdir(mode=0o700)
    target = tmp_path / "written-through"
    os.symlink(target, dangling)
    with pytest.raises(UserError, match="symbolic link"):
        server_token(dangling)
    assert not target.exists() and os.path.islink(dangling)
    assert known.read_text() == "attacker-knows-this-token-0123456789\n"

    readable = tmp_path / "home4" / "server.token"
    readable.parent.mkdir(mode=0o700)
    readable.write_text("a-token-others-can-read-0123456789\n")
    os.chmod(readable, 0o644)
    with pytest.raises(UserError, match="other users"):
        server_token(readable)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(UserError, match="writable by every user"):
        server_token(shared / "server.token")
    assert not (shared / "server.token").exists()

    refused = CliRunner().invoke(cli, ["server", "--token-file", str(link)])  # refused before Ray starts
    assert refused.exit_code == 2 and "symbolic link" in refused.output, refused.output  # a user error (core.cli._fail)
    observe(f"first start: mode {os.stat(path).st_mode & 0o777:o}, reused; planted link, dangling link, 0644 file, "
            f"0777 folder: refused; agent server --token-file LINK: exit {refused.exit_code}")
