"""The service end to end (issue 18's Must-show): ``agent server`` in its own process on a local
Ray with 2 workers; 20 runs submitted over HTTP; the server and its Ray SIGKILLed mid-way and
started again; every run finishes exactly once (one run folder per id, one verdict, each tool
call once, none lost); ``/metrics`` scraped and checked against the run stores; a run's events
streamed; a running and a queued run cancelled.

Each run is a real coding-plugin episode (scripted: ``edit_file`` then ``finish``) on a one-file
repository without tests, the cheapest real run (a test suite would cost a sandboxed pytest
twice per run).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is not installed (pip install -e '.[service]')")
pytest.importorskip("prometheus_client", reason="the service extra is not installed (pip install -e '.[service]')")

import httpx
from prometheus_client.parser import text_string_to_metric_families

from core.runs import reading_store
from tests.core.test_service_parts import FIX, tiny_repo, write_script

ROOT = Path(__file__).resolve().parents[2]
RUNS = 20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(home: Path, port: int, log: Path) -> subprocess.Popen:
    """``agent server`` in a new session (its Ray processes with it), this checkout's code first."""
    env = {**os.environ, "HORIZON_HOME": str(home), "HORIZON_TEST_ENV": "horizon", "PYTHONPATH": str(ROOT)}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    code = "import sys; from core.cli import main; sys.argv[0] = 'agent'; main()"
    return subprocess.Popen([sys.executable, "-c", code, "server", "--port", str(port), "--workers", "2"], cwd=ROOT, env=env,
                            stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)


def wait_up(client: httpx.Client, server: subprocess.Popen, log: Path, timeout_s: float = 180.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert server.poll() is None, f"the server exited ({server.returncode}):\n{log.read_text()[-3000:]}"
        try:
            if client.get("/api/runs").status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.5)
    raise AssertionError(f"the server did not answer in {timeout_s} s:\n{log.read_text()[-3000:]}")


def wait_for(client: httpx.Client, done: Callable[[list[dict]], bool], what: str, timeout_s: float = 300.0) -> list[dict]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        rows = client.get("/api/runs").json()
        if done(rows):
            return rows
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}: {[(r['run_id'], r['state'], r['detail']) for r in rows]}")


def kill_group(server: subprocess.Popen) -> None:
    os.killpg(server.pid, signal.SIGKILL)  # the server, its Ray (gcs, raylet) and the workers started in its session
    server.wait(30)


def scrape(client: httpx.Client) -> dict[tuple[str, tuple], float]:
    text = client.get("/metrics").text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}


def test_twenty_runs_survive_a_sigkill_of_the_server_and_finish_exactly_once(horizon_home, tmp_path):
    repo, script = tiny_repo(tmp_path), write_script(tmp_path / "fix.jsonl", FIX)
    body = {"plugin": "coding", "task": "make add add", "repo": str(repo), "policy": "scripted", "script": str(script)}
    log = tmp_path / "server.log"
    port = free_port()
    server = start_server(horizon_home, port, log)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            wait_up(client, server, log)
            ids = [client.post("/api/runs", json=body).json()["run_id"] for _ in range(RUNS)]
            assert len(set(ids)) == RUNS
            rows = wait_for(client, lambda rows: sum(r["state"] == "done" for r in rows) >= 5, "5 runs done")
        running_at_kill = {r["run_id"] for r in rows if r["state"] == "running"}
        kill_group(server)
        assert running_at_kill, "the kill was meant to land while runs were running"

        port = free_port()
        server = start_server(horizon_home, port, log)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            wait_up(client, server, log)
            rows = wait_for(client, lambda rows: all(r["state"] in ("done", "failed", "cancelled") for r in rows), "every run to end")
            by_id = {r["run_id"]: r for r in rows}
            assert sorted(by_id) == sorted(ids)
            assert {r["state"] for r in rows} == {"done"}, [(r["run_id"], r["detail"]) for r in rows if r["state"] != "done"]
            assert all(by_id[i]["starts"] == 2 for i in running_at_kill)  # resumed after the restart
            folders = sorted(p.name for p in (horizon_home / "runs").iterdir())
            assert folders == sorted(ids)  # one folder per run, no half-made ones, none lost

            model_calls = 0
            for run_id in ids:
                with reading_store(run_id) as store:
                    run, tools = store.run(), store.tool_call_records()
                    model_calls += len(store.steps())
                assert run["status"] == "finished" and run["exit_status"] == "submitted", run
                assert run["reward_status"] is not None  # one verdict (not applicable: the repository has no tests)
                assert [t["tool"] for t in tools] == ["edit_file", "finish"], (run_id, tools)
                assert len({t["tool_call_id"] for t in tools}) == 2
                assert (horizon_home / "runs" / run_id / "workspace" / "calc.py").read_text().endswith("return a + b\n")

            metrics = scrape(client)
            assert metrics[("horizon_runs", (("status", "finished"),))] == RUNS
            for tool in ("edit_file", "finish"):
                assert metrics[("horizon_tool_calls_total", (("plugin", "coding"), ("tool", tool)))] == RUNS
                assert metrics[("horizon_tool_call_errors_total", (("plugin", "coding"), ("tool", tool)))] == 0
            assert metrics[("horizon_model_latency_seconds_count", (("plugin", "coding"),))] == model_calls == 2 * RUNS
            assert metrics[("horizon_service_queue", (("state", "done"),))] == RUNS
            assert metrics[("horizon_interruptions_total", (("kind", "resumed"),))] == sum(r["starts"] - 1 for r in rows) >= 1
            assert metrics[("horizon_interruptions_total", (("kind", "killed"),))] == 0

            events = client.get(f"/api/runs/{ids[0]}/events", timeout=60).text
            kinds = [line.removeprefix("event: ").strip() for line in events.splitlines() if line.startswith("event:")]
            assert kinds.count("message") >= 5 and kinds[-1] == "end"  # system, task, 2 turns, 2 observations
            assert '"name": "finish"' in events or '"name":"finish"' in events

            # cancel: two long runs take both workers, a third waits; cancel the third, then a running one
            slow = write_script(tmp_path / "slow.jsonl", [("view_file", {"path": "calc.py"})] * 60)
            long_body = {**body, "script": str(slow), "limits": {"max_steps": 100}}
            longs = [client.post("/api/runs", json=long_body).json()["run_id"] for _ in range(3)]
            assert client.post(f"/api/runs/{longs[2]}/cancel").json()["state"] == "cancelled"
            wait_for(client, lambda rows: any(r["run_id"] == longs[0] and r["store_status"] == "running" for r in rows),
                     "the long run to start", 120)
            assert client.post(f"/api/runs/{longs[0]}/cancel").status_code == 202
            rows = wait_for(client, lambda rows: {r["run_id"]: r["state"] for r in rows}[longs[0]] == "cancelled", "the cancel", 120)
            with reading_store(longs[0]) as store:
                run, tools = store.run(), store.tool_call_records()
            assert run["status"] == "interrupted" and "cancelled" in run["exit_detail"] and len(tools) < 60
            assert not (horizon_home / "runs" / longs[2]).exists()  # cancelled while queued: never started
            client.post(f"/api/runs/{longs[1]}/cancel")
    finally:
        if server.poll() is None:
            kill_group(server)
