"""The run folders as a whole, without the loop: run ids, reading a run's store as the runs
catalog lists it (``read_entry``; ``core.catalog`` lists runs), opening a run's store, marking a
run killed from outside, applying a run's patch.

Kept apart from ``core.runner`` (which imports LangGraph, the policies and the plugins) so that
``agent runs``, ``agent show``, ``agent apply`` and the exporters start fast. The folder layout
is ``core.runner``'s.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import duckdb

from core.catalog_db import catalog_path, store_key
from core.config import runs_dir
from core.errors import RunNotFound, UserError
from core.store import RunStore

__all__ = [
    "RUN_ID",
    "apply_run",
    "mark_killed",
    "new_run_id",
    "open_store",
    "open_store_for_writing",
    "read_entry",
    "reading_store",
    "scan_runs",
    "store_error",
    "store_problem",
]


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
            with closing(RunStore(path, catalog=catalog_path(home))) as store:
                if store.run()["status"] == "finished":
                    return False
                store.update_run(status="killed", exit_detail=reason)
                return True
        except duckdb.Error as exc:
            if store_problem(exc) != "in use" or time.monotonic() > deadline:
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


def store_problem(exc: duckdb.Error) -> Literal["in use", "unreadable", "damaged"]:
    """Tell why DuckDB refused a run store, from its error type and text (DuckDB 1.x and 2.x).

    Args:
        exc: what ``duckdb.connect`` or a query on the store raised.

    Returns:
        ``in use``: another process holds the file's lock (``IO Error: Could not set lock on
        file``), or this process has it open with other settings; ``unreadable``: the operating
        system refused the file (``IO Error: Cannot open file ...: Permission denied``, a read-only
        file system, a file from a newer DuckDB), the file itself is not known to be bad;
        ``damaged``: the file is not a DuckDB database, or a block fails its checksum, or any
        other error reading it (``Corrupt database file``, a serialization or internal error).
    """
    text = str(exc)
    if isinstance(exc, duckdb.IOException) and "Could not set lock on file" in text:
        return "in use"
    if isinstance(exc, duckdb.ConnectionException) and "different configuration than existing connections" in text:
        return "in use"  # open in this very process (read-write), asked for read-only, or the reverse
    if isinstance(exc, duckdb.IOException) and "not a valid DuckDB database file" not in text:
        return "unreadable"
    return "damaged"


def store_error(run_id: str, path: Path, exc: duckdb.Error) -> UserError:
    """The one-line error for a run store DuckDB refused (``store_problem`` says which kind).

    Args:
        run_id: the run.
        path: its ``trajectory.duckdb``.
        exc: what DuckDB raised.

    Returns:
        A ``UserError`` to raise: in use (try again later), cannot be opened (permissions), or
        ``damaged: <file> (<DuckDB's words>); ...`` with where the patch and workspace are kept.
    """
    reason = str(exc).strip().splitlines()[0].replace(str(path), path.name) if str(exc).strip() else type(exc).__name__
    problem = store_problem(exc)
    if problem == "in use":
        return UserError(f"run {run_id} is in use by another process; try again when it stops")
    if problem == "unreadable":
        return UserError(f"cannot open the run store {path} ({reason}); check its permissions and the file system")
    folder = path.parent
    return UserError(
        f"damaged: {path} ({reason}); the run cannot be shown or resumed. Its patch is kept in {folder / 'patch.diff'} "
        f"(apply it with git apply) and its workspace in {folder / 'workspace'}; delete {folder} to drop the run"
    )


def read_entry(path: Path) -> dict[str, Any]:
    """Read one run store as the runs catalog keeps it (``core.catalog``): ``RunStore.listing``'s
    entry, with ``store_key`` (taken before reading: a write meanwhile makes the row stale),
    ``writer`` None, ``live`` (read from its writer's live mirror) and ``problem``.

    ``status`` is None for a store that holds no run; for one DuckDB refuses, the row has only
    ``run_id`` and ``status`` (``store_problem``: ``in use``, ``damaged``, ``unreadable``) and
    ``problem`` is its one-line error (``store_error``). A live run's and an ``in use`` store's
    ``store_key`` is None: they are read again at the next listing.
    """
    run_id = path.parent.name
    key = store_key(path)
    entry: dict[str, Any] = {"run_id": run_id, "status": None, "row": {}, "numbers": None, "store_key": key, "writer": None,
                             "live": False, "problem": None}
    try:
        with closing(open_store_for_reading(path)) as store:
            entry.update(store.listing(), live=store.live)
    except duckdb.Error as exc:
        problem = store_problem(exc)
        entry.update(status=problem, row={"run_id": run_id, "status": problem}, problem=str(store_error(run_id, path, exc)))
    except RunNotFound:
        pass
    if entry["live"] or entry["status"] == "in use":
        entry["store_key"] = None
    return entry


def scan_runs(home: Path | None = None) -> list[dict[str, Any]]:
    """One row per run, newest first, read from every run's store (the runs catalog's rebuild,
    and how runs were listed before it: ``core.catalog.list_runs`` is what lists them).

    ``status`` is ``running`` for a run another process is writing now (read from its live mirror,
    ``core.store_mirror``), ``in use`` for a store some other program holds, ``killed`` for one whose
    process died without a word (it can be resumed), ``damaged`` for a store that is not a DuckDB
    database or fails its checksums, ``unreadable`` for one the operating system refuses
    (``store_problem``). ``agent show RUN_ID`` says what to do about it.
    """
    rows = []
    for path in sorted(runs_dir(home).glob("[!.]*/trajectory.duckdb"), reverse=True):  # not half-made ones
        entry = read_entry(path)
        if entry["status"] is None:
            continue
        row = entry["row"]
        if row["status"] == "running" and not entry["live"]:  # we could open it, so no process holds it any more
            row["status"] = "killed"
        rows.append(row)
    return rows


def open_store_for_reading(path: Path) -> RunStore:
    """The store at ``path`` read-only, or, while its writer holds it, rebuilt from the writer's
    live mirror (``RunStore.from_mirror``; ``store.live`` is True then).

    Raises:
        duckdb.Error: DuckDB refused the store and there is no readable mirror (``store_problem``).
    """
    for _ in range(3):  # the writer may close (and delete the mirror) between the two tries
        try:
            return RunStore(path, read_only=True)
        except duckdb.Error as exc:
            if store_problem(exc) != "in use":
                raise
            try:
                return RunStore.from_mirror(path)
            except (FileNotFoundError, ValueError):
                refused = exc
    raise refused


def open_store_for_writing(run_id: str, home: Path | None = None) -> RunStore:
    """Open a run's store to write it (resuming the run).

    Raises:
        RunNotFound: no such run.
        UserError: the run is in use by another process, its store cannot be opened, or it is
            damaged (``damaged: <file> (...)``, with what to do).
    """
    return _open_store(run_id, home, read_only=False)


def _open_store(run_id: str, home: Path | None, *, read_only: bool, live: bool = False) -> RunStore:
    if not RUN_ID.fullmatch(run_id):  # a path ("../x") or a name with control characters is no run id
        raise RunNotFound(f"no run {run_id!r} in {runs_dir(home)}; list runs with: agent runs")
    path = runs_dir(home) / run_id / "trajectory.duckdb"
    try:
        found = path.is_file()
    except OSError as exc:  # Horizon's folder itself cannot be read (permissions)
        raise UserError(f"cannot read {runs_dir(home)} ({exc.strerror or exc}); check its permissions, or set HORIZON_HOME") from None
    if not found:
        raise RunNotFound(f"no run {run_id!r} in {runs_dir(home)}; list runs with: agent runs")
    try:
        if not read_only:
            store = RunStore(path, catalog=catalog_path(home))
        else:
            store = open_store_for_reading(path) if live else RunStore(path, read_only=True)
    except duckdb.Error as exc:
        raise store_error(run_id, path, exc) from None
    try:
        store.run()  # the run's row: a store whose blocks are garbled fails here, not midway through a command
    except duckdb.Error as exc:
        store.close()
        raise store_error(run_id, path, exc) from None
    except BaseException:
        store.close()
        raise
    return store


def open_store(run_id: str, home: Path | None = None, *, live: bool = False) -> RunStore:
    """Open a run's store read-only.

    Args:
        live: a run another process is writing now is read from that process's live mirror
            (``store.live`` is True then: its rows so far) instead of refused. For readers that
            show a run (``agent show``, ``agent ui``), not for those that act on a finished one
            (export, apply, resume).

    Raises:
        RunNotFound: no such run.
        UserError: the run is being written by another process (without ``live``, or a program
            that keeps no mirror holds it), its store cannot be opened, or it is damaged.
    """
    return _open_store(run_id, home, read_only=True, live=live)


@contextmanager
def reading_store(run_id: str, home: Path | None = None, *, live: bool = False) -> Iterator[RunStore]:
    """``with reading_store(run_id) as store:`` the run's store, read-only, closed at the end; a
    DuckDB error while reading it inside the block (a garbled block) becomes the same one-line
    ``UserError`` as ``open_store``'s; ``live`` as ``open_store``'s.

    Raises:
        RunNotFound: no such run.
        UserError: in use, cannot be opened, or damaged (``store_error``).
    """
    with closing(open_store(run_id, home, live=live)) as store:
        try:
            yield store
        except duckdb.Error as exc:
            raise store_error(run_id, store.path, exc) from None


def apply_run(run_id: str, home: Path | None = None, *, allow_outside_links: bool = False, allow_git_dir: bool = False) -> Path:
    """Apply a run's final patch to the repository it was started on, as one reviewed, atomic
    transaction (``core.apply.apply_run_patch``: the old files are kept for ``agent apply --undo``);
    return that repository. The caller has the user's consent: the review is not shown here.

    Args:
        run_id: the run.
        home: Horizon's data folder (default ``$HORIZON_HOME`` or ``~/.horizon``).
        allow_outside_links: apply symbolic links whose target leaves the repository.
        allow_git_dir: apply changes inside ``.git``.

    Raises:
        RunNotFound, UserError: no such run, no repository, the patch is refused (a link out of
            the repository, a change in ``.git``), already applied or does not apply; the
            repository is unchanged in each case.
    """
    from core.apply import apply_run_patch

    return apply_run_patch(run_id, home, allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir).repo
