"""``agent ui``: a local web app over the run store and the evaluations (``core.ui.app``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

__all__ = ["serve"]


def serve(host: str = "127.0.0.1", port: int = 8765, home: Path | None = None, allow_hosts: Sequence[str] = ()) -> None:
    """Serve the UI with uvicorn until interrupted.

    Args:
        host: address to bind (127.0.0.1: this machine only; the UI has no login, see
            docs/security.md "Network surfaces" before serving another).
        port: TCP port.
        home: Horizon's data folder (default ``$HORIZON_HOME`` or ``~/.horizon``).
        allow_hosts: ``Host`` names served besides this machine's own and ``host`` (``--allow-host``).

    Raises:
        UserError: a name of ``allow_hosts`` is not a host name.
    """
    import uvicorn

    from core.netguard import allowed_hosts
    from core.ui.app import create_app

    hosts = allowed_hosts(allow_hosts, bind=host)
    uvicorn.run(create_app(home, hosts=hosts), host=host, port=port, log_level="warning")
