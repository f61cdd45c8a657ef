"""Soak test: concurrent scripted episodes against a model server that keeps failing.

    .venv/bin/python bench/soak.py [--duration 600] [--concurrency 8] [--fault-rate 0.2]
    .venv/bin/python bench/soak.py --quick      # 2 processes, 12 s, 10-step episodes (CI)

A fault-injecting OpenAI-compatible server (``tests/core/policy/fault_server.py``, real HTTP on
loopback, in this process) replays a scripted trajectory: turn N of a request (N = the number
of assistant messages in it) is the N-th tool call of ``examples/scripts/fix-python-npe.jsonl``,
padded with ``view_file``/``search_code`` steps (``--pad``). With probability ``--fault-rate`` a
request instead gets a random fault: a timeout (the answer comes after the client gave up), 429
with ``Retry-After``, 500 or 503, a connection cut mid-body or dropped unanswered, a body that is
not JSON, or ``"choices": []``.

``--concurrency`` worker processes each run episodes back to back until ``--duration`` seconds
have passed (an episode started before then runs to its end). Processes, not threads: each
worker is what a user's ``agent run`` is, one Python process with its own run store, checkpoint
database, HTTP client and heap, so the peak RSS and any growth measured are an episode process's
own, signals go to the main thread as in the CLI, and no GIL hides contention (the sandboxed
test runs are separate processes either way).

Each episode is ``core.runner.Run`` with the coding plugin on a fresh copy of
``examples/python-user-service`` and an ``OpenAIServerPolicy`` pointing at the server, with a
short retry budget (``--attempts``, backoff from 50 ms). A model call whose budget runs out
stops the run as ``model_error``; the worker then resumes it as a user would, with
``Run.open(run_id, settings=...).execute()`` (``agent resume``: the policy is rebuilt from the
recorded config and the settings, so its backoff is the default one), until it finishes.

Every finished run's store is checked: steps 1..N each exactly once, the scripted tools in
order, one observation per call id, exit status ``submitted`` and reward 1.0; the server also
counts the answers it gave each episode, so a model call asked twice shows up. At the end a
table gives episodes, steps, faults injected and recovered, resumes, steps lost or repeated,
the episode processes' peak RSS and their RSS in the first and last quarter, and throughput.
The exit code is 1 when a step was lost or repeated or an episode did not end verified.

``--quick`` (CI) is the same check on a few episodes: 2 processes start episodes for 12
seconds, each the fix with 4 padding steps (10 steps): 2 to 4 episodes (an episode takes 6 to
12 s on 2 cores) in 15 to 40 seconds; memory growth cannot be told from start-up in so short
a run.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import logging
import math
import multiprocessing as mp
import os
import queue
import re
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
import traceback
from collections import Counter, defaultdict
from contextlib import closing
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rich.console import Console
from rich.table import Table

EXAMPLE = ROOT / "examples" / "python-user-service"
FIX_SCRIPT = ROOT / "examples" / "scripts" / "fix-python-npe.jsonl"
MODEL = "soak-model"
TAG = re.compile(r"\[soak ([\w-]+)\]")
GAVE_UP = re.compile(r"gave up after (\d+) attempt")
PADDING = [
    {"tool": "view_file", "arguments": {"path": "users/models.py"}},
    {"tool": "search_code", "arguments": {"pattern": "def \\w+", "path": "users"}},
    {"tool": "view_file", "arguments": {"path": "users/repository.py", "start_line": 1, "end_line": 40}},
    {"tool": "search_code", "arguments": {"pattern": "nickname"}},
    {"tool": "view_file", "arguments": {"path": "tests/test_service.py", "start_line": 1, "end_line": 60}},
    {"tool": "search_code", "arguments": {"pattern": "(?i)class \\w+", "path": ""}},
    {"tool": "view_file", "arguments": {"path": "users/validation.py"}},
    {"tool": "view_file", "arguments": {"path": "users/service.py", "start_line": 1, "end_line": 50}},
]


def _fault_server_module() -> Any:
    """``tests/core/policy/fault_server.py``, imported by its path (``tests`` is not a package here)."""
    spec = importlib.util.spec_from_file_location("fault_server", ROOT / "tests" / "core" / "policy" / "fault_server.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def build_script(pad: int) -> list[dict[str, Any]]:
    """The fix script with ``pad`` read-only steps spread between its steps (finish stays last)."""
    from core.policy import load_script

    fix = load_script(FIX_SCRIPT)
    body, finish = fix[:-1], fix[-1]
    turns: list[dict[str, Any]] = []
    extra = [PADDING[i % len(PADDING)] for i in range(pad)]
    for i, turn in enumerate(body):
        turns.append(turn)
        share = len(extra) // (len(body) - i) if i < len(body) else 0
        turns += extra[:share]
        extra = extra[share:]
    return [*turns, finish]


def fault_kinds(client_timeout_s: float) -> list[tuple[str, dict[str, Any]]]:
    """The random faults, drawn uniformly: timeouts, 429, 5xx, cut connections, bad bodies."""
    return [
        ("timeout", {"delay_s": client_timeout_s + 1.0}),
        ("status", {"status": 429, "retry_after": "1"}),
        ("status", {"status": 500}),
        ("status", {"status": 503}),
        ("cut", {}),
        ("drop", {}),
        ("invalid_json", {}),
        ("empty_choices", {}),
    ]


def _fault_name(kind: str, options: dict[str, Any]) -> str:
    return f"HTTP {options['status']}" if kind == "status" else kind


def _rss_kib(pid: int | str = "self") -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


# --------------------------------------------------------------------------- episode processes


class _RetryCounter(logging.Handler):
    """Counts the policy's "attempt N failed ... retrying" warnings: one per fault that was retried."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.retried = 0

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage().startswith("model call attempt"):
            self.retried += 1


def _execute(run: Any) -> Any:
    try:
        return run.execute()
    finally:
        run.close()


def _check_store(run_id: str, home: Path, script: list[dict[str, Any]]) -> dict[str, Any]:
    """What a finished run's store holds against the script: lost, repeated, out-of-order steps."""
    from core.runner import open_store

    with closing(open_store(run_id, home)) as store:
        steps, history, row = store.steps(), store.messages(), store.run()
    numbers = [s["step"] for s in steps]
    expected = range(1, len(script) + 1)
    lost = len(set(expected) - set(numbers))
    repeated = len(numbers) - len(set(numbers)) + sum(1 for n in set(numbers) if n not in expected)
    tools = [c["tool"] for s in steps for c in s["tool_calls"]]
    ids = [m.tool_call_id for m in history if m.role == "tool"]
    problems = []
    if numbers != list(expected):
        problems.append(f"steps {numbers[:5]}...{numbers[-3:]} (expected 1..{len(script)})")
    if tools != [t["tool"] for t in script]:
        problems.append("tool calls differ from the script")
    if ids != [f"soak_{i}" for i in range(len(script))]:
        problems.append(f"{len(ids)} observations, {len(set(ids))} distinct call ids (expected {len(script)})")
    if sum(m.role == "assistant" for m in history) != len(script):
        problems.append("assistant turns differ from the steps")
    if (row["status"], row["exit_status"], row["reward"]) != ("finished", "submitted", 1.0):
        problems.append(f"status {row['status']}, exit {row['exit_status']}, reward {row['reward']}")
    return {"steps": len(numbers), "lost": lost, "repeated": repeated, "problems": problems}


def run_episode(tag: str, cfg: dict[str, Any], counter: _RetryCounter) -> dict[str, Any]:
    """One episode, resumed after every stop until it finishes; returns what happened."""
    from core.config import Settings
    from core.plugin import Task
    from core.policy import OpenAIServerPolicy
    from core.policy.retry import RetryConfig
    from core.runner import Run
    from core.state import Limits, Pricing

    home, script = Path(cfg["home"]), cfg["script"]
    retried_before = counter.retried
    started = time.time()
    record: dict[str, Any] = {"tag": tag, "start": started, "stops": [], "exhausted_attempts": 0}
    policy = OpenAIServerPolicy(
        cfg["url"], MODEL, timeout_s=cfg["timeout_s"],
        retry=RetryConfig(max_attempts=cfg["attempts"], max_total_s=cfg["retry_total_s"], base_delay_s=0.05, max_delay_s=0.5),
    )
    run = Run.start(
        Task(plugin="coding", instruction=f"fix NPE in user module [soak {tag}]", repo=Path(cfg["template"])), policy,
        policy_config={"kind": "openai", "base_url": cfg["url"], "model": MODEL},
        limits=Limits(max_steps=len(script) + 5), pricing=Pricing(), home=home,
    )
    record["run_id"] = run.run_id
    result = _execute(run)
    # `agent resume`: the policy is rebuilt from the run's config and these settings
    settings = Settings(timeout_s=cfg["timeout_s"], retry_max_attempts=cfg["attempts"], retry_max_total_s=cfg["retry_total_s"])
    while result.status != "finished" and len(record["stops"]) < cfg["max_resumes"]:
        record["stops"].append({"status": result.status, "step": result.steps, "detail": result.exit_detail[:300]})
        gave_up = GAVE_UP.search(result.exit_detail)
        record["exhausted_attempts"] += int(gave_up.group(1)) if gave_up else 0
        result = _execute(Run.open(result.run_id, settings=settings, home=home))
    record["status"] = result.status
    record["retried"] = counter.retried - retried_before
    if result.status == "finished":
        record.update(_check_store(result.run_id, home, script))
    else:
        record.update(steps=result.steps, lost=0, repeated=0, problems=[f"not finished after {cfg['max_resumes']} resumes"])
    runs_folder = home / "runs" / result.run_id
    crash = runs_folder / "crash.txt"
    if crash.is_file():
        record["problems"].append("crash: " + crash.read_text()[-600:])
    if not cfg["keep_runs"] and not record["problems"]:
        shutil.rmtree(runs_folder, ignore_errors=True)
    record["end"] = time.time()
    return record


def worker(index: int, cfg: dict[str, Any], results: Any) -> None:
    """An episode process: episodes back to back until the deadline; each reported on ``results``."""
    os.environ["HORIZON_HOME"] = cfg["home"]
    counter = _RetryCounter()
    log = logging.getLogger("core.policy.openai_server")
    log.addHandler(counter)
    log.setLevel(logging.WARNING)
    log.propagate = False  # counted, not printed
    n = 0
    while time.time() < cfg["deadline"]:
        tag = f"w{index}-e{n}"
        try:
            record = run_episode(tag, cfg, counter)
        except Exception:  # noqa: BLE001 - a harness or Horizon failure outside Run.execute: report and go on
            record = {"tag": tag, "status": "error", "steps": 0, "lost": 0, "repeated": 0, "stops": [], "retried": 0,
                      "exhausted_attempts": 0, "problems": [traceback.format_exc()[-1500:]], "end": time.time()}
        if cfg["gc"]:
            gc.collect()
        record["rss_kib"] = _rss_kib()
        results.put(("episode", index, record))
        n += 1
    results.put(("done", index, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss))


# --------------------------------------------------------------------------- the driver


class Tally:
    """Answers and faults per episode, from the server's side."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.answered: Counter[str] = Counter()  # proper answers per episode tag
        self.faults: Counter[str] = Counter()  # faults by name (HTTP statuses apart)

    def __call__(self, kind: str, options: dict[str, Any], body: dict[str, Any] | None) -> None:
        """The server's ``on_request`` hook: count a fault by kind, or a proper answer by episode tag."""
        if kind != "ok":
            with self.lock:
                self.faults[_fault_name(kind, options)] += 1
            return
        if not body:
            return
        messages = body.get("messages") or []
        text = messages[1].get("content") if len(messages) > 1 and isinstance(messages[1], dict) else ""
        match = TAG.search(text or "")
        if match:
            with self.lock:
                self.answered[match.group(1)] += 1


def _quarter_rss(samples: list[tuple[float, int, int]], t0: float, t1: float) -> tuple[float, float]:
    """Mean over workers of each worker's median RSS (MiB) in the first and in the last quarter."""
    quarter = (t1 - t0) / 4
    first, last = defaultdict(list), defaultdict(list)
    for t, pid, kib in samples:
        if t <= t0 + quarter:
            first[pid].append(kib)
        elif t >= t1 - quarter:
            last[pid].append(kib)
    pids = sorted(set(first) & set(last))
    if not pids:
        return float("nan"), float("nan")
    return (statistics.mean(statistics.median(first[p]) for p in pids) / 1024,
            statistics.mean(statistics.median(last[p]) for p in pids) / 1024)


def _episode_rss(records: list[dict[str, Any]]) -> tuple[float, float, float]:
    """RSS after each episode, from each process's 2nd episode on (the 1st loads modules and
    warms caches): the mean over processes of the 2nd and of the last value (MiB), and the mean
    least-squares slope (KiB per episode)."""
    series: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for r in records:
        worker_tag, _, n = r["tag"].partition("-e")
        if r.get("rss_kib") and int(n) >= 1:
            series[worker_tag].append((int(n), r["rss_kib"]))
    series = {k: sorted(v) for k, v in series.items() if len(v) >= 2}
    if not series:
        return float("nan"), float("nan"), float("nan")
    slopes = []
    for points in series.values():
        xs, ys = [x for x, _ in points], [y for _, y in points]
        mx, my = statistics.mean(xs), statistics.mean(ys)
        slopes.append(sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x in xs))
    return (statistics.mean(v[0][1] for v in series.values()) / 1024, statistics.mean(v[-1][1] for v in series.values()) / 1024,
            statistics.mean(slopes))


def main() -> int:
    """Start the fault server and the episode processes, print the tables; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=None, help="seconds during which new episodes start (default 600)")
    parser.add_argument("--concurrency", type=int, default=None, help="episode processes (default 8)")
    parser.add_argument("--fault-rate", type=float, default=0.2, help="share of model requests answered with a fault (default 0.2)")
    parser.add_argument("--pad", type=int, default=None, help="view_file/search_code steps added to the 6-step fix (default 20)")
    parser.add_argument("--attempts", type=int, default=3, help="attempts per model call before the run stops (default 3)")
    parser.add_argument("--timeout", type=float, default=3.0, help="client timeout per attempt, seconds (default 3)")
    parser.add_argument("--retry-total", type=float, default=30.0, help="retry budget per model call, seconds (default 30)")
    parser.add_argument("--max-resumes", type=int, default=20, help="resumes per episode before it counts as failed")
    parser.add_argument("--seed", type=int, default=None, help="seed of the server's fault draws")
    parser.add_argument("--gc", action="store_true", help="collect garbage cycles after each episode (to tell a leak from late collection)")
    parser.add_argument("--keep-runs", action="store_true", help="keep every run folder (default: only those with problems)")
    parser.add_argument("--json", type=Path, help="also write the results as JSON to this file")
    parser.add_argument("--quick", action="store_true", help="2 processes for 12 s, 4 padding steps: a few episodes (CI)")
    args = parser.parse_args()
    for name, full, quick in (("duration", 600.0, 12.0), ("concurrency", 8, 2), ("pad", 20, 4)):
        if getattr(args, name) is None:
            setattr(args, name, quick if args.quick else full)

    fault_server = _fault_server_module()
    script = build_script(args.pad)
    console = Console(width=None if sys.stdout.isatty() else 120)
    tmp = Path(tempfile.mkdtemp(prefix="horizon-soak-"))
    template = tmp / "python-user-service"
    shutil.copytree(EXAMPLE, template, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".benchmarks"))

    def responder(body: dict[str, Any]) -> dict[str, Any]:
        turn = sum(1 for m in body.get("messages", []) if isinstance(m, dict) and m.get("role") == "assistant")
        step = script[min(turn, len(script) - 1)]
        prompt = len(json.dumps(body.get("messages", []))) // 4
        return fault_server.completion([{"id": f"soak_{turn}", "name": step["tool"], "arguments": json.dumps(step["arguments"])}],
                                       usage={"prompt_tokens": prompt, "completion_tokens": 30, "total_tokens": prompt + 30})

    tally = Tally()
    kinds = fault_kinds(args.timeout)
    server = fault_server.FaultServer(responder, keep_requests=False, on_request=tally)
    server.random_faults(args.fault_rate, kinds, seed=args.seed)
    records: list[dict[str, Any]] = []
    samples: list[tuple[float, int, int]] = []
    maxrss_kib: dict[int, int] = {}
    load_before = os.getloadavg()
    ctx = mp.get_context("spawn")  # fresh interpreters, as `agent run` would be; nothing inherited from the server's threads
    results = ctx.Queue()
    with server:
        t0 = time.time()
        cfg = {
            "url": server.url, "home": str(tmp / "home"), "template": str(template), "script": script,
            "deadline": t0 + args.duration, "timeout_s": args.timeout, "attempts": args.attempts,
            "retry_total_s": args.retry_total, "max_resumes": args.max_resumes, "keep_runs": args.keep_runs, "gc": args.gc,
        }
        procs = [ctx.Process(target=worker, args=(i, cfg, results), name=f"soak-{i}") for i in range(args.concurrency)]
        for p in procs:
            p.start()
        console.print(f"soak: {args.concurrency} episode processes for {args.duration:g} s, {len(script)} steps an episode, "
                      f"fault rate {args.fault_rate:g}; server {server.url}; runs in {tmp}")
        done: set[int] = set()
        loads: list[float] = []
        last_note = t0
        try:
            while len(done) < len(procs):
                now = time.time()
                for p in procs:
                    if p.pid and p.is_alive():
                        kib = _rss_kib(p.pid)
                        if kib:
                            samples.append((now, p.pid, kib))
                loads.append(os.getloadavg()[0])
                deadline = now + 1.0
                while (left := deadline - time.time()) > 0:
                    try:
                        kind, index, payload = results.get(timeout=left)
                    except queue.Empty:
                        break
                    if kind == "episode":
                        records.append(payload)
                        if payload["problems"]:
                            console.print(f"[red]episode {payload['tag']}: {payload['problems']}[/red]")
                    else:
                        done.add(index)
                        maxrss_kib[index] = payload
                for i, p in enumerate(procs):
                    if i not in done and not p.is_alive() and p.exitcode not in (None, 0):
                        done.add(i)
                        console.print(f"[red]episode process {i} died with exit code {p.exitcode}[/red]")
                if time.time() - last_note >= 60:
                    last_note = time.time()
                    console.print(f"  {time.time() - t0:5.0f} s: {len(records)} episodes, {sum(r['steps'] for r in records)} steps, "
                                  f"{server.count} requests, load {os.getloadavg()[0]:.1f}")
        except KeyboardInterrupt:
            for p in procs:
                p.terminate()
            console.print("[yellow]interrupted: the table covers the episodes reported so far[/yellow]")
        for p in procs:
            p.join(timeout=30)
        t1 = time.time()
        counts = dict(server.counts)

    # ---- the numbers
    elapsed = t1 - t0
    finished = [r for r in records if r["status"] == "finished"]
    bad = [r for r in records if r["problems"]]
    steps = sum(r["steps"] for r in finished)
    lost = sum(r["lost"] for r in records)
    repeated = sum(r["repeated"] for r in records)
    twice = sum(max(0, tally.answered[r["tag"]] - r["steps"]) for r in finished)
    short = sum(max(0, r["steps"] - tally.answered[r["tag"]]) for r in finished)
    injected = sum(n for k, n in counts.items() if k != "ok")
    stops = [s for r in records for s in r["stops"]]
    stops_by = Counter(s["status"] for s in stops)
    failed_attempts = sum(r["retried"] for r in records) + stops_by["model_error"]
    exhausted = sum(r["exhausted_attempts"] for r in records)
    recovered = failed_attempts - exhausted
    first_q, last_q = _quarter_rss(samples, t0, t1)
    peak_sampled = max((kib for _, _, kib in samples), default=0) / 1024
    peak_ru = max(maxrss_kib.values(), default=0) / 1024
    second_ep, last_ep, slope = _episode_rss(records)
    growth = (last_q - first_q) / first_q * 100 if math.isfinite(first_q) and first_q else float("nan")
    grew = math.isfinite(growth) and growth > 10
    load = (min(loads), statistics.mean(loads), max(loads)) if loads else (0, 0, 0)
    verdict = "met" if not lost and not repeated and not bad and finished else "MISSED"

    table = Table(title=f"Soak: {args.concurrency} processes, {elapsed:.0f} s, fault rate {args.fault_rate:g} "
                        f"({os.cpu_count()} cores, load {load[0]:.1f}-{load[2]:.1f}, mean {load[1]:.1f})")
    table.add_column("measure")
    table.add_column("value", justify="right")
    rows = [
        ("episodes completed (finished, verified, reward 1.0)", f"{len(finished) - len([r for r in finished if r['problems']])} of {len(records)}"),
        ("steps total (in finished runs)", f"{steps:,}"),
        ("model requests / proper answers", f"{sum(counts.values()):,} / {counts.get('ok', 0):,}"),
        ("faults injected by the server", f"{injected:,} ({injected / max(1, sum(counts.values())) * 100:.1f}% of requests)"),
        ("failed attempts seen by the clients", f"{failed_attempts:,}"),
        ("faults recovered by retry", f"{recovered:,}"),
        ("faults that spent a retry budget", f"{exhausted:,} in {stops_by['model_error']:,} calls"),
        ("resumes after exhausted budgets (model_error)", f"{stops_by['model_error']:,} in {sum(1 for r in records if r['stops']):,} episodes"),
        ("other stops (crashed, interrupted)", f"{sum(n for k, n in stops_by.items() if k != 'model_error'):,}"),
        ("steps lost / repeated in the stores", f"{lost} / {repeated}"),
        ("model calls answered twice / steps without an answer", f"{twice} / {short}"),
        ("episodes with problems", f"{len(bad)}"),
        ("peak RSS of an episode process", f"{max(peak_sampled, peak_ru):.0f} MiB"),
        ("RSS first quarter -> last quarter (mean of processes)",
         f"{first_q:.0f} -> {last_q:.0f} MiB ({growth:+.1f}%): "
         + (("GREW" if grew else "flat") if math.isfinite(slope) else "start-up included, run longer to tell")),
        ("RSS after each episode, 2nd -> last (mean of processes)",
         f"{second_ep:.0f} -> {last_ep:.0f} MiB, slope {slope:+.0f} KiB/episode" if math.isfinite(slope)
         else "n/a (fewer than 3 episodes a process)"),
        ("throughput", f"{steps / elapsed:.2f} steps/s, {len(finished) / elapsed * 60:.1f} episodes/min"),
        ("target: 0 steps lost, every episode verified", verdict),
    ]
    for name, value in rows:
        table.add_row(name, value)
    console.print(table)
    faults = Table(title="Faults injected, by kind")
    faults.add_column("kind")
    faults.add_column("requests", justify="right")
    for kind, options in kinds:
        faults.add_row(_fault_name(kind, options), f"{tally.faults[_fault_name(kind, options)]:,}")
    console.print(faults)
    for r in bad[:5]:
        console.print(f"[red]{r['tag']} ({r.get('run_id')}): {r['problems']}[/red]")
    if args.json:
        args.json.write_text(json.dumps({
            "date": datetime.now().isoformat(timespec="seconds"), "args": {k: str(v) for k, v in vars(args).items()},
            "elapsed_s": elapsed, "episodes": len(records), "finished": len(finished), "steps": steps, "counts": counts,
            "faults": dict(tally.faults),
            "failed_attempts": failed_attempts, "recovered": recovered, "exhausted": exhausted, "stops": dict(stops_by),
            "lost": lost, "repeated": repeated, "answered_twice": twice, "short": short, "problems": len(bad),
            "peak_rss_mib": max(peak_sampled, peak_ru), "rss_first_quarter_mib": first_q, "rss_last_quarter_mib": last_q,
            "rss_after_episode_2nd_mib": second_ep, "rss_after_episode_last_mib": last_ep, "rss_slope_kib_per_episode": slope,
            "rss_after_episode": {r["tag"]: r.get("rss_kib") for r in records},
            "load": load, "load_before": load_before, "cores": os.cpu_count(),
        }, indent=1))
    if not bad and not args.keep_runs:
        shutil.rmtree(tmp, ignore_errors=True)
    else:
        console.print(f"run folders kept in {tmp}")
    return 0 if verdict == "met" else 1


if __name__ == "__main__":
    sys.exit(main())
