"""Test runs at scale: how many processes a whole-suite run uses, and how long it may take.

Parallel. A whole-suite pytest run (the baseline at set-up, ``run_tests`` with no ids, the
grader's final run) uses ``workers()`` processes (the CPUs this process may use, or
``$HORIZON_TEST_WORKERS``; 1 runs serially):

* with the project's own parallel runner when its test environment has one: pytest-xdist
  (``has_xdist``, read from the environment's files, nothing started) gets ``-n <workers>``;
* else Horizon shards the suite's test files: ``workers`` pytest processes run side by side,
  each in its own sandboxed command and its own run folder, each collecting the whole suite and
  keeping its share of the files (``verdict_plugin.shard_files``: about equal numbers of tests,
  whole files, so module and class fixtures run once); their outcomes are merged
  (``testing.merge_runs``). Results equal a serial run's for a suite whose tests do not depend
  on one another's order across files.

Runs given test ids stay serial: starting workers costs more than a few tests do; so does a
suite measured at under ``PARALLEL_MIN_S`` of one process's work (``processes_for``), unless
``$HORIZON_TEST_WORKERS`` asks for a number. There are never more processes than test files.

Budget. A whole-suite run's time limit grows with the suite (``suite_budget``): at least the
sandbox's ``timeout_s`` (120 s by default); before the suite was ever measured,
``PER_FILE_S`` per test file divided among the workers; once a run of the same suite finished,
twice what it took plus ``MARGIN_S``; after a run the limit stopped, twice that limit. Never more
than ``MAX_BUDGET_S`` (``$HORIZON_TEST_BUDGET_MAX_S``). The measurement is cached per suite in
``$HORIZON_HOME/cache/test-budgets/`` under ``suite_key``: the framework and the test files'
paths and sizes, so an edit of the code under test (every step of an episode) keeps the key and
another copy of the same release finds it. ``$HORIZON_TEST_TIMEOUT_S`` is a fixed limit instead,
for every run. A run the limit stops still reports the tests that ran and counts those that did
not (``TestRun.not_run``).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

from core.api import horizon_home

WORKERS_ENV = "HORIZON_TEST_WORKERS"
MAX_BUDGET_ENV = "HORIZON_TEST_BUDGET_MAX_S"
#: Seconds per test file a never-measured suite is given, shared among the workers.
PER_FILE_S = 2.0
#: Added to twice a measured duration.
MARGIN_S = 30.0
#: The largest budget of one run, in seconds (30 minutes).
MAX_BUDGET_S = 1800.0
#: A suite whose last run took less than this many process-seconds runs in one process.
PARALLEL_MIN_S = 10.0
#: The cache's folder under ``$HORIZON_HOME/cache``.
CACHE_DIR = "test-budgets"


def workers() -> int:
    """Processes a whole-suite run may use: ``$HORIZON_TEST_WORKERS`` (a positive integer; a
    value that is not one is ignored), else the CPUs this process may run on."""
    value = os.environ.get(WORKERS_ENV, "").strip()
    if value.isdigit() and int(value) >= 1:
        return int(value)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def processes_for(key: str, files: int) -> int:
    """How many processes a whole-suite run of ``key`` uses: ``workers()``, at most one per test
    file; 1 when the suite was measured at under ``PARALLEL_MIN_S`` process-seconds (starting the
    others would cost more than they save) and ``$HORIZON_TEST_WORKERS`` is not set."""
    count = min(workers(), max(1, files))
    if count > 1 and not os.environ.get(WORKERS_ENV, "").strip():
        last = measured(key)
        if last is not None and not last.get("timed_out") and last["duration_s"] * int(last.get("workers") or 1) < PARALLEL_MIN_S:
            return 1
    return count


def _site_packages(prefix: Path) -> list[Path]:
    return [*prefix.glob("lib/python3*/site-packages"), *prefix.glob("lib64/python3*/site-packages")]


def has_xdist(python: str, prefix: str = "") -> bool:
    """Whether pytest-xdist is installed where ``python`` imports from: the environment's
    ``site-packages`` (``prefix``, else the interpreter's own, two folders up), or for Horizon's
    own interpreter its ``sys.path``. Only files are read; nothing is started or imported."""
    if not prefix and Path(python) == Path(sys.executable):
        import importlib.util

        return importlib.util.find_spec("xdist") is not None
    base = Path(prefix) if prefix else Path(python).parent.parent
    return any((folder / "xdist" / "__init__.py").is_file() for folder in _site_packages(base))


def suite_key(framework: str, root: Path, files: list[str]) -> str:
    """The cache key of a suite: SHA-256 (hex) of the framework and each test file's path and size
    (``lstat``: a link is its own size). Files that cannot be read are left out."""
    digest = hashlib.sha256(framework.encode() + b"\0")
    for rel in sorted(files):
        try:
            size = os.lstat(root / rel).st_size
        except OSError:
            continue
        digest.update(f"{rel}\0{size}\n".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def _cache_path(key: str) -> Path:
    return horizon_home() / "cache" / CACHE_DIR / f"{key}.json"


def measured(key: str) -> dict | None:
    """The last recorded whole-suite run of ``key`` (``record``), or None."""
    try:
        found = json.loads(_cache_path(key).read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) and isinstance(found.get("duration_s"), (int, float)) else None


def max_budget() -> float:
    """``MAX_BUDGET_S``, or ``$HORIZON_TEST_BUDGET_MAX_S`` when that is a positive number."""
    try:
        value = float(os.environ.get(MAX_BUDGET_ENV, ""))
    except ValueError:
        return MAX_BUDGET_S
    return value if 0 < value < float("inf") else MAX_BUDGET_S


def suite_budget(base_s: float, key: str, files: int, processes: int) -> tuple[float, str]:
    """The time limit of a whole-suite run, in seconds, and why (one phrase for the set-up text).

    Args:
        base_s: the least limit (the sandbox's ``timeout_s``).
        key: ``suite_key``.
        files: the suite's test files.
        processes: ``workers()`` that will share them.
    """
    cap = max(base_s, max_budget())
    last = measured(key)
    if last is None:
        budget = max(base_s, PER_FILE_S * files / max(1, processes))
        why = f"{files} test files, not measured yet"
    elif last.get("timed_out"):
        budget = max(base_s, 2 * float(last.get("budget_s") or last["duration_s"]))
        why = f"the last run of this suite was stopped by its limit after {float(last['duration_s']):.0f} s"
    else:
        budget = max(base_s, 2 * float(last["duration_s"]) + MARGIN_S)
        why = f"the last run of this suite took {float(last['duration_s']):.0f} s"
    return round(min(budget, cap), 1), why


def record(key: str, *, duration_s: float, budget_s: float, timed_out: bool, tests: int, processes: int) -> None:
    """Remember how a whole-suite run of ``key`` went (written atomically; a cache that cannot be
    written is skipped: the next run is only sized by its files again)."""
    path = _cache_path(key)
    entry = {"duration_s": round(duration_s, 2), "budget_s": budget_s, "timed_out": timed_out, "tests": tests,
             "workers": processes}  # fmt: skip
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=".budget-", delete=False) as out:
            json.dump(entry, out)
        os.replace(out.name, path)
    except OSError:
        pass
