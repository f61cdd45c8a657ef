"""``agent ui``: a local web app over the run store and the evaluations (``core.ui.app``)."""

from __future__ import annotations

from pathlib import Path

__all__ = ["serve"]


def serve(host: str = "127.0.0.1", port: int = 8765, home: Path | None = None) -> None:
    """Serve the UI with uvicorn until interrupted.

    Args:
        host: address to bind (127.0.0.1: this machine only; the UI has no login).
        port: TCP port.
        home: Horizon's data folder (default ``$HORIZON_HOME`` or ``~/.horizon``).
    """
    import uvicorn

    from core.ui.app import create_app

    uvicorn.run(create_app(home), host=host, port=port, log_level="warning")
