"""Crash consistency of core's loop: SIGKILL the agent at random points of 50 scripted episodes and resume each.

Every completed step must be in the run store exactly once, no tool call with side effects may
run twice, the workspace must match the trajectory, and each result must equal an uninterrupted
run's. Checkpoints are pruned as the run goes; a kill between a node's writes and its checkpoint
resumes at every such boundary; a killed run is listed as killed.

The episodes run the ``notes`` test plugin (``tests/notes_plugin``): what is tested is core's
loop, checkpoints and run store, so no domain plugin is needed. Its ``shell`` and ``edit_file``
have the side effects that show a repetition (a line appended to ``log.txt``, a note added to
``notes.md``), as the coding plugin's did when these tests ran on it.
"""

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from core.checkpoint import PruningSqliteSaver
from core.config import load_settings
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run
from core.state import Limits, Pricing
from core.store import RunStore

EPISODES = 50
AGENT = [sys.executable, "-c", "from core.cli import main; main()"]


def script_for(n_appends: int) -> list[dict]:
    """Side effects that show any repetition: appends to a log (shell) and to a file (edit_file);
    the first call makes the file (write_file)."""
    turns = [{"tool": "write_file", "arguments": {"path": "notes.md", "text": "<!-- end -->\n"}}]
    for i in range(n_appends):
        turns.append({"tool": "shell", "arguments": {"command": f"echo line-{i} >> log.txt; sleep 0.3; wc -l < log.txt"}})
        turns.append({"tool": "edit_file", "arguments": {"path": "notes.md", "old_text": "<!-- end -->", "new_text": f"- note {i}\n<!-- end -->"}})
        turns.append({"tool": "view_file", "arguments": {"path": "notes.md"}})
    turns.append({"tool": "finish", "arguments": {"summary": "done"}})
    return turns


def make_repo(root: Path) -> Path:
    root.mkdir()
    (root / "README.md").write_text("a repository without tests\n")
    return root


def trajectory(folder: Path) -> tuple[dict, list[tuple[str, str | None]], list[int]]:
    with closing(RunStore(folder / "trajectory.duckdb", read_only=True)) as store:
        run = store.run()
        messages = [(m.role, m.content) for m in store.messages()]
        steps = [s["step"] for s in store.steps()]
    return run, messages, steps


@pytest.mark.timeout(2400)  # 50 episodes, each killed and restarted a few times: minutes on 2 cores
def test_fifty_killed_episodes_resume_to_the_uninterrupted_result(tmp_path, capsys, notes_plugin):
    rng = random.Random(2026)
    n_appends = 4
    script = script_for(n_appends)
    script_file = tmp_path / "script.jsonl"
    script_file.write_text("\n".join(json.dumps(t) for t in script) + "\n")

    # the reference: the same episode, uninterrupted
    ref_repo = make_repo(tmp_path / "ref-repo")
    started = Run.start(Task(plugin=notes_plugin, instruction="log", repo=ref_repo), ScriptedPolicy(script),
                        policy_config={"kind": "scripted"}, limits=Limits(), pricing=Pricing())
    began = time.monotonic()
    ref = started.execute()
    ref_seconds = time.monotonic() - began  # how long the steps take on this machine, at its load now
    started.close()
    ref_run, ref_messages, ref_steps = trajectory(started.folder)
    ref_patch = ref.patch_path.read_text()
    assert ref_run["exit_status"] == "submitted" and ref_steps == list(range(1, len(script) + 1))

    # kill times are fractions of the measured episode, so a fast or a loaded machine kills inside the run alike
    window = max(ref_seconds, 0.5)
    kills = resumes = killed_episodes = 0
    for episode in range(EPISODES):
        home = tmp_path / f"home-{episode}"
        repo = make_repo(tmp_path / f"repo-{episode}")
        env = {**os.environ, "HORIZON_HOME": str(home)}
        args = ["run", notes_plugin, "log", "--repo", str(repo), "--policy", "scripted", "--script", str(script_file)]
        proc = subprocess.Popen(AGENT + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for attempt in range(6):
            if attempt == 0 and rng.random() < 0.8:  # most first kills land inside the run, however long start-up takes
                waited = time.monotonic() + 120
                while not list((home / "runs").glob("[!.]*")) and proc.poll() is None and time.monotonic() < waited:
                    time.sleep(0.02)
                time.sleep(rng.uniform(0.0, 0.8 * window))
            else:
                time.sleep(rng.uniform(0.3, 0.3 + 1.5 * window))  # later kills land all over, start-up included
            if proc.poll() is not None:
                break
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            kills += 1
            killed_episodes += attempt == 0
            runs = list((home / "runs").glob("[!.]*"))  # a run killed while starting stays hidden
            if not runs:  # killed before the run existed: start again
                proc = subprocess.Popen(AGENT + args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                continue
            proc = subprocess.Popen(AGENT + ["resume", runs[0].name], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            resumes += 1
        out = proc.communicate(timeout=300)[0]
        assert proc.returncode == 0, out
        (folder,) = list((home / "runs").glob("[!.]*"))
        run, messages, steps = trajectory(folder)
        assert run["status"] == "finished" and run["exit_status"] == "submitted", (episode, run)
        assert steps == ref_steps, episode  # every step exactly once
        assert messages == ref_messages, episode  # the same trajectory, observation for observation
        log = (folder / "workspace" / "log.txt").read_text().splitlines()
        assert log == [f"line-{i}" for i in range(n_appends)], (episode, log)  # no side effect twice
        assert (folder / "patch.diff").read_text() == ref_patch, episode  # the workspace matches
        assert (repo / "README.md").read_text() == "a repository without tests\n" and not (repo / "log.txt").exists()
    with capsys.disabled():
        print(f"\ncrash consistency: {EPISODES} episodes ({killed_episodes} killed), {kills} SIGKILLs, {resumes} resumes, "
              f"{len(ref_steps)} steps each, 0 lost or repeated")
    # most episodes were killed and resumed (one that finished before its first kill is still checked above)
    assert killed_episodes >= EPISODES * 9 // 10 and resumes >= EPISODES // 2, (killed_episodes, resumes)


def test_old_checkpoints_are_pruned(tmp_path, notes_plugin):
    repo = make_repo(tmp_path / "repo")
    script = tmp_path / "views.jsonl"
    # 40 different calls: the same one 40 times would be ended by the stuck detector
    script.write_text("".join(json.dumps({"tool": "view_file", "arguments": {"path": "README.md", "end_line": i + 1}}) + "\n"
                              for i in range(40)))
    started = Run.start(Task(plugin=notes_plugin, instruction="x", repo=repo), ScriptedPolicy.from_file(script),
                        policy_config={"kind": "scripted", "script": str(script)}, limits=Limits(max_steps=40), pricing=Pricing(),
                        keep_checkpoints=5)
    result = started.execute()
    started.close()
    assert result.steps == 40
    with closing(sqlite3.connect(started.folder / "checkpoints.sqlite")) as con:
        count = con.execute("SELECT count(*) FROM checkpoints").fetchone()[0]
    assert 5 <= count < 5 + 10  # pruned every 10 checkpoints down to 5; 120+ were written
    reopened = Run.open(result.run_id, settings=load_settings())
    assert reopened.state().step == 40  # the newest checkpoint is intact
    reopened.close()


class Killed(BaseException):
    """Stands in for SIGKILL inside the process: nothing after it runs, no handler catches it."""


@pytest.mark.timeout(300)
def test_a_kill_between_a_nodes_writes_and_its_checkpoint_resumes_at_every_boundary(tmp_path, monkeypatch, notes_plugin):
    """LangGraph saves a node's writes, then the next checkpoint; a kill can land in between.

    Resuming there must run the rest of the episode, not mistake the half-saved step for the end
    (the bug the 50-kill test caught now and then: status finished, exit status crashed).
    """
    script = script_for(1)
    script_file = tmp_path / "script.jsonl"
    script_file.write_text("\n".join(json.dumps(t) for t in script) + "\n")
    scripted = {"kind": "scripted", "script": str(script_file)}
    ref_repo = make_repo(tmp_path / "ref-repo")
    home = tmp_path / "home"
    ref = Run.start(Task(plugin=notes_plugin, instruction="log", repo=ref_repo), ScriptedPolicy(script),
                    policy_config=scripted, limits=Limits(), pricing=Pricing(), home=home)
    ref_result = ref.execute()
    ref.close()
    _, ref_messages, ref_steps = trajectory(ref.folder)
    original_put = PruningSqliteSaver.put
    n_puts = 0

    def counting_put(self, *args, **kwargs):
        nonlocal n_puts
        n_puts += 1
        return original_put(self, *args, **kwargs)

    monkeypatch.setattr(PruningSqliteSaver, "put", counting_put)
    probe = Run.start(Task(plugin=notes_plugin, instruction="log", repo=make_repo(tmp_path / "probe")), ScriptedPolicy(script),
                      policy_config=scripted, limits=Limits(), pricing=Pricing(), home=home)
    probe.execute()
    probe.close()
    total = n_puts
    assert total > 3 * len(script)  # a checkpoint after every node

    for kill_at in range(1, total + 1):
        calls = 0

        def dying_put(self, *args, _kill_at=kill_at, **kwargs):
            nonlocal calls
            calls += 1
            if calls == _kill_at:
                raise Killed  # the node's writes are saved, its checkpoint is not
            return original_put(self, *args, **kwargs)

        monkeypatch.setattr(PruningSqliteSaver, "put", dying_put)
        run = Run.start(Task(plugin=notes_plugin, instruction="log", repo=make_repo(tmp_path / f"repo-{kill_at}")),
                        ScriptedPolicy(script), policy_config=scripted, limits=Limits(), pricing=Pricing(), home=home)
        with pytest.raises(Killed):
            run.execute()
        run.close()
        monkeypatch.setattr(PruningSqliteSaver, "put", original_put)
        resumed = Run.open(run.run_id, settings=load_settings(), home=home)
        result = resumed.execute()
        resumed.close()
        run_row, messages, steps = trajectory(resumed.folder)
        assert (result.exit_status.value, run_row["status"]) == ("submitted", "finished"), (kill_at, result.exit_detail)
        assert steps == ref_steps and messages == ref_messages, kill_at
        assert (resumed.folder / "workspace" / "log.txt").read_text() == "line-0\n", kill_at
        assert result.patch_path.read_text() == ref_result.patch_path.read_text(), kill_at


def test_a_killed_run_is_listed_as_killed_with_the_steps_it_made(tmp_path, monkeypatch, notes_plugin):
    from core.runner import list_runs

    script = script_for(2)
    original_put = PruningSqliteSaver.put
    calls = 0

    def dying_put(self, *args, **kwargs):
        nonlocal calls
        calls += 1
        if calls == 10:  # three nodes a step: three steps done, the fourth model call stored
            raise Killed
        return original_put(self, *args, **kwargs)

    monkeypatch.setattr(PruningSqliteSaver, "put", dying_put)
    run = Run.start(Task(plugin=notes_plugin, instruction="log", repo=make_repo(tmp_path / "repo")), ScriptedPolicy(script),
                    policy_config={"kind": "scripted"}, limits=Limits(), pricing=Pricing(), home=tmp_path / "home")
    with pytest.raises(Killed):
        run.execute()
    run.close()
    (row,) = list_runs(tmp_path / "home")
    assert row["status"] == "killed" and row["steps"] >= 3
