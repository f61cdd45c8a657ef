"""The service end to end (issue 18's Must-show): ``agent server`` in its own process on a local
Ray with 2 workers; 20 runs submitted over HTTP; the server and its Ray SIGKILLed mid-way and
started again; every run finishes exactly once (one run folder per id, one verdict, each tool
call once, none lost); ``/metrics`` scraped and checked against the run stores; a run's events
streamed; a running and a queued run cancelled. Every request carries the bearer token the first
start wrote to ``$HORIZON_HOME/server.token`` (the second start reuses it).

Each run is a real episode of the test plugin (``notes``, ``tests/notes_plugin``; scripted: five
``edit_file`` calls, a one-second sandboxed ``shell``, ``finish``) on a one-file folder, the cheapest real run: core's service
needs no domain plugin.
"""

from __future__ import annotations

import contextlib
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

from core.catalog import list_runs
from core.runs import reading_store
from core.service.queue import RunQueue, queue_path
from tests.core.test_service_parts import FIX, tiny_repo, write_script

ROOT = Path(__file__).resolve().parents[2]
NOTES_PLUGIN = ROOT / "tests" / "notes_plugin"  # the test plugin's folder (see the notes_plugin fixture)
RUNS = 20
#: Tool calls per run (one per step).
STEPS = 7


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(home: Path, port: int, log: Path) -> subprocess.Popen:
    """``agent server`` in a new session (its Ray processes with it), this checkout's code first, then
    the test plugin (its Ray workers inherit ``PYTHONPATH`` and find ``notes`` as they find any plugin)."""
    env = {**os.environ, "HORIZON_HOME": str(home), "HORIZON_TEST_ENV": "horizon", "PYTHONPATH": os.pathsep.join((str(ROOT), str(NOTES_PLUGIN)))}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    code = "import sys; from core.cli import main; sys.argv[0] = 'agent'; main()"
    roots = ["--repo-root", str(home.parent)]  # the test's folder: its repositories and scripts are there
    return subprocess.Popen([sys.executable, "-c", code, "server", "--port", str(port), "--workers", "2", *roots], cwd=ROOT, env=env,
                            stdout=log.open("ab"), stderr=subprocess.STDOUT, start_new_session=True)


def wait_up(client: httpx.Client, server: subprocess.Popen, log: Path, home: Path, timeout_s: float = 180.0) -> str:
    """Wait until the server answers, then send its bearer token (``$HORIZON_HOME/server.token``,
    made by its first start) with every request of ``client``; returns the token."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert server.poll() is None, f"the server exited ({server.returncode}):\n{log.read_text()[-3000:]}"
        try:
            if client.get("/api/runs").status_code == 401:  # up; nothing without the token
                token = (home / "server.token").read_text().strip()
                client.headers["Authorization"] = f"Bearer {token}"
                assert client.get("/api/runs").status_code == 200
                return token
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


def list_status(run_id: str) -> str | None:
    """The run's status as ``agent runs`` shows it (``killed``: its store was being written by a
    dead process), None when its run folder is not made yet."""
    return next((r["status"] for r in list_runs() if r["run_id"] == run_id), None)


def descendants(pid: int) -> list[int]:
    """Every process below ``pid`` (from /proc: Ray's workers each get a process group of their own)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def kill_group(server: subprocess.Popen) -> None:
    """SIGKILL the server, its Ray (gcs, raylet, agents: its process group) and Ray's workers."""
    below = descendants(server.pid)
    os.killpg(server.pid, signal.SIGKILL)
    for pid in below:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    server.wait(30)


def scrape(client: httpx.Client) -> dict[tuple[str, tuple], float]:
    text = client.get("/metrics").text
    return {(s.name, tuple(sorted(s.labels.items()))): s.value for f in text_string_to_metric_families(text) for s in f.samples}


def test_twenty_runs_survive_a_sigkill_of_the_server_and_finish_exactly_once(horizon_home, tmp_path, notes_plugin):
    # a few steps before the fix, so that the kill lands inside runs (each step is a distinct call: no stuck stop)
    # and a sandboxed sleep of 3 s: a notes run takes a quarter of a second, so all 20 could end between two polls,
    # and with 1 s a loaded machine (CI beside other work) let both workers' runs end between the poll and the kill
    steps = [("edit_file", {"path": "calc.py", "old_text": "return a - b", "new_text": "return a - b  # n1"}), ("shell", {"command": "sleep 3"})]
    steps += [("edit_file", {"path": "calc.py", "old_text": f"# n{i}", "new_text": f"# n{i + 1}"}) for i in range(1, STEPS - 3)]
    steps += FIX
    repo, script = tiny_repo(tmp_path), write_script(tmp_path / "fix.jsonl", steps)
    body = {"plugin": notes_plugin, "task": "make add add", "repo": str(repo), "policy": "scripted", "script": str(script)}
    log = tmp_path / "server.log"
    port = free_port()
    server = start_server(horizon_home, port, log)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            token = wait_up(client, server, log, horizon_home)
            ids = [client.post("/api/runs", json=body).json()["run_id"] for _ in range(RUNS)]
            assert len(set(ids)) == RUNS
            # mid-way: 5 runs done, and a run whose store its worker is writing now
            rows = wait_for(client, lambda rows: sum(r["state"] == "done" for r in rows) >= 5
                            and any(r["store_status"] == "running" for r in rows), "5 runs done and one being written")
        kill_group(server)
        queue = RunQueue(queue_path(horizon_home))
        running_at_kill = {r["run_id"] for r in queue.rows("running")}
        killed_mid_run = {i for i in running_at_kill if list_status(i) == "killed"}  # store written, not finished
        assert killed_mid_run, "the kill was meant to land inside a run"

        port = free_port()
        server = start_server(horizon_home, port, log)
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
            assert wait_up(client, server, log, horizon_home) == token  # the token file is reused by a later start
            rows = wait_for(client, lambda rows: all(r["state"] in ("done", "failed", "cancelled") for r in rows), "every run to end")
            by_id = {r["run_id"]: r for r in rows}
            assert sorted(by_id) == sorted(ids)
            assert {r["state"] for r in rows} == {"done"}, [(r["run_id"], r["detail"]) for r in rows if r["state"] != "done"]
            assert all(by_id[i]["starts"] == 2 for i in running_at_kill)  # handed to a worker again after the restart
            assert all("not run again" not in by_id[i]["detail"] for i in killed_mid_run)  # resumed from its checkpoint
            folders = sorted(p.name for p in (horizon_home / "runs").iterdir())
            assert folders == sorted(ids)  # one folder per run, no half-made ones, none lost

            model_calls = 0
            for run_id in ids:
                with reading_store(run_id) as store:
                    run, tools = store.run(), store.tool_call_records()
                    model_calls += len(store.steps())
                assert run["status"] == "finished" and run["exit_status"] == "submitted", run
                assert run["reward_status"] is not None  # one verdict (0.0: the folder has no ANSWER.txt)
                assert [t["tool"] for t in tools] == [tool for tool, _ in steps], (run_id, tools)  # each call once
                assert len({t["tool_call_id"] for t in tools}) == STEPS and not any(t["is_error"] for t in tools)
                assert (horizon_home / "runs" / run_id / "workspace" / "calc.py").read_text() == \
                    f"def add(a, b):\n    return a + b  # n{STEPS - 3}\n"  # every edit applied once

            metrics = scrape(client)
            assert metrics[("horizon_runs", (("status", "finished"),))] == RUNS
            for tool, n in (("edit_file", STEPS - 2), ("shell", 1), ("finish", 1)):
                assert metrics[("horizon_tool_calls_total", (("plugin", notes_plugin), ("tool", tool)))] == n * RUNS
                assert metrics[("horizon_tool_call_errors_total", (("plugin", notes_plugin), ("tool", tool)))] == 0
            assert metrics[("horizon_model_latency_seconds_count", (("plugin", notes_plugin),))] == model_calls == STEPS * RUNS
            assert metrics[("horizon_service_queue", (("state", "done"),))] == RUNS
            assert metrics[("horizon_interruptions_total", (("kind", "resumed"),))] == sum(r["starts"] - 1 for r in rows) >= 1
            assert metrics[("horizon_interruptions_total", (("kind", "killed"),))] == 0

            events = client.get(f"/api/runs/{ids[0]}/events", timeout=60).text
            kinds = [line.removeprefix("event: ").strip() for line in events.splitlines() if line.startswith("event:")]
            assert kinds.count("message") >= 5 and kinds[-1] == "end"  # system, task, 2 turns, 2 observations
            assert '"name": "finish"' in events or '"name":"finish"' in events

            # cancel: two long runs take both workers, a third waits; cancel the third, then a running one
            # (a sandboxed sleep of 10 s early on: 60 edits alone can end before the cancel lands on a fast machine)
            edits = [("edit_file", {"path": "calc.py", "old_text": "return a - b", "new_text": "return a - b  # v1"}), ("shell", {"command": "sleep 10"})]
            edits += [("edit_file", {"path": "calc.py", "old_text": f"# v{i}", "new_text": f"# v{i + 1}"}) for i in range(1, 60)]
            slow = write_script(tmp_path / "slow.jsonl", edits)  # 61 different steps (the same call again is stopped as stuck)
            long_body = {**body, "script": str(slow), "limits": {"max_steps": 100}}
            longs = [client.post("/api/runs", json=long_body).json()["run_id"] for _ in range(3)]
            assert client.post(f"/api/runs/{longs[2]}/cancel").json()["state"] == "cancelled"
            wait_for(client, lambda rows: any(r["run_id"] == longs[0] and r["store_status"] == "running" for r in rows),
                     "the long run to start", 120)
            assert client.post(f"/api/runs/{longs[0]}/cancel").status_code == 202
            rows = wait_for(client, lambda rows: {r["run_id"]: r["state"] for r in rows}[longs[0]] == "cancelled", "the cancel", 120)
            with reading_store(longs[0]) as store:
                run, tools = store.run(), store.tool_call_records()
            assert run["status"] == "interrupted" and "cancelled" in run["exit_detail"] and len(tools) < len(edits)
            assert not (horizon_home / "runs" / longs[2]).exists()  # cancelled while queued: never started
            client.post(f"/api/runs/{longs[1]}/cancel")
    finally:
        if server.poll() is None:
            kill_group(server)
