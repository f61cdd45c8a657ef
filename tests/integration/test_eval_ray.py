"""agent eval on Ray: real episodes of three plugins on a local Ray, every one in the run store.

One local Ray with 2 CPUs runs 2 coding tasks, 1 3D scene (in an actor: its Blender worker)
and 1 finance task with their reference trajectories. The episode function is the real
``run_episode`` behind a wrapper that injects three faults: the worker process of one coding
episode exits on its first try and another's sandbox is reported unavailable on its first try
(infrastructure failures: retried), and one extra episode creates its run and then hangs past
its hard time limit (killed, its run marked as killed with the reason, not retried).

Moved from tests/core/ (issue 17): it spans the coding, 3D and finance plugins, so it is an
integration test, not one of core's.
"""

from __future__ import annotations

import json
import os
import time
from contextlib import closing
from pathlib import Path

import pytest

from core import eval as ev
from core.eval.runner import EpisodeResult, EpisodeSpec, run_episode
from core.runner import list_runs, open_store

pytest.importorskip("ray", reason="Ray is not installed (pip install 'ray>=2.40')")

ROOT = Path(__file__).resolve().parents[2]
SUITES = ROOT / "suites"
FILINGS = ROOT / ".." / "shared" / "data" / "filings"
SUBSET = ["coding/parse-1.20.2-hyphen-field-names", "coding/xmltodict-0.14.2-whitespace-text", "threed/low-table",
          "finance/financebench-bestbuy"]
DIES_ONCE = "coding/xmltodict-0.14.2-whitespace-text"
NO_SANDBOX_ONCE = "coding/parse-1.20.2-hyphen-field-names"


@pytest.fixture
def subset_specs(horizon_home, tmp_path):
    if not (FILINGS / "questions.jsonl").is_file():
        pytest.skip(f"real filings not found at {FILINGS.resolve()} (../shared/data is not present)")
    tasks = ev.load_suite(SUITES, SUBSET)
    out_dir = ev.new_eval_dir()
    specs = ev.episode_specs(tasks, plugin="auto", attempts=1, policy="reference", policy_config=None,
                             limits={"max_steps": 30, "max_wall_s": 600}, pricing={}, isolated=True, home=horizon_home,
                             scripts_dir=out_dir / "scripts")  # fmt: skip
    return specs, out_dir


def test_ray_runs_every_plugin_streams_results_and_retries_infrastructure_failures_only(subset_specs, horizon_home, tmp_path):
    specs, out_dir = subset_specs
    hang = specs[0].model_copy(update={"task": "coding/hangs", "hard_timeout_s": 15.0})
    marker, no_sandbox = tmp_path / "worker-died-once", tmp_path / "sandbox-failed-once"

    def faulty(spec: EpisodeSpec):  # pickled by value into the Ray workers
        if spec.task == DIES_ONCE and not marker.exists():
            marker.write_text(str(os.getpid()))
            os._exit(1)  # the worker process dies: Ray reports it, the scheduler retries
        if spec.task == NO_SANDBOX_ONCE and not no_sandbox.exists():  # what run_episode returns for SandboxUnavailable
            no_sandbox.write_text("x")
            return EpisodeResult(task=spec.task, attempt=spec.attempt, exit_status="error", summary="SandboxUnavailable: bwrap failed",
                                 infra_failure="sandbox unavailable: bwrap failed")
        if spec.task == "coding/hangs":  # its run exists and is held open by this process when it is killed
            from core.plugin import Task
            from core.policy import ScriptedPolicy
            from core.runner import Run
            from core.state import Limits, Pricing

            Run.start(Task(plugin="coding", instruction="hang", repo=Path(spec.repo)), ScriptedPolicy([]),
                      policy_config={"kind": "scripted"}, limits=Limits(), pricing=Pricing(), home=Path(spec.home), run_id=spec.run_id)
            time.sleep(600)
        return run_episode(spec)

    streamed: list[str] = []

    def on_result(result):  # each result is in results.jsonl before the next one is reported
        lines = (out_dir / "results.jsonl").read_text().splitlines()
        streamed.append(json.loads(lines[-1])["task"])

    summary = ev.run_eval([*specs, hang], workers=2, k=1, out_dir=out_dir, worker=faulty, on_result=on_result, backend="ray", retries=2)
    by_task = {r["task"]: r for r in summary["results"]}
    assert set(by_task) == set(SUBSET) | {"coding/hangs"} and sorted(streamed) == sorted(by_task)

    # the four real episodes: resolved, each a finished run in the run store with its reward
    runs = {r["run_id"]: r for r in list_runs(horizon_home)}
    for name in SUBSET:
        r = by_task[name]
        assert r["resolved"] and r["reward"] == 1.0 and r["exit_status"] == "submitted" and not r["infra_failure"], r
        assert r["plugin"] == name.split("/")[0]
        assert runs[r["run_id"]]["status"] == "finished" and runs[r["run_id"]]["plugin"] == r["plugin"]
        with closing(open_store(r["run_id"], horizon_home)) as store:
            assert store.run()["reward"] == 1.0 and store.tool_call_records()
        assert set(r["timings"]) == {"start", "setup", "tools", "verify", "other", "scheduler"} and r["timings"]["tools"] > 0, r
    assert len(runs) == len(SUBSET) + 1  # the killed attempt never made a run; the hung one did
    assert by_task[DIES_ONCE]["tries"] == 2 and by_task[NO_SANDBOX_ONCE]["tries"] == 2 and marker.exists() and no_sandbox.exists()
    assert all(by_task[n]["tries"] == 1 for n in SUBSET if n not in (DIES_ONCE, NO_SANDBOX_ONCE))

    # the hang: killed at its hard limit, recorded as an infrastructure failure, not retried
    hung = by_task["coding/hangs"]
    assert hung["exit_status"] == "error" and hung["infra_failure"] == "hard time limit" and hung["tries"] == 1, hung
    assert not hung["resolved"] and "hard time limit" in hung["summary"]
    assert runs[hung["run_id"]]["status"] == "killed" and "hard time limit" in runs[hung["run_id"]]["exit_detail"], runs[hung["run_id"]]

    # the summary: 4 of 5 tasks resolved, one infrastructure failure, kept on disk as returned
    assert summary["backend"] == "ray" and summary["episodes"] == 5 and summary["resolved_tasks"] == 4
    assert summary["infra_failures"] == 1 and summary["pass@1"] == pytest.approx(4 / 5)
    assert json.loads((out_dir / "summary.json").read_text())["tasks"] == summary["tasks"]
    assert len((out_dir / "results.jsonl").read_text().splitlines()) == 5


def test_unknown_backend_and_unreachable_cluster_are_clear_errors(horizon_home, tmp_path):
    from typer.testing import CliRunner

    from core.cli import app
    from core.errors import UserError

    with pytest.raises(UserError, match="unknown backend 'dask'"):
        ev.run_eval([], workers=1, k=1, out_dir=tmp_path / "e1", backend="dask")
    result = CliRunner().invoke(app, ["eval", "auto", str(SUITES), "--task", "threed/*", "--backend", "dask"])
    assert result.exit_code == 2 and "--backend must be ray or processes" in result.output and "Traceback" not in result.output
    from core.eval.ray_backend import start_ray

    with pytest.raises(UserError, match="cannot reach Ray at 127.0.0.1:1"):
        start_ray(1, "127.0.0.1:1")
