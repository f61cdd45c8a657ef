"""``agent server``: the long-running service: an HTTP API over a durable queue of runs, executed
on Ray, with Prometheus metrics and OpenTelemetry traces.

Modules: ``queue`` (the SQLite queue, written before a submit returns), ``worker`` (one run in a
Ray worker: start or resume, cancel, traces), ``scheduler`` (the driver loop: at most N runs at
once, re-queueing after a restart), ``metrics`` (a Prometheus collector over the run stores),
``tracing`` (GenAI spans from the loop's events), ``control`` (cancel and resume, for the API and the UI), ``bounds`` (what a
request may choose and its sizes: ``--repo-root``, named model servers, the sandbox, ``--max-queued``), ``app`` (the Starlette
routes), ``server`` (wires them together under uvicorn).
"""

from __future__ import annotations

__all__ = ["serve"]


def serve(*args, **kwargs) -> None:
    """Run the service until interrupted (``core.service.server.serve``; imported lazily so the
    CLI starts without Ray and prometheus_client)."""
    from core.service.server import serve as _serve

    _serve(*args, **kwargs)
