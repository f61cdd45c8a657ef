"""The service's HTTP API (Starlette, as ``agent ui``; server-sent events with sse-starlette).

==========================================  ==========================================================
``POST /api/runs``                          submit a run (JSON, ``SubmitRequest``); 201 ``{"run_id", "state"}``
``GET /api/runs?limit=&offset=``            submitted runs, in submit order, a page at a time: queue state and the store's status (from the runs catalog)
``GET /api/runs/{id}``                      one run (404 when the service never had it)
``POST /api/runs/{id}/cancel``              cancel: a queued run is dropped, a running one stops after its step in flight
``GET /api/runs/{id}/events``               server-sent events: ``message`` per stored message, ``state`` on each change, ``end``
``GET /metrics``                            Prometheus text format (``core.service.metrics``)
==========================================  ==========================================================

Who may call it (``core.netguard``, ``docs/security.md`` "Network surfaces"): every request needs
``Authorization: Bearer TOKEN`` (``agent server``'s token file, ``$HORIZON_HOME/server.token``)
and a ``Host`` naming this machine (127.0.0.1, localhost, [::1], or ``--allow-host NAME``);
a body must be ``application/json`` (415 otherwise, before it is read); a state-changing request
that sends an ``Origin`` must send the server's own. Refusals: 421 (Host), 403 (Origin),
415 (body), 401 (token).

What a submit may choose is bounded by the server's ``core.service.bounds.Bounds``: repositories
and scripts under its ``--repo-root`` folders, model servers by configured name only, never the
sandbox off (a ``--no-sandbox`` server answers 403 to a submit from another machine). Its body is
read up to ``MAX_BODY_BYTES`` (413 past that, the rest never read), and a full queue
(``--max-queued``) answers 429 with ``Retry-After``. ``GET /api/runs`` answers
``limit`` rows (default ``LIST_DEFAULT``, at most ``LIST_MAX``) after the first ``offset``, each
task clipped to ``TASK_LISTED_CHARS``; the ``X-Total-Count`` header counts every row and a
``Link: <...>; rel="next"`` header names the next page while there is one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from core.catalog import catalog_rows
from core.errors import HorizonError, RunNotFound
from core.service import control
from core.service.bounds import (
    LIST_DEFAULT,
    LIST_MAX,
    MAX_BODY_BYTES,
    MAX_NAME_CHARS,
    MAX_PATH_CHARS,
    MAX_TASK_CHARS,
    RETRY_AFTER_S,
    TASK_LISTED_CHARS,
    Bounds,
    QueueFull,
)
from core.service.queue import FINAL, RunQueue
from core.state import Limits

__all__ = ["SubmitRequest", "create_app"]


class SubmitRequest(BaseModel):
    """The body of ``POST /api/runs``: what ``agent run`` takes.

    Sizes are ``core.service.bounds``'s (characters): task ``MAX_TASK_CHARS``, paths
    ``MAX_PATH_CHARS``, names ``MAX_NAME_CHARS``; an unknown field is refused.

    Attributes:
        plugin: the plugin (``coding``, ``threed``, ``finance``).
        task: the task message.
        repo: the repository (a folder on the server's machine, under one of its ``--repo-root``
            folders), copied as ``agent run --repo`` does.
        policy: ``auto``, ``embedded``, ``openai`` or ``scripted`` (``human`` needs a terminal).
        script: the scripted policy's JSON Lines file (a server path, under a ``--repo-root`` too).
        model_server: the name of a model server in the server's configuration
            (``[model_servers.NAME]``, ``core.config.ModelServer``); None: the configured ``base_url``.
        model, tool_format: the model's name on that server, and how it calls tools (as ``agent run``'s flags).
        base_url: refused: a request names a configured server (``model_server``), never a URL.
        limits: ``core.state.Limits`` fields (``max_steps``, ``max_tokens``, ``max_wall_s``, ``max_cost``, ...).
        isolated: only ``true`` (or left out): the sandbox is the server's choice
            (``agent server --no-sandbox``), never a request's.
    """

    model_config = {"extra": "forbid"}

    plugin: str = Field(min_length=1, max_length=MAX_NAME_CHARS)
    task: str = Field(min_length=1, max_length=MAX_TASK_CHARS)
    repo: str | None = Field(None, max_length=MAX_PATH_CHARS)
    policy: str = Field("auto", max_length=MAX_NAME_CHARS)
    script: str | None = Field(None, max_length=MAX_PATH_CHARS)
    model_server: str | None = Field(None, max_length=MAX_NAME_CHARS)
    base_url: str | None = Field(None, max_length=MAX_PATH_CHARS)
    model: str | None = Field(None, max_length=MAX_NAME_CHARS)
    tool_format: str | None = Field(None, max_length=MAX_NAME_CHARS)
    limits: Limits = Field(default_factory=Limits)
    isolated: bool | None = None

    @field_validator("limits", mode="before")
    @classmethod
    def _known_limits(cls, value: Any) -> Any:
        # Limits ignores unknown keys; here a misspelt one ("max_stepz") would silently drop the limit
        if isinstance(value, dict) and (unknown := sorted(set(value) - set(Limits.model_fields))):
            raise ValueError(f"unknown limit(s) {', '.join(unknown)}; known: {', '.join(Limits.model_fields)}")
        return value


def queued_request(body: SubmitRequest, bounds: Bounds | None = None) -> dict[str, Any]:
    """Check a submit as ``agent run`` would, inside the server's bounds, and turn it into the queue's request.

    Args:
        body: the submit.
        bounds: what the server lets a request choose (None: ``Bounds.make()``, the working
            folder as the only root, sandboxed).

    Raises:
        UserError, ConfigError, PluginNotFound: unknown plugin or policy, a repository or script
            outside the roots or not there, a model server given by URL or not configured, the
            sandbox asked off (or on, from a ``--no-sandbox`` server), a scripted policy without
            its script, a human policy.
    """
    from core.config import load_settings
    from core.errors import UserError
    from core.plugin import load_plugin
    from core.runner import policy_spec

    bounds = bounds or Bounds.make()
    if body.base_url is not None:
        raise UserError("a request cannot name a model server by URL (base_url): the repository and the server's key would go "
                        "there. The server's owner configures named servers ([model_servers.NAME] with base_url, model and "
                        "api_key_env in the server's horizon.toml or $HORIZON_HOME/config.toml); name one with model_server: NAME")
    if body.isolated is False:
        raise UserError("a request cannot turn the sandbox off (isolated: false); only the server's owner can, by starting "
                        "agent server --no-sandbox")
    if body.isolated and not bounds.sandbox:
        raise UserError("this server runs every run without the sandbox (agent server --no-sandbox), so it cannot honour "
                        "isolated: true; leave isolated out, or submit to a sandboxed server")
    load_plugin(body.plugin)  # unknown plugin: refused now, not when a worker takes it
    if body.policy == "human":
        raise UserError("the service cannot run --policy human (its model is a person at a terminal); use agent run")
    repo = bounds.inside(body.repo, "repo") if body.repo else None
    if repo is not None and not repo.is_dir():
        raise UserError(f"repo {body.repo!r} is not a folder on the server's machine")
    script = bounds.inside(body.script, "script") if body.script else None
    if script is not None and not script.is_file():
        raise UserError(f"script {body.script!r} is not a file on the server's machine")
    settings = load_settings(model=body.model, tool_format=body.tool_format)
    kind = body.policy
    if body.model_server is not None:
        server = settings.model_servers.get(body.model_server)
        if server is None:
            named = ", ".join(sorted(settings.model_servers)) or "none"
            raise UserError(f"no model server named {body.model_server!r} in the server's configuration (configured: {named}); "
                            "its owner adds one as [model_servers.NAME] with base_url, model and api_key_env")
        if kind not in ("auto", "openai"):
            raise UserError(f"model_server names a model server; policy {kind!r} uses none (leave model_server out, or use policy auto)")
        kind = "openai"
        settings = settings.model_copy(update={"base_url": server.base_url, "model": body.model or server.model,
                                               "tool_format": body.tool_format or server.tool_format or settings.tool_format})
    spec = policy_spec(kind, settings, script)
    if body.model_server is not None:  # its key is the one configured for it, read by the worker (never HORIZON_API_KEY)
        spec |= {"server": body.model_server, "api_key_env": settings.model_servers[body.model_server].api_key_env or ""}
    metadata = {}
    if settings.mcp_servers:  # the config's external MCP servers join the run's tools, as for agent run
        from core.mcp.client import parse_servers

        parse_servers(settings.mcp_servers, "the server's config mcp_servers (horizon.toml, HORIZON_MCP_SERVERS)")
        metadata["mcp_servers"] = settings.mcp_servers
    return {"plugin": body.plugin, "task": body.task, "repo": str(repo) if repo else "", "policy": spec, "metadata": metadata,
            "limits": body.limits.model_dump(), "pricing": settings.pricing_for(spec["kind"]).model_dump(),
            "isolated": bounds.sandbox, "keep_checkpoints": settings.keep_checkpoints}


def _store_status(run_id: str, home: Path | None) -> tuple[str | None, str]:
    """The run store's status (a run being written: ``running``; its process dead: ``killed``;
    ``damaged``, ``in use``, ``unreadable``), None before it exists; and the store's error line
    (``damaged: <file> (...)`` with what to do), empty when it could be read."""
    from core.config import runs_dir
    from core.runs import reading_store

    if not (runs_dir(home) / run_id / "trajectory.duckdb").is_file():
        return None, ""
    try:
        with reading_store(run_id, home, live=True) as store:
            status = store.run()["status"]
            return ("killed" if status == "running" and not store.live else status), ""
    except HorizonError as exc:
        text = str(exc)
        return ("in use" if "in use" in text else "damaged" if text.startswith("damaged:") else "unreadable"), text


def _listed_status(run_id: str, listed: dict[str, dict[str, Any]]) -> tuple[str | None, str]:
    """``_store_status`` from the runs catalog's entries (``core.catalog.catalog_rows``, by run id)."""
    entry = listed.get(run_id)
    if entry is None:
        return None, ""
    return entry["row"].get("status"), entry.get("problem") or ""


def _public(row: dict[str, Any], home: Path | None, *, clip: bool = False, listed: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """A queue row as the API shows it; ``clip``: the task cut to ``TASK_LISTED_CHARS`` (listings);
    ``listed``: the runs catalog's entries by run id (a listing: no store is opened), else the store is read."""
    request = row["request"]
    task = request["task"]
    shown = task[: TASK_LISTED_CHARS - 1] + "…" if clip and len(task) > TASK_LISTED_CHARS else task
    status, problem = _store_status(row["run_id"], home) if listed is None else _listed_status(row["run_id"], listed)
    public = {"run_id": row["run_id"], "state": row["state"], "detail": row["detail"], "starts": row["starts"],
              "plugin": request["plugin"], "task": shown, "task_chars": len(task), "repo": request["repo"],
              "policy": request["policy"]["kind"], "submitted_at": row["submitted_at"], "updated_at": row["updated_at"],
              "store_status": status}
    return {**public, "store_error": problem} if problem else public


async def _capped_body(request: Request, cap: int) -> bytes | None:
    """The request's body, read as it arrives; None as soon as it is longer than ``cap`` bytes
    (a ``Content-Length`` above it: before anything is read), the rest left unread."""
    length = request.headers.get("content-length", "")
    if length.isdigit() and int(length) > cap:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > cap:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _page(request: Request) -> tuple[int, int]:
    """``limit`` and ``offset`` of ``GET /api/runs`` (``LIST_DEFAULT`` and 0 when not given).

    Raises:
        ValueError: not whole numbers, or outside 1..``LIST_MAX`` and 0.. (the message says which).
    """
    limit, offset = request.query_params.get("limit", str(LIST_DEFAULT)), request.query_params.get("offset", "0")
    if not (limit.isdigit() and 1 <= int(limit) <= LIST_MAX):
        raise ValueError(f"limit must be a whole number from 1 to {LIST_MAX}, got {limit[:40]!r}")
    if not offset.isdigit():
        raise ValueError(f"offset must be a whole number from 0, got {offset[:40]!r}")
    return int(limit), int(offset)


def _full(cap: int) -> JSONResponse:
    return JSONResponse({"error": f"the queue is full: {cap} runs are queued or running, this server's cap (agent server "
                                  f"--max-queued {cap}); submit again when some have ended"}, 429,
                        headers={"Retry-After": str(RETRY_AFTER_S)})


def _loopback(request: Request) -> bool:
    """Whether the request's peer is this machine (127.0.0.0/8 or ::1)."""
    host = request.client.host if request.client else ""
    return host == "::1" or host.startswith("127.")


def create_app(queue: RunQueue, home: Path, metrics_registry: Any = None, poll_s: float = 0.5, *, token: str,
               hosts: frozenset[str] | None = None, bounds: Bounds | None = None, max_body_bytes: int = MAX_BODY_BYTES) -> Starlette:
    """The ASGI app of the service, behind ``core.netguard``'s checks (outermost first):
    ``WebGuard`` (421 for a foreign ``Host``, 403 for a foreign ``Origin`` on a state change),
    ``JsonBodies`` (415 for a body that is not ``application/json``), ``BearerAuth`` (401 without
    ``Authorization: Bearer token``). They wrap every route, ``/metrics`` included.

    Args:
        queue: the durable queue the scheduler runs.
        home: Horizon's data folder.
        metrics_registry: a ``prometheus_client`` registry served at ``/metrics`` (None: 404 there).
        poll_s: seconds between two looks at a run for its event stream.
        token: the bearer token every request must carry (``core.netguard.server_token``; 16
            characters or more).
        hosts: the ``Host`` names served (``core.netguard.allowed_hosts``; None: this machine's
            own, ``LOCAL_HOSTS``).
        bounds: what a submit may choose (None: ``Bounds.make()``: the working folder, sandboxed,
            ``DEFAULT_MAX_QUEUED`` runs).
        max_body_bytes: the most bytes of a submit's body read (413 past it).
    """
    bounds = bounds or Bounds.make()

    async def submit(request: Request) -> Response:
        if not bounds.sandbox and not _loopback(request):
            return JSONResponse({"error": "this server runs without the sandbox (--no-sandbox): it takes runs only from its "
                                          "own machine (127.0.0.1)"}, 403)
        if await asyncio.to_thread(queue.active) >= bounds.max_queued:  # full: said before the body is even read
            return _full(bounds.max_queued)
        raw = await _capped_body(request, max_body_bytes)
        if raw is None:
            return JSONResponse({"error": f"the body is larger than this server takes ({max_body_bytes:,} bytes); send a "
                                          "shorter task (the repository is named by its path, never sent)"}, 413,
                                headers={"Connection": "close"})
        try:
            body = SubmitRequest.model_validate(json.loads(raw))
            queued = await asyncio.to_thread(queued_request, body, bounds)
            run_id = await asyncio.to_thread(queue.submit, queued, bounds.max_queued)  # committed before the answer
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            return JSONResponse({"error": f"the body is not JSON: {exc}"}, 400)
        except RecursionError:
            return JSONResponse({"error": "the body is not a submit: JSON nested too deep"}, 400)
        except ValidationError as exc:
            return JSONResponse({"error": "bad request: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())}, 400)
        except QueueFull as exc:  # filled by another submit meanwhile (counted again with the insert)
            return JSONResponse({"error": str(exc)}, 429, headers={"Retry-After": str(RETRY_AFTER_S)})
        except HorizonError as exc:
            return JSONResponse({"error": str(exc)}, 400)
        return JSONResponse({"run_id": run_id, "state": "queued"}, 201)

    async def list_runs(request: Request) -> Response:
        try:
            limit, offset = _page(request)
        except ValueError as exc:
            return JSONResponse({"error": str(exc)}, 400)
        rows = await asyncio.to_thread(queue.rows, limit=limit, offset=offset)
        total = await asyncio.to_thread(queue.count)
        headers = {"X-Total-Count": str(total)}
        if offset + len(rows) < total:
            headers["Link"] = f'</api/runs?limit={limit}&offset={offset + len(rows)}>; rel="next"'
        listed = {e["run_id"]: e for e in await asyncio.to_thread(catalog_rows, home)} if rows else {}
        return JSONResponse([_public(row, home, clip=True, listed=listed) for row in rows], headers=headers)

    async def one_run(request: Request) -> Response:
        row = await asyncio.to_thread(queue.get, request.path_params["run_id"])
        if row is None:
            return JSONResponse({"error": f"no run {request.path_params['run_id']!r} was submitted to this service"}, 404)
        return JSONResponse(await asyncio.to_thread(_public, row, home))

    async def cancel(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        try:
            state, code, detail = await asyncio.to_thread(control.cancel, queue, run_id, home)
        except RunNotFound:
            return JSONResponse({"error": f"no run {run_id!r} was submitted to this service"}, 404)
        body = {"run_id": run_id, "state": state}
        return JSONResponse({**body, "error": detail} if code == 409 else body, code)

    async def events(request: Request) -> Response:
        run_id = request.path_params["run_id"]
        if await asyncio.to_thread(queue.get, run_id) is None:
            return JSONResponse({"error": f"no run {run_id!r} was submitted to this service"}, 404)
        return EventSourceResponse(_run_events(request, run_id, queue, home, poll_s))

    async def metrics(request: Request) -> Response:
        if metrics_registry is None:
            return JSONResponse({"error": "metrics are off"}, 404)
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return Response(await asyncio.to_thread(generate_latest, metrics_registry), media_type=CONTENT_TYPE_LATEST)

    routes = [
        Route("/api/runs", submit, methods=["POST"]), Route("/api/runs", list_runs), Route("/api/runs/{run_id}", one_run),
        Route("/api/runs/{run_id}/cancel", cancel, methods=["POST"]), Route("/api/runs/{run_id}/events", events),
        Route("/metrics", metrics),
    ]
    return Starlette(routes=routes, middleware=_guards(token, hosts))


def _guards(token: str, hosts: frozenset[str] | None) -> list[Middleware]:
    """The service's request checks, outermost first (``core.netguard``)."""
    from core.netguard import BearerAuth, JsonBodies, WebGuard, allowed_hosts

    return [Middleware(WebGuard, hosts=hosts if hosts is not None else allowed_hosts(), command="agent server"),
            Middleware(JsonBodies), Middleware(BearerAuth, token=token)]


def _messages_since(run_id: str, home: Path | None, seen: int) -> list[dict[str, Any]]:
    """The run's stored messages after the first ``seen`` (none before its store exists)."""
    from core.config import runs_dir
    from core.runs import reading_store

    if not (runs_dir(home) / run_id / "trajectory.duckdb").is_file():
        return []
    try:
        with reading_store(run_id, home, live=True) as store:
            messages = store.messages()
    except HorizonError:  # changing hands between two processes this moment: look again next time
        return []
    return [{"seq": seen + i, **m.model_dump(mode="json", exclude_none=True)} for i, m in enumerate(messages[seen:])]


async def _run_events(request: Request, run_id: str, queue: RunQueue, home: Path, poll_s: float) -> AsyncIterator[dict[str, str]]:
    """``message`` events (each new stored message, JSON), ``state`` events (the queue row, JSON,
    when it changes) and a last ``end`` once the run's state is final and its messages sent."""
    seen, last_state = 0, None
    while not await request.is_disconnected():
        row = await asyncio.to_thread(queue.get, run_id)
        for message in await asyncio.to_thread(_messages_since, run_id, home, seen):
            seen += 1
            yield {"event": "message", "data": json.dumps(message)}
        public = await asyncio.to_thread(_public, row, home)
        state = (public["state"], public["store_status"], public["detail"])
        if state != last_state:
            last_state = state
            yield {"event": "state", "data": json.dumps(public)}
        if row["state"] in FINAL:
            yield {"event": "end", "data": json.dumps({"run_id": run_id, "state": row["state"]})}
            return
        await asyncio.sleep(poll_s)


