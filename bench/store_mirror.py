"""What the run store's live mirror costs (``core/store_mirror.py``): the writer's time per step
with and without it, and a reader's time to rebuild a run from it against opening the store.

    .venv/bin/python bench/store_mirror.py [--steps 100 1000]
    .venv/bin/python bench/store_mirror.py --quick      # 50 steps (CI)

A step is what the loop writes: one assistant turn (one tool call, 200 characters of text) and
one observation of 2,000 characters. ``write ms/step`` is the wall time of those two writes,
the mean over the episode, the median of 3 episodes written alternately with and without the
mirror; ``read ms`` is ``RunStore.from_mirror`` (the mirror replayed into an in-memory DuckDB)
against ``RunStore(path, read_only=True)`` on the closed store, each followed by
``messages()``, after one warm-up read of each (imports and DuckDB's start are not counted). Target: the mirror adds under 1 ms a step. The exit status is non-zero only
when the rebuilt run differs from the store (messages, run row or rewards).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.state import Message, ToolCall, Usage
from core.store import RunStore
from core.store_mirror import mirror_path


def write_episode(path: Path, steps: int, mirror: bool) -> tuple[float, RunStore]:
    """Write ``steps`` steps; return the mean seconds per step and the still-open store."""
    store = RunStore(path, mirror=mirror)
    store.create_run(path.parent.name, plugin="coding", task="bench", policy="scripted", config={})
    store.append_opening([Message(role="system", content="s" * 2000), Message(role="user", content="task")])
    seq, started = 2, time.perf_counter()
    for step in range(1, steps + 1):
        call = ToolCall(id=f"c{step}", name="view_file", arguments=f'{{"path": "a.py", "start_line": {step}}}')
        store.append_model_turn(seq, step, Message(role="assistant", content="t" * 200, tool_calls=[call]), Usage(prompt_tokens=step),
                                model="m", latency_s=0.1, finish_reason="tool_calls")
        store.append_observation(seq + 1, step, Message(role="tool", content=f"{step} " + "o" * 2000, tool_call_id=call.id,
                                                        name=call.name), call, is_error=False, data={}, duration_s=0.01)
        seq += 2
    return (time.perf_counter() - started) / steps, store


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, nargs="+", default=[100, 1000])
    parser.add_argument("--quick", action="store_true", help="50 steps")
    args = parser.parse_args()
    sizes = [50] if args.quick else args.steps
    broken = False
    print("| steps | write ms/step, no mirror | write ms/step, mirror | mirror size | read ms, store | read ms, mirror | same run |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    for steps in sizes:
        root = Path(tempfile.mkdtemp(prefix="horizon-mirror-"))
        try:
            plains, mirroreds = [], []
            for attempt in range(3):
                for folder, times, mirror in (("plain", plains, False), ("mirrored", mirroreds, True)):
                    (root / f"{folder}{attempt}").mkdir()
                    seconds, writer = write_episode(root / f"{folder}{attempt}" / "trajectory.duckdb", steps, mirror=mirror)
                    times.append(seconds)
                    if attempt == 2 and mirror:
                        live_writer = writer  # still writing: its mirror is what a reader sees
                    else:
                        writer.close()
            plain, mirrored = statistics.median(plains), statistics.median(mirroreds)
            path = root / "mirrored2" / "trajectory.duckdb"
            size = mirror_path(path).stat().st_size
            RunStore.from_mirror(path).close()  # warm-up: pyarrow's import, DuckDB's first connection
            RunStore(root / "plain2" / "trajectory.duckdb", read_only=True).close()
            started = time.perf_counter()
            live = RunStore.from_mirror(path)
            live_messages = live.messages()
            read_mirror = time.perf_counter() - started
            live_run, live_rewards = live.run(), live.rewards()
            live.close()
            live_writer.close()
            started = time.perf_counter()
            stored = RunStore(path, read_only=True)
            messages = stored.messages()
            read_store = time.perf_counter() - started
            same = messages == live_messages and stored.run() == live_run and stored.rewards() == live_rewards
            stored.close()
            broken |= not same
            print(f"| {steps} | {plain * 1000:.2f} | {mirrored * 1000:.2f} | {size / 1e6:.2f} MB | {read_store * 1000:.0f} | "
                  f"{read_mirror * 1000:.0f} | {'yes' if same else 'NO'} |")
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
