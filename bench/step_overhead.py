"""Framework overhead per step, the workspace save before each writing call, and sandbox start-up.

    .venv/bin/python bench/step_overhead.py [--steps 10 100 1000] [--sandbox-runs 50] [--tree-files 3 1000]
    .venv/bin/python bench/step_overhead.py --quick      # 10 and 100 steps, 10 sandbox runs (CI)

1. Loop overhead: a scripted policy that answers instantly drives the real coding plugin on a
   tiny repository (two files), through ``Run.start`` as ``agent run`` does. The calls alternate
   between a read (``view_file``, a different 3-line range of a 120-line file each time) and a
   write (``edit_file``, a different edit of a counter each time), so that no two steps repeat
   and the stuck detector (``core.stuck``), which is part of the overhead measured, has nothing
   to stop. Before each writing call the loop saves the workspace (``CallJournal.before``, i.e.
   ``core.workspace.save_tree``: Horizon walks the workspace and writes loose objects, then
   git builds the tree), timed apart. The time per step between the first and the last step,
   minus the time inside the tool functions, is the framework's own cost: the LangGraph graph,
   a SQLite checkpoint after each node (``durability="sync"``), the DuckDB run-store writes,
   the stuck detector, and ``save_tree`` on half the steps. Target: under 10 ms a step, flat as
   the episode grows. Two rows split the loop's part: the time inside the run store's inserts
   (``RunStore.append_model_turn``, ``append_observation``, ``append_message``) and inside
   ``RunStore.sync_catalog`` (the runs catalog's row at each step's end), timed by wrapping them.
2. ``save_tree`` alone on workspaces of ``--tree-files`` files (20 lines each), median of 10
   saves with one file changed before each: how the per-write cost grows with the repository.
3. Sandbox start-up: median wall time of ``true`` through ``BwrapSandbox.run`` against a bare
   ``subprocess.run(["true"])``. Targets: under 20 ms, under 5 times the bare run.

Targets are reported in the tables, never asserted; the exit status is non-zero only when the
benchmark itself breaks (an episode that does not end as ``submitted`` after every step, a
sandboxed ``true`` that fails, an exception).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

from core import workspace
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run
from core.sandbox import open_sandbox
from core.state import ExitStatus, Limits, Pricing

NOTES_LINES = 120


def episode_turns(steps: int) -> list[dict[str, Any]]:
    """``steps - 1`` calls alternating ``view_file`` and ``edit_file``, none equal to another
    nearby, then ``finish``."""
    turns: list[dict[str, Any]] = []
    edits = 0
    for i in range(steps - 1):
        if i % 2 == 0:
            start = 1 + (i // 2) % (NOTES_LINES - 2)
            turns.append({"tool": "view_file", "arguments": {"path": "notes.txt", "start_line": start, "end_line": start + 2}})
        else:
            turns.append({"tool": "edit_file", "arguments": {"path": "counter.py", "old_text": f"count = {edits}",
                                                             "new_text": f"count = {edits + 1}"}})  # fmt: skip
            edits += 1
    return [*turns, {"tool": "finish", "arguments": {"summary": "done"}}]


def loop_overhead(steps: int, root: Path) -> dict[str, float]:
    """Run one scripted episode of ``steps`` steps (see the module docstring).

    Returns:
        Milliseconds: ``per_step_ms`` (wall time per step), ``tool_ms`` (inside the tool
        functions, per step), ``insert_ms`` (per step, inside the run store's ``append_*``
        methods: the DuckDB inserts), ``catalog_ms`` (per step, inside ``sync_catalog``: the
        runs catalog's row), ``save_ms`` (one ``save_tree`` before a writing call),
        ``save_per_step_ms`` (``save_tree`` time spread over all steps), ``framework_ms`` (per
        step, everything but the tool functions) and ``loop_ms`` (the same without ``save_tree``);
        ``writes`` (writing calls).

    Raises:
        AssertionError: the episode did not end as ``submitted`` after ``steps`` steps.
    """
    repo = root / f"repo-{steps}"
    repo.mkdir()
    (repo / "notes.txt").write_text("".join(f"line {n}\n" for n in range(1, NOTES_LINES + 1)))
    (repo / "counter.py").write_text("count = 0\n")
    marks: list[float] = []
    tool_s: list[float] = []
    save_s: list[float] = []

    def on_event(kind: str, data: dict) -> None:
        if kind == "model" and data["step"] == 1:
            marks.append(time.perf_counter())
        elif kind == "tool":
            tool_s.append(data["duration_s"])  # includes CallJournal.before for writing calls
            marks.append(time.perf_counter())

    run = Run.start(
        Task(plugin="coding", instruction="bench", repo=repo), ScriptedPolicy(episode_turns(steps)),
        policy_config={"kind": "scripted"}, limits=Limits(max_steps=steps + 1), pricing=Pricing(), on_event=on_event,
    )
    journal = run.episode.env.journal
    assert journal is not None, "the run has no CallJournal: the workspace is not saved before writing calls"
    save = journal.before

    def timed_before(call_id: str) -> bool:
        start = time.perf_counter()
        try:
            return save(call_id)
        finally:
            save_s.append(time.perf_counter() - start)

    journal.before = timed_before  # type: ignore[method-assign]
    store_s = {"insert": 0.0, "catalog": 0.0}
    store = run.store

    def timed_store(name: str, part: str) -> None:
        method = getattr(store, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return method(*args, **kwargs)
            finally:
                store_s[part] += time.perf_counter() - start

        setattr(store, name, timed)

    for name in ("append_model_turn", "append_observation", "append_message"):
        timed_store(name, "insert")
    timed_store("sync_catalog", "catalog")
    try:
        result = run.execute()
    finally:
        run.close()
    assert result.steps == steps and result.exit_status == ExitStatus.SUBMITTED, (
        f"the {steps}-step episode ended as {result.exit_status} after {result.steps} steps: {result.exit_detail}")
    assert len(save_s) == (steps - 1) // 2, f"{len(save_s)} workspace saves for {(steps - 1) // 2} writing calls"
    # from step 1's model turn to the last observation: steps-1 whole steps plus one tools node
    per_step = (marks[-1] - marks[0]) / (steps - 1 + 1 / 3)
    tool = (sum(tool_s) - sum(save_s)) / len(tool_s)
    save_per_step = sum(save_s) / len(tool_s)
    return {
        "per_step_ms": per_step * 1e3, "tool_ms": tool * 1e3, "save_ms": statistics.mean(save_s) * 1e3 if save_s else 0.0,
        "save_per_step_ms": save_per_step * 1e3, "framework_ms": (per_step - tool) * 1e3,
        "loop_ms": (per_step - tool - save_per_step) * 1e3, "writes": len(save_s),
        "insert_ms": store_s["insert"] / steps * 1e3, "catalog_ms": store_s["catalog"] / steps * 1e3,
    }  # fmt: skip


def save_tree_cost(files: int, root: Path, saves: int = 10) -> float:
    """Median milliseconds of ``save_tree`` on a workspace of ``files`` files, one changed before each save."""
    ws, baseline = root / f"tree-{files}", root / f"tree-{files}.git"
    for i in range(files):
        folder = ws / f"pkg{i // 50}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"module{i}.py").write_text("".join(f"value_{n} = {i * n}\n" for n in range(20)))
    workspace.snapshot(ws, baseline)
    times = []
    for n in range(saves):
        (ws / "pkg0" / "module0.py").write_text(f"value = {n}\n")
        start = time.perf_counter()
        workspace.save_tree(ws, baseline)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def sandbox_startup(runs: int, root: Path) -> dict[str, float]:
    """Median milliseconds of ``true`` in the sandbox and bare."""
    (root / "ws").mkdir()
    (root / "scratch").mkdir()
    box = open_sandbox(root / "ws", root / "scratch")
    box.run(["true"])  # warm caches once
    boxed, bare = [], []
    for _ in range(runs):
        t0 = time.perf_counter()
        result = box.run(["true"])
        boxed.append(time.perf_counter() - t0)
        assert result.exit_code == 0, result
        t0 = time.perf_counter()
        subprocess.run(["true"], check=True)
        bare.append(time.perf_counter() - t0)
    return {"sandbox_ms": statistics.median(boxed) * 1e3, "bare_ms": statistics.median(bare) * 1e3}


def main() -> None:
    """Parse the arguments, run the three measurements, print the tables."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, nargs="+", default=None, help="episode lengths (default 10 100 1000)")
    parser.add_argument("--sandbox-runs", type=int, default=None, help="sandboxed `true` runs (default 50)")
    parser.add_argument("--tree-files", type=int, nargs="+", default=None, help="workspace sizes for save_tree (default 3 1000)")
    parser.add_argument("--quick", action="store_true", help="10 and 100 steps, 10 sandbox runs, 3 and 300 files (CI)")
    args = parser.parse_args()
    steps = args.steps or ([10, 100] if args.quick else [10, 100, 1000])
    sandbox_runs = args.sandbox_runs or (10 if args.quick else 50)
    tree_files = args.tree_files or ([3, 300] if args.quick else [3, 1000])
    if any(n < 3 for n in steps):
        parser.error("--steps: an episode needs at least 3 steps (a read, a write and finish)")
    console = Console(width=max(Console().width, 130))
    load = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["HORIZON_HOME"] = str(root / "home")
        results = [loop_overhead(n, root) for n in steps]
        table = Table(title=f"Loop overhead per step, ms ({os.cpu_count()} cores, load {load[0]:.1f} at the start; "
                            "every other call writes)")  # fmt: skip
        table.add_column("")
        for n in steps:
            table.add_column(f"{n} steps", justify="right")
        table.add_column("target")
        framework = [r["framework_ms"] for r in results]
        ok = "met" if max(framework) < 10 else "MISSED"
        growth = f"{steps[-1]} vs {steps[0]} steps: {framework[-1] / framework[0]:.2f}x" if len(steps) > 1 else ""
        rows = [
            ("time per step", "per_step_ms", ""),
            ("in the tools (view_file, edit_file)", "tool_ms", ""),
            ("save_tree per writing call (CallJournal.before)", "save_ms", ""),
            ("loop: graph, checkpoints, run store, stuck detector", "loop_ms", ""),
            ("  of which run-store inserts (DuckDB: model turn, observation)", "insert_ms", ""),
            ("  of which the runs catalog's row (SQLite, sync_catalog)", "catalog_ms", ""),
            ("framework per step: loop + save_tree on half the steps", "framework_ms", f"< 10 ms: {ok}; {growth}"),
            ("framework per writing step: loop + save_tree", None, ""),
        ]
        for label, key, target in rows:
            cells = [f"{r[key]:.2f}" if key else f"{r['loop_ms'] + r['save_ms']:.2f}" for r in results]
            table.add_row(label, *cells, target)
        console.print(table)

        table = Table(title="save_tree alone (median of 10 saves, one file changed before each)")
        for col in ("workspace files", "save_tree (ms)"):
            table.add_column(col, justify="right")
        for files in tree_files:
            table.add_row(f"{files:,}", f"{save_tree_cost(files, root):.2f}")
        console.print(table)

        s = sandbox_startup(sandbox_runs, root)
        ratio = s["sandbox_ms"] / s["bare_ms"]
        table = Table(title=f"`true` in the sandbox, median of {sandbox_runs}")
        for col in ("bare subprocess (ms)", "bwrap sandbox (ms)", "ratio", "target"):
            table.add_column(col, justify="right")
        ok = "met" if s["sandbox_ms"] < 20 and ratio < 5 else "MISSED"
        table.add_row(f"{s['bare_ms']:.2f}", f"{s['sandbox_ms']:.2f}", f"{ratio:.1f}x", f"<20 ms and <5x: {ok}")
        console.print(table)


if __name__ == "__main__":
    main()
