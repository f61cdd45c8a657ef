"""Running an evaluation's episodes on Ray: a local Ray on this machine, or an existing cluster.

Scheduling (one driver loop, ``run_on_ray``):

* at most ``workers`` episodes in flight; each holds one Ray CPU;
* light episodes (coding, finance) are Ray tasks (``core.eval.runner.run_episode``); an episode
  of a heavy plugin (one whose ``heavy_episodes`` is True: the 3D plugin, whose episode drives its own Blender
  process) runs in an ``EpisodeActor``, one actor per concurrent heavy episode, reused for the
  next heavy episode and stopped when none is left to run;
* each episode has a hard wall-clock limit (``EpisodeSpec.hard_timeout_s``, above the loop's own
  graceful ``max_wall_s``): past it the worker is killed and the episode recorded as failed;
* infrastructure failures only are retried, up to ``retries`` times: the Ray worker or actor
  died (killed, out of memory, node lost), or the sandbox could not start. A low reward, a
  crash in Horizon or a plugin, and a hard time-out are results, not retried;
* each result is handed to ``record`` the moment its episode ends (``run_eval`` appends it to
  ``results.jsonl``); the episode's run store is written by the worker as it goes.

Ray's API: https://docs.ray.io/en/latest/ray-core/api/core.html (``ray.init``, ``ray.wait``,
``ray.cancel(force=True)`` ends a task's worker process, ``ray.kill`` an actor). On a cluster,
every node needs Horizon installed at the same path and the suite folders readable there (a
shared file system), since a task folder is passed by path; ``HORIZON_*`` variables are passed
to the workers. Checked by hand against ``ray start --head --port 6399`` on this machine
(``RAY_AUTH_MODE=disabled`` for the head and the driver; with Ray 2.60's default token
authentication the driver needs ``RAY_AUTH_TOKEN``).
"""

from __future__ import annotations

import os
import socket
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import UserError
from core.eval.runner import EpisodeResult, EpisodeSpec, run_episode
from core.plugin import heavy_episodes
from core.runs import mark_killed, new_run_id

#: Ray's shared-memory object store for a local Ray: results are small JSON, so 128 MiB is ample
#: (Ray's default, 30% of memory, would take gigabytes from a shared machine).
OBJECT_STORE_BYTES = 128 * 1024**2
#: How often the driver wakes to check the hard time limits when no episode ends (seconds).
POLL_S = 2.0


def ray_available() -> bool:
    """Whether Ray can be imported here."""
    try:
        import ray  # noqa: F401
    except ImportError:
        return False
    return True


def _env_for_workers() -> dict[str, str]:
    """Horizon's settings (``HORIZON_*``: home, model server, caches) for the workers, which on a
    cluster do not inherit this process's environment."""
    return {k: v for k, v in os.environ.items() if k.startswith("HORIZON_")}


def _check_reachable(address: str, timeout_s: float = 5.0) -> None:
    """Fail fast when nothing listens at a ``host:port`` / ``ray://host:port`` address (``ray.init``
    itself retries for minutes). ``auto`` and addresses without a port are left to Ray."""
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        return
    try:
        socket.create_connection((host, int(port)), timeout=timeout_s).close()
    except OSError as exc:
        raise UserError(f"cannot reach Ray at {address}: {exc.strerror or exc}; start the cluster (ray start --head) "
                        "or leave out --ray-address for a local Ray") from None


def start_ray(workers: int, address: str | None = None) -> bool:
    """Connect to Ray: a local instance with ``workers`` CPUs, or the cluster at ``address``.

    Returns:
        True when this call started Ray (the caller shuts it down), False when it was running.

    Raises:
        UserError: Ray is not installed, or the cluster cannot be reached.
    """
    try:
        import ray
    except ImportError:
        raise UserError('the ray backend needs Ray: pip install "ray>=2.40" (or use --backend processes)') from None
    if ray.is_initialized():
        return False
    options: dict[str, Any] = {"runtime_env": {"env_vars": _env_for_workers()}, "log_to_driver": False, "logging_level": "WARNING"}
    if address:
        _check_reachable(address)
    try:
        if address:
            ray.init(address=address, **options)
        else:
            # "local": always a new Ray of our own, never a cluster that `ray start` left on this machine
            ray.init(address="local", num_cpus=workers, include_dashboard=False, object_store_memory=OBJECT_STORE_BYTES, **options)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        hint = ("; a cluster with token authentication (Ray's default from 2.61; `ray start` on one machine from 2.59) "
                "needs its token here: RAY_AUTH_TOKEN=$(ray get-auth-token)") if address else ""
        raise UserError(f"cannot start or reach Ray{' at ' + address if address else ''}: {exc}{hint}") from None
    return True


def _run_in_task(worker: Callable[[EpisodeSpec], EpisodeResult], spec: EpisodeSpec) -> EpisodeResult:
    return worker(spec)


class EpisodeActor:
    """A Ray actor that runs heavy episodes one at a time (its process owns the episode's Blender worker)."""

    def run(self, worker: Callable[[EpisodeSpec], EpisodeResult], spec: EpisodeSpec) -> EpisodeResult:
        """Run one episode in this actor's process."""
        return worker(spec)


@dataclass
class _Flight:
    spec: EpisodeSpec
    tries: int
    submitted: float
    actor: Any = None


def _failed(spec: EpisodeSpec, tries: int, reason: str, summary: str, seconds: float) -> EpisodeResult:
    """The result of an episode whose worker raised, died or was killed; its run (if it got as
    far as creating one) is marked ``killed`` with the reason, and the result links to it."""
    found = bool(spec.run_id) and mark_killed(spec.run_id, f"{reason or 'worker failed'}: {summary[:300]}", Path(spec.home))
    return EpisodeResult(task=spec.task, attempt=spec.attempt, label=spec.label, plugin=spec.plugin, exit_status="error",
                         summary=summary, infra_failure=reason, tries=tries, seconds=round(seconds, 3),
                         fail_to_pass_total=len(spec.fail_to_pass), run_id=spec.run_id if found else "")  # fmt: skip


def run_on_ray(
    specs: list[EpisodeSpec],
    *,
    workers: int,
    record: Callable[[EpisodeResult], None],
    address: str | None = None,
    retries: int = 2,
    worker: Callable[[EpisodeSpec], EpisodeResult] = run_episode,
    heavy_plugins: frozenset[str] | None = None,
) -> None:
    """Run every episode on Ray and ``record`` each result as it ends (order: as they end).

    Args:
        specs: the episodes (``core.eval.runner.episode_specs``).
        workers: episodes in flight at once (and the CPUs of a local Ray).
        record: called in this process with each final result (after any retries).
        address: an existing cluster; None starts a local Ray (shut down again at the end).
        retries: restarts per episode after an infrastructure failure.
        worker: the episode function (importable by the workers, e.g. ``run_episode``).
        heavy_plugins: plugins whose episodes run in actors; None: those of ``specs`` whose
            plugin says so (``core.plugin.heavy_episodes``).

    Raises:
        UserError: Ray is missing or cannot start (nothing has run then).
    """
    import ray
    from ray.exceptions import RayError, RayTaskError

    if heavy_plugins is None:
        heavy_plugins = heavy_episodes({spec.plugin for spec in specs})
    started_here = start_ray(workers, address)
    task_fn = ray.remote(num_cpus=1, max_retries=0)(_run_in_task)
    actor_cls = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(EpisodeActor)
    pending: deque[tuple[EpisodeSpec, int]] = deque((spec, 1) for spec in specs)
    in_flight: dict[Any, _Flight] = {}
    idle_actors: list[Any] = []
    taken: set[str] = set()  # run ids handed out: hundreds may be named in one second
    try:
        while pending or in_flight:
            while pending and len(in_flight) < workers:
                # an idle actor takes the next heavy episode first, so actors are rarely left idle
                index = next((i for i, (s, _) in enumerate(pending) if s.plugin in heavy_plugins), None) if idle_actors else None
                spec, tries = pending[index] if index is not None else pending[0]
                del pending[index if index is not None else 0]
                spec = spec.model_copy(update={"run_id": new_run_id(taken)})  # each try its own run, found again if killed
                if spec.plugin in heavy_plugins:
                    actor = idle_actors.pop() if idle_actors else actor_cls.remote()
                    in_flight[actor.run.remote(worker, spec)] = _Flight(spec, tries, time.monotonic(), actor)
                else:
                    in_flight[task_fn.remote(worker, spec)] = _Flight(spec, tries, time.monotonic())
            if idle_actors and not any(s.plugin in heavy_plugins for s, _ in pending):
                for actor in idle_actors:  # free their CPUs for light episodes
                    ray.kill(actor)
                idle_actors.clear()
            now = time.monotonic()
            nearest = min(f.submitted + f.spec.hard_timeout_s for f in in_flight.values()) - now
            ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=max(0.0, min(POLL_S, nearest)))
            for ref in ready:
                flight = in_flight.pop(ref)
                wall = time.monotonic() - flight.submitted
                try:
                    result: EpisodeResult = ray.get(ref)
                except RayTaskError as exc:  # the episode function raised: a bug, not the infrastructure
                    record(_failed(flight.spec, flight.tries, "", f"worker raised: {exc}", wall))
                    if flight.actor is not None:
                        idle_actors.append(flight.actor)
                    continue
                except RayError as exc:  # the worker or actor died, the node was lost
                    result = _failed(flight.spec, flight.tries, "worker died", f"{type(exc).__name__}: {str(exc)[:500]}", wall)
                    flight.actor = None  # a dead actor is not reused
                if flight.actor is not None:
                    idle_actors.append(flight.actor)
                result.tries = flight.tries
                result.timings = {**result.timings, "scheduler": round(max(0.0, wall - result.seconds), 3)}
                if result.infra_failure and flight.tries <= retries:
                    pending.appendleft((flight.spec, flight.tries + 1))
                    continue
                record(result)
            now = time.monotonic()
            for ref, flight in list(in_flight.items()):
                if now - flight.submitted > flight.spec.hard_timeout_s:
                    if flight.actor is not None:
                        ray.kill(flight.actor)
                    else:
                        ray.cancel(ref, force=True)
                    del in_flight[ref]
                    record(_failed(flight.spec, flight.tries, "hard time limit",
                                   f"killed after {flight.spec.hard_timeout_s:.0f} s (the episode's hard time limit)", now - flight.submitted))
    finally:
        for flight in in_flight.values():  # interrupted: stop what still runs
            if flight.actor is not None:
                ray.kill(flight.actor)
        for actor in idle_actors:
            ray.kill(actor)
        if started_here:
            ray.shutdown()
