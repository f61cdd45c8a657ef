"""The runs catalog: every run's listing row in one small SQLite file (``core.catalog_db``), so
that listing runs (``agent runs``, ``agent ui``, ``agent server``'s ``GET /api/runs`` and
``/metrics``) reads one file instead of opening each run's DuckDB store.

The run stores stay the truth; the catalog is a cache of them. The process that writes a run
writes its row (``core.store.RunStore.sync_catalog``): when the run starts, at the end of each
step, when it ends and when its store is closed, one transaction each. The readers
(``catalog_rows``) make sure it never says less than the stores:

- a run folder without a row, or whose store changed since its row was written (another size
  or modification time: a run killed mid-step, a store written by a program that keeps no
  catalog), is read again from its store, unless the process writing it is alive and its live
  mirror is there (it keeps its own row, at each step's end);
- a row whose run folder is gone is dropped;
- a missing catalog, one of another schema version, or a damaged file is rebuilt from the
  stores (the last two with one notice line on the ``horizon.catalog`` logger).

A row whose store says ``running`` is listed ``running`` while its writer is alive, else
``killed`` (its process died; ``agent resume`` continues it), as ``core.runs.scan_runs`` lists
it from the stores. Reading the catalog imports neither DuckDB nor pyarrow; only the runs read
again from their stores do.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any

from core.catalog_db import (
    CatalogDamaged,
    alive,
    catalog_path,
    connect,
    delete_entries,
    log,
    read_entries,
    remove_catalog,
    upsert,
)
from core.errors import UserError
from core.paths import runs_dir

__all__ = ["catalog_rows", "list_runs", "rebuild"]

STORE_NAME = "trajectory.duckdb"
#: ``core.store_mirror.MIRROR_NAME`` (not imported: that module imports DuckDB and pyarrow; a test pins them equal).
MIRROR_NAME = "trajectory.live.jsonl"


def _run_folders(home: Path | None) -> dict[str, str | None]:
    """``{run id: store_key}`` for each run folder with a store (hidden ones are half-made)."""
    from core.catalog_db import store_key

    found: dict[str, str | None] = {}
    try:
        entries = os.scandir(runs_dir(home))
    except FileNotFoundError:
        return found
    except OSError as exc:
        raise UserError(f"cannot read {runs_dir(home)} ({exc.strerror or exc}); check its permissions, or set HORIZON_HOME") from None
    with entries:
        for entry in entries:
            if entry.name.startswith(".") or not entry.is_dir():
                continue
            key = store_key(Path(entry.path) / STORE_NAME)
            if key is not None:
                found[entry.name] = key
    return found


def _listed(entry: dict[str, Any], live: bool) -> dict[str, Any]:
    """``entry`` with its listing row's ``running`` made ``killed`` when no process writes it."""
    row = entry["row"]
    if row.get("status") == "running" and not live:
        row = {**row, "status": "killed"}
    return {"run_id": entry["run_id"], "row": row, "numbers": entry.get("numbers"), "problem": entry.get("problem")}


def _refreshed(con: sqlite3.Connection | None, home: Path | None) -> list[dict[str, Any]]:
    """The listing entries of every run folder, from ``con``'s rows where they are fresh and
    from the stores elsewhere (written back to ``con``; None: a catalog that cannot be used now)."""
    folders = _run_folders(home)
    cached = read_entries(con) if con is not None else {}
    stale, out = [], []
    for run_id, key in folders.items():
        entry = cached.get(run_id)
        if entry is None:
            stale.append(run_id)
            continue
        live = alive(entry["writer"]) and (runs_dir(home) / run_id / MIRROR_NAME).exists()
        if entry["garbled"] or (key != entry["store_key"] and not live):
            stale.append(run_id)
        elif entry["status"] is not None:
            out.append(_listed(entry, live))
    if stale:
        from core.runs import read_entry  # DuckDB: only for the runs read again from their stores

        fresh = [read_entry(runs_dir(home) / run_id / STORE_NAME) for run_id in stale]
        if con is not None:  # unless its writer wrote its row meanwhile
            upsert(con, fresh, seen={r: (cached[r]["store_key"], cached[r]["writer"]) if r in cached else None for r in stale})
        out += [_listed(e, e["live"]) for e in fresh if e["status"] is not None]
    gone = [run_id for run_id in cached if run_id not in folders]
    if gone and con is not None:
        delete_entries(con, gone)
    out.sort(key=lambda e: e["run_id"], reverse=True)
    return out


def catalog_rows(home: Path | None = None) -> list[dict[str, Any]]:
    """Every run's listing entry, newest first: ``{"run_id", "row": its listing row (see
    ``list_runs``), "numbers": the metrics' counts (``RunStore.listing``) or None for a store
    that cannot be read, "problem": that store's one-line error or None}``; the catalog is
    refreshed from the stores where it is missing or stale (the module's docstring).

    Raises:
        UserError: Horizon's runs folder cannot be read.
    """
    path = catalog_path(home)
    if not path.parent.is_dir():
        return []
    for attempt in range(2):
        try:
            con = connect(path)
        except CatalogDamaged as exc:
            log.warning("the runs catalog %s was damaged (%s); rebuilt it from the run stores", path, exc)
            remove_catalog(path)
            continue
        except (sqlite3.Error, OSError) as exc:  # cannot be written now (permissions, locked): the stores, the old way
            log.debug("the runs catalog %s cannot be used (%s); the runs are read from their stores", path, exc)
            return _refreshed(None, home)
        try:
            return _refreshed(con, home)
        except CatalogDamaged as exc:
            if attempt:
                raise
            log.warning("the runs catalog %s was damaged (%s); rebuilt it from the run stores", path, exc)
        finally:
            con.close()
        remove_catalog(path)
    return _refreshed(None, home)


def list_runs(home: Path | None = None) -> list[dict[str, Any]]:
    """One row per run, newest first, from the catalog (``catalog_rows``): the run's ``runs`` row
    (``core.store.RUN_FIELDS``, ``config`` parsed), with ``steps`` counted so far for a run not
    ended; ``status`` is ``running`` for a run whose writer is alive, ``killed`` for one whose
    process died; a store that cannot be read has only ``run_id`` and ``status`` (``in use``,
    ``damaged``, ``unreadable``: ``core.runs.store_problem``)."""
    return [entry["row"] for entry in catalog_rows(home)]


def rebuild(home: Path | None = None) -> int:
    """Rebuild the catalog from the run stores (the old file is removed first); return how many runs it lists."""
    remove_catalog(catalog_path(home))
    return len(catalog_rows(home))
