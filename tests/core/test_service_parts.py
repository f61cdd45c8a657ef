"""The service's parts without Ray: the durable queue, the HTTP API's checks and cancel of a
queued run, a real run executed by the worker function (traced with the OpenTelemetry SDK's
in-memory exporter) and the metrics collector over its store. Runs are episodes of the test
plugin (``notes``, ``tests/notes_plugin``): core's service needs no domain plugin."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client", reason="the service extra is not installed (pip install -e '.[service]')")
pytest.importorskip("opentelemetry.sdk", reason="the service extra is not installed (pip install -e '.[service]')")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families
from starlette.testclient import TestClient

from core.runs import reading_store
from core.service import tracing, worker
from core.service.app import SubmitRequest, create_app, queued_request
from core.service.bounds import Bounds
from core.service.metrics import StoreCollector
from core.service.queue import RunQueue, queue_path


def tiny_repo(tmp_path: Path) -> Path:
    """A one-file folder with a bug (``calc.py``) for a ``notes`` episode: the cheapest real run.
    It has no ``ANSWER.txt``, so the run's verdict is a reward of 0.0."""
    repo = tmp_path / "calc"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    return repo


def write_script(path: Path, calls: list[tuple[str, dict]]) -> Path:
    path.write_text("".join(json.dumps({"tool": tool, "arguments": args}) + "\n" for tool, args in calls))
    return path


#: The API's bearer token in these tests (``agent server`` makes one at first start: ``core.netguard.server_token``).
TOKEN = "test-token-of-the-service-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}

FIX = [("edit_file", {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}),
       ("finish", {"summary": "add adds"})]


def test_queue_keeps_runs_across_instances_and_recovers_running_ones(horizon_home):
    queue = RunQueue(queue_path(horizon_home))
    ids = [queue.submit({"plugin": "p", "task": str(i)}) for i in range(3)]
    assert len(set(ids)) == 3
    taken = queue.take(2)
    assert [row["run_id"] for row in taken] == ids[:2] and all(row["starts"] == 1 for row in taken)
    queue.set_state(ids[1], "cancelling")
    again = RunQueue(queue_path(horizon_home))  # a new server process reads the same file
    requeued, cancelled = again.recover()
    assert requeued == [ids[0]] and cancelled == [ids[1]]
    assert [row["run_id"] for row in again.rows("queued")] == [ids[0], ids[2]]
    assert again.take(1)[0]["starts"] == 2
    assert again.counts() == {"running": 1, "cancelled": 1, "queued": 1, "resumes": 1}
    assert not again.set_state(ids[2], "done", only_from=("running",))  # still queued: unchanged
    assert again.get(ids[2])["state"] == "queued"


def test_api_refuses_bad_submits_and_cancels_a_queued_run(horizon_home, tmp_path, notes_plugin):
    queue = RunQueue(queue_path(horizon_home))
    client = TestClient(create_app(queue, horizon_home, token=TOKEN, bounds=Bounds.make([tmp_path])), base_url="http://127.0.0.1:8766",
                        headers=AUTH)
    repo, script = tiny_repo(tmp_path), write_script(tmp_path / "fix.jsonl", FIX)
    bad = [({"plugin": "nope", "task": "x"}, "no plugin named 'nope'"),
           ({"plugin": notes_plugin, "task": "x", "repo": str(tmp_path / "missing")}, "is not a folder"),
           ({"plugin": notes_plugin, "task": "x", "repo": str(repo), "policy": "scripted"}, "needs --script"),
           ({"plugin": notes_plugin, "task": "x", "policy": "human"}, "cannot run --policy human"),
           ({"plugin": notes_plugin, "task": "x", "limits": {"max_steps": 0}}, "limits.max_steps"),
           ({"plugin": notes_plugin, "task": "x", "limits": {"max_stepz": 3}}, "unknown limit(s) max_stepz"),
           ({"plugin": notes_plugin, "task": "x", "colour": 1}, "colour")]
    for body, words in bad:
        answer = client.post("/api/runs", json=body)
        assert answer.status_code == 400 and words in answer.json()["error"], (body, answer.json())
    assert client.post("/api/runs", content=b"{", headers={"content-type": "application/json"}).status_code == 400
    answer = client.post("/api/runs", json={"plugin": notes_plugin, "task": "fix add", "repo": str(repo), "policy": "scripted",
                                            "script": str(script), "limits": {"max_steps": 5}})
    assert answer.status_code == 201
    run_id = answer.json()["run_id"]
    row = queue.get(run_id)  # written before the answer
    assert row["state"] == "queued" and row["request"]["policy"]["kind"] == "scripted" and row["request"]["limits"]["max_steps"] == 5
    listed = client.get("/api/runs").json()
    assert [(r["run_id"], r["state"], r["store_status"]) for r in listed] == [(run_id, "queued", None)]
    assert client.post(f"/api/runs/{run_id}/cancel").json()["state"] == "cancelled"
    assert client.post(f"/api/runs/{run_id}/cancel").status_code == 409  # ended already
    assert client.get("/api/runs/nope").status_code == 404
    assert client.get("/metrics").status_code == 404  # no registry given
    events = client.get(f"/api/runs/{run_id}/events").text  # a final run: its state, then the end
    assert "event: state" in events and "event: end" in events


def test_worker_runs_traces_and_never_reruns_a_finished_run(horizon_home, tmp_path, monkeypatch, notes_plugin):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(tracing, "otlp_tracer_provider", lambda: provider)
    repo = tiny_repo(tmp_path)
    script = write_script(tmp_path / "s.jsonl", [("view_file", {"path": "missing.py"}), *FIX])
    request = queued_request(SubmitRequest(plugin=notes_plugin, task="make add add", repo=str(repo), policy="scripted", script=str(script)),
                             Bounds.make([tmp_path]))
    queue = RunQueue(queue_path(horizon_home))
    run_id = queue.submit(request)

    result = worker.execute_queued_run(run_id, request, str(horizon_home))
    assert result["state"] == "done" and result["exit_status"] == "submitted" and result["executed"]
    again = worker.execute_queued_run(run_id, request, str(horizon_home))
    assert again["state"] == "done" and not again["executed"]

    with reading_store(run_id) as store:
        tools = store.tool_call_records()
        steps = store.steps()
    assert [t["tool"] for t in tools] == ["view_file", "edit_file", "finish"] and [t["is_error"] for t in tools] == [True, False, False]
    assert (horizon_home / "runs" / run_id / "workspace" / "calc.py").read_text().endswith("return a + b\n")

    spans = exporter.get_finished_spans()
    roots = [s for s in spans if s.attributes["gen_ai.operation.name"] == "invoke_agent"]
    assert len(roots) == 1 and roots[0].attributes["gen_ai.conversation.id"] == run_id  # the second call ran nothing
    root = roots[0].context.span_id
    chats = [s for s in spans if s.attributes["gen_ai.operation.name"] == "chat"]
    assert [s.attributes["horizon.step"] for s in chats] == [1, 2, 3]
    for span, step in zip(chats, steps, strict=True):
        assert span.parent.span_id == root and span.attributes["gen_ai.request.model"] == "scripted"
        assert span.attributes["gen_ai.usage.input_tokens"] == step["usage"].prompt_tokens
        assert span.attributes["gen_ai.usage.output_tokens"] == step["usage"].completion_tokens
    tool_spans = [s for s in spans if s.attributes["gen_ai.operation.name"] == "execute_tool"]
    assert [s.attributes["gen_ai.tool.name"] for s in tool_spans] == ["view_file", "edit_file", "finish"]
    assert tool_spans[0].name == "execute_tool view_file"
    assert [s.status.is_ok for s in tool_spans] == [False, True, True]
    assert [s.attributes["gen_ai.tool.call.id"] for s in tool_spans] == [t["tool_call_id"] for t in tools]
    assert all(s.parent.span_id == root and s.start_time <= s.end_time for s in tool_spans)

    registry = CollectorRegistry()
    registry.register(StoreCollector(horizon_home, queue))
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(generate_latest(registry).decode()) for s in family.samples}
    assert samples[("horizon_runs", (("status", "finished"),))] == 1
    assert samples[("horizon_tool_calls_total", (("plugin", notes_plugin), ("tool", "view_file")))] == 1
    assert samples[("horizon_tool_call_errors_total", (("plugin", notes_plugin), ("tool", "view_file")))] == 1
    assert samples[("horizon_tool_call_errors_total", (("plugin", notes_plugin), ("tool", "edit_file")))] == 0
    assert samples[("horizon_model_latency_seconds_count", (("plugin", notes_plugin),))] == 3
    assert samples[("horizon_interruptions_total", (("kind", "killed"),))] == 0


def test_no_otlp_endpoint_means_no_tracer(monkeypatch):
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    assert tracing.otlp_tracer_provider() is None
    events = []
    sink = tracing.RunTracer(None, "r", "p", "m", then=lambda kind, data: events.append(kind))
    sink.start()
    sink("model", {"step": 1})
    sink.end("finished")
    assert events == ["model"]  # passed on, no spans made
