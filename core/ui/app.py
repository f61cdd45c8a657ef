"""``agent ui``: the web app over the run store (Starlette, Jinja2 templates, server-sent events).

Pages: ``/`` the runs, ``/runs/{id}`` one run, ``/evals`` and ``/evals/{id}`` evaluations;
``/runs/{id}/files/{path}`` an image or report from inside the run's folder (nothing outside
it); ``/events`` and ``/runs/{id}/events`` push the re-rendered runs table or run body whenever
it changes (polled every ``poll_s`` seconds on the server side; a run being written by another
process is read from its live mirror, ``core.store_mirror``).

Actions (``core.ui.actions``): ``POST /runs`` starts a run, ``POST /runs/{id}/stop`` and
``/resume`` stop and resume one, all through the service's queue (an ``agent server`` on the same
home does the work); ``GET /runs/{id}/apply`` shows the patch's review, ``POST`` applies it.

Who may use it (``core.netguard``; ``docs/security.md`` "Network surfaces"): only requests whose
``Host`` names this machine (127.0.0.1, localhost, [::1], or ``--allow-host NAME``) are served,
others get 421, so a DNS-rebinding page reads nothing. A POST must carry the form token of the
page it came from, an HMAC of the browser's own secret cookie (``SameSite=Strict; HttpOnly``;
``FormTokens``), and, when it sends an ``Origin``, this app's own (403 otherwise): another web
page open in the same browser cannot start runs or apply patches on this machine.

Every value from the store is escaped by Jinja2's autoescaping (model text is untrusted); files
are served with a ``sandbox`` Content-Security-Policy, so an HTML report or SVG runs no script.
"""

from __future__ import annotations

import asyncio
import hashlib
import secrets
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from jinja2 import Environment, PackageLoader, select_autoescape
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from core.config import runs_dir
from core.errors import HorizonError, RunNotFound
from core.netguard import FormTokens, WebGuard, allowed_hosts
from core.service.control import RESUMABLE
from core.ui import actions, data
from core.ui.render import diff_lines, looks_like_diff

__all__ = ["create_app"]

#: Served files cannot run scripts or load anything, even when opened directly.
#: (allow-same-origin without allow-scripts: the report's own images load, and nothing can run to use the origin)
FILE_HEADERS = {"Content-Security-Policy": "sandbox allow-same-origin; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; "
                                           "frame-ancestors 'self'",
                "X-Content-Type-Options": "nosniff", "X-Frame-Options": "SAMEORIGIN"}
#: Pages: only the UI's own pages may frame them (the run page frames its reports; no other origin,
#: not even another port of 127.0.0.1, which is the same *site* and gets the SameSite=Strict cookie).
PAGE_HEADERS = {"Content-Security-Policy": "default-src 'self'; img-src 'self' data:; frame-src 'self'; style-src 'self'; "
                                           "frame-ancestors 'self'",
                "X-Content-Type-Options": "nosniff", "X-Frame-Options": "SAMEORIGIN"}
#: A POSTed form bigger than this is refused (413) before it is parsed.
MAX_FORM_BYTES = 64 * 1024
#: How long a notice the UI set (after one of its actions) can be shown by its id.
NOTE_TTL_S = 600.0


def create_app(home: Path | None = None, poll_s: float = 1.0, hosts: frozenset[str] | None = None) -> Starlette:
    """The ASGI app, behind ``core.netguard.WebGuard`` (421 for a ``Host`` not in ``hosts``, 403
    for a foreign ``Origin`` on a POST) and ``FormTokens`` (each browser's form cookie; a POST
    without the cookie or with another page's token gets the 403 page).

    Args:
        home: Horizon's data folder (default ``$HORIZON_HOME`` or ``~/.horizon``).
        poll_s: seconds between two looks at the store for the live pages.
        hosts: the ``Host`` names served (``core.netguard.allowed_hosts``; None: this machine's
            own, ``LOCAL_HOSTS``).
    """
    templates = Environment(loader=PackageLoader("core.ui", "templates"), autoescape=select_autoescape(default=True),
                            trim_blocks=True, lstrip_blocks=True)
    tokens = FormTokens()  # the forms' tokens: one per browser, bound to its cookie
    templates.globals.update(diff_lines=diff_lines, looks_like_diff=looks_like_diff, resumable=RESUMABLE)

    notes: dict[str, tuple[float, str]] = {}  # the notices this UI set: id -> (when, text); a URL names one by its id

    def keep_note(text: str) -> str:
        now = time.monotonic()
        for key in [k for k, (when, _) in notes.items() if now - when > NOTE_TTL_S or len(notes) > 500]:
            notes.pop(key, None)
        key = secrets.token_urlsafe(12)
        notes[key] = (now, text)
        return key

    def note_of(request: Request) -> str | None:
        """The notice named by the ``note`` query parameter, only if this UI set it (never the URL's own text)."""
        kept = notes.get(request.query_params.get("note") or "")
        return kept[1] if kept is not None and time.monotonic() - kept[0] <= NOTE_TTL_S else None

    def page(name: str, status: int = 200, **context: Any) -> HTMLResponse:
        return HTMLResponse(templates.get_template(name).render(**context), status_code=status, headers=PAGE_HEADERS)

    def problem(exc: HorizonError) -> HTMLResponse:
        return page("error.html", 404 if isinstance(exc, RunNotFound) else 503, message=str(exc))

    def runs_rows() -> str:
        return templates.get_template("runs_rows.html").render(runs=data.runs_table(home))

    async def runs(request: Request) -> Response:
        mark = await asyncio.to_thread(data.runs_signature, home)  # before reading: a change in between is sent again
        note = note_of(request)
        try:
            queued = await asyncio.to_thread(actions.queued_runs, home)
        except HorizonError as exc:  # the service's queue is damaged: its one line, and the runs still listed
            queued, note = [], str(exc)
        return page("runs.html", rows=await asyncio.to_thread(runs_rows), since=_digest(mark), note=note, queued=queued,
                    csrf=tokens.token(request.scope))

    async def run(request: Request) -> Response:
        try:
            run_id = request.path_params["run_id"]
            mark = await asyncio.to_thread(data.signature, run_id, home)  # before reading: a change in between is sent again
            info = await asyncio.to_thread(data.run_page, run_id, home)
        except HorizonError as exc:
            return problem(exc)
        in_service = await asyncio.to_thread(actions.in_service, run_id, home)
        return page("run.html", since=_digest(mark), note=note_of(request), in_service=in_service,
                    csrf=tokens.token(request.scope), **info)

    async def run_file(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            path = await asyncio.to_thread(data.artifact_path, run_id, request.path_params["path"], home)
            # opened once, no link followed below the run's folder: a file swapped for a link after the check is refused
            body = await asyncio.to_thread(data.read_artifact, run_id, path, home)
        except RunNotFound as exc:
            return PlainTextResponse(_one_line(exc), 404)
        except PermissionError as exc:
            return PlainTextResponse(_one_line(exc), 403)
        except FileNotFoundError as exc:
            return PlainTextResponse(_one_line(exc), 404)
        except (OSError, ValueError) as exc:
            return PlainTextResponse(f"not served: {_one_line(exc)}", 403)
        return Response(body, media_type=data.ARTIFACT_TYPES[path.suffix.lower()], headers=FILE_HEADERS)

    async def evals(request: Request) -> Response:
        return page("evals.html", evals=await asyncio.to_thread(data.list_evals, home))

    async def one_eval(request: Request) -> Response:
        try:
            info = await asyncio.to_thread(data.eval_page, request.path_params["eval_id"], home)
        except HorizonError as exc:
            return problem(exc)
        except ValueError as exc:
            return page("error.html", 500, message=f"evaluation {request.path_params['eval_id']} cannot be read: {exc}")
        return page("eval.html", **info)

    async def runs_events(request: Request) -> Response:
        return EventSourceResponse(_changes(request, lambda: data.runs_signature(home), runs_rows, poll_s))

    async def run_events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        csrf = tokens.token(request.scope)  # the page's own browser: its forms keep working when the body is replaced

        def render() -> str:
            return templates.get_template("run_body.html").render(in_service=actions.in_service(run_id, home), csrf=csrf,
                                                                  **data.run_page(run_id, home))

        return EventSourceResponse(_changes(request, lambda: data.signature(run_id, home), render, poll_s))

    async def form_of(request: Request) -> dict[str, str] | HTMLResponse:
        """The POSTed form, or the refusal page: 403 when it does not carry the token of this
        browser's cookie (``FormTokens.valid``; a foreign ``Origin`` was refused before, by
        ``WebGuard``), 413 when bigger than ``MAX_FORM_BYTES`` (neither is parsed)."""
        if tokens.cookie(request.scope) is None:
            return page("error.html", 403, title="Refused", message=FORBIDDEN)  # no form cookie: the body is not read
        length = request.headers.get("content-length")
        if length is None or not length.isdigit() or int(length) > MAX_FORM_BYTES:
            return page("error.html", 413, title="Refused", message=f"refused: a form of this UI is under {MAX_FORM_BYTES} bytes "
                        "and says its Content-Length; use the page's own form")
        form = {k: v for k, v in (await request.form(max_files=0, max_fields=100, max_part_size=MAX_FORM_BYTES)).items()
                if isinstance(v, str)}
        if not tokens.valid(request.scope, form.get("csrf", "")):
            return page("error.html", 403, title="Refused", message=FORBIDDEN)
        return form

    def back(url: str, note: str) -> RedirectResponse:
        return RedirectResponse(f"{url}?note={keep_note(note)}", status_code=303)

    async def start(request: Request) -> Response:
        form = await form_of(request)
        if isinstance(form, Response):
            return form
        try:
            run_id = await asyncio.to_thread(actions.start_run, form, home)
        except HorizonError as exc:
            return back("/", f"not started: {exc}")
        return back("/", f"run {run_id} is queued; agent server runs it (start it if it is not running)")

    def run_action(action: Callable[[str, Path | None], str]) -> Callable[[Request], Any]:
        async def handle(request: Request) -> Response:
            run_id = request.path_params["run_id"]
            form = await form_of(request)
            if isinstance(form, Response):
                return form
            try:
                note = await asyncio.to_thread(action, run_id, home)
            except HorizonError as exc:
                note = str(exc)
            has_page = (runs_dir(home) / run_id / "trajectory.duckdb").is_file()  # a queued run has none yet
            return back(f"/runs/{quote(run_id)}" if has_page else "/", note)

        return handle

    async def apply_review(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            review = await asyncio.to_thread(actions.review_patch, run_id, home)
        except HorizonError as exc:
            return problem(exc)
        try:
            patch = await asyncio.to_thread(data.run_page, run_id, home)
        except HorizonError as exc:
            return problem(exc)
        return page("apply.html", run_id=run_id, review=review, patch=patch["patch"], csrf=tokens.token(request.scope))

    static = Path(__file__).with_name("static")
    routes = [
        Route("/", runs), Route("/events", runs_events), Route("/runs/{run_id}", run), Route("/runs/{run_id}/events", run_events),
        Route("/runs/{run_id}/files/{path:path}", run_file), Route("/evals", evals), Route("/evals/{eval_id}", one_eval),
        Route("/runs", start, methods=["POST"]), Route("/runs/{run_id}/stop", run_action(actions.stop_run), methods=["POST"]),
        Route("/runs/{run_id}/resume", run_action(actions.resume_run), methods=["POST"]),
        Route("/runs/{run_id}/apply", apply_review), Route("/runs/{run_id}/apply", run_action(actions.apply_patch), methods=["POST"]),
        Mount("/static", StaticFiles(directory=static), name="static"),
    ]
    guard = Middleware(WebGuard, hosts=hosts if hosts is not None else allowed_hosts(), command="agent ui")
    return Starlette(routes=routes, middleware=[guard, Middleware(tokens.middleware)])


async def _changes(request: Request, mark: Callable[[], str], render: Callable[[], str], poll_s: float) -> AsyncIterator[dict[str, str]]:
    """Server-sent ``update`` events: ``render()``'s HTML each time ``mark()`` (a cheap stat of
    the stores) changes; the first look is sent too unless it is the page's own (the ``since``
    query parameter)."""
    last = request.query_params.get("since")
    while not await request.is_disconnected():
        try:
            now = _digest(await asyncio.to_thread(mark))
            if now != last:
                html = await asyncio.to_thread(render)  # the mark is taken first: a write in between shows next time
                last = now
                yield {"event": "update", "data": html}
        except HorizonError:  # the run vanished, or cannot be read this moment: keep looking
            pass
        await asyncio.sleep(poll_s)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())[:300]


FORBIDDEN = ("refused: this form did not come from this Horizon page in this browser (no form cookie, or the token of another "
             "page; reload the page and try again)")


def _digest(mark: str) -> str:
    return hashlib.sha1(mark.encode()).hexdigest()[:16]
