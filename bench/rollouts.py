"""Rollout throughput on Ray: episodes per minute against the number of Ray workers, printed as a table.

    .venv/bin/python bench/rollouts.py [--workers 1 2 4] [--episodes 8] [--policy finish-only] [--task NAME ...]
    .venv/bin/python bench/rollouts.py --quick      # 1 and 2 workers, 2 episodes each (CI)

Each episode is a real ``agent eval`` episode (``core.eval.run_episode``: a Horizon run in the
bwrap sandbox, verified by the coding plugin, which runs the task's tests) of a task of
suites/coding, with an instant scripted policy (``finish-only``: one tool call, no model time),
so what is measured is the rollout machinery: the sandbox and the tests, the framework and Ray.

For each worker count a local Ray with that many CPUs is started (its start-up is timed apart),
the same ``--episodes`` episodes are run through ``core.eval.run_eval(backend="ray")``, and Ray
is stopped. Reported:

* episodes per minute (episodes / wall-clock time from the first submission to the last
  result) and the scaling efficiency: (rate with w workers / rate with 1) / w;
* where an episode's time goes, mean seconds per episode from the episodes' own timings
  (``EpisodeResult.timings``): sandbox (the coding plugin's set-up, which runs the tests once
  for the baseline, the tool calls, and the verification's test run, all in the sandbox),
  framework (copying the repository, snapshot, run store, loop, checkpoints) and Ray (submission to result minus the episode's own time: queueing, worker
  start-up, serialisation);
* the machine's 1-minute load average before and after each row (``os.getloadavg``): the CPUs
  are shared, and a load above the core count slows every row.

The exit status is non-zero when the rollouts break: an episode that ends in ``error`` (the
rollout machinery failed) or ``crashed`` (Horizon did), or a result missing. Throughput is
reported, not asserted.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
#: Tasks of suites/coding whose test runs are short (a few hundred tests or fewer).
DEFAULT_TASKS = ["parse-1.20.2-hyphen-field-names", "pathspec-0.12.1-match-file", "xmltodict-0.14.2-whitespace-text"]


def measure(workers: int, episodes: int, tasks: list[str], policy: str, home: Path) -> dict[str, float]:
    """Run ``episodes`` episodes on a fresh local Ray with ``workers`` CPUs.

    Returns:
        ``ray_start_s``, ``wall_s`` (seconds), ``per_min`` (episodes per minute), ``results``,
        ``resolved`` and ``errors`` (counts), the mean seconds per episode ``sandbox``, ``framework``, ``ray``,
        ``episode`` (the episode's own time) and ``load_before``, ``load_after`` (1-minute load).
    """
    import ray

    from core import eval as ev
    from core.eval.ray_backend import start_ray

    chosen = ev.load_suite(ROOT / "suites" / "coding", tasks)
    out_dir = ev.new_eval_dir(home)
    specs = ev.episode_specs(chosen, plugin="coding", attempts=math.ceil(episodes / len(chosen)), policy=policy, policy_config=None,
                             limits={"max_steps": 30, "max_wall_s": 600}, pricing={}, isolated=True, home=home,
                             scripts_dir=out_dir / "scripts")  # fmt: skip
    specs = sorted(specs, key=lambda s: (s.attempt, s.task))[:episodes]  # tasks interleaved
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    start_ray(workers)
    ray_start = time.monotonic() - started
    try:
        began = time.monotonic()
        summary = ev.run_eval(specs, workers=workers, k=1, out_dir=out_dir, backend="ray")
        wall = time.monotonic() - began
    finally:
        ray.shutdown()
    results = summary["results"]

    def mean(*keys: str) -> float:
        return statistics.fmean(sum(r["timings"].get(k, 0.0) for k in keys) for r in results)

    return {
        "results": len(results),
        "ray_start_s": ray_start, "wall_s": wall, "per_min": len(results) / wall * 60,
        "resolved": sum(r["resolved"] for r in results), "errors": sum(r["exit_status"] in ("error", "crashed") for r in results),
        "episode": statistics.fmean(r["seconds"] for r in results), "sandbox": mean("setup", "tools", "verify"),
        "framework": mean("start", "other"), "ray": mean("scheduler"),
        "load_before": load_before, "load_after": os.getloadavg()[0],
    }  # fmt: skip


def main() -> None:
    """Parse the arguments, measure each worker count, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, nargs="+", default=None, help="Ray worker counts to measure (default 1 2 4)")
    parser.add_argument("--episodes", type=int, default=None, help="episodes per worker count (default 8)")
    parser.add_argument("--policy", default="finish-only", help="a scripted policy of core.eval (finish-only: one call)")
    parser.add_argument("--task", action="append", help="suites/coding task (repeatable); default: three with short test runs")
    parser.add_argument("--quick", action="store_true", help="1 and 2 workers, 2 episodes each (CI)")
    args = parser.parse_args()
    args.workers = args.workers or ([1, 2] if args.quick else [1, 2, 4])
    args.episodes = args.episodes or (2 if args.quick else 8)
    home = Path(tempfile.mkdtemp(prefix="horizon-bench-rollouts-"))
    from core.eval.sources import sources_cache

    # the tasks' starting trees come from the user's sources cache (built there once), not the fresh home
    os.environ.setdefault("HORIZON_SOURCES_CACHE", str(sources_cache()))
    os.environ["HORIZON_HOME"] = str(home)  # before Ray starts: its workers inherit it
    console = Console(width=max(Console().width, 150))  # the table is 11 columns wide
    console.print(f"{args.episodes} episodes of {', '.join(args.task or DEFAULT_TASKS)} per row, policy {args.policy}, "
                  f"{os.cpu_count()} CPUs; runs under {home}")
    rows = []
    for workers in args.workers:
        rows.append((workers, measure(workers, args.episodes, args.task or DEFAULT_TASKS, args.policy, home)))
        console.print(f"  {workers} workers: {rows[-1][1]['per_min']:.2f} episodes/min")
    base = next((m["per_min"] for w, m in rows if w == 1), None)
    table = Table(title="rollouts on Ray: episodes per minute")
    for name in ("workers", "episodes/min", "efficiency", "wall (s)", "Ray start (s)", "episode (s)", "sandbox (s)",
                 "framework (s)", "Ray (s)", "resolved/errors", "load 1 min before/after"):
        table.add_column(name, justify="right")
    for workers, m in rows:
        efficiency = f"{m['per_min'] / base / workers:.2f}" if base else "-"
        table.add_row(str(workers), f"{m['per_min']:.2f}", efficiency, f"{m['wall_s']:.1f}", f"{m['ray_start_s']:.1f}", f"{m['episode']:.1f}",
                      f"{m['sandbox']:.1f}", f"{m['framework']:.1f}", f"{m['ray']:.1f}", f"{m['resolved']}/{m['errors']}",
                      f"{m['load_before']:.1f}/{m['load_after']:.1f}")  # fmt: skip
    console.print(table)
    broken = [f"{workers} workers: {m['errors']} episodes ended in error, {m['results']} results of {args.episodes}"
              for workers, m in rows if m["errors"] or m["results"] != args.episodes]
    if broken:
        sys.exit(f"broken (the episodes' records are under {home}):\n  " + "\n  ".join(broken))


if __name__ == "__main__":
    main()
