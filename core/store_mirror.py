"""A run store's live mirror: every write of the writing process, also appended to a JSON Lines
file that other processes may read while the run goes on.

DuckDB lets one process hold a database file for writing and then no other process may open it,
not even read-only (https://duckdb.org/docs/current/connect/concurrency); a copy of the file taken
while it is written may be half-written. So the writer also appends each write statement and its
row to ``trajectory.live.jsonl`` beside the store, one JSON object a line, and a reader folds the
lines into the tables' rows and loads them into an in-memory DuckDB with the same schema
(``replay``), read by the same ``RunStore`` methods. The file is rewritten
from the store's contents when a writer opens it (a resumed run), and deleted when the writer
closes the store; a killed writer leaves it behind, harmless (the store is readable then).

Line format, one of: ``{"table": "runs", "insert"|"update": {column: value}}`` (the store holds
one run row: updates are merged into it), ``{"table": "messages", "insert": {column: value}}``,
``{"table": "rewards", "replace": [{column: value}, ...]}``; the lines of one transaction are
written together when it commits. A last line without its newline (a write in progress) is not replayed.
Engine token ids and logprobs are not mirrored (large, and only the exporters read them).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

__all__ = ["MIRROR_NAME", "LiveMirror", "mirror_path", "open_mirror", "replay"]

#: The mirror's file name, beside ``trajectory.duckdb``.
MIRROR_NAME = "trajectory.live.jsonl"


def mirror_path(store_path: Path) -> Path:
    """The mirror file of the run store at ``store_path``."""
    return store_path.with_name(MIRROR_NAME)


_OPEN: dict[Path, LiveMirror] = {}  # DuckDB lets one process open a store twice: both share one mirror
_OPEN_LOCK = threading.Lock()


def open_mirror(path: Path, seed: Callable[[], list[dict[str, Any]]]) -> LiveMirror:
    """The process's mirror at ``path``: a new one seeded with ``seed()``, or the one another
    ``RunStore`` of this process already writes (shared, counted; ``LiveMirror.close`` deletes
    the file when the last user closes)."""
    path = path.resolve()
    with _OPEN_LOCK:
        mirror = _OPEN.get(path)
        if mirror is None:
            mirror = _OPEN[path] = LiveMirror(path, seed())
        mirror.users += 1
        return mirror


class LiveMirror:
    """The writer's side: appends statements to the mirror file.

    Args:
        path: the mirror file (replaced by ``seed`` when given).
        seed: entries that rebuild the store's current contents, written first.
    """

    def __init__(self, path: Path, seed: list[dict[str, Any]]) -> None:
        self.path = path
        fresh = path.with_name(path.name + ".tmp")
        with fresh.open("w", encoding="utf-8") as out:
            out.writelines(_line(entry) for entry in seed)
        os.replace(fresh, path)  # a reader sees the old file or the whole seed, never a part of it
        self._file = path.open("a", encoding="utf-8")
        self._pending: list[str] | None = None
        self.users = 0

    def record(self, entry: dict[str, Any]) -> None:
        """Append one entry (held back until ``commit`` inside a transaction)."""
        line = _line(entry)
        if self._pending is not None:
            self._pending.append(line)
            return
        self._file.write(line)
        self._file.flush()

    def begin(self) -> None:
        """Start holding statements back (a store transaction began)."""
        self._pending = []

    def commit(self) -> None:
        """Write the held statements in one write."""
        lines, self._pending = self._pending or [], None
        self._file.write("".join(lines))
        self._file.flush()

    def rollback(self) -> None:
        """Drop the held statements (the transaction was rolled back)."""
        self._pending = None

    def close(self) -> None:
        """Let go of the mirror; the last user closes and deletes it (the store itself is
        readable once its writer lets go)."""
        with _OPEN_LOCK:
            self.users -= 1
            if self.users > 0 or self._file.closed:
                return
            _OPEN.pop(self.path, None)
            self._file.close()
            self.path.unlink(missing_ok=True)


def _line(entry: dict[str, Any]) -> str:
    return json.dumps(entry, default=str, ensure_ascii=False) + "\n"


def replay(path: Path, schema: str) -> duckdb.DuckDBPyConnection:
    """Rebuild a run store in memory from its mirror.

    Args:
        path: the mirror file.
        schema: the store's ``SCHEMA`` (``core.store``).

    Returns:
        An in-memory DuckDB connection holding the run as written so far.

    Raises:
        FileNotFoundError: no mirror (the writer closed the store: open the store itself).
        ValueError: a complete line is not a mirror entry (the file is not a mirror).
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    complete = text[: text.rfind("\n") + 1]  # a line still being written is left for the next read
    run: dict[str, Any] = {}
    messages: list[dict[str, Any]] = []
    rewards: list[dict[str, Any]] = []
    for number, line in enumerate(complete.splitlines(), 1):
        try:
            entry = json.loads(line)
            table = entry["table"]
            if table == "runs":
                run.update(entry.get("insert") or entry["update"])
            elif table == "messages":
                messages.append(entry["insert"])
            elif table == "rewards":
                rewards = entry["replace"]
            else:
                raise KeyError(table)
        except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f"{path} line {number} is not a run-store mirror entry ({exc!r})") from None
    con = duckdb.connect(":memory:", config={"threads": 1})
    try:
        con.execute(schema)
        for table, rows in (("runs", [run] if run else []), ("messages", messages), ("rewards", rewards)):
            if rows:  # one bulk insert per table (an Arrow table, columns by name): row by row is ~100 times slower
                names = list(dict.fromkeys(name for row in rows for name in row))  # rows differ in columns (a tool row has no tokens)
                try:
                    arrow = pa.Table.from_pydict({name: [row.get(name) for row in rows] for name in names})
                except pa.ArrowException:  # a column Arrow cannot type as one (mixed values): row by row
                    con.executemany(f"INSERT INTO {table} ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                                    [[row.get(name) for name in names] for row in rows])
                    continue
                con.register("mirror_rows", arrow)
                con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM mirror_rows")
                con.unregister("mirror_rows")
    except duckdb.Error as exc:
        con.close()
        raise ValueError(f"{path} does not load as a run store ({exc})") from None
    return con
