"""agent ui: the pages over real scripted runs (HTTP, no browser), escaping of untrusted text,
files served only from inside a run's folder, and reading a run while another process writes it.

The runs are of ``notes``, the test plugin (tests/notes_plugin): issue 17 moved these tests off the
coding plugin with the same assertions. The browser tests (a coding run and eval, a 3D preview, a
finance chart) are in tests/integration/test_ui_browser.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from core.state import Message, ToolCall, Usage
from core.store import RunStore
from core.ui.app import create_app

REPO = Path(__file__).resolve().parents[2]
NOTES_PLUGIN = REPO / "tests" / "notes_plugin"
XSS = "<script>document.title='pwned'</script>"
TASK = "log the answer, then answer done"
#: Six tool calls, one per step: the notes plugin's every tool, an edit whose text needs escaping
#: ("done" in quotes) and one that replaces a line (todo -> done).
SCRIPT = [
    {"tool": "view_file", "arguments": {"path": "log.md"}},
    {"tool": "shell", "arguments": {"command": "ls"}},
    {"tool": "edit_file", "arguments": {"path": "log.md", "old_text": "<!-- end -->", "new_text": '- the answer is "done"\n<!-- end -->'}},
    {"tool": "view_file", "arguments": {"path": "ANSWER.txt"}},
    {"tool": "write_file", "arguments": {"path": "ANSWER.txt", "text": "done\n"}},
    {"tool": "finish", "arguments": {"summary": "logged and answered"}},
]


def scripted_run(home: Path, task: str = TASK) -> str:
    """A real `agent run notes` of ``SCRIPT`` into ``home``, on a fresh folder (log.md and
    ANSWER.txt saying todo) beside it; returns its run id."""
    folder = home.parent / f"{home.name}-notes"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    (folder / "log.md").write_text("# Log\n<!-- end -->\n")
    (folder / "ANSWER.txt").write_text("todo\n")
    script = home.parent / f"{home.name}-script.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in SCRIPT))
    # the notes plugin is found on PYTHONPATH, as the notes_plugin fixture installs it for a test
    env = {**os.environ, "HORIZON_HOME": str(home), "PYTHONPATH": os.pathsep.join(p for p in (str(NOTES_PLUGIN), os.environ.get("PYTHONPATH", "")) if p)}
    before = set((home / "runs").glob("*")) if (home / "runs").is_dir() else set()
    done = subprocess.run(
        [sys.executable, "-c", "from core.cli import main; main()", "run", "notes", task, "--repo", str(folder),
         "--policy", "scripted", "--script", str(script)],
        check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (new,) = set((home / "runs").glob("*")) - before
    return new.name


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("horizon")


@pytest.fixture(scope="module")
def run_id(home) -> str:
    return scripted_run(home)


@pytest.fixture(scope="module")
def client(home) -> TestClient:
    return TestClient(create_app(home), base_url="http://127.0.0.1:8765")  # a Host of this machine (others: 421)


def test_the_runs_list_shows_the_scripted_run(client, run_id):
    page = client.get("/")
    assert page.status_code == 200
    row = re.search(rf'<tr class="run-row" data-run="{run_id}">(.*?)</tr>', page.text, re.DOTALL).group(1)
    assert "notes" in row and TASK in row and "s-submitted" in row and "1.000" in row


def test_a_run_page_shows_every_step_the_diff_and_the_verdict(client, run_id):
    page = client.get(f"/runs/{run_id}").text
    assert page.count('<article class="step"') == 6  # the script's six tool calls, one per step
    for tool in ("view_file", "shell", "edit_file", "write_file", "finish"):
        assert f'<span class="tool mono">{tool}</span>' in page
    assert '<details class="observation">' in page  # observations folded
    added = re.findall(r'<span class="add">(.*?)</span>', page)
    assert any("- the answer is &#34;done&#34;" in line for line in added), added
    assert re.search(r'<span class="del">-todo</span>', page)
    assert "Verdict" in page and "solved" in page and "<h2>Final patch</h2>" in page


def test_files_are_served_only_from_inside_the_run_folder(client, home, run_id, tmp_path):
    folder = home / "runs" / run_id
    shutil.copy(REPO / "examples/threed/previews/low-table.png", folder / "workspace" / "preview.png")
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG not yours")
    (folder / "workspace" / "escape.png").symlink_to(secret)
    good = client.get(f"/runs/{run_id}/files/workspace/preview.png")
    assert good.status_code == 200 and good.content[:4] == b"\x89PNG" and "sandbox" in good.headers["content-security-policy"]
    for path in ("../../../../etc/passwd", "%2e%2e/%2e%2e/secret.png", "workspace/escape.png", str(secret), "patch.diff",
                 "trajectory.duckdb", "workspace/log.md"):
        answer = client.get(f"/runs/{run_id}/files/{path}")
        assert answer.status_code in (403, 404), path
        assert b"not yours" not in answer.content
    assert client.get("/runs/..%2F..%2Fetc/files/x.png").status_code == 404
    assert "escape.png" not in client.get(f"/runs/{run_id}").text  # links are not listed either


def test_untrusted_text_is_escaped(home, client):
    """A task and a tool output holding <script> are shown as text, never as markup."""
    folder = home / "runs" / "20990101-000000-0bad"
    folder.mkdir(parents=True)
    store = RunStore(folder / "trajectory.duckdb")
    store.create_run("20990101-000000-0bad", plugin="notes", task=f"fix {XSS}", policy="scripted", config={})
    store.append_opening([Message(role="system", content="system"), Message(role="user", content=f"task {XSS}")])
    call = ToolCall(id="c1", name="shell", arguments='{"command": "cat page.html"}')
    store.append_model_turn(2, 1, Message(role="assistant", content=f"looking {XSS}", tool_calls=[call]), Usage(), model="m",
                            latency_s=0.1, finish_reason="tool_calls")
    store.append_observation(3, 1, Message(role="tool", content=f"<html>{XSS}</html>", tool_call_id="c1", name="shell"), call,
                             is_error=False, data={}, duration_s=0.2)
    store.update_run(status="finished", exit_status="submitted")
    store.close()
    for url in ("/", "/runs/20990101-000000-0bad"):
        page = client.get(url).text
        assert "<script>document" not in page
        assert "&lt;script&gt;document.title=&#39;pwned&#39;&lt;/script&gt;" in page
    shutil.rmtree(folder)


WRITER = """
import sys, time
from pathlib import Path
from core.state import Message, ToolCall, Usage
from core.store import RunStore
folder = Path(sys.argv[1]); folder.mkdir(parents=True)
s = RunStore(folder / "trajectory.duckdb")
s.create_run(folder.name, plugin="notes", task="a run in progress", policy="scripted", config={})
s.append_opening([Message(role="system", content="system"), Message(role="user", content="task")])
call = ToolCall(id="c1", name="view_file", arguments='{"path": "a.py"}')
s.append_model_turn(2, 1, Message(role="assistant", content="first look", tool_calls=[call]), Usage(prompt_tokens=10), model="m",
                    latency_s=0.1, finish_reason="tool_calls")
print("held", flush=True)
time.sleep(120)
"""


def test_a_run_being_written_by_another_process_is_read_from_its_mirror(home, client):
    """The writer holds the DuckDB file; the UI, agent runs and agent show still read the run."""
    from typer.testing import CliRunner

    from core.cli import app
    from core.errors import UserError
    from core.export.source import select_runs
    from core.runs import open_store

    folder = home / "runs" / "20990101-000000-11fe"
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    env = {**os.environ, "HORIZON_HOME": str(home)}
    try:
        assert writer.stdout.readline().strip() == "held"
        row = re.search(rf'data-run="{folder.name}">(.*?)</tr>', client.get("/").text, re.DOTALL).group(1)
        assert "s-running" in row and "a run in progress" in row  # not "in use"
        page = client.get(f"/runs/{folder.name}").text
        assert "s-live" in page and page.count('<article class="step"') == 1 and "running…" in page
        shown = CliRunner().invoke(app, ["show", folder.name], env=env)
        assert shown.exit_code == 0 and "view_file(" in shown.output and "running: 3 messages so far" in shown.output, shown.output
        listed = CliRunner().invoke(app, ["runs"], env=env).output
        assert re.search(rf"{folder.name}\s+notes\s+running", listed), listed
        with pytest.raises(UserError, match="in use by another process"):  # export, apply, resume: only a finished store
            open_store(folder.name, home)
        assert select_runs([], all_runs=True, home=home)[1] == [f"{folder.name} (running)"]  # export --all skips it
    finally:
        writer.kill()
        writer.wait()
    listed = CliRunner().invoke(app, ["runs"], env=env).output  # its process is gone: the store itself is read
    assert re.search(rf"{folder.name}\s+notes\s+killed", listed), listed
    shutil.rmtree(folder)


def test_the_live_events_stream_sends_the_run_body(home, run_id):
    app = create_app(home, poll_s=0.05)
    with TestClient(app, base_url="http://127.0.0.1:8765") as live, live.stream("GET", f"/runs/{run_id}/events") as stream:
        lines = []
        for line in stream.iter_lines():
            lines.append(line)
            if len(lines) > 3 and line == "":
                break
    assert "event: update" in lines
    assert any(line.startswith("data: ") and "step 6" in line for line in lines)


def test_an_evaluation_page_shows_pass_at_k_per_suite_and_task(home, client):
    from core.eval.metrics import summarize

    folder = home / "evals" / "20990101-000000-e0a1"
    folder.mkdir(parents=True)
    results = [{"task": "t-easy", "attempt": a, "plugin": "notes", "resolved": True, "reward": 1.0, "cost": 0.0, "exit_status": "submitted",
                "run_id": "", "steps": 3, "seconds": 1.0, "summary": "ok"} for a in range(2)]
    results += [{"task": "t-hard", "attempt": a, "plugin": "notes", "resolved": a == 1, "reward": float(a == 1), "cost": 0.0,
                 "exit_status": "submitted", "run_id": "", "steps": 3, "seconds": 1.0, "summary": "?"} for a in range(2)]
    (folder / "results.jsonl").write_text("".join(__import__("json").dumps(r) + "\n" for r in results))
    page = client.get(f"/evals/{folder.name}").text  # in progress: scored from results.jsonl
    expected = summarize(results, 2)
    assert expected["pass@1"] == 0.75 and expected["pass@2"] == 1.0
    assert "in progress" in page and "0.750" in page and "<th class=\"n\">pass@2</th>" in page
    assert re.search(r"<td>t-hard</td><td class=\"n\">2</td><td class=\"n\">1</td><td class=\"n\">0.500</td><td class=\"n\">1.000</td>", page)
    assert folder.name in client.get("/evals").text


def test_the_evaluations_list_tells_evaluations_apart_and_k_1_shows_pass_at_1_once(home, client):
    """Issue 30: two evaluations of one suite differ by suite, plugin, policy and start in the list;
    an evaluation with k=1 is not headed "pass@1 ... pass@1"; an old evaluation without
    ``eval.json`` takes plugin and policy from its results."""
    import json

    from core.eval.runner import new_eval_dir

    result = {"task": "t", "attempt": 0, "plugin": "notes", "label": "reference", "resolved": True, "reward": 1.0, "cost": 0.0,
              "exit_status": "submitted", "run_id": "", "steps": 2, "seconds": 1.0, "summary": "ok"}
    made = new_eval_dir(home, plugin="notes", suite="/x/suites/notes-suite", policy="finish-only", attempts=1, tasks=1)
    (made / "results.jsonl").write_text(json.dumps({**result, "label": "finish-only", "resolved": False, "reward": 0.0}) + "\n")
    old = home / "evals" / "20990101-000000-e0a2"
    old.mkdir(parents=True)
    (old / "results.jsonl").write_text(json.dumps(result) + "\n")
    listed = client.get("/evals").text
    header = re.search(r"<thead>(.*?)</thead>", listed, re.DOTALL).group(1)
    assert re.findall(r"<th[^>]*>([^<]+)</th>", header) == ["evaluation", "started", "suite", "plugin", "policy", "state", "tasks",
                                                          "resolved", "episodes", "pass@1", "pass@k", "mean reward", "cost"]
    rows = {m.group(1): m.group(0) for m in re.finditer(r'<tr><td class="mono"><a href="/evals/([^"]+)">.*?</tr>', listed, re.DOTALL)}
    assert "notes-suite" in rows[made.name] and "finish-only" in rows[made.name] and made.name[:4] + "-" in rows[made.name]
    assert "2099-01-01 00:00" in rows[old.name] and ">notes<" in rows[old.name] and ">reference<" in rows[old.name]
    page = client.get(f"/evals/{made.name}").text
    assert page.count("pass@1") == 3, page  # the facts, by suite, by task: once each
    assert "notes on <span class=\"mono\">/x/suites/notes-suite</span>, policy finish-only, 1 attempt per task" in page


def test_a_store_held_without_a_mirror_is_listed_as_in_use(home, client):
    """Another program holding the DuckDB file (no mirror): the list says so instead of failing."""
    folder = home / "runs" / "20990101-000000-10c4"
    folder.mkdir(parents=True)
    hold = "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)"
    holder = subprocess.Popen([sys.executable, "-c", hold, str(folder / "trajectory.duckdb")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        page = client.get("/")
        assert page.status_code == 200
        assert "s-in-use" in re.search(rf'data-run="{folder.name}">(.*?)</tr>', page.text, re.DOTALL).group(1)
        assert client.get(f"/runs/{folder.name}").status_code == 503
    finally:
        holder.kill()
        holder.wait()
    shutil.rmtree(folder)


def test_the_agent_ui_command_serves_the_pages(home, run_id):
    import socket
    import time
    import urllib.request

    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-c", "from core.cli import main; main()", "ui", "--port", str(port)], cwd=REPO,
                              env={**os.environ, "HORIZON_HOME": str(home)}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                    page = answer.read().decode()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, server.stdout.read() if server.poll() is not None else "no answer"
                time.sleep(0.2)
        assert f'data-run="{run_id}"' in page
    finally:
        server.terminate()
        server.wait(10)
