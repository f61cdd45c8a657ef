"""The service's driver loop: hand queued runs to Ray, at most ``workers`` at once, and record
how each ended in the queue.

Each run is a Ray task (``core.service.worker.execute_queued_run``, one CPU), started with Ray's
retries off: when a worker dies (killed, out of memory, node lost) the run's store is marked
``killed`` and the run is queued again, up to ``max_starts`` starts in all; its next worker
resumes it from its checkpoint. A run whose store a worker of the killed server still held past
the worker's wait (``core.service.worker.LOCK_WAIT_S``) is queued again the same way. Ray's
connection is ``core.eval.ray_backend.start_ray``'s (a local Ray with ``workers`` CPUs, or a
cluster by address).
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from core.runs import mark_killed
from core.service.queue import RunQueue
from core.service.worker import execute_queued_run

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)

#: How often the loop looks for new or cancelled runs when none ends (seconds).
POLL_S = 0.5


def _otel_env() -> dict[str, str]:
    """The server's ``OTEL_*`` settings, for workers that do not inherit its environment."""
    return {k: v for k, v in os.environ.items() if k.startswith("OTEL_")}


class Scheduler:
    """Runs the queue on Ray in a background thread (Ray must be initialised already).

    Args:
        queue: the service's queue.
        home: Horizon's data folder (the runs' home).
        workers: runs in flight at once.
        max_starts: starts of one run before a run whose worker keeps dying is ``failed``.
    """

    def __init__(self, queue: RunQueue, home: Path, workers: int, max_starts: int = 3) -> None:
        import ray

        self.queue, self.home, self.workers, self.max_starts = queue, home, workers, max_starts
        self._task = ray.remote(num_cpus=1, max_retries=0)(execute_queued_run)
        self._in_flight: dict[Any, dict[str, Any]] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="horizon-scheduler", daemon=True)

    def start(self) -> None:
        """Start the loop's thread."""
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop handing out runs (runs in flight die with Ray; the next start resumes them)."""
        self._stop.set()
        self._thread.join(timeout_s)

    @property
    def in_flight(self) -> list[str]:
        """Run ids executing now."""
        return [row["run_id"] for row in list(self._in_flight.values())]

    def _loop(self) -> None:
        import ray

        while not self._stop.is_set():
            try:
                for row in self.queue.take(self.workers - len(self._in_flight)):
                    ref = self._task.remote(row["run_id"], row["request"], str(self.home), _otel_env())
                    self._in_flight[ref] = row
                if not self._in_flight:
                    self._stop.wait(POLL_S)
                    continue
                ready, _ = ray.wait(list(self._in_flight), num_returns=1, timeout=POLL_S)
                for ref in ready:
                    self._settle(ref, self._in_flight.pop(ref))
            except Exception:
                log.exception("scheduler loop")
                self._stop.wait(POLL_S)

    def _settle(self, ref: Any, row: dict[str, Any]) -> None:
        """Record in the queue how one run's task ended."""
        import ray
        from ray.exceptions import RayError, RayTaskError

        run_id = row["run_id"]
        try:
            result = ray.get(ref)
        except RayTaskError as exc:  # the worker raised: the run cannot start or open (a refusal, a damaged store)
            cause = exc.cause if getattr(exc, "cause", None) is not None else exc
            held = "in use by another process" in str(cause) or "Could not set lock" in str(cause)  # UserError or DuckDB's own
            if held and row["starts"] < self.max_starts:  # a worker of the killed server still holds the store: later
                self.queue.set_state(run_id, "queued", "its store was still held by an earlier worker; queued again",
                                     only_from=("running",))
                return
            log.warning("run %s failed in its worker: %s", run_id, exc)
            self.queue.set_state(run_id, "failed", f"{type(cause).__name__}: {str(cause)[:500]}")
            return
        except RayError as exc:  # the worker died: resume the run on another one
            mark_killed(run_id, f"its service worker died: {type(exc).__name__}", self.home)
            if row["starts"] < self.max_starts:
                self.queue.set_state(run_id, "queued", f"worker died ({type(exc).__name__}); resumed", only_from=("running",))
                self.queue.set_state(run_id, "cancelled", "cancelled (its worker died meanwhile)", only_from=("cancelling",))
            else:
                self.queue.set_state(run_id, "failed", f"its worker died {row['starts']} times: {str(exc)[:300]}")
            return
        self.queue.set_state(run_id, result["state"], result["detail"])
