"""Framework overhead per step, and sandbox start-up, printed as a table.

    .venv/bin/python bench/step_overhead.py [--steps 10 100 1000] [--sandbox-runs 50]

1. Loop overhead: a scripted policy that answers instantly drives the real coding plugin on a
   tiny repository (``view_file`` of a 3-line file, in-process). The time per step between the
   first and the last step, minus the time inside the tool, is the framework's own cost: the
   LangGraph graph, a SQLite checkpoint after each node (``durability="sync"``) and the DuckDB
   run-store writes. Targets: under 10 ms a step, flat as the episode grows.
2. Sandbox start-up: median wall time of ``true`` through ``BwrapSandbox.run`` against a bare
   ``subprocess.run(["true"])``. Targets: under 20 ms, under 5 times the bare run.
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console  # noqa: E402
from rich.table import Table  # noqa: E402

from core.plugin import Task  # noqa: E402
from core.policy import ScriptedPolicy  # noqa: E402
from core.runner import Run  # noqa: E402
from core.sandbox import open_sandbox  # noqa: E402
from core.state import Limits, Pricing  # noqa: E402


def loop_overhead(steps: int, root: Path) -> dict[str, float]:
    """Run one scripted episode of ``steps`` steps; return milliseconds per step."""
    repo = root / f"repo-{steps}"
    repo.mkdir()
    (repo / "notes.txt").write_text("one\ntwo\nthree\n")
    view = {"tool": "view_file", "arguments": {"path": "notes.txt"}}
    turns = [view] * (steps - 1) + [{"tool": "finish", "arguments": {"summary": "done"}}]
    marks: list[float] = []
    tool_s: list[float] = []

    def on_event(kind: str, data: dict) -> None:
        if kind == "model" and data["step"] == 1:
            marks.append(time.perf_counter())
        elif kind == "tool":
            tool_s.append(data["duration_s"])
            marks.append(time.perf_counter())

    run = Run.start(
        Task(plugin="coding", instruction="bench", repo=repo), ScriptedPolicy(turns), policy_config={"kind": "scripted"},
        limits=Limits(max_steps=steps + 1), pricing=Pricing(), on_event=on_event,
    )
    try:
        result = run.execute()
    finally:
        run.close()
    assert result.steps == steps, result
    # from step 1's model turn to the last observation: steps-1 whole steps plus one tools node
    per_step = (marks[-1] - marks[0]) / (steps - 1 + 1 / 3)
    tool = statistics.mean(tool_s)
    return {"per_step_ms": per_step * 1e3, "tool_ms": tool * 1e3, "framework_ms": (per_step - tool) * 1e3}


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
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--sandbox-runs", type=int, default=50)
    args = parser.parse_args()
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ["HORIZON_HOME"] = str(root / "home")
        table = Table(title=f"Loop overhead per step ({os.cpu_count()} cores)")
        for col in ("steps", "time per step (ms)", "in the tool (ms)", "framework (ms)", "target"):
            table.add_column(col, justify="right")
        for n in args.steps:
            r = loop_overhead(n, root)
            ok = "ok" if r["framework_ms"] < 10 else "MISSED"
            table.add_row(str(n), f"{r['per_step_ms']:.2f}", f"{r['tool_ms']:.2f}", f"{r['framework_ms']:.2f}", f"<10 ms: {ok}")
        console.print(table)
        s = sandbox_startup(args.sandbox_runs, root)
        ratio = s["sandbox_ms"] / s["bare_ms"]
        table = Table(title=f"`true` in the sandbox, median of {args.sandbox_runs}")
        for col in ("bare subprocess (ms)", "bwrap sandbox (ms)", "ratio", "target"):
            table.add_column(col, justify="right")
        ok = "ok" if s["sandbox_ms"] < 20 and ratio < 5 else "MISSED"
        table.add_row(f"{s['bare_ms']:.2f}", f"{s['sandbox_ms']:.2f}", f"{ratio:.1f}x", f"<20 ms and <5x: {ok}")
        console.print(table)


if __name__ == "__main__":
    main()
