"""The service's durable queue: one SQLite table under ``$HORIZON_HOME/service/queue.sqlite``.

A submit writes its row (with the run id chosen then) before the HTTP answer goes out, so a run
is found again after any crash. The queue holds what was asked and where the service stands
(``queued``, ``running``, ``cancelling``, then ``done``, ``cancelled`` or ``failed``); what the
run did is in its run store, which stays the truth: a run whose store says ``finished`` is never
executed again, whatever the queue says (``core.service.worker``).

Every call opens its own connection (the web thread and the scheduler thread both use the
queue); WAL mode lets readers go on while one writes.

A submit counts the runs queued or running in the same transaction as its insert, so a cap
(``max_active``) holds however many submits race. A queue file that is not an SQLite database or
fails SQLite's quick check is refused as one line (``damaged: <file> ...``, ``QueueDamaged``) and
left exactly as it is. The queue also keeps the bounds of the last ``agent server`` that opened it
(``record_bounds``), for ``agent ui``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Any

from core.config import horizon_home, make_data_folder
from core.errors import UserError
from core.runs import new_run_id
from core.service.bounds import QueueFull

__all__ = ["ACTIVE", "FINAL", "QueueDamaged", "RunQueue", "queue_path"]

#: States after which the service does nothing more with a run.
FINAL = ("done", "cancelled", "failed")
#: States of a run handed to a worker.
ACTIVE = ("running", "cancelling")

SCHEMA = """
CREATE TABLE IF NOT EXISTS queue (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT UNIQUE NOT NULL,
    request TEXT NOT NULL,          -- JSON: plugin, task, repo, policy spec, limits, pricing, isolated
    state TEXT NOT NULL,            -- queued | running | cancelling | done | cancelled | failed
    starts INTEGER NOT NULL DEFAULT 0,  -- times handed to a worker (more than 1: resumed)
    detail TEXT NOT NULL DEFAULT '',
    submitted_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS service (key TEXT PRIMARY KEY, value TEXT NOT NULL);  -- JSON values: bounds
"""


class QueueDamaged(UserError):
    """The queue file is not an SQLite database or fails its quick check; the message is one line."""


def _damaged(path: Path, exc: sqlite3.Error) -> QueueDamaged:
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return QueueDamaged(
        f"damaged: {path} ({reason}); it is kept as it is. Move it away (mv {path} {path}.damaged) and start agent server "
        f"again with an empty queue: the runs it had are in {path.parent.parent / 'runs'} (agent runs lists them, "
        "agent resume RUN_ID continues a stopped one)"
    )


def queue_path(home: Path | None = None) -> Path:
    """``<home>/service/queue.sqlite`` (home: ``$HORIZON_HOME`` or ``~/.horizon``)."""
    return (home or horizon_home()) / "service" / "queue.sqlite"


class RunQueue:
    """The queue table.

    Args:
        path: the SQLite file (created with its folder when missing).

    Raises:
        UserError: the folder cannot be created (``core.config.make_data_folder``) or the file
            cannot be opened; ``QueueDamaged``: ``damaged: <file> (...)`` with what to do, the file untouched.
    """

    def __init__(self, path: Path) -> None:
        make_data_folder(path.parent)
        self.path = path
        existing = path.is_file() and path.stat().st_size > 0
        try:
            with closing(self._connect()) as con:
                if existing:  # an existing queue: read it all once before anything is written to it
                    problems = [row[0] for row in con.execute("PRAGMA quick_check").fetchall()]
                    if problems != ["ok"]:
                        raise sqlite3.DatabaseError("; ".join(problems[:3]))
                con.execute("PRAGMA journal_mode=WAL")
                con.executescript(SCHEMA)
        except sqlite3.Error as exc:
            from core.checkpoint import is_damage  # SQLite's damage codes (imported only on this path: LangGraph is heavy)

            if type(exc) is sqlite3.DatabaseError or is_damage(exc):
                raise _damaged(path, exc) from None
            raise UserError(f"cannot open the service's queue {path} ({exc}); check its permissions and the file system") from None

    def _connect(self) -> sqlite3.Connection:
        con = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)  # autocommit; BEGIN IMMEDIATE where needed
        con.row_factory = sqlite3.Row
        return con

    def _write(self, sql: str, params: tuple[Any, ...]) -> int:
        with closing(self._connect()) as con:
            return con.execute(sql, params).rowcount

    def submit(self, request: dict[str, Any], max_active: int | None = None) -> str:
        """Add a run; return its new run id. The row is committed when this returns.

        Args:
            request: what the worker runs (``core.service.app.queued_request``).
            max_active: refuse when this many runs are queued or running already (None: no cap);
                counted in the insert's own transaction.

        Raises:
            QueueFull: the cap is reached (``core.service.bounds``: answered 429).
        """
        with closing(self._connect()) as con:
            con.execute("BEGIN IMMEDIATE")
            try:
                if max_active is not None:
                    active = con.execute("SELECT count(*) FROM queue WHERE state IN ('queued', 'running', 'cancelling')").fetchone()[0]
                    if active >= max_active:
                        raise QueueFull(f"the queue is full: {active} runs are queued or running, this server's cap "
                                        f"(agent server --max-queued {max_active}); submit again when some have ended")
                taken = {row[0] for row in con.execute("SELECT run_id FROM queue")}
                run_id = new_run_id(taken)
                now = time.time()
                con.execute("INSERT INTO queue (run_id, request, state, submitted_at, updated_at) VALUES (?, ?, 'queued', ?, ?)",
                            (run_id, json.dumps(request), now, now))
            except BaseException:
                con.execute("ROLLBACK")
                raise
            con.execute("COMMIT")
        return run_id

    def active(self) -> int:
        """Runs queued or running (``queued``, ``running``, ``cancelling``): what ``max_active`` counts."""
        with closing(self._connect()) as con:
            return con.execute("SELECT count(*) FROM queue WHERE state IN ('queued', 'running', 'cancelling')").fetchone()[0]

    def record_bounds(self, bounds: dict[str, Any]) -> None:
        """Keep the bounds of the server using this queue (``core.service.bounds.Bounds.to_json``), for ``agent ui``."""
        self._write("INSERT OR REPLACE INTO service (key, value) VALUES ('bounds', ?)", (json.dumps(bounds),))

    def recorded_bounds(self) -> dict[str, Any] | None:
        """What ``record_bounds`` kept last, None when no server has recorded any."""
        with closing(self._connect()) as con:
            row = con.execute("SELECT value FROM service WHERE key = 'bounds'").fetchone()
        return None if row is None else json.loads(row[0])

    def add(self, run_id: str, request: dict[str, Any]) -> None:
        """Queue a run that exists already under ``run_id`` (one ``agent run`` started and that
        should be resumed by the service); the row is committed when this returns.

        Raises:
            sqlite3.IntegrityError: ``run_id`` is in the queue already.
        """
        now = time.time()
        self._write("INSERT INTO queue (run_id, request, state, submitted_at, updated_at) VALUES (?, ?, 'queued', ?, ?)",
                    (run_id, json.dumps(request), now, now))

    def rows(self, state: str | None = None, *, limit: int | None = None, offset: int = 0) -> list[dict[str, Any]]:
        """Every row in submit order (``request`` decoded), or those in ``state``; with ``limit``,
        at most that many after the first ``offset`` (a page: rows are only ever appended)."""
        where, params = ("", []) if state is None else (" WHERE state = ?", [state])
        page = "" if limit is None else " LIMIT ? OFFSET ?"
        params += [] if limit is None else [limit, offset]
        with closing(self._connect()) as con:
            found = con.execute(f"SELECT * FROM queue{where} ORDER BY seq{page}", params).fetchall()
        return [{**dict(row), "request": json.loads(row["request"])} for row in found]

    def count(self) -> int:
        """Rows in the queue, whatever their state."""
        with closing(self._connect()) as con:
            return con.execute("SELECT count(*) FROM queue").fetchone()[0]

    def get(self, run_id: str) -> dict[str, Any] | None:
        """The row of ``run_id``, or None."""
        with closing(self._connect()) as con:
            row = con.execute("SELECT * FROM queue WHERE run_id = ?", (run_id,)).fetchone()
        return None if row is None else {**dict(row), "request": json.loads(row["request"])}

    def take(self, n: int) -> list[dict[str, Any]]:
        """Move up to ``n`` queued rows (oldest first) to ``running``, counting the start; return them."""
        if n <= 0:
            return []
        with closing(self._connect()) as con:
            con.execute("BEGIN IMMEDIATE")
            found = con.execute("SELECT * FROM queue WHERE state = 'queued' ORDER BY seq LIMIT ?", (n,)).fetchall()
            now = time.time()
            for row in found:
                con.execute("UPDATE queue SET state = 'running', starts = starts + 1, updated_at = ? WHERE run_id = ?",
                            (now, row["run_id"]))
            con.execute("COMMIT")
        return [{**dict(row), "request": json.loads(row["request"]), "starts": row["starts"] + 1} for row in found]

    def set_state(self, run_id: str, state: str, detail: str = "", *, only_from: tuple[str, ...] | None = None) -> bool:
        """Set a row's state (and detail); with ``only_from``, only when its state is one of those.

        Returns:
            Whether a row changed.
        """
        sql, params = "UPDATE queue SET state = ?, detail = ?, updated_at = ? WHERE run_id = ?", [state, detail, time.time(), run_id]
        if only_from:
            sql += f" AND state IN ({', '.join('?' * len(only_from))})"
            params += list(only_from)
        return self._write(sql, tuple(params)) > 0

    def recover(self) -> tuple[list[str], list[str]]:
        """After a restart: runs that were running are queued again (their workers died with the
        old server; the worker resumes them from their checkpoints), and runs whose cancel was
        asked for are cancelled.

        Returns:
            (the run ids queued again, the run ids cancelled now).
        """
        requeued = [row["run_id"] for row in self.rows("running")]
        cancelled = [row["run_id"] for row in self.rows("cancelling")]
        now = time.time()
        with closing(self._connect()) as con:
            con.execute("UPDATE queue SET state = 'queued', detail = 'the service restarted: resumed', updated_at = ? "
                        "WHERE state = 'running'", (now,))
            con.execute("UPDATE queue SET state = 'cancelled', detail = 'cancelled (the service restarted meanwhile)', "
                        "updated_at = ? WHERE state = 'cancelling'", (now,))
        return requeued, cancelled

    def counts(self) -> dict[str, int]:
        """Rows per state, and ``resumes``: starts beyond each row's first (runs resumed after a
        kill or a restart of the service)."""
        with closing(self._connect()) as con:
            out = {state: n for state, n in con.execute("SELECT state, count(*) FROM queue GROUP BY state")}
            out["resumes"] = con.execute("SELECT coalesce(sum(max(starts - 1, 0)), 0) FROM queue").fetchone()[0]
        return out
