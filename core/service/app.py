"""The service's HTTP API (Starlette, as ``agent ui``; server-sent events with sse-starlette).

==========================================  ==========================================================
``POST /api/runs``                          submit a run (JSON, ``SubmitRequest``); 201 ``{"run_id", "state"}``
``GET /api/runs``                           every submitted run: queue state and the store's status
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

from core.errors import HorizonError, RunNotFound
from core.service import control
from core.service.queue import FINAL, RunQueue
from core.state import Limits

__all__ = ["SubmitRequest", "create_app"]


class SubmitRequest(BaseModel):
    """The body of ``POST /api/runs``: what ``agent run`` takes.

    Attributes:
        plugin: the plugin (``coding``, ``threed``, ``finance``).
        task: the task message.
        repo: the repository (a folder on the server's machine), copied as ``agent run --repo`` does.
        policy: ``auto``, ``embedded``, ``openai`` or ``scripted`` (``human`` needs a terminal).
        script: the scripted policy's JSON Lines file (server path).
        base_url, model, tool_format: the model server, as ``agent run``'s flags.
        limits: ``core.state.Limits`` fields (``max_steps``, ``max_tokens``, ``max_wall_s``, ``max_cost``, ...).
        isolated: run commands in the sandbox (False: ``--no-sandbox``).
    """

    model_config = {"extra": "forbid"}

    plugin: str = Field(min_length=1)
    task: str = Field(min_length=1)
    repo: str | None = None
    policy: str = "auto"
    script: str | None = None
    base_url: str | None = None
    model: str | None = None
    tool_format: str | None = None
    limits: Limits = Field(default_factory=Limits)
    isolated: bool = True

    @field_validator("limits", mode="before")
    @classmethod
    def _known_limits(cls, value: Any) -> Any:
        # Limits ignores unknown keys; here a misspelt one ("max_stepz") would silently drop the limit
        if isinstance(value, dict) and (unknown := sorted(set(value) - set(Limits.model_fields))):
            raise ValueError(f"unknown limit(s) {', '.join(unknown)}; known: {', '.join(Limits.model_fields)}")
        return value


def queued_request(body: SubmitRequest) -> dict[str, Any]:
    """Check a submit as ``agent run`` would and turn it into the queue's request.

    Raises:
        UserError, ConfigError, PluginNotFound: unknown plugin or policy, a repository that is not a
            folder, a scripted policy without its script, a human policy.
    """
    from core.config import load_settings
    from core.errors import UserError
    from core.plugin import load_plugin
    from core.runner import policy_spec

    load_plugin(body.plugin)  # unknown plugin: refused now, not when a worker takes it
    if body.policy == "human":
        raise UserError("the service cannot run --policy human (its model is a person at a terminal); use agent run")
    repo = Path(body.repo).expanduser().resolve() if body.repo else None
    if repo is not None and not repo.is_dir():
        raise UserError(f"repo {body.repo!r} is not a folder on the server's machine")
    script = Path(body.script).expanduser() if body.script else None
    if script is not None and not script.is_file():
        raise UserError(f"script {body.script!r} is not a file on the server's machine")
    settings = load_settings(base_url=body.base_url, model=body.model, tool_format=body.tool_format)
    kind = "openai" if body.base_url and body.policy == "auto" else body.policy
    spec = policy_spec(kind, settings, script)
    metadata = {}
    if settings.mcp_servers:  # the config's external MCP servers join the run's tools, as for agent run
        from core.mcp.client import parse_servers

        parse_servers(settings.mcp_servers, "the server's config mcp_servers (horizon.toml, HORIZON_MCP_SERVERS)")
        metadata["mcp_servers"] = settings.mcp_servers
    return {"plugin": body.plugin, "task": body.task, "repo": str(repo) if repo else "", "policy": spec, "metadata": metadata,
            "limits": body.limits.model_dump(), "pricing": settings.pricing_for(spec["kind"]).model_dump(),
            "isolated": body.isolated, "keep_checkpoints": settings.keep_checkpoints}


def _store_status(run_id: str, home: Path | None) -> str | None:
    """The run store's status (a run being written: ``running``; its process dead: ``killed``), None before it exists."""
    from core.config import runs_dir
    from core.runs import reading_store

    if not (runs_dir(home) / run_id / "trajectory.duckdb").is_file():
        return None
    try:
        with reading_store(run_id, home, live=True) as store:
            status = store.run()["status"]
            return "killed" if status == "running" and not store.live else status
    except HorizonError as exc:
        return "in use" if "in use" in str(exc) else "unreadable"


def _public(row: dict[str, Any], home: Path | None) -> dict[str, Any]:
    request = row["request"]
    return {"run_id": row["run_id"], "state": row["state"], "detail": row["detail"], "starts": row["starts"],
            "plugin": request["plugin"], "task": request["task"], "repo": request["repo"], "policy": request["policy"]["kind"],
            "submitted_at": row["submitted_at"], "updated_at": row["updated_at"], "store_status": _store_status(row["run_id"], home)}


def create_app(queue: RunQueue, home: Path, metrics_registry: Any = None, poll_s: float = 0.5, *, token: str,
               hosts: frozenset[str] | None = None) -> Starlette:
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
    """

    async def submit(request: Request) -> Response:
        try:
            body = SubmitRequest.model_validate(await request.json())
            queued = await asyncio.to_thread(queued_request, body)
        except json.JSONDecodeError as exc:
            return JSONResponse({"error": f"the body is not JSON: {exc}"}, 400)
        except ValidationError as exc:
            return JSONResponse({"error": "bad request: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())}, 400)
        except HorizonError as exc:
            return JSONResponse({"error": str(exc)}, 400)
        run_id = await asyncio.to_thread(queue.submit, queued)  # committed before the answer: found again after a crash
        return JSONResponse({"run_id": run_id, "state": "queued"}, 201)

    async def list_runs(request: Request) -> Response:
        rows = await asyncio.to_thread(queue.rows)
        return JSONResponse([await asyncio.to_thread(_public, row, home) for row in rows])

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


