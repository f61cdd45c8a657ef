"""The run store: every step of a run, written to an embedded DuckDB database as it happens.

Each run has its own database file, ``<run dir>/trajectory.duckdb``, held open by the process
running it. The history is one append-only table, ``messages``, one row per message in order
(``seq``), in OpenAI chat format; an assistant row also carries its model call's tokens and
latency, and a tool row its tool call's arguments, error flag, data and duration. Each row is one
statement, hence one transaction: a killed run leaves every completed step readable and none
half-written, at one write per model call and one per tool call.

Tables and views:

- ``runs``: the run (task, plugin, policy, status, totals, reward and its version, patch path);
- ``messages``: the history (see above);
- ``model_calls`` (view): one row per model call: step, model, prompt, cached prompt and
  completion tokens, latency in seconds;
- ``tool_calls`` (view): one row per executed tool call: id, step, tool, arguments, observation,
  error flag, data, seconds;
- ``rewards``: one row per reward component (name, value in [0, 1], weight, details as JSON).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import duckdb

from core import catalog_db
from core.errors import RunNotFound
from core.state import Message, ToolCall, Usage
from core.store_mirror import LiveMirror, mirror_path, open_mirror, replay
from core.text import utf8_safe

if TYPE_CHECKING:
    from core.reward import RewardResult

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    run_id VARCHAR PRIMARY KEY, plugin VARCHAR, task VARCHAR, repo VARCHAR, policy VARCHAR,
    config JSON, status VARCHAR, exit_status VARCHAR, exit_detail VARCHAR, reward DOUBLE,
    steps INTEGER, prompt_tokens BIGINT, cached_prompt_tokens BIGINT, completion_tokens BIGINT,
    cost DOUBLE, active_s DOUBLE, patch_path VARCHAR, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ
);
CREATE TABLE IF NOT EXISTS messages (
    seq INTEGER PRIMARY KEY, step INTEGER, role VARCHAR, content VARCHAR, tool_calls JSON,
    tool_call_id VARCHAR, name VARCHAR,
    model VARCHAR, prompt_tokens INTEGER, cached_prompt_tokens INTEGER, completion_tokens INTEGER,
    latency_s DOUBLE, finish_reason VARCHAR,
    arguments VARCHAR, is_error BOOLEAN, data JSON, duration_s DOUBLE,
    created_at TIMESTAMPTZ DEFAULT current_timestamp
);
-- the engine's own tokens of a model call, where it returns them (RL training data)
ALTER TABLE messages ADD COLUMN IF NOT EXISTS prompt_token_ids JSON;
ALTER TABLE messages ADD COLUMN IF NOT EXISTS completion_token_ids JSON;
ALTER TABLE messages ADD COLUMN IF NOT EXISTS completion_logprobs JSON;
CREATE OR REPLACE VIEW model_calls AS
    SELECT step, model, prompt_tokens, cached_prompt_tokens, completion_tokens, latency_s, finish_reason, created_at
    FROM messages WHERE role = 'assistant';
CREATE OR REPLACE VIEW tool_calls AS
    SELECT seq, tool_call_id, step, name AS tool, arguments, content AS output, is_error, data, duration_s, created_at
    FROM messages WHERE role = 'tool';
-- the reward's verdict beside the scalar (core.reward.RewardResult): scored or not applicable,
-- which version of the reward judged it, whether the task counts as solved, per-step rewards
ALTER TABLE runs ADD COLUMN IF NOT EXISTS reward_status VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS reward_version VARCHAR;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS correct BOOLEAN;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS step_rewards JSON;
ALTER TABLE runs ADD COLUMN IF NOT EXISTS reward_summary VARCHAR;
CREATE TABLE IF NOT EXISTS rewards (
    name VARCHAR PRIMARY KEY, value DOUBLE, weight DOUBLE, detail JSON,
    created_at TIMESTAMPTZ DEFAULT current_timestamp
);
"""

#: The block size of a new store file, in bytes: DuckDB's smallest (its default, 256 KiB, makes a
#: 3-step run's file 2.1 MB, eight blocks each nearly empty; 16 KiB makes it 0.14 MB, with the same
#: rows and the same write and read times: ``bench/store_size.py``). Files written before keep
#: their 256 KiB blocks; DuckDB reads a file's block size from its header.
BLOCK_SIZE = 16384

#: Columns not copied to the live mirror (``core.store_mirror``): large, read only by exporters.
UNMIRRORED = ("prompt_token_ids", "completion_token_ids", "completion_logprobs")

RUN_FIELDS = ["run_id", "plugin", "task", "repo", "policy", "config", "status", "exit_status", "exit_detail", "reward", "steps", "prompt_tokens", "cached_prompt_tokens", "completion_tokens", "cost", "active_s", "patch_path", "created_at", "updated_at",
              "reward_status", "reward_version", "correct", "step_rewards", "reward_summary"]


class RunStore:
    """One run's trajectory database.

    Args:
        path: the DuckDB file (created with the schema when missing).
        read_only: open without taking the write lock (fails while the run is being written).
        mirror: a writer also appends its writes to ``trajectory.live.jsonl``, so that other
            processes can read the run meanwhile (``RunStore.from_mirror``).
        catalog: the runs catalog this writer keeps the run's row in (``core.catalog``):
            ``sync_catalog`` writes it, and so does ``close``; None: none (a store outside the
            runs folder, a reader).

    Attributes:
        live: True for a store rebuilt from a writer's mirror (the run is being written now).

    Raises:
        duckdb.IOException: another process holds the file (the run is in progress).
    """

    def __init__(self, path: Path, *, read_only: bool = False, mirror: bool = True, catalog: Path | None = None) -> None:
        self.path = path
        self.live = False
        self.catalog = None if read_only else catalog
        self._catalog_con: Any = None  # the writer's connection to the catalog, kept open: a step's end costs one write
        self._catalog_file: tuple[int, int] | None = None  # the catalog file that connection writes (``catalog_db.file_id``)
        self._numbers: dict[str, Any] | None = None  # the writer's running counts for the catalog (``listing``'s)
        self._mirror: LiveMirror | None = None
        # One thread: a run's writes are single rows, where DuckDB's thread pool only adds latency.
        # The block size applies to a file created here; an existing file keeps its own (read as it is).
        self.con = duckdb.connect(str(path), read_only=read_only, config={"threads": 1, "default_block_size": BLOCK_SIZE})
        if not read_only:
            self.con.execute(SCHEMA)
            if mirror:
                self._mirror = open_mirror(mirror_path(path), self._contents_as_entries)

    @classmethod
    def from_mirror(cls, path: Path) -> RunStore:
        """The run store at ``path`` as its writing process has written it so far, rebuilt in
        memory from its mirror (``core.store_mirror.replay``); read-only by convention.

        Raises:
            FileNotFoundError: no mirror (no process is writing the run now).
            ValueError: the mirror file is damaged.
        """
        store = cls.__new__(cls)
        store.path, store.live, store._mirror, store.catalog = path, True, None, None
        store._catalog_con, store._numbers = None, None
        store.con = replay(mirror_path(path), SCHEMA)
        return store

    def _contents_as_entries(self) -> list[dict[str, Any]]:
        """Mirror entries that rebuild this store's rows (the mirror's seed)."""
        tables = {}
        for table in ("runs", "messages", "rewards"):
            cursor = self.con.execute(f"SELECT * FROM {table} ORDER BY 1")
            names = [d[0] for d in cursor.description]
            tables[table] = [{n: v for n, v in zip(names, row, strict=True) if n not in UNMIRRORED} for row in cursor.fetchall()]
        return ([{"table": "runs", "insert": row} for row in tables["runs"]] + [{"table": "messages", "insert": row} for row in tables["messages"]]
                + [{"table": "rewards", "replace": tables["rewards"]}])

    def _write(self, sql: str, params: list[Any], mirrored: dict[str, Any]) -> None:
        """Execute a write, and append its rows (``mirrored``, a ``core.store_mirror`` entry) to the mirror."""
        self.con.execute(sql, params)
        if self._mirror is not None:
            self._mirror.record(mirrored)

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """All writes inside are kept together or not at all."""
        self.con.begin()
        if self._mirror is not None:
            self._mirror.begin()
        try:
            yield
        except BaseException:
            self.con.rollback()
            if self._mirror is not None:
                self._mirror.rollback()
            raise
        self.con.commit()
        if self._mirror is not None:
            self._mirror.commit()

    def close(self) -> None:
        """Close the database and delete its live mirror (idempotent); the run's catalog row,
        if this store keeps one, is written with the closed file's size and time and no writer."""
        entry = None
        if self.catalog is not None:
            try:
                entry = self.listing()
            except (duckdb.Error, RunNotFound):  # closed already, or no run row: nothing to list
                entry = None
        self.con.close()
        if self._mirror is not None:
            self._mirror.close()
            self._mirror = None
        if entry is not None and self.catalog is not None:
            self._write_catalog({**entry, "store_key": catalog_db.store_key(self.path), "writer": None})
        if self._catalog_con is not None:
            self._catalog_con.close()
            self._catalog_con = None
        self.catalog = None

    def listing(self) -> dict[str, Any]:
        """What the runs catalog keeps of this run (``core.catalog_db``): ``run_id`` (its folder's name), ``status``,
        ``row`` (the ``runs`` row; ``steps`` counted from the model calls while the run has not
        ended, as its totals are written at the end) and ``numbers`` for the metrics
        (``{"tools": {tool: [calls, errors]}, "latencies": [s], "tokens": {"prompt",
        "cached_prompt", "completion"}}``).

        Raises:
            RunNotFound: the store holds no run.
        """
        row = self.run()
        if row["status"] == "running":  # killed, or live: its totals are not written yet; count its steps
            row["steps"] = self.con.execute("SELECT coalesce(max(step), 0) FROM model_calls").fetchone()[0]
        tools: dict[str, list[int]] = {}
        for tool, calls, errors in self.con.execute(
                "SELECT coalesce(tool, '?'), count(*), count(*) FILTER (WHERE is_error) FROM tool_calls GROUP BY ALL").fetchall():
            tools[tool] = [calls, errors]
        calls = self.con.execute("SELECT latency_s, coalesce(prompt_tokens, 0), coalesce(cached_prompt_tokens, 0), "
                                 "coalesce(completion_tokens, 0) FROM model_calls ORDER BY step").fetchall()
        tokens = {"prompt": sum(c[1] for c in calls), "cached_prompt": sum(c[2] for c in calls), "completion": sum(c[3] for c in calls)}
        numbers = {"tools": tools, "latencies": [c[0] for c in calls if c[0] is not None], "tokens": tokens}
        return {"run_id": self.path.parent.name, "status": row["status"], "row": row, "numbers": numbers}

    def sync_catalog(self) -> None:
        """Write the run's row into the runs catalog (``catalog``; nothing when None), with this
        process as its writer: when the run starts, at each step's end and when it ends. The
        counts are read from the store once, then kept as this store writes them (one query a step)."""
        if self.catalog is None:
            return
        if self._numbers is None:
            entry = self.listing()
            self._numbers = {**entry["numbers"], "steps": entry["row"]["steps"] if entry["row"]["status"] == "running" else None}
            if self._numbers["steps"] is None:
                self._numbers["steps"] = self.con.execute("SELECT coalesce(max(step), 0) FROM model_calls").fetchone()[0]
        else:
            row = self.run()
            if row["status"] == "running":
                row["steps"] = self._numbers["steps"]
            numbers = {"tools": {t: list(n) for t, n in self._numbers["tools"].items()}, "latencies": list(self._numbers["latencies"]),
                       "tokens": dict(self._numbers["tokens"])}
            entry = {"run_id": self.path.parent.name, "status": row["status"], "row": row, "numbers": numbers}
        self._write_catalog({**entry, "store_key": catalog_db.store_key(self.path), "writer": catalog_db.process_mark()})

    def _write_catalog(self, entry: dict[str, Any]) -> None:
        """Write ``entry`` into the catalog on this writer's own connection (opened once; a
        catalog that cannot be written is left: ``core.catalog_db.write_entry``)."""
        if self._catalog_con is not None and catalog_db.file_id(self.catalog) != self._catalog_file:  # rebuilt by a reader meanwhile
            self._catalog_con.close()
            self._catalog_con = None
        if self._catalog_con is None:
            self._catalog_con = catalog_db.open_for_writing(self.catalog)
            self._catalog_file = catalog_db.file_id(self.catalog)
        if self._catalog_con is not None and not catalog_db.write_entry_on(self._catalog_con, self.catalog, entry):
            self._catalog_con.close()  # opened again at the next write (a catalog rebuilt meanwhile is another file)
            self._catalog_con = None

    def _count(self, step: int, *, latency_s: float | None = None, usage: Usage | None = None, tool: str | None = None,
               is_error: bool = False) -> None:
        """Keep the writer's counts for the catalog (``sync_catalog``) as a model call or a tool call is written."""
        numbers = self._numbers
        if numbers is None:
            return
        numbers["steps"] = max(numbers["steps"], step)
        if usage is not None:
            if latency_s is not None:
                numbers["latencies"].append(latency_s)
            tokens = numbers["tokens"]
            tokens["prompt"] += usage.prompt_tokens
            tokens["cached_prompt"] += usage.cached_prompt_tokens
            tokens["completion"] += usage.completion_tokens
        if tool is not None:
            counts = numbers["tools"].setdefault(tool or "?", [0, 0])
            counts[0] += 1
            counts[1] += int(bool(is_error))

    # -- runs -------------------------------------------------------------------------------

    def create_run(self, run_id: str, **fields: Any) -> None:
        """Insert the run's row; ``fields`` are columns of ``runs`` (``config`` is a dict)."""
        fields = utf8_safe({"run_id": run_id, "status": "running", **fields})
        if "config" in fields:
            fields["config"] = json.dumps(fields["config"])
        cols = ", ".join(fields)
        values = ", ".join("?" * len(fields))
        now = datetime.now(UTC)  # a parameter, not current_timestamp: the mirror replays the same time
        self._write(f"INSERT INTO runs ({cols}, created_at, updated_at) VALUES ({values}, ?, ?)", [*fields.values(), now, now],
                    {"table": "runs", "insert": {**fields, "created_at": now, "updated_at": now}})

    def update_run(self, **fields: Any) -> None:
        """Set columns of the run's row (there is one row per database)."""
        fields = utf8_safe(fields)
        sets = ", ".join(f"{k} = ?" for k in fields)
        now = datetime.now(UTC)
        self._write(f"UPDATE runs SET {sets}, updated_at = ?", [*fields.values(), now], {"table": "runs", "update": {**fields, "updated_at": now}})

    def run(self) -> dict[str, Any]:
        """Return the run's row as a dict (``config`` parsed).

        Raises:
            RunNotFound: the database holds no run.
        """
        cursor = self.con.execute("SELECT * FROM runs")  # a store older than a column lacks it: None
        row = cursor.fetchone()
        if row is None:
            raise RunNotFound(f"{self.path} holds no run")
        found = dict(zip([d[0] for d in cursor.description], row))
        out = {f: found.get(f) for f in RUN_FIELDS}
        out["config"] = json.loads(out["config"]) if out["config"] else {}
        out["step_rewards"] = json.loads(out["step_rewards"]) if out["step_rewards"] else None
        return out

    # -- history ----------------------------------------------------------------------------

    def _insert(self, seq: int, step: int, m: Message, **extra: Any) -> None:
        m = utf8_safe(m)  # DuckDB refuses lone surrogates in text and JSON
        cols = {
            "seq": seq, "step": step, "role": m.role, "content": m.content,
            "tool_calls": json.dumps([c.model_dump() for c in m.tool_calls]) if m.tool_calls else None,
            "tool_call_id": m.tool_call_id, "name": m.name, **extra, "created_at": datetime.now(UTC),
        }
        slim = {k: v for k, v in cols.items() if k not in UNMIRRORED}
        self._write(f"INSERT INTO messages ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})", list(cols.values()),
                    {"table": "messages", "insert": slim})

    def append_message(self, seq: int, step: int, message: Message) -> None:
        """Append a system or user message at position ``seq``."""
        self._insert(seq, step, message)

    def append_opening(self, messages: list[Message]) -> None:
        """Write the opening messages (system prompt, task) as step 0, in one transaction."""
        with self._transaction():
            for seq, message in enumerate(messages):
                self._insert(seq, 0, message)

    def append_model_turn(
        self, seq: int, step: int, message: Message, usage: Usage, *, model: str, latency_s: float, finish_reason: str | None,
        prompt_token_ids: list[int] | None = None, completion_token_ids: list[int] | None = None,
        completion_logprobs: list[float] | None = None,
    ) -> None:
        """Append an assistant message with its model call's token counts, latency and, where the
        engine returned them, its prompt and completion token ids and completion logprobs (one row)."""
        tokens = {"prompt_token_ids": prompt_token_ids, "completion_token_ids": completion_token_ids,
                  "completion_logprobs": completion_logprobs}
        self._insert(
            seq, step, message, model=model, prompt_tokens=usage.prompt_tokens, cached_prompt_tokens=usage.cached_prompt_tokens,
            completion_tokens=usage.completion_tokens, latency_s=latency_s, finish_reason=finish_reason,
            **{k: json.dumps(v) for k, v in tokens.items() if v is not None},
        )
        self._count(step, latency_s=latency_s, usage=usage)

    def append_observation(
        self, seq: int, step: int, message: Message, call: ToolCall, *, is_error: bool, data: dict[str, Any], duration_s: float
    ) -> None:
        """Append a tool message (the observation) with its call's record (one row)."""
        self._insert(
            seq, step, message, arguments=call.arguments, is_error=is_error, data=json.dumps(data, default=str), duration_s=duration_s
        )
        self._count(step, tool=message.name or "?", is_error=is_error)

    def model_call_usage(self, step: int) -> Usage:
        """Return the stored token usage of model call ``step`` (zeros if none)."""
        row = self.con.execute(
            "SELECT prompt_tokens, cached_prompt_tokens, completion_tokens FROM model_calls WHERE step = ?", [step]
        ).fetchone()
        return Usage(prompt_tokens=row[0], cached_prompt_tokens=row[1], completion_tokens=row[2]) if row else Usage()

    def tool_call_outcome(self, tool_call_id: str) -> tuple[bool, bool]:
        """Return ``(ended the episode, was malformed)`` for a stored tool call."""
        row = self.con.execute("SELECT data FROM tool_calls WHERE tool_call_id = ?", [tool_call_id]).fetchone()
        data = json.loads(row[0]) if row and row[0] else {}
        return bool(data.get("done")), bool(data.get("malformed"))

    def model_call_finish_reason(self, step: int) -> str | None:
        """The server's finish reason of model call ``step`` (``stop``, ``length``, ...), if any."""
        row = self.con.execute("SELECT finish_reason FROM model_calls WHERE step = ?", [step]).fetchone()
        return row[0] if row else None

    def model_call_tokens(self) -> list[dict[str, Any]]:
        """Per model call, in step order: ``step``, ``prompt_token_ids``, ``completion_token_ids``,
        ``completion_logprobs`` (each None where the engine returned none)."""
        rows = self.con.execute(
            "SELECT step, prompt_token_ids, completion_token_ids, completion_logprobs FROM messages "
            "WHERE role = 'assistant' ORDER BY step"
        ).fetchall()
        return [
            {"step": step, "prompt_token_ids": json.loads(p) if p else None, "completion_token_ids": json.loads(c) if c else None,
             "completion_logprobs": json.loads(lp) if lp else None}
            for step, p, c, lp in rows
        ]

    def tool_call_records(self) -> list[dict[str, Any]]:
        """Every stored tool call in order: ``tool_call_id``, ``tool``, ``arguments``, ``is_error``, ``data``."""
        rows = self.con.execute("SELECT tool_call_id, tool, arguments, is_error, data FROM tool_calls ORDER BY seq").fetchall()
        return [
            {"tool_call_id": i, "tool": t, "arguments": a, "is_error": bool(e), "data": json.loads(d) if d else {}}
            for i, t, a, e, d in rows
        ]

    def messages(self) -> list[Message]:
        """Return the whole history in order."""
        rows = self.con.execute(
            "SELECT role, content, tool_calls, tool_call_id, name FROM messages ORDER BY seq"
        ).fetchall()
        return [
            Message(
                role=role,
                content=content,
                tool_calls=[ToolCall(**c) for c in json.loads(calls)] if calls else [],
                tool_call_id=call_id,
                name=name,
            )
            for role, content, calls, call_id, name in rows
        ]

    def steps(self) -> list[dict[str, Any]]:
        """Return one dict per model call: step, tokens, latency, and its tool calls."""
        calls = self.con.execute(
            "SELECT step, model, prompt_tokens, cached_prompt_tokens, completion_tokens, latency_s FROM model_calls ORDER BY step"
        ).fetchall()
        tools = self.con.execute(
            "SELECT step, tool_call_id, tool, arguments, output, is_error, duration_s FROM tool_calls ORDER BY seq"
        ).fetchall()
        by_step: dict[int, list[dict[str, Any]]] = {}
        for step, cid, tool, args, output, is_error, dur in tools:
            by_step.setdefault(step, []).append(
                {"id": cid, "tool": tool, "arguments": args, "output": output, "is_error": is_error, "duration_s": dur}
            )
        return [
            {
                "step": step,
                "model": model,
                "usage": Usage(prompt_tokens=p, cached_prompt_tokens=c, completion_tokens=o),
                "latency_s": lat,
                "tool_calls": by_step.get(step, []),
            }
            for step, model, p, c, o, lat in calls
        ]

    # -- rewards ----------------------------------------------------------------------------

    def set_reward(self, result: RewardResult) -> None:
        """Store a reward's verdict, in one transaction: the run's ``reward`` (None when not
        applicable), ``reward_status``, ``reward_version``, ``correct``, ``step_rewards`` and
        ``reward_summary``, and its components (replacing any earlier ones)."""
        components = {n: (c.value, c.weight, c.detail) for n, c in result.components.items()}
        with self._transaction():
            self._replace_components(components)
            self.update_run(
                reward=result.reward, reward_status=result.status.value, reward_version=result.version, correct=result.correct,
                step_rewards=json.dumps(result.step_rewards) if result.step_rewards is not None else None,
                reward_summary=result.summary,
            )  # fmt: skip

    def _replace_components(self, components: dict[str, tuple[float, float, dict[str, Any]]]) -> None:
        """Replace the reward components: ``{name: (value, weight, detail)}``."""
        now = datetime.now(UTC)
        rows = [{"name": name, "value": value, "weight": weight, "detail": json.dumps(detail, default=str), "created_at": now}
                for name, (value, weight, detail) in components.items()]
        self.con.execute("DELETE FROM rewards")
        for row in rows:
            self.con.execute("INSERT INTO rewards (name, value, weight, detail, created_at) VALUES (?, ?, ?, ?, ?)", list(row.values()))
        if self._mirror is not None:
            self._mirror.record({"table": "rewards", "replace": rows})

    def rewards(self) -> dict[str, dict[str, Any]]:
        """Return ``{name: {"value", "weight", "detail"}}``."""
        rows = self.con.execute("SELECT name, value, weight, detail FROM rewards ORDER BY name").fetchall()
        return {n: {"value": v, "weight": w, "detail": json.loads(d) if d else {}} for n, v, w, d in rows}

