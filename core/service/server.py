"""``agent server``: the queue, Ray, the scheduler, the metrics and the HTTP API, in one process.

The API serves only requests carrying its bearer token (``core.netguard.server_token``: made at
the first start in ``$HORIZON_HOME/server.token``, mode 0600, reused later) and addressed to
this machine's names (``core.netguard.allowed_hosts``).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

from core.config import horizon_home
from core.service.bounds import Bounds

__all__ = ["serve"]

log = logging.getLogger(__name__)


def serve(host: str = "127.0.0.1", port: int = 8766, workers: int = 2, address: str | None = None, home: Path | None = None,
          on_ready: object = None, token: str | None = None, allow_hosts: Sequence[str] = (), bounds: Bounds | None = None) -> None:
    """Run the service until interrupted.

    On start the queue is opened and checked (a damaged one is refused, kept as it is) and read
    again (``RunQueue.recover``): runs that were running when the last server died are queued
    again and resumed from their checkpoints by the workers. The bounds are recorded in the queue
    for ``agent ui``.

    Args:
        host, port: where the HTTP API listens (127.0.0.1: this machine only; see
            docs/security.md "Network surfaces" before serving another).
        workers: runs at once (a local Ray gets that many CPUs).
        address: a Ray cluster's address (None: a local Ray of this process's own).
        home: Horizon's data folder (default ``$HORIZON_HOME`` or ``~/.horizon``).
        on_ready: called with no arguments once Ray is up and the queue recovered (tests, the CLI's banner).
        token: the bearer token every request needs (None: ``server_token`` of
            ``$HORIZON_HOME/server.token``, made there at the first start).
        allow_hosts: ``Host`` names served besides this machine's own and ``host``
            (``--allow-host``, e.g. the name a reverse proxy passes).
        bounds: what requests may choose (``core.service.bounds``; None: ``Bounds.make()``).

    Raises:
        UserError: Ray or the service's libraries are missing, Ray cannot start or be reached, the
            token file cannot be used, or a name of ``allow_hosts`` is not a host name; the queue is
            damaged (``damaged: <file> (...)``, ``QueueDamaged``) or cannot be opened; ``--no-sandbox``
            with a ``host`` other than loopback.
    """
    from core.errors import UserError

    bounds = bounds or Bounds.make()
    if not bounds.sandbox and host not in ("127.0.0.1", "::1", "localhost"):
        raise UserError(f"--no-sandbox runs a request's commands on this machine as you: the server listens only on 127.0.0.1 "
                        f"then, not {host!r}; drop --host or --no-sandbox")
    try:
        import prometheus_client  # noqa: F401
        import ray
        import uvicorn
    except ImportError as exc:
        raise UserError(f"agent server needs {exc.name}: pip install -e '.[service]'") from None
    from prometheus_client import CollectorRegistry

    from core.eval.ray_backend import start_ray
    from core.netguard import allowed_hosts, server_token, token_path
    from core.service.app import create_app
    from core.service.metrics import StoreCollector
    from core.service.queue import RunQueue, queue_path
    from core.service.scheduler import Scheduler

    home = home or horizon_home()
    hosts = allowed_hosts(allow_hosts, bind=host)  # before Ray: a bad name fails at once
    token = token or server_token(token_path(home))
    queue = RunQueue(queue_path(home))  # a damaged queue: one line, before Ray starts
    queue.record_bounds(bounds.to_json())
    requeued, cancelled = queue.recover()
    if requeued or cancelled:
        log.warning("restarted: %d run(s) queued again to resume, %d cancelled", len(requeued), len(cancelled))
    started_here = start_ray(workers, address)
    scheduler = Scheduler(queue, home, workers)
    registry = CollectorRegistry()
    registry.register(StoreCollector(home, queue))
    scheduler.start()
    if callable(on_ready):
        on_ready()
    try:
        uvicorn.run(create_app(queue, home, registry, token=token, hosts=hosts, bounds=bounds), host=host, port=port, log_level="warning")
    finally:
        scheduler.stop()
        if started_here:
            ray.shutdown()
