"""The runs catalog's file: ``$HORIZON_HOME/catalog.sqlite`` (SQLite, WAL), one row per run.

Only the file's format and its reads and writes; what the rows mean, and when they are read
again from the run stores, is ``core.catalog``'s. Written by a run's writer through
``core.store.RunStore.sync_catalog`` (``write_entry``). Standard library only: the command line
reads it without importing DuckDB.

Row: ``run_id``; ``status`` (the store's, None for a folder whose store holds no run); ``row``
(JSON: the listing row, ``core.store.RunStore.listing``); ``numbers`` (JSON: the metrics' counts);
``store_key`` (the store's size and modification time when the row was read, ``store_key``;
None: read it again next time); ``writer`` (``process_mark`` of the process writing the run
now; None: none).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from core.paths import horizon_home

__all__ = ["CATALOG_NAME", "CATALOG_VERSION", "CatalogDamaged", "alive", "catalog_path", "connect", "delete_entries", "process_mark",
           "read_entries", "remove_catalog", "store_key", "upsert", "write_entry"]

#: The catalog's file name in ``$HORIZON_HOME``.
CATALOG_NAME = "catalog.sqlite"
#: The schema's version (``PRAGMA user_version``); a catalog of another version is rebuilt.
CATALOG_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY,
    status TEXT,
    row TEXT NOT NULL,
    numbers TEXT,
    store_key TEXT,
    writer TEXT
);
"""

log = logging.getLogger("horizon.catalog")


class CatalogDamaged(Exception):
    """The catalog file is not a catalog of this version, or SQLite found it damaged."""


def catalog_path(home: Path | None = None) -> Path:
    """The catalog file: ``$HORIZON_HOME/catalog.sqlite``."""
    return (home or horizon_home()) / CATALOG_NAME


def store_key(store: Path) -> str | None:
    """The size and modification time (ns) of a run store and of its write-ahead log, as one
    text that changes whenever DuckDB writes the store; None when the store is not there."""
    parts = []
    for path in (store, store.with_name(store.name + ".wal")):
        try:
            found = os.stat(path)
        except OSError:
            if path is store:
                return None
            continue
        parts.append(f"{found.st_size}:{found.st_mtime_ns}")
    return "/".join(parts)


def _proc_stat(pid: int) -> list[bytes]:
    """The fields of ``/proc/PID/stat`` after the command's name (state first), [] without them."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return []


def _start_time(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot, from ``/proc``); "" without ``/proc``
    or such a process. It tells a live writer from a process that got its pid later."""
    fields = _proc_stat(pid)
    return fields[19].decode() if len(fields) > 19 else ""


def process_mark(pid: int | None = None) -> str:
    """``host:pid:start`` of this process (or of ``pid``): who writes a run (the ``writer`` column)."""
    pid = os.getpid() if pid is None else pid
    return f"{os.uname().nodename}:{pid}:{_start_time(pid)}"


def alive(writer: str | None) -> bool:
    """Whether the process ``writer`` names (``process_mark``) still runs. One on another host
    cannot be checked from here: it counts as gone (its run is then read from its store)."""
    if not writer:
        return False
    host, _, rest = writer.partition(":")
    pid_text, _, start = rest.partition(":")
    if host != os.uname().nodename or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process has the pid: alive, and its start time tells
        pass
    fields = _proc_stat(pid)
    if fields and fields[0] in (b"Z", b"X"):  # it has exited (a zombie not yet reaped): it writes nothing more
        return False
    return not start or (len(fields) > 19 and fields[19].decode() == start)


def _encode(value: Any) -> Any:
    if isinstance(value, datetime):
        return {"$datetime": value.isoformat()}
    raise TypeError(f"{type(value).__name__} is not JSON")


def _decode(obj: dict[str, Any]) -> Any:
    return datetime.fromisoformat(obj["$datetime"]) if obj.keys() == {"$datetime"} else obj


def _damage(exc: sqlite3.Error) -> bool:
    """Whether SQLite's error says the file is bad (not a lock, permissions or a full disk)."""
    if isinstance(exc, sqlite3.OperationalError):
        return "no such table" in str(exc) or "no such column" in str(exc)
    return isinstance(exc, sqlite3.DatabaseError)


def connect(path: Path) -> sqlite3.Connection:
    """The catalog, open (made with its schema when missing; autocommit, WAL), its rows counted
    once so that a damaged table shows now.

    Raises:
        CatalogDamaged: the file is not a SQLite database, is of another schema version, or a page is damaged.
        sqlite3.Error: it cannot be opened or is locked (permissions, a full disk, a writer holding it too long).
    """
    try:
        os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))  # private, as the run stores: tasks are in it
    except FileExistsError:
        pass
    try:
        con = sqlite3.connect(path, timeout=10.0, isolation_level=None)  # its -wal and -shm files get the same mode
    except sqlite3.Error as exc:
        if _damage(exc):
            raise CatalogDamaged(str(exc)) from None
        raise
    try:
        version = con.execute("PRAGMA user_version").fetchone()[0]
        if version not in (0, CATALOG_VERSION):
            raise CatalogDamaged(f"a catalog of version {version}, not {CATALOG_VERSION}")
        if con.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")  # WAL: a power cut may lose the last rows (refreshed), never the file
        if version == 0:
            con.executescript(SCHEMA + f"PRAGMA user_version = {CATALOG_VERSION};")
        con.execute("SELECT count(*) FROM runs").fetchone()
    except sqlite3.Error as exc:
        con.close()
        if _damage(exc):
            raise CatalogDamaged(str(exc)) from None
        raise
    except BaseException:
        con.close()
        raise
    return con


def remove_catalog(path: Path) -> None:
    """Delete the catalog file and its write-ahead log and shared-memory files."""
    for name in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        name.unlink(missing_ok=True)


def read_entries(con: sqlite3.Connection) -> dict[str, dict[str, Any]]:
    """Every row, by run id, its JSON parsed; ``garbled`` True for a row whose JSON does not parse (to be read again).

    Raises:
        CatalogDamaged: a page of the table is damaged.
    """
    out = {}
    try:
        rows = con.execute("SELECT run_id, status, row, numbers, store_key, writer FROM runs").fetchall()
    except sqlite3.Error as exc:
        if _damage(exc):
            raise CatalogDamaged(str(exc)) from None
        raise
    for run_id, status, row, numbers, key, writer in rows:
        entry = {"run_id": run_id, "status": status, "row": None, "numbers": None, "store_key": key, "writer": writer, "garbled": False}
        try:
            entry.update(row=json.loads(row, object_hook=_decode), numbers=json.loads(numbers) if numbers else None)
        except (TypeError, ValueError):
            entry["garbled"] = True
        out[run_id] = entry
    return out


def upsert(con: sqlite3.Connection, entries: list[dict[str, Any]], seen: dict[str, tuple[str | None, str | None] | None] | None = None) -> None:
    """Write ``entries`` (dicts with the columns' names) in one transaction.

    Args:
        seen: a reader's refresh: ``{run id: (store_key, writer)}`` of the row it read, None where
            it read none; a row that changed since (its writer wrote it meanwhile) is kept, not
            overwritten with what the reader read before. None: the writer's own write, always written.
    """
    def values(e: dict[str, Any]) -> tuple[Any, ...]:
        return (e["run_id"], e.get("status"), json.dumps(e.get("row") or {}, default=_encode),
                json.dumps(e["numbers"]) if e.get("numbers") is not None else None, e.get("store_key"), e.get("writer"))

    insert = "INSERT INTO runs (run_id, status, row, numbers, store_key, writer) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) "
    update = ("DO UPDATE SET status = excluded.status, row = excluded.row, numbers = excluded.numbers, "
              "store_key = excluded.store_key, writer = excluded.writer")
    con.execute("BEGIN IMMEDIATE")
    try:
        if seen is None:
            con.executemany(insert + update, [values(e) for e in entries])
        else:
            for e in entries:
                before = seen.get(e["run_id"])
                if before is None:
                    con.execute(insert + "DO NOTHING", values(e))
                else:
                    con.execute(insert + update + " WHERE runs.store_key IS ? AND runs.writer IS ?", (*values(e), *before))
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def delete_entries(con: sqlite3.Connection, run_ids: list[str]) -> None:
    """Drop the rows of ``run_ids`` (their folders are gone), in one transaction."""
    con.execute("BEGIN IMMEDIATE")
    con.executemany("DELETE FROM runs WHERE run_id = ?", [(r,) for r in run_ids])
    con.execute("COMMIT")


def file_id(path: Path) -> tuple[int, int] | None:
    """The catalog file's device and inode (a rebuilt catalog is another file), None when missing."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def open_for_writing(path: Path) -> sqlite3.Connection | None:
    """A writer's connection to the catalog at ``path``, None when it cannot be opened now
    (no folder, damaged, locked too long, a full disk: ``write_entry``)."""
    if not path.parent.is_dir():
        return None
    try:
        return connect(path)
    except (CatalogDamaged, sqlite3.Error, OSError) as exc:
        log.debug("the runs catalog %s was not written (%s); the run is read from its store next time", path, exc)
        return None


def write_entry_on(con: sqlite3.Connection, path: Path, entry: dict[str, Any]) -> bool:
    """Write one run's row on an open connection (``open_for_writing``); False when it failed
    (the row is then older than the store: the next listing reads the run from it)."""
    try:
        upsert(con, [entry])
    except (sqlite3.Error, OSError) as exc:
        log.debug("the runs catalog %s was not written (%s); the run is read from its store next time", path, exc)
        return False
    return True


def write_entry(path: Path, entry: dict[str, Any]) -> None:
    """Write one run's row into the catalog at ``path``; called by the run's writer.

    A catalog that cannot be written now (missing folder, damaged, locked too long, a full disk)
    is left as it is: the row is then older than the store, and the next listing reads that run
    from its store (``core.catalog``); a damaged one is rebuilt there, with its notice.
    """
    if not path.parent.is_dir():
        return
    try:
        con = connect(path)
    except (CatalogDamaged, sqlite3.Error, OSError) as exc:
        log.debug("the runs catalog %s was not written (%s); the run is read from its store next time", path, exc)
        return
    try:
        upsert(con, [entry])
    except (sqlite3.Error, OSError) as exc:
        log.debug("the runs catalog %s was not written (%s); the run is read from its store next time", path, exc)
    finally:
        con.close()
