"""Prometheus metrics of the service, computed from the run stores at scrape time.

The stores are the truth and outlive the server, so the numbers survive a restart (or a
SIGKILL) without any state of their own: each scrape reads every run's store (a run being
written through its live mirror, ``core.store_mirror``); a finished run's numbers never change
and are kept in memory after the first read. The queue adds the service's own view (rows per
state, resumes).

Metrics (``horizon_`` prefix):

==================================================  =====================================================
``horizon_runs{status}``                            runs per store status (``finished``, ``running``, ``killed``, ...)
``horizon_service_queue{state}``                    queue rows per state (``queued``, ``running``, ``done``, ...)
``horizon_tool_calls_total{plugin,tool}``           tool calls stored
``horizon_tool_call_errors_total{plugin,tool}``     those whose observation is an error (success rate: 1 - errors/calls)
``horizon_model_latency_seconds{plugin}``           histogram of model-call latency
``horizon_tokens_total{plugin,kind}``               ``prompt``, ``cached_prompt``, ``completion`` tokens
``horizon_cost_total{plugin}``                      spend at each run's configured prices
``horizon_interruptions_total{kind}``               ``killed``: runs whose store says killed now; ``resumed``: service restarts of a run
==================================================  =====================================================
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import duckdb

from core.config import runs_dir
from core.errors import RunNotFound
from core.runs import open_store_for_reading
from core.service.queue import RunQueue
from core.state import Pricing, Usage

__all__ = ["LATENCY_BUCKETS", "StoreCollector", "run_numbers"]

#: Upper bounds of the model-latency histogram (seconds): from a cached local call to a slow remote one.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


def run_numbers(path: Path) -> dict[str, Any] | None:
    """What the metrics count of one run store (``trajectory.duckdb``).

    Returns:
        ``{"status", "plugin", "tools": {tool: [calls, errors]}, "latencies": [s], "tokens":
        {"prompt", "cached_prompt", "completion"}, "cost"}``, or None when the store cannot be read
        now (damaged, or held by a program that keeps no mirror).
    """
    try:
        with closing(open_store_for_reading(path)) as store:
            run = store.run()
            live = store.live
            tools: dict[str, list[int]] = defaultdict(lambda: [0, 0])
            for tool, is_error in store.con.execute("SELECT tool, is_error FROM tool_calls").fetchall():
                tools[tool or "?"][0] += 1
                tools[tool or "?"][1] += int(bool(is_error))
            calls = store.con.execute(
                "SELECT latency_s, coalesce(prompt_tokens, 0), coalesce(cached_prompt_tokens, 0), coalesce(completion_tokens, 0) "
                "FROM model_calls").fetchall()
    except (duckdb.Error, RunNotFound):
        return None
    usage = Usage(prompt_tokens=sum(c[1] for c in calls), cached_prompt_tokens=sum(c[2] for c in calls),
                  completion_tokens=sum(c[3] for c in calls))
    status = run["status"]
    if status == "running" and not live:  # no process writes it: its process died
        status = "killed"
    return {"status": status, "plugin": run["plugin"], "tools": dict(tools), "latencies": [c[0] for c in calls if c[0] is not None],
            "tokens": {"prompt": usage.prompt_tokens, "cached_prompt": usage.cached_prompt_tokens, "completion": usage.completion_tokens},
            "cost": Pricing(**(run.get("config") or {}).get("pricing", {})).cost(usage)}


class StoreCollector:
    """A ``prometheus_client`` custom collector over the run stores and the service's queue.

    Args:
        home: Horizon's data folder.
        queue: the service's queue (None: no queue metrics).
    """

    def __init__(self, home: Path | None, queue: RunQueue | None = None) -> None:
        self.home, self.queue = home, queue
        self._finished: dict[str, dict[str, Any]] = {}  # a finished run's numbers do not change

    def _runs(self) -> Iterator[dict[str, Any]]:
        for path in sorted(runs_dir(self.home).glob("[!.]*/trajectory.duckdb")):
            run_id = path.parent.name
            numbers = self._finished.get(run_id) or run_numbers(path)
            if numbers is None:
                continue
            if numbers["status"] == "finished":
                self._finished[run_id] = numbers
            yield numbers

    def collect(self) -> Iterator[Any]:
        """The metric families (called by ``prometheus_client`` on each scrape)."""
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

        statuses: dict[str, int] = defaultdict(int)
        calls: dict[tuple[str, str], int] = defaultdict(int)
        errors: dict[tuple[str, str], int] = defaultdict(int)
        latencies: dict[str, list[float]] = defaultdict(list)
        tokens: dict[tuple[str, str], int] = defaultdict(int)
        cost: dict[str, float] = defaultdict(float)
        for numbers in self._runs():
            plugin = numbers["plugin"] or "?"
            statuses[numbers["status"]] += 1
            for tool, (n, bad) in numbers["tools"].items():
                calls[plugin, tool] += n
                errors[plugin, tool] += bad
            latencies[plugin].extend(numbers["latencies"])
            for kind, n in numbers["tokens"].items():
                tokens[plugin, kind] += n
            cost[plugin] += numbers["cost"]

        runs = GaugeMetricFamily("horizon_runs", "Runs per run-store status", labels=["status"])
        for status, n in sorted(statuses.items()):
            runs.add_metric([status], n)
        yield runs
        tool_calls = CounterMetricFamily("horizon_tool_calls", "Tool calls stored", labels=["plugin", "tool"])
        tool_errors = CounterMetricFamily("horizon_tool_call_errors", "Tool calls whose observation is an error", labels=["plugin", "tool"])
        for key in sorted(calls):
            tool_calls.add_metric(list(key), calls[key])
            tool_errors.add_metric(list(key), errors[key])
        yield tool_calls
        yield tool_errors
        latency = HistogramMetricFamily("horizon_model_latency_seconds", "Model-call latency", labels=["plugin"])
        for plugin, values in sorted(latencies.items()):
            values.sort()
            buckets = [(str(b), bisect.bisect_right(values, b)) for b in LATENCY_BUCKETS] + [("+Inf", len(values))]
            latency.add_metric([plugin], buckets, sum_value=sum(values))
        yield latency
        token_family = CounterMetricFamily("horizon_tokens", "Model tokens", labels=["plugin", "kind"])
        for key in sorted(tokens):
            token_family.add_metric(list(key), tokens[key])
        yield token_family
        cost_family = CounterMetricFamily("horizon_cost", "Spend at each run's configured prices", labels=["plugin"])
        for plugin in sorted(cost):
            cost_family.add_metric([plugin], cost[plugin])
        yield cost_family
        interruptions = CounterMetricFamily("horizon_interruptions", "Runs killed (now) and run resumes by the service", labels=["kind"])
        interruptions.add_metric(["killed"], statuses.get("killed", 0))
        if self.queue is not None:
            counts = self.queue.counts()
            interruptions.add_metric(["resumed"], counts.pop("resumes"))
            queue_family = GaugeMetricFamily("horizon_service_queue", "Service queue rows per state", labels=["state"])
            for state, n in sorted(counts.items()):
                queue_family.add_metric([state], n)
            yield queue_family
        yield interruptions
