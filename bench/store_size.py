"""What a run store's file is made of, what DuckDB's settings and SQLite would make of the same
writes, and what a step's writes cost one transaction per row against one per step (issue 31).

    .venv/bin/python bench/store_size.py [--steps 3 100 1000]
    .venv/bin/python bench/store_size.py --quick      # 3 and 100 steps (CI)

Real runs first: ``agent run notes ... --policy scripted`` (the test plugin ``tests/notes_plugin``,
each its own process, into a temporary ``HORIZON_HOME``), a script of ``steps - 1`` calls
alternating ``view_file`` (a different range each time) and ``write_file`` (a different text each
time), then ``finish``. Its ``trajectory.duckdb`` is measured as the run left it: the file's size,
``PRAGMA database_size`` (blocks of ``block_size`` bytes, used and free) and, per table, the
blocks its column segments sit in (``pragma_storage_info``; several segments share a block).

Then the run's own rows (``runs``, ``messages``, ``rewards``, read back from that store) are
written again, the way the loop writes them: through ``core.store.RunStore`` (``create_run``,
``append_opening``, one ``append_model_turn`` and one ``append_observation`` per call,
``update_run`` with the totals, ``set_reward``, ``close``), without the live mirror (its cost is
``bench/store_mirror.py``'s), into a fresh file per variant:

- DuckDB's 256 KiB blocks (the default before 2026-12-07) and 16 KiB blocks (``core.store.BLOCK_SIZE``,
  DuckDB's smallest), one transaction per row (as the loop writes) and one per step (the model
  turn and its observations together);
- the same, one transaction per row, with DuckDB's ``fsync_mode`` ``NONE``: not a candidate (a
  file may be corrupt after an operating system crash), a diagnostic of what the syncs cost;
- the same rows into SQLite (the same three tables, TEXT for JSON), WAL with ``synchronous=NORMAL``
  (as the loop's checkpoints) and the default rollback journal with ``synchronous=FULL``, one
  transaction per row.

``write ms/step`` is the wall time of the step's writes (a model turn and its observations), the
median over the steps of the median of ``--repeat`` episodes written alternately; ``file`` is the
size after ``close``. ``read ms`` opens the closed file read-only and reads what ``agent show``
reads (``RunStore.run``, ``messages``, ``steps``, ``listing``), median of ``--repeat`` after one
warm-up. The exit status is non-zero only when a real run does not end ``submitted`` after its
steps, or a rewritten store's rows differ from the real run's.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

sys.path.insert(0, str(ROOT / "bench"))
from scale import AGENT, _env, timed  # the same real-run path as bench/scale.py

SQLITE_SCHEMA = """
CREATE TABLE runs (run_id TEXT PRIMARY KEY, plugin TEXT, task TEXT, repo TEXT, policy TEXT, config TEXT, status TEXT,
    exit_status TEXT, exit_detail TEXT, reward REAL, steps INTEGER, prompt_tokens INTEGER, cached_prompt_tokens INTEGER,
    completion_tokens INTEGER, cost REAL, active_s REAL, patch_path TEXT, created_at TEXT, updated_at TEXT,
    reward_status TEXT, reward_version TEXT, correct INTEGER, step_rewards TEXT, reward_summary TEXT);
CREATE TABLE messages (seq INTEGER PRIMARY KEY, step INTEGER, role TEXT, content TEXT, tool_calls TEXT, tool_call_id TEXT,
    name TEXT, model TEXT, prompt_tokens INTEGER, cached_prompt_tokens INTEGER, completion_tokens INTEGER, latency_s REAL,
    finish_reason TEXT, arguments TEXT, is_error INTEGER, data TEXT, duration_s REAL, created_at TEXT,
    prompt_token_ids TEXT, completion_token_ids TEXT, completion_logprobs TEXT);
CREATE TABLE rewards (name TEXT PRIMARY KEY, value REAL, weight REAL, detail TEXT, created_at TEXT);
"""


def script(steps: int) -> list[dict[str, Any]]:
    """``steps - 1`` calls alternating ``view_file`` and ``write_file``, none repeating, then ``finish``."""
    turns: list[dict[str, Any]] = []
    for i in range(steps - 1):
        if i % 2 == 0:
            turns.append({"tool": "view_file", "arguments": {"path": "log.md", "start_line": 1 + i // 2 % 40, "end_line": 60}})
        else:
            turns.append({"tool": "write_file", "arguments": {"path": "ANSWER.txt", "text": f"draft {i}\n"}})
    return [*turns, {"tool": "finish", "arguments": {"summary": "answered"}}]


def real_run(home: Path, steps: int, scratch: Path) -> Path:
    """Make one scripted notes run of ``steps`` steps with ``agent run``; return its store.

    Raises:
        RuntimeError: the command failed, or the run did not end ``submitted`` after ``steps`` steps.
    """
    from core.store import RunStore

    folder = scratch / f"notes-{steps}"
    folder.mkdir()
    (folder / "log.md").write_text("# Log\n" + "".join(f"- entry {n}\n" for n in range(1, 61)) + "<!-- end -->\n")
    (folder / "ANSWER.txt").write_text("todo\n")
    turns = scratch / f"script-{steps}.jsonl"
    turns.write_text("".join(json.dumps(t) + "\n" for t in script(steps)))
    before = set((home / "runs").iterdir()) if (home / "runs").is_dir() else set()
    timed(AGENT + ["run", "notes", f"store size, {steps} steps", "--repo", str(folder), "--policy", "scripted", "--script", str(turns),
                   "--max-steps", str(steps + 1)], _env(home))  # fmt: skip
    (made,) = set((home / "runs").iterdir()) - before
    store = RunStore(made / "trajectory.duckdb", read_only=True)
    try:
        row = store.run()
    finally:
        store.close()
    if row["steps"] != steps or row["exit_status"] != "submitted":
        raise RuntimeError(f"the {steps}-step run ended {row['exit_status']} after {row['steps']} steps: {row['exit_detail']}")
    return made / "trajectory.duckdb"


def anatomy(path: Path) -> dict[str, Any]:
    """The file's size, its blocks (``PRAGMA database_size``) and each table's rows and blocks."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True, config={"threads": 1})
    try:
        _, _, block_size, total, used, free, wal, *_ = con.execute("PRAGMA database_size").fetchone()
        tables = {}
        for (table,) in con.execute("SELECT table_name FROM duckdb_tables() ORDER BY table_name").fetchall():
            rows = con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            blocks = con.execute(f"SELECT count(DISTINCT block_id) FROM pragma_storage_info('{table}') WHERE block_id >= 0").fetchone()[0]
            tables[table] = (rows, blocks)
        payload = con.execute("SELECT coalesce(sum(length(content)), 0) + coalesce(sum(length(data)), 0) + coalesce(sum(length(arguments)), 0) "
                              "+ coalesce(sum(length(tool_calls)), 0) FROM messages").fetchone()[0]  # fmt: skip
    finally:
        con.close()
    return {"file": path.stat().st_size, "block_size": block_size, "blocks": total, "used": used, "free": free, "wal": wal,
            "tables": tables, "payload": payload}  # fmt: skip


def real_rows(path: Path) -> dict[str, Any]:
    """The run's rows as the loop wrote them: the run row, the messages in order (dicts), the reward."""
    from core.store import RunStore

    store = RunStore(path, read_only=True)
    try:
        cursor = store.con.execute("SELECT * FROM messages ORDER BY seq")
        names = [d[0] for d in cursor.description]
        messages = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
        return {"run": store.run(), "messages": messages, "rewards": store.rewards()}
    finally:
        store.close()


def _message(row: dict[str, Any]):
    from core.state import Message, ToolCall

    calls = [ToolCall(**c) for c in json.loads(row["tool_calls"])] if row["tool_calls"] else []
    return Message(role=row["role"], content=row["content"], tool_calls=calls, tool_call_id=row["tool_call_id"], name=row["name"])


def rewrite_duckdb(rows: dict[str, Any], path: Path, block_size: int, per_step: bool, fsync: bool = True) -> list[float]:
    """Write ``rows`` into a new store at ``path`` through ``RunStore`` (see the module docstring);
    return the seconds of each step's writes. ``fsync=False``: DuckDB's ``fsync_mode`` ``NONE``
    (a diagnostic of what the commits' syncs cost; a file so written may be corrupt after an
    operating system crash)."""
    from core import store as store_module
    from core.reward import RewardComponent, RewardResult, RewardStatus
    from core.state import ToolCall, Usage

    saved, store_module.BLOCK_SIZE = store_module.BLOCK_SIZE, block_size
    try:
        store = store_module.RunStore(path, mirror=False)
    finally:
        store_module.BLOCK_SIZE = saved
    if not fsync:
        store.con.execute("SET fsync_mode = 'NONE'")
    run = rows["run"]
    store.create_run(run["run_id"], plugin=run["plugin"], task=run["task"], repo=run["repo"], policy=run["policy"], config=run["config"])
    by_step: dict[int, list[dict[str, Any]]] = {}
    for row in rows["messages"]:
        by_step.setdefault(row["step"], []).append(row)
    store.append_opening([_message(r) for r in by_step.pop(0)])
    store.update_run(status="running")
    times = []
    for step, step_rows in sorted(by_step.items()):
        started = time.perf_counter()
        if per_step:
            store.con.begin()
        for r in step_rows:
            message = _message(r)
            if r["role"] == "assistant":
                store.append_model_turn(r["seq"], step, message, Usage(prompt_tokens=r["prompt_tokens"], cached_prompt_tokens=r["cached_prompt_tokens"],
                                        completion_tokens=r["completion_tokens"]), model=r["model"], latency_s=r["latency_s"],
                                        finish_reason=r["finish_reason"])  # fmt: skip
            elif r["role"] == "tool":
                call = ToolCall(id=r["tool_call_id"], name=r["name"], arguments=r["arguments"])
                store.append_observation(r["seq"], step, message, call, is_error=r["is_error"], data=json.loads(r["data"]),
                                         duration_s=r["duration_s"])  # fmt: skip
            else:
                store.append_message(r["seq"], step, message)
        if per_step:
            store.con.commit()
        times.append(time.perf_counter() - started)
    store.update_run(**{k: run[k] for k in ("status", "exit_status", "exit_detail", "steps", "prompt_tokens", "cached_prompt_tokens",
                                            "completion_tokens", "cost", "active_s", "patch_path")})  # fmt: skip
    store.set_reward(RewardResult(
        status=RewardStatus(run["reward_status"]), reward=run["reward"], correct=run["correct"], version=run["reward_version"],
        summary=run["reward_summary"] or "", step_rewards=run["step_rewards"],
        components={n: RewardComponent(value=c["value"], weight=c["weight"], detail=c["detail"]) for n, c in rows["rewards"].items()},
    ))  # fmt: skip
    store.close()
    return times


def rewrite_sqlite(rows: dict[str, Any], path: Path, wal: bool) -> list[float]:
    """The same rows into SQLite, one transaction per row; return the seconds of each step's writes."""
    con = sqlite3.connect(path, isolation_level=None)  # autocommit: each statement its own transaction
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
    con.executescript(SQLITE_SCHEMA)
    run = rows["run"]

    def insert(table: str, row: dict[str, Any]) -> None:
        values = [json.dumps(v) if isinstance(v, dict | list) else v.isoformat() if hasattr(v, "isoformat") else v for v in row.values()]
        con.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", values)

    insert("runs", {k: run[k] for k in ("run_id", "plugin", "task", "repo", "policy", "config", "created_at")})
    times = []
    for row in rows["messages"]:
        started = time.perf_counter()
        insert("messages", row)
        if row["step"]:
            if row["role"] == "assistant":
                times.append(0.0)
            times[-1] += time.perf_counter() - started
    fields = {k: run[k] for k in run if k not in ("run_id", "config", "created_at")}
    con.execute(f"UPDATE runs SET {', '.join(f'{k} = ?' for k in fields)}",
                [json.dumps(v) if isinstance(v, list) else v.isoformat() if hasattr(v, "isoformat") else v for v in fields.values()])
    for name, c in rows["rewards"].items():
        insert("rewards", {"name": name, "value": c["value"], "weight": c["weight"], "detail": c["detail"]})
    con.close()
    return times


def read_store(path: Path) -> None:
    """What ``agent show`` reads of a closed store."""
    from core.store import RunStore

    store = RunStore(path, read_only=True)
    try:
        store.run()
        store.messages()
        store.steps()
        store.listing()
    finally:
        store.close()


def same_rows(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """The messages (but their write times), the run row (but its times) and the rewards are equal."""
    def strip(rows):
        return [{k: v for k, v in r.items() if k != "created_at"} for r in rows]

    def run(row):
        return {k: v for k, v in row.items() if k not in ("created_at", "updated_at")}

    return strip(a["messages"]) == strip(b["messages"]) and run(a["run"]) == run(b["run"]) and a["rewards"] == b["rewards"]


def median_ms(episodes: list[list[float]]) -> float:
    """The median over steps of each step's median over the episodes, in milliseconds."""
    return statistics.median(statistics.median(e[i] for e in episodes) for i in range(len(episodes[0]))) * 1e3


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[3, 100, 1000], help="real runs' lengths (default 3 100 1000)")
    parser.add_argument("--repeat", type=int, default=None, help="episodes written per variant (default 5; 3 with --quick)")
    parser.add_argument("--quick", action="store_true", help="3 and 100 steps, 3 episodes per variant (CI)")
    args = parser.parse_args()
    sizes = [3, 100] if args.quick else args.steps
    repeat = args.repeat or (3 if args.quick else 5)
    if any(n < 2 for n in sizes):
        parser.error("--steps: a run needs at least 2 steps")
    load = os.getloadavg()
    broken = False
    with tempfile.TemporaryDirectory(prefix="horizon-store-size-") as tmp:
        root = Path(tmp)
        home = root / "home"
        stores = {n: real_run(home, n, root) for n in sizes}

        print(f"\nThe real runs' stores as `agent run` left them ({os.cpu_count()} cores, load {load[0]:.1f} at the start)\n")
        print("| steps | file | block size | blocks (used, free) | runs: rows, blocks | messages: rows, blocks | rewards: rows, blocks | text in messages |")
        print("|---:|---:|---:|---|---|---|---|---:|")
        for n, path in stores.items():
            a = anatomy(path)
            t = a["tables"]
            cells = [f"{t[name][0]}, {t[name][1]}" for name in ("runs", "messages", "rewards")]
            print(f"| {n} | {a['file'] / 1e6:.2f} MB | {a['block_size'] // 1024} KiB | {a['blocks']} ({a['used']}, {a['free']}) | "
                  f"{' | '.join(cells)} | {a['payload'] / 1e3:.1f} kB |")  # fmt: skip

        variants: dict[str, Callable[[dict[str, Any], Path], list[float]]] = {
            "DuckDB, 256 KiB blocks, a transaction per row": lambda r, p: rewrite_duckdb(r, p, 262144, per_step=False),
            "DuckDB, 16 KiB blocks, a transaction per row": lambda r, p: rewrite_duckdb(r, p, 16384, per_step=False),
            "DuckDB, 256 KiB blocks, a transaction per step": lambda r, p: rewrite_duckdb(r, p, 262144, per_step=True),
            "DuckDB, 16 KiB blocks, a transaction per step": lambda r, p: rewrite_duckdb(r, p, 16384, per_step=True),
            "DuckDB, 16 KiB blocks, a transaction per row, no fsync (diagnostic)":
                lambda r, p: rewrite_duckdb(r, p, 16384, per_step=False, fsync=False),
            "SQLite, WAL, synchronous=NORMAL, a transaction per row": lambda r, p: rewrite_sqlite(r, p, wal=True),
            "SQLite, rollback journal, synchronous=FULL, a transaction per row": lambda r, p: rewrite_sqlite(r, p, wal=False),
        }
        print("\nThe same rows written again, through `RunStore` (DuckDB) or the same three tables in SQLite, "
              f"median of {repeat} episodes\n")
        print("| steps | store | file | write ms/step | read ms (`agent show`'s reads) | same rows |")
        print("|---:|---|---:|---:|---:|---|")
        for n, path in stores.items():
            rows = real_rows(path)
            times: dict[str, list[list[float]]] = {name: [] for name in variants}
            files: dict[str, Path] = {}
            for attempt in range(repeat):
                for i, (name, write) in enumerate(variants.items()):
                    folder = root / f"v{n}-{i}-{attempt}"
                    folder.mkdir()
                    files[name] = folder / ("trajectory.duckdb" if name.startswith("DuckDB") else "trajectory.sqlite")
                    times[name].append(write(rows, files[name]))
            for name, file in files.items():
                same, read = "-", "-"
                if name.startswith("DuckDB"):
                    ok = same_rows(rows, real_rows(file))
                    broken |= not ok
                    same = "yes" if ok else "**NO**"
                    read_store(file)
                    reads = []
                    for _ in range(repeat):
                        started = time.perf_counter()
                        read_store(file)
                        reads.append(time.perf_counter() - started)
                    read = f"{statistics.median(reads) * 1e3:.1f}"
                print(f"| {n} | {name} | {file.stat().st_size / 1e3:,.0f} kB | {median_ms(times[name]):.2f} | {read} | {same} |")
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
