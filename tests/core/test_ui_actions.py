"""agent ui's actions over real runs: start a run into the service's queue, stop it, resume a
stopped run (the service's worker then resumes it from its checkpoint), and apply a finished run's
patch after the review, as ``agent apply`` does. Forms from another origin, without the page's
token or without the browser's form cookie are refused (a web page in the same browser must not
drive Horizon; tests/security/test_web_surfaces.py tries more). The runs are episodes of
the test plugin (``notes``, ``tests/notes_plugin``): the UI's actions are core's, whatever the plugin."""

from __future__ import annotations

import json
import re
from contextlib import closing
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run
from core.runs import open_store
from core.service.bounds import Bounds
from core.service.queue import RunQueue, queue_path
from core.service.worker import execute_queued_run
from core.state import Limits, Pricing
from core.ui.app import create_app

FIX = [{"tool": "edit_file", "arguments": {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}},
       {"tool": "finish", "arguments": {"summary": "the answer is written"}}]  # fmt: skip


def token_of(page: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page).group(1)


@pytest.fixture
def repo(notes_plugin, notes_folder) -> Path:
    """A ``notes`` folder (``ANSWER.txt`` says ``todo``; the reward wants ``done``), the plugin installed."""
    return notes_folder


def test_a_started_run_is_queued_for_the_service_and_can_be_dropped(horizon_home, repo, tmp_path):
    script = tmp_path / "fix.jsonl"
    script.write_text("".join(json.dumps(call) + "\n" for call in FIX))
    client = TestClient(create_app(horizon_home), base_url="http://127.0.0.1:8765")
    page = client.get("/")
    form = {"plugin": "notes", "task": "write done in ANSWER.txt", "repo": str(repo), "policy": "scripted",
            "script": str(script), "max_steps": "12"}  # fmt: skip
    assert client.post("/runs", data=form).status_code == 403  # no token
    assert client.post("/runs", data={**form, "csrf": "guess"}).status_code == 403
    assert client.post("/runs", data={**form, "csrf": token_of(page.text)}, headers={"origin": "http://evil.example"}).status_code == 403
    assert not queue_path(horizon_home).exists()
    RunQueue(queue_path(horizon_home)).record_bounds(Bounds.make([tmp_path]).to_json())  # as agent server --repo-root does

    done = client.post("/runs", data={**form, "csrf": token_of(page.text)}, follow_redirects=False)
    assert done.status_code == 303
    (row,) = RunQueue(queue_path(horizon_home)).rows()
    assert row["state"] == "queued" and row["request"]["policy"]["kind"] == "scripted" and row["request"]["limits"]["max_steps"] == 12
    shown = client.get(done.headers["location"]).text
    assert f"run {row['run_id']} is queued" in shown and "In the service's hands" in shown and row["run_id"] in shown

    bad = client.post("/runs", data={**form, "plugin": "nope", "csrf": token_of(page.text)})
    assert "not started:" in bad.text and "nope" in bad.text  # followed to the runs page, the reason shown
    stopped = client.post(f"/runs/{row['run_id']}/stop", data={"csrf": token_of(page.text)})
    assert "cancelled before it started" in stopped.text
    assert RunQueue(queue_path(horizon_home)).get(row["run_id"])["state"] == "cancelled"


def test_a_stopped_run_is_resumed_by_the_service_from_its_checkpoint(horizon_home, repo, tmp_path):
    script = tmp_path / "fix.jsonl"
    script.write_text(json.dumps(FIX[0]) + "\n")  # the policy dies after the edit: a model error, resumable
    run = Run.start(Task(plugin="notes", instruction="write done in ANSWER.txt", repo=repo), ScriptedPolicy.from_file(script),
                    policy_config={"kind": "scripted", "script": str(script)}, limits=Limits(max_steps=10),
                    pricing=Pricing(), home=horizon_home)  # fmt: skip
    try:
        stopped = run.execute()
    finally:
        run.close()
    run_id = stopped.run_id
    assert stopped.status == "model_error", stopped
    script.write_text("".join(json.dumps(call) + "\n" for call in FIX))  # the model is back
    client = TestClient(create_app(horizon_home), base_url="http://127.0.0.1:8765")
    page = client.get(f"/runs/{run_id}").text
    assert 'id="resume-run"' in page and 'id="apply-run"' not in page
    assert "not started by the service" in client.post(f"/runs/{run_id}/stop", data={"csrf": token_of(page)}).text

    resumed = client.post(f"/runs/{run_id}/resume", data={"csrf": token_of(page)})
    assert "queued; agent server resumes it" in resumed.text
    (row,) = RunQueue(queue_path(horizon_home)).take(1)
    assert row["run_id"] == run_id
    outcome = execute_queued_run(run_id, row["request"], str(horizon_home))  # what the service's Ray task runs
    assert outcome["status"] == "finished", outcome
    with closing(open_store(run_id, horizon_home)) as store:
        assert store.run()["reward"] == 1.0
        assert [r["tool"] for r in store.tool_call_records()] == ["edit_file", "finish"]  # continued, not redone
    again = client.post(f"/runs/{run_id}/resume", data={"csrf": token_of(page)})
    assert "only a stopped run" in again.text


def test_a_finished_runs_patch_is_reviewed_then_applied(horizon_home, repo):
    run = Run.start(Task(plugin="notes", instruction="write done in ANSWER.txt", repo=repo), ScriptedPolicy(FIX, name="fix"),
                    policy_config={"kind": "scripted", "script": "fix"}, limits=Limits(max_steps=10), pricing=Pricing(), home=horizon_home)  # fmt: skip
    try:
        result = run.execute()
    finally:
        run.close()
    client = TestClient(create_app(horizon_home), base_url="http://127.0.0.1:8765")
    page = client.get(f"/runs/{result.run_id}").text
    assert 'id="apply-run"' in page
    review = client.get(f"/runs/{result.run_id}/apply").text
    assert "ANSWER.txt" in review and 'id="confirm-apply"' in review
    assert '<span class="add">+done</span>' in review and '<span class="del">-todo</span>' in review  # the diff itself
    assert (repo / "ANSWER.txt").read_text() == "todo\n"  # the review changed nothing
    assert client.post(f"/runs/{result.run_id}/apply", data={"csrf": "x"}).status_code == 403
    applied = client.post(f"/runs/{result.run_id}/apply", data={"csrf": token_of(review)})
    assert f"applied the patch of run {result.run_id}" in applied.text and "1 path changed" in applied.text and "agent apply --undo" in applied.text
    assert (repo / "ANSWER.txt").read_text() == "done\n"
