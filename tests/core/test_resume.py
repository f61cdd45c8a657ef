"""Kill the agent process mid-episode (SIGKILL, Ctrl-C) and resume: no step lost or repeated."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

from core.store import RunStore

AGENT = [sys.executable, "-c", "from core.cli import main; main()"]
RUN_TESTS = {"tool": "run_tests", "arguments": {}}
SCRIPT = [
    {"tool": "edit_file", "arguments": {"path": "CHANGES.md", "old_text": "", "new_text": "# changes\n<!-- end -->\n"}},
    RUN_TESTS,
    # not idempotent: run twice, it would add a second line
    {"tool": "edit_file", "arguments": {"path": "CHANGES.md", "old_text": "<!-- end -->", "new_text": "- step\n<!-- end -->"}},
    RUN_TESTS,
    {"tool": "edit_file", "arguments": {"path": "users/service.py", "old_text": "nickname = user.nickname.strip()",
                                        "new_text": "nickname = (user.nickname or \"\").strip()"}},
    RUN_TESTS,
    {"tool": "view_file", "arguments": {"path": "CHANGES.md"}},
    {"tool": "finish", "arguments": {"summary": "fixed"}},
]


def start_agent(args: list[str], home: Path) -> subprocess.Popen:
    env = {**os.environ, "HORIZON_HOME": str(home)}
    return subprocess.Popen(AGENT + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def only_run(home: Path) -> Path:
    (folder,) = list((home / "runs").glob("*"))
    return folder


def check_store(folder: Path) -> None:
    with closing(RunStore(folder / "trajectory.duckdb", read_only=True)) as store:
        run = store.run()
        messages = store.messages()
        steps = store.steps()
    assert run["status"] == "finished" and run["exit_status"] == "submitted" and run["reward"] == 1.0
    assert [s["step"] for s in steps] == list(range(1, len(SCRIPT) + 1))  # every step once
    tools = [c["tool"] for s in steps for c in s["tool_calls"]]
    assert tools == [t["tool"] for t in SCRIPT]  # every tool call once, in order
    assert [m.role for m in messages] == ["system", "user"] + ["assistant", "tool"] * len(SCRIPT)
    changes = (folder / "workspace" / "CHANGES.md").read_text()
    assert changes == "# changes\n- step\n<!-- end -->\n"  # the side effect happened exactly once
    assert "- step" in (folder / "patch.diff").read_text()


def test_sigkill_at_random_points_then_resume(python_repo, tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(t) for t in SCRIPT) + "\n")
    rng = random.Random(7)
    proc = start_agent(["run", "coding", "fix NPE", "--repo", str(python_repo), "--policy", "scripted", "--script", str(script)], home)
    kills = 0
    while True:
        # let it get somewhere, then kill it without warning
        deadline = time.time() + 60
        while time.time() < deadline and not list((home / "runs").glob("*/checkpoints.sqlite")):
            time.sleep(0.05)
        time.sleep(rng.uniform(0.3, 2.5))
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        proc = start_agent(["resume", only_run(home).name], home)
        if kills == 4:
            break
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, out
    assert kills >= 1
    check_store(only_run(home))


def test_ctrl_c_interrupts_resumably(python_repo, tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(t) for t in SCRIPT) + "\n")
    proc = start_agent(["run", "coding", "fix NPE", "--repo", str(python_repo), "--policy", "scripted", "--script", str(script)], home)
    deadline = time.time() + 60
    while time.time() < deadline and not list((home / "runs").glob("*/checkpoints.sqlite")):
        time.sleep(0.05)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    folder = only_run(home)
    if proc.returncode == 0:  # it finished before the signal landed: nothing to resume
        check_store(folder)
        return
    assert "agent resume" in out
    with closing(RunStore(folder / "trajectory.duckdb", read_only=True)) as store:
        assert store.run()["status"] == "interrupted"
    resumed = start_agent(["resume", folder.name], home)
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out
    check_store(folder)
