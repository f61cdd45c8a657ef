"""Kill the agent process mid-episode (SIGKILL, Ctrl-C) and resume: no step lost or repeated.

Also: a run named by its caller and killed with its process is marked killed and resumes; a run
whose sandbox cannot open leaves nothing behind. The episodes run the ``notes`` test plugin
(``tests/notes_plugin``) on the ``notes_folder`` fixture: what is tested is core's loop, run
store and ``agent resume``. Each ``CHECK`` is a sandboxed command that takes a second, as the
coding plugin's test runs did when these tests ran on it, so that the kills land mid-episode.
"""

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
#: Read-only, but run in the sandbox as a command with side effects would be; one second long.
CHECK = {"tool": "shell", "arguments": {"command": "sleep 1; cat CHANGES.md"}}
SCRIPT = [
    {"tool": "write_file", "arguments": {"path": "CHANGES.md", "text": "# changes\n<!-- end -->\n"}},
    CHECK,
    # not idempotent: run twice, it would add a second line
    {"tool": "edit_file", "arguments": {"path": "CHANGES.md", "old_text": "<!-- end -->", "new_text": "- step\n<!-- end -->"}},
    CHECK,
    {"tool": "edit_file", "arguments": {"path": "ANSWER.txt", "old_text": "todo", "new_text": "done"}},  # the reward: 1.0
    CHECK,
    {"tool": "view_file", "arguments": {"path": "CHANGES.md"}},
    {"tool": "finish", "arguments": {"summary": "logged"}},
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


def test_sigkill_at_random_points_then_resume(notes_folder, notes_plugin, tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(t) for t in SCRIPT) + "\n")
    rng = random.Random(7)
    proc = start_agent(["run", notes_plugin, "log the change", "--repo", str(notes_folder), "--policy", "scripted", "--script", str(script)], home)
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


def test_ctrl_c_interrupts_resumably(notes_folder, notes_plugin, tmp_path):
    home = tmp_path / "home"
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(t) for t in SCRIPT) + "\n")
    proc = start_agent(["run", notes_plugin, "log the change", "--repo", str(notes_folder), "--policy", "scripted", "--script", str(script)], home)
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


HOLDER = """
import sys, time
from pathlib import Path
from core.plugin import Task
from core.policy import ScriptedPolicy, load_script
from core.runner import Run
from core.state import Limits, Pricing
repo, script, home, run_id = map(Path, sys.argv[1:5])
run = Run.start(Task(plugin="notes", instruction="log the change", repo=repo), ScriptedPolicy(load_script(script)),
                policy_config={"kind": "scripted", "script": str(script)}, limits=Limits(), pricing=Pricing(), home=home, run_id=str(run_id))
print("started", flush=True)
time.sleep(600)  # hangs, holding the run store open, until the scheduler kills it
"""


def test_a_caller_chosen_run_is_marked_killed_after_its_process_is_killed_and_resumes(notes_folder, notes_plugin, tmp_path):
    """A scheduler names the run before starting it, kills the hung process, and marks the run;
    the run says why, and `agent resume` finishes it."""
    from core.errors import UserError
    from core.plugin import Task
    from core.policy import ScriptedPolicy
    from core.runner import Run, list_runs, mark_killed
    from core.state import Limits, Pricing

    home, script = tmp_path / "home", tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(t) for t in SCRIPT) + "\n")
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(notes_folder), str(script), str(home), "eval-run-1"],
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert proc.stdout.readline().strip() == "started"
    assert not mark_killed("eval-run-1", "held", home, wait_s=0.5)  # its process still holds the store
    proc.kill()
    proc.wait()
    assert mark_killed("eval-run-1", "hard time limit: killed after 15 s", home)
    (row,) = list_runs(home)
    assert (row["run_id"], row["status"], row["exit_detail"]) == ("eval-run-1", "killed", "hard time limit: killed after 15 s")
    assert not mark_killed("no-such-run", "x", home)
    for taken in ("eval-run-1", "../escape"):
        try:
            Run.start(Task(plugin=notes_plugin, instruction="x", repo=notes_folder), ScriptedPolicy([]), policy_config={"kind": "scripted"},
                      limits=Limits(), pricing=Pricing(), home=home, run_id=taken)  # fmt: skip
        except UserError as exc:
            assert "taken or not a plain name" in str(exc)
        else:
            raise AssertionError(f"run id {taken!r} was accepted")
    resumed = start_agent(["resume", "eval-run-1"], home)
    out, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out
    check_store(home / "runs" / "eval-run-1")


def test_a_run_whose_sandbox_cannot_open_leaves_nothing_behind(notes_folder, notes_plugin, tmp_path, monkeypatch):
    """Run.start fails after the run's folder is in place (the sandbox cannot be made): the folder
    goes, so no run that looks killed is left for agent runs, resume or export."""
    from core import environment as environment_module
    from core.errors import UserError
    from core.plugin import Task
    from core.policy import ScriptedPolicy
    from core.runner import Run, list_runs, new_run_id
    from core.state import Limits, Pricing

    def refuse(*args, **kwargs):
        raise ValueError("the workspace alias /srv/app cannot be made")

    monkeypatch.setattr(environment_module, "open_sandbox", refuse)
    home = tmp_path / "home"
    try:
        Run.start(Task(plugin=notes_plugin, instruction="x", repo=notes_folder), ScriptedPolicy([]), policy_config={"kind": "scripted"},
                  limits=Limits(), pricing=Pricing(), home=home)  # fmt: skip
    except UserError as exc:
        assert "the episode's sandbox cannot be made: the workspace alias /srv/app" in str(exc)
    else:
        raise AssertionError("the run started without a sandbox")
    assert list_runs(home) == [] and not any((home / "runs").iterdir())
    taken: set[str] = set()
    ids = [new_run_id(taken) for _ in range(2000)]  # a suite names its runs within a second or two
    assert len(set(ids)) == len(ids) == len(taken)
