"""A run store's live mirror: every write of the writing process, also appended to a JSON Lines
file that other processes may read while the run goes on.

DuckDB lets one process hold a database file for writing and then no other process may open it,
not even read-only (https://duckdb.org/docs/current/connect/concurrency); a copy of the file taken
while it is written may be half-written. So the writer also appends each write statement and its
parameters to ``trajectory.live.jsonl`` beside the store, one JSON object a line, and a reader
replays the lines into an in-memory DuckDB with the same schema (``replay``): the same SQL on the
same schema gives the same tables, read by the same ``RunStore`` methods. The file is rewritten
from the store's contents when a writer opens it (a resumed run), and deleted when the writer
closes the store; a killed writer leaves it behind, harmless (the store is readable then).

Line format: ``{"sql": "...", "params": [...]}``; the statements of one transaction are written
together when it commits. A last line without its newline (a write in progress) is not replayed.
Engine token ids and logprobs are not mirrored (large, and only the exporters read them).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import duckdb

__all__ = ["MIRROR_NAME", "LiveMirror", "mirror_path", "replay"]

#: The mirror's file name, beside ``trajectory.duckdb``.
MIRROR_NAME = "trajectory.live.jsonl"


def mirror_path(store_path: Path) -> Path:
    """The mirror file of the run store at ``store_path``."""
    return store_path.with_name(MIRROR_NAME)


class LiveMirror:
    """The writer's side: appends statements to the mirror file.

    Args:
        path: the mirror file (replaced by ``seed`` when given).
        seed: statements that rebuild the store's current contents, written first.
    """

    def __init__(self, path: Path, seed: list[tuple[str, list[Any]]]) -> None:
        self.path = path
        fresh = path.with_name(path.name + ".tmp")
        with fresh.open("w", encoding="utf-8") as out:
            out.writelines(_line(sql, params) for sql, params in seed)
        os.replace(fresh, path)  # a reader sees the old file or the whole seed, never a part of it
        self._file = path.open("a", encoding="utf-8")
        self._pending: list[str] | None = None

    def record(self, sql: str, params: list[Any]) -> None:
        """Append one statement (held back until ``commit`` inside a transaction)."""
        line = _line(sql, params)
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
        """Close and delete the mirror: the store itself is readable once its writer lets go."""
        if not self._file.closed:
            self._file.close()
            self.path.unlink(missing_ok=True)


def _line(sql: str, params: list[Any]) -> str:
    return json.dumps({"sql": sql, "params": params}, default=str, ensure_ascii=False) + "\n"


def replay(path: Path, schema: str) -> duckdb.DuckDBPyConnection:
    """Rebuild a run store in memory from its mirror.

    Args:
        path: the mirror file.
        schema: the store's ``SCHEMA`` (``core.store``).

    Returns:
        An in-memory DuckDB connection holding the run as written so far.

    Raises:
        FileNotFoundError: no mirror (the writer closed the store: open the store itself).
        ValueError: a complete line is not a mirrored statement (the file is not a mirror).
    """
    text = path.read_text(encoding="utf-8", errors="replace")
    complete = text[: text.rfind("\n") + 1]  # a line still being written is left for the next read
    con = duckdb.connect(":memory:", config={"threads": 1})
    con.execute(schema)
    for number, line in enumerate(complete.splitlines(), 1):
        try:
            entry = json.loads(line)
            con.execute(entry["sql"], entry["params"])
        except (json.JSONDecodeError, KeyError, TypeError, duckdb.Error) as exc:
            con.close()
            raise ValueError(f"{path} line {number} is not a mirrored run-store statement ({exc})") from None
    return con
