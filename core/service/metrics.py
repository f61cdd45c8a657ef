"""Prometheus metrics of the service, computed from the runs catalog at scrape time.

The stores are the truth and outlive the server, so the numbers survive a restart (or a
SIGKILL) without any state of their own: each scrape reads the runs catalog (``core.catalog``:
each run's counts as its writer left them at its last step's end, a run whose store changed
since read again from it), not every store. The queue adds the service's own view (rows per
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
from pathlib import Path
from typing import Any

from core.catalog import catalog_rows
from core.service.queue import RunQueue
from core.state import Pricing, Usage

__all__ = ["LATENCY_BUCKETS", "StoreCollector", "run_numbers"]

#: Upper bounds of the model-latency histogram (seconds): from a cached local call to a slow remote one.
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


def run_numbers(entry: dict[str, Any]) -> dict[str, Any] | None:
    """What the metrics count of one run, from its runs-catalog entry (``core.catalog.catalog_rows``).

    Returns:
        ``{"status", "plugin", "tools": {tool: [calls, errors]}, "latencies": [s], "tokens":
        {"prompt", "cached_prompt", "completion"}, "cost"}``, or None when its store cannot be read
        now (damaged, or held by a program that keeps no mirror).
    """
    numbers, run = entry.get("numbers"), entry["row"]
    if numbers is None:
        return None
    tokens = numbers["tokens"]
    usage = Usage(prompt_tokens=tokens["prompt"], cached_prompt_tokens=tokens["cached_prompt"], completion_tokens=tokens["completion"])
    return {"status": run["status"], "plugin": run.get("plugin"), "tools": numbers["tools"], "latencies": numbers["latencies"],
            "tokens": dict(tokens), "cost": Pricing(**(run.get("config") or {}).get("pricing", {})).cost(usage)}


class StoreCollector:
    """A ``prometheus_client`` custom collector over the runs catalog and the service's queue.

    Args:
        home: Horizon's data folder.
        queue: the service's queue (None: no queue metrics).
    """

    def __init__(self, home: Path | None, queue: RunQueue | None = None) -> None:
        self.home, self.queue = home, queue

    def _runs(self) -> Iterator[dict[str, Any]]:
        for entry in catalog_rows(self.home):
            numbers = run_numbers(entry)
            if numbers is not None:
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
