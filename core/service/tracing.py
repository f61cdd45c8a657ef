"""OpenTelemetry traces of a run, built from the loop's events (``core.loop.EventSink``).

Spans follow the GenAI semantic conventions
(https://opentelemetry.io/docs/specs/semconv/gen-ai/gen-ai-spans/): one ``invoke_agent`` span per
execution of a run (a resumed run gets a new one), and under it one ``chat {model}`` span per model
call (``gen_ai.operation.name=chat``, ``gen_ai.request.model``, ``gen_ai.usage.input_tokens`` /
``output_tokens``) and one ``execute_tool {name}`` span per tool call (``gen_ai.operation.name=
execute_tool``, ``gen_ai.tool.name``, ``gen_ai.tool.call.id``; an error observation sets the span's
status to error). The loop reports a model call when it returns, so its span runs from the
previous event to that one; a tool span ends at its event and lasts the call's ``duration_s``.

Spans are exported over OTLP/HTTP when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (the SDK's standard
variable) is set, and not made at all otherwise.
"""

from __future__ import annotations

import os
import time
from typing import Any

from core.loop import EventSink

__all__ = ["RunTracer", "otlp_tracer_provider"]

_PROVIDER: Any = None


def otlp_tracer_provider() -> Any:
    """This process's tracer provider exporting over OTLP/HTTP, made on first use; None when
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` is not set (or the SDK is not installed: the ``service`` extra)."""
    global _PROVIDER
    if not os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return None
    if _PROVIDER is None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            return None
        provider = TracerProvider(resource=Resource.create({"service.name": os.environ.get("OTEL_SERVICE_NAME", "horizon")}))
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))  # endpoint and headers from OTEL_* variables
        _PROVIDER = provider
    return _PROVIDER


class RunTracer:
    """An ``EventSink`` that turns one execution of a run into spans, then passes each event on.

    Args:
        provider: an OpenTelemetry ``TracerProvider`` (None: no spans, events only passed on).
        run_id, plugin: the run (span attributes ``gen_ai.conversation.id``, ``horizon.plugin``).
        model: the requested model's name (``gen_ai.request.model``; a scripted policy's name
            when there is no model).
        then: the sink the events go on to (may be None).

    Use ``start()`` before the run executes and ``end(status)`` after it (also when it raised).
    """

    def __init__(self, provider: Any, run_id: str, plugin: str, model: str, then: EventSink | None = None) -> None:
        self.tracer = provider.get_tracer("horizon.service") if provider is not None else None
        self.run_id, self.plugin, self.model, self.then = run_id, plugin, model, then
        self.root: Any = None
        self.context: Any = None
        self._last_ns = time.time_ns()

    def start(self) -> None:
        """Open the run's ``invoke_agent`` span."""
        if self.tracer is None:
            return
        from opentelemetry import trace

        self.root = self.tracer.start_span(f"invoke_agent horizon-{self.plugin}", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": f"horizon-{self.plugin}",
            "gen_ai.conversation.id": self.run_id, "horizon.plugin": self.plugin})
        self.context = trace.set_span_in_context(self.root)
        self._last_ns = time.time_ns()

    def end(self, status: str, exit_status: str = "") -> None:
        """Close the run's span with how the execution ended (``horizon.status``, ``horizon.exit_status``)."""
        if self.root is None:
            return
        self.root.set_attribute("horizon.status", status)
        if exit_status:
            self.root.set_attribute("horizon.exit_status", exit_status)
        self.root.end()
        self.root = None

    def __call__(self, kind: str, data: dict[str, Any]) -> None:
        """The ``EventSink``: ``model`` and ``tool`` events become spans; every event is passed on."""
        if self.tracer is not None and self.root is not None:
            now = time.time_ns()
            if kind == "model":
                self._model_span(data, now)
            elif kind == "tool":
                self._tool_span(data, now)
            self._last_ns = now
        if self.then is not None:
            self.then(kind, data)

    def _model_span(self, data: dict[str, Any], now: int) -> None:
        usage = data.get("usage")
        span = self.tracer.start_span(f"chat {self.model}", context=self.context, start_time=self._last_ns, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.request.model": self.model,
            "gen_ai.usage.input_tokens": int(getattr(usage, "prompt_tokens", 0) or 0),
            "gen_ai.usage.output_tokens": int(getattr(usage, "completion_tokens", 0) or 0),
            "horizon.step": int(data.get("step") or 0)})
        span.end(end_time=now)

    def _tool_span(self, data: dict[str, Any], now: int) -> None:
        from opentelemetry.trace import Status, StatusCode

        call = data.get("call")
        name = call.name if call is not None else "(no tool call)"  # a reply without a call: the loop's nudge
        start = now - int(float(data.get("duration_s") or 0.0) * 1e9)
        span = self.tracer.start_span(f"execute_tool {name}", context=self.context, start_time=max(start, self._last_ns), attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call.id if call is not None else "", "horizon.step": int(data.get("step") or 0)})
        if data.get("is_error"):
            span.set_status(Status(StatusCode.ERROR, str(data.get("output") or "")[:200]))
        span.end(end_time=now)
