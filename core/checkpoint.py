"""LangGraph's SQLite checkpointer, with old checkpoints of a thread pruned as new ones arrive.

Resuming needs only the newest checkpoint; the rest are history that would otherwise grow by
three rows a step forever. ``keep`` newest checkpoints per thread (and their pending writes)
are kept, so a few steps of ``get_state_history`` stay available for inspection.

``open_checkpoints`` opens a run's database and checks it before the run uses it: a file that is
not SQLite, fails SQLite's quick check, or whose newest checkpoint cannot be decoded raises
``CheckpointsDamaged`` (the runner says "damaged: <file>" and what to do), never a traceback
midway through a resume.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.checkpoint.sqlite import SqliteSaver

# Types a checkpoint of the loop holds; LangGraph refuses to restore types not listed.
STATE_TYPES = [("core.state", n) for n in ("EpisodeState", "Usage", "ToolCall", "ExitStatus")]


class PruningSqliteSaver(SqliteSaver):
    """``SqliteSaver`` that deletes all but the ``keep`` newest checkpoints of a thread.

    Args:
        conn: an open SQLite connection (``check_same_thread=False``).
        keep: checkpoints kept per thread and namespace (at least 1).
        every: prune after this many ``put`` calls (pruning is one indexed DELETE).

    Checkpoint ids are time-ordered (UUID v6), so "newest" is the largest id, the same order
    LangGraph itself uses to find the latest checkpoint.
    """

    def __init__(self, conn: sqlite3.Connection, *, keep: int = 20, every: int = 10) -> None:
        super().__init__(conn, serde=JsonPlusSerializer(allowed_msgpack_modules=STATE_TYPES))
        if keep < 1:
            raise ValueError("keep must be at least 1")
        self.keep = keep
        self.every = every
        self._puts = 0

    def put(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        """Save a checkpoint (see ``SqliteSaver.put``), then prune the thread now and then."""
        saved = super().put(config, checkpoint, metadata, new_versions)
        self._puts += 1
        if self._puts % self.every == 0:
            conf = saved["configurable"]
            self.prune(conf["thread_id"], conf.get("checkpoint_ns", ""))
        return saved

    def prune(self, thread_id: str, checkpoint_ns: str = "") -> int:
        """Delete all but the ``keep`` newest checkpoints of a thread; return how many went."""
        oldest_kept = """(SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ?
                          ORDER BY checkpoint_id DESC LIMIT 1 OFFSET ?)"""
        args = (thread_id, checkpoint_ns, thread_id, checkpoint_ns, self.keep - 1)
        with self.cursor() as cur:
            cur.execute(f"DELETE FROM writes WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id < {oldest_kept}", args)
            cur.execute(f"DELETE FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = ? AND checkpoint_id < {oldest_kept}", args)
            return cur.rowcount


class CheckpointsDamaged(Exception):
    """A checkpoint database cannot be trusted; the message says what SQLite or the decoder said."""


# SQLite's primary result codes that mean the file's content is bad, not that it cannot be reached
# (SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_READONLY, SQLITE_IOERR, SQLITE_FULL, SQLITE_BUSY are not).
_DAMAGE_CODES = {sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_FORMAT}


def is_damage(exc: sqlite3.Error) -> bool:
    """Whether an SQLite error says the database file is damaged, not merely out of reach.

    Args:
        exc: what ``sqlite3`` raised.

    Returns:
        True for ``SQLITE_CORRUPT`` ("database disk image is malformed"), ``SQLITE_NOTADB`` ("file
        is not a database") and ``SQLITE_FORMAT``; False for a file that cannot be opened, read or
        written (permissions, I/O, a full disk, a lock), whose content may be fine.
    """
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in _DAMAGE_CODES  # extended codes carry the primary one in their low byte
    text = str(exc)
    return "malformed" in text or "not a database" in text


def open_checkpoints(path: Path, *, keep: int = 20, thread_id: str | None = None) -> PruningSqliteSaver:
    """Open (or create) a run's checkpoint database and check that it can be read.

    Sets WAL with ``synchronous=NORMAL`` (a commit survives a killed process), runs SQLite's
    ``quick_check`` (fast: the database holds at most ``keep`` checkpoints a thread) and, when
    ``thread_id`` is given, decodes that thread's newest checkpoint and its pending writes.

    Args:
        path: the ``checkpoints.sqlite`` file (created when missing).
        keep: checkpoints kept per thread (``PruningSqliteSaver``).
        thread_id: the run whose newest checkpoint must decode; None skips that check.

    Returns:
        The saver; its connection is ``saver.conn`` (the caller closes it).

    Raises:
        CheckpointsDamaged: the file is not an SQLite database, fails the quick check, or its
            newest checkpoint cannot be decoded. The connection is closed.
        sqlite3.Error: the file cannot be opened or written (permissions, a full or read-only
            file system): not damage, the file may be fine.
    """
    con = sqlite3.connect(path, check_same_thread=False)
    try:
        # WAL with synchronous=NORMAL: a commit survives a killed process; after a power loss the
        # last checkpoints may be lost, never corrupted, and the run store (ahead of them) fills the gap.
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
        problems = [row[0] for row in con.execute("PRAGMA quick_check(5)").fetchall()]
        if problems != ["ok"]:
            found = " ".join(" ".join(map(str, problems)).replace("*** in database main ***", "").split())
            raise CheckpointsDamaged(f"SQLite's quick check: {found[:200]}")
        saver = PruningSqliteSaver(con, keep=keep)
        if thread_id is not None:
            try:
                saver.get_tuple({"configurable": {"thread_id": thread_id}})
            except sqlite3.Error:
                raise
            except Exception as exc:  # noqa: BLE001 - whatever the decoder raises on garbage
                raise CheckpointsDamaged(f"the newest checkpoint cannot be decoded ({type(exc).__name__}: {exc})") from None
        return saver
    except sqlite3.Error as exc:
        con.close()
        if is_damage(exc):
            raise CheckpointsDamaged(str(exc)) from None
        raise
    except BaseException:
        con.close()
        raise
