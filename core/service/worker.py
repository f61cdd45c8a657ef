"""One run of the service, in whatever process executes it (a Ray worker): start it under the
run id chosen at submit time, or resume it from its checkpoint, or do nothing when its store
says it finished; stop it resumably when its cancel marker appears.

The run store is the truth. ``execute_queued_run`` looks there first: a run whose store says
``finished`` is reported and never executed again, a run folder that exists is resumed
(``Run.open``: completed tool calls are not repeated), and only a run without a folder is started.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from core.config import runs_dir
from core.errors import UserError

__all__ = ["cancel_marker", "execute_queued_run"]

#: How long a worker waits for a run's store lock held by a dying earlier worker (seconds).
LOCK_WAIT_S = 60.0
#: How long a half-made run folder is given to appear complete before it is started over (seconds).
PARTIAL_WAIT_S = 5.0
#: How often the cancel marker is looked for (seconds).
CANCEL_POLL_S = 0.5


def cancel_marker(run_id: str, home: Path) -> Path:
    """The file whose existence asks the worker of ``run_id`` to stop (``<home>/service/cancel/<id>``)."""
    return home / "service" / "cancel" / run_id


def _stored_status(run_id: str, home: Path) -> str | None:
    """The run store's status, None when there is no run folder; raises UserError while in use."""
    from core.runs import open_store

    if not (runs_dir(home) / run_id / "trajectory.duckdb").is_file():
        return None
    with closing(open_store(run_id, home)) as store:
        return store.run()["status"]


def _open_or_start(run_id: str, request: dict[str, Any], home: Path, on_event: Any) -> Any:
    """The run, resumed when its folder exists, else started with ``run_id``."""
    from core.config import load_settings
    from core.plugin import Task
    from core.runner import Run, make_policy
    from core.state import Limits, Pricing

    folder = runs_dir(home) / run_id
    if (folder / "trajectory.duckdb").is_file():
        return Run.open(run_id, settings=load_settings(), home=home, on_event=on_event)
    partial = folder.with_name(f".{run_id}.partial")
    if partial.exists():  # a server killed while the run was being created: its worker may still be finishing it
        time.sleep(PARTIAL_WAIT_S)
        if (folder / "trajectory.duckdb").is_file():
            return Run.open(run_id, settings=load_settings(), home=home, on_event=on_event)
        shutil.rmtree(partial, ignore_errors=True)  # half-made and abandoned: start over
    task = Task(plugin=request["plugin"], instruction=request["task"], repo=Path(request["repo"]) if request.get("repo") else None,
                metadata=request.get("metadata", {}))
    return Run.start(task, make_policy(request["policy"], load_settings()), policy_config=request["policy"],
                     limits=Limits(**request["limits"]), pricing=Pricing(**request["pricing"]), isolated=request["isolated"],
                     keep_checkpoints=request["keep_checkpoints"], home=home, on_event=on_event, run_id=run_id)


def _retry_while_in_use(action: Any, deadline: float) -> Any:
    """``action()``, again while it fails because another process still holds the run's store
    (an earlier worker of this run, killed with the old server, that has not let go yet)."""
    import duckdb

    from core.runs import store_problem

    while True:
        try:
            return action()
        except (UserError, duckdb.Error) as exc:
            held = store_problem(exc) == "in use" if isinstance(exc, duckdb.Error) else "in use" in str(exc)
            if not held or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def execute_queued_run(run_id: str, request: dict[str, Any], home: str, otel_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Execute (or resume, or only report) one queued run; the Ray task of ``core.service.scheduler``.

    Args:
        run_id: the id chosen at submit time (the run folder's name).
        request: the queue row's request (``core.service.app``: plugin, task, repo, policy spec,
            limits, pricing, isolated, keep_checkpoints).
        home: Horizon's data folder.
        otel_env: ``OTEL_*`` variables of the server (a Ray worker does not inherit them).

    Returns:
        ``{"state": "done"|"cancelled"|"failed", "detail": str, "status": the store's status,
        "exit_status": str, "executed": whether the loop ran in this call}``.

    Raises:
        HorizonError: the run cannot be started or opened (unknown plugin, damaged store, a store
            held by another process for longer than ``LOCK_WAIT_S``).
    """
    from core.runs import mark_killed
    from core.service.tracing import RunTracer, otlp_tracer_provider

    os.environ.update(otel_env or {})
    folder_home = Path(home)
    marker = cancel_marker(run_id, folder_home)
    deadline = time.monotonic() + LOCK_WAIT_S
    if _retry_while_in_use(lambda: _stored_status(run_id, folder_home), deadline) == "finished":
        return {"state": "done", "detail": "finished before (its store says so); not run again", "status": "finished",
                "exit_status": "", "executed": False}
    if marker.exists():
        mark_killed(run_id, "cancelled through the service", folder_home)
        return {"state": "cancelled", "detail": "cancelled before it started", "status": "", "exit_status": "", "executed": False}
    policy = request["policy"]
    tracer = RunTracer(otlp_tracer_provider(), run_id, request["plugin"], policy.get("model") or policy["kind"])
    run = _retry_while_in_use(lambda: _open_or_start(run_id, request, folder_home, tracer), deadline)
    stop_watching = threading.Event()

    def watch_cancel() -> None:  # the service's Ctrl-C: stop after the step in flight, resumably
        while not stop_watching.wait(CANCEL_POLL_S):
            if marker.exists():
                run.episode.stop_requested = True
                return

    watcher = threading.Thread(target=watch_cancel, name=f"cancel-{run_id}", daemon=True)
    watcher.start()
    tracer.start()
    outcome = None
    try:
        outcome = run.execute()
        if outcome.status == "interrupted" and marker.exists():
            run.store.update_run(exit_detail=f"cancelled through the service; continue with: agent resume {run_id}")
    finally:
        stop_watching.set()
        tracer.end(outcome.status if outcome else "raised", outcome.exit_status.value if outcome else "")
        run.close()
        provider = tracer.tracer and otlp_tracer_provider()
        if provider is not None:
            provider.force_flush()  # a Ray worker lives on: send this run's spans now
    if outcome.status == "finished":
        state, detail = "done", f"{outcome.exit_status.value}: {outcome.exit_detail}"
    elif outcome.status == "interrupted" and marker.exists():
        state, detail = "cancelled", f"stopped after its step in flight; continue with: agent resume {run_id}"
    else:
        state, detail = "failed", f"{outcome.status}: {outcome.exit_detail}"
    return {"state": state, "detail": detail, "status": outcome.status, "exit_status": outcome.exit_status.value, "executed": True}
