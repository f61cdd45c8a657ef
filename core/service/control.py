"""Stopping and resuming runs through the service's queue: one implementation for the HTTP API
(``core.service.app``) and the web UI's buttons (``core.ui``).

Both only write the queue (and the cancel marker the worker polls), so they work from any process
that shares ``$HORIZON_HOME`` with a running ``agent server``, which does the work.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.errors import RunNotFound, UserError
from core.service.queue import FINAL, RunQueue
from core.service.worker import cancel_marker

__all__ = ["RESUMABLE", "Outcome", "cancel", "resume"]

#: What ``cancel`` and ``resume`` did: (the queue state now, an HTTP status, a sentence for a person).
Outcome = tuple[str, int, str]
#: Run store statuses that ``agent resume`` continues (``core.runner.RunResult``'s, and ``killed``:
#: a run whose process died, as ``agent runs`` shows it).
RESUMABLE = ("interrupted", "model_error", "crashed", "killed")


def cancel(queue: RunQueue, run_id: str, home: Path) -> Outcome:
    """Cancel a submitted run: a queued one is dropped, a running one stops after its step in
    flight (resumably, as Ctrl-C does), an ended one is left alone (409).

    Raises:
        RunNotFound: the service never had ``run_id`` (a run started by ``agent run`` is stopped
            where it runs, with Ctrl-C).
    """
    row = queue.get(run_id)
    if row is None:
        raise RunNotFound(f"run {run_id!r} was not started by the service; stop it where it runs (Ctrl-C in its terminal)")
    if queue.set_state(run_id, "cancelled", "cancelled before it started", only_from=("queued",)):
        return "cancelled", 200, "cancelled before it started"
    marker = cancel_marker(run_id, home)
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.touch()  # the worker stops the run after its step in flight
    if queue.set_state(run_id, "cancelling", "stopping after the step in flight", only_from=("running",)):
        return "cancelling", 202, "stopping after the step in flight; resume it later"
    marker.unlink(missing_ok=True)
    return row["state"], 409, f"run {run_id} has already ended ({row['state']})"


def resume(queue: RunQueue, run_id: str, home: Path, run_row: dict[str, Any]) -> Outcome:
    """Queue a stopped run again so that the service resumes it from its checkpoint.

    Args:
        run_row: the run's row from its store (``RunStore.run()``: status, plugin, task, repo,
            config), for a run the service never had (started by ``agent run``).

    Raises:
        UserError: the run is not stopped (finished, or still running), or is already queued.
    """
    status = run_row.get("status")
    if status not in RESUMABLE:
        raise UserError(f"run {run_id} is {status}: only a stopped run ({', '.join(RESUMABLE)}) can be resumed")
    cancel_marker(run_id, home).unlink(missing_ok=True)
    row = queue.get(run_id)
    if row is not None:
        if queue.set_state(run_id, "queued", "resume asked for", only_from=FINAL):
            return "queued", 202, "queued; agent server resumes it from its checkpoint"
        raise UserError(f"run {run_id} is already {row['state']} in the service's queue")
    config = run_row.get("config") or {}
    queue.add(run_id, {"plugin": run_row["plugin"], "task": run_row["task"], "repo": run_row.get("repo") or "",
                       "policy": config.get("policy", {"kind": "auto"}), "limits": config.get("limits", {}),
                       "pricing": config.get("pricing", {}), "isolated": config.get("isolated", True),
                       "keep_checkpoints": config.get("keep_checkpoints", 20)})  # fmt: skip
    return "queued", 202, "queued; agent server resumes it from its checkpoint"
