"""The run folders as a whole, without the loop: run ids, listing runs, opening a run's store,
marking a run killed from outside, applying a run's patch.

Kept apart from ``core.runner`` (which imports LangGraph, the policies and the plugins) so that
``agent runs``, ``agent show``, ``agent apply`` and the exporters start fast. The folder layout
is ``core.runner``'s.
"""

from __future__ import annotations

import re
import secrets
import time
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from core import workspace as ws
from core.config import runs_dir
from core.errors import RunNotFound, UserError
from core.store import RunStore

__all__ = ["RUN_ID", "apply_run", "list_runs", "mark_killed", "new_run_id", "open_store", "open_store_for_writing"]


#: What a run id may look like: it names the run's folder.
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")


def mark_killed(run_id: str, reason: str, home: Path | None = None, wait_s: float = 10.0) -> bool:
    """Record in a run's store that its process was killed from outside (a scheduler's hard time
    limit), so that the run says why instead of looking merely ``killed``; it stays resumable.

    Args:
        run_id: the run (it may not exist: the worker died before creating it).
        reason: one line, stored as ``exit_detail``.
        wait_s: seconds to wait for the killed process to release the store's lock.

    Returns:
        True when the run was found unfinished and marked ``killed``; False when there is no such
        run, it ended after all, or its store stayed locked (another process still writes it).
    """
    path = runs_dir(home) / run_id / "trajectory.duckdb"
    deadline = time.monotonic() + wait_s
    while path.is_file():
        try:
            with closing(RunStore(path)) as store:
                if store.run()["status"] == "finished":
                    return False
                store.update_run(status="killed", exit_detail=reason)
                return True
        except duckdb.Error as exc:
            if not _is_lock_error(exc) or time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        except RunNotFound:
            return False
    return False


def new_run_id(taken: set[str] | None = None) -> str:
    """A sortable run id: ``YYYYmmdd-HHMMSS-xxxx`` (local time, 4 random hex digits).

    Args:
        taken: ids already handed out by the caller (a scheduler naming hundreds of runs in one
            second); the new id is not one of them, and is added to the set.
    """
    while True:
        run_id = f"{datetime.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
        if taken is None or run_id not in taken:
            break
    if taken is not None:
        taken.add(run_id)
    return run_id


def _is_lock_error(exc: duckdb.Error) -> bool:
    return "lock" in str(exc).lower()


def list_runs(home: Path | None = None) -> list[dict[str, Any]]:
    """Return one row per run, newest first.

    ``status`` is ``in use`` for a run another process is writing now, ``killed`` for one whose
    process died without a word (it can be resumed), ``damaged`` for an unreadable store.
    """
    rows = []
    for path in sorted(runs_dir(home).glob("[!.]*/trajectory.duckdb"), reverse=True):  # not half-made ones
        try:
            with closing(RunStore(path, read_only=True)) as store:
                row = store.run()
                if row["status"] == "running":  # killed: its totals were never written; count its steps
                    row["steps"] = store.con.execute("SELECT coalesce(max(step), 0) FROM model_calls").fetchone()[0]
        except duckdb.Error as exc:
            rows.append({"run_id": path.parent.name, "status": "in use" if _is_lock_error(exc) else "damaged"})
            continue
        except RunNotFound:
            continue
        if row["status"] == "running":  # we could open it, so no process holds it any more
            row["status"] = "killed"
        rows.append(row)
    return rows


def open_store_for_writing(run_id: str, home: Path | None = None) -> RunStore:
    """Open a run's store to write it (resuming the run).

    Raises:
        RunNotFound: no such run.
        UserError: the run is in use by another process, or its store is damaged.
    """
    return _open_store(run_id, home, read_only=False)


def _open_store(run_id: str, home: Path | None, *, read_only: bool) -> RunStore:
    path = runs_dir(home) / run_id / "trajectory.duckdb"
    if not path.is_file():
        raise RunNotFound(f"no run {run_id!r} in {runs_dir(home)}; list runs with: agent runs")
    try:
        return RunStore(path, read_only=read_only)
    except duckdb.Error as exc:
        if _is_lock_error(exc):
            raise UserError(f"run {run_id} is in use by another process; try again when it stops") from None
        raise UserError(f"the run store of {run_id} is damaged ({path}): {exc}") from None


def open_store(run_id: str, home: Path | None = None) -> RunStore:
    """Open a run's store read-only.

    Raises:
        RunNotFound: no such run.
        UserError: the run is being written by another process right now, or its store is damaged.
    """
    return _open_store(run_id, home, read_only=True)


def apply_run(run_id: str, home: Path | None = None) -> Path:
    """Apply a run's final patch to the repository it was started on; return that repository.

    Raises:
        RunNotFound, UserError: no such run, no repository, or the patch does not apply.
    """
    with closing(open_store(run_id, home)) as store:
        row = store.run()
    if not row["repo"]:
        raise UserError(f"run {run_id} has no repository to apply a patch to")
    repo = Path(row["repo"])
    ws.apply_patch(repo, runs_dir(home) / run_id / "patch.diff")
    return repo
