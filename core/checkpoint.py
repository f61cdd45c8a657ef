"""LangGraph's SQLite checkpointer, with old checkpoints of a thread pruned as new ones arrive.

Resuming needs only the newest checkpoint; the rest are history that would otherwise grow by
three rows a step forever. ``keep`` newest checkpoints per thread (and their pending writes)
are kept, so a few steps of ``get_state_history`` stay available for inspection.
"""

from __future__ import annotations

import sqlite3
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
