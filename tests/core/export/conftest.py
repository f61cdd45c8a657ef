"""Real runs to export, made once per test session: scripted policies on ``notes``, the test plugin
(tests/notes_plugin), whose reward reads ANSWER.txt.

Eleven episodes, all through ``core.runner.Run`` with the real notes plugin, sandbox and run store:

- ``fix``, ``other_fix``: scripts that make ANSWER.txt say done in two tasks (reward 1);
- ``view``, ``edit``, ``shell``, ``view_edit``, ``view_log``: short, distinct attempts at the
  first task (rewards 1 or 0): a GRPO group with contrast;
- ``check_edit``: "solves" the task by rewriting CHECK.txt, the file the reward checks ANSWER.txt
  against, to what ANSWER.txt says (reward hacking: the reward pays 1);
- ``infra_setup``: the model server is gone before the first turn (a network fault: the run ends
  with ``model_error`` and no model turn);
- ``infra_mid``: the run's scratch folder is replaced by a file after the first step, so the
  second call, a shell command, cannot start the sandbox (a storage fault; the run crashes);
- ``view_again``: ``view``'s script again: a duplicate trajectory.

The first ten are the "ten episodes" of the gate test; ``view_again`` is the eleventh.

Issue 17: these were coding runs on the example repositories (``py_fix``, ``java_fix``, ...); the
export tests now need no domain plugin. ``notes_run``: one more notes run that makes the fix, for
the verl adapter's tests.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.plugin import Task
from core.policy import ScriptedPolicy
from core.policy.openai_server import OpenAIServerPolicy
from core.runner import Run, RunResult
from core.state import Limits, Pricing
from tests.core.export.notes_task import NOTES_FIX, NOTES_PLUGIN, NOTES_TASK

FINISH = {"tool": "finish", "arguments": {"summary": "done"}}
OTHER_TASK = "the draft is finished; make ANSWER.txt say done"
CHECK_EDIT = {"tool": "write_file", "arguments": {"path": "CHECK.txt", "text": "todo\n"}}


def view(path: str = "ANSWER.txt", start: int = 1, end: int = 1) -> dict:
    return {"tool": "view_file", "arguments": {"path": path, "start_line": start, "end_line": end}}


SCRIPTS: dict[str, list[dict]] = {
    "fix": [view(), {"tool": "shell", "arguments": {"command": "cat log.md"}}, view("log.md", 1, 2), NOTES_FIX,
            {"tool": "shell", "arguments": {"command": "cat ANSWER.txt"}}, FINISH],
    "other_fix": [view("draft.md"), NOTES_FIX, FINISH],
    "view": [view(), FINISH],
    "edit": [NOTES_FIX, FINISH],
    "shell": [{"tool": "shell", "arguments": {"command": "grep -n todo ANSWER.txt"}}, FINISH],
    "view_edit": [view("log.md", 1, 2), NOTES_FIX, FINISH],
    "view_log": [view("log.md", 2, 2), FINISH],
    "check_edit": [CHECK_EDIT, FINISH],
    "infra_setup": [FINISH],
    "infra_mid": [view(), {"tool": "shell", "arguments": {"command": "cat log.md"}}, FINISH],
    "view_again": [view(), FINISH],
}
TEN = [name for name in SCRIPTS if name != "view_again"]
#: A server address nothing listens on: the policy's first call fails to connect.
DEAD_SERVER = "http://127.0.0.1:9/v1"


@pytest.fixture(autouse=True)
def _notes_installed(notes_plugin):
    """Every export test has ``notes`` installed: exporting and gating a run read its plugin's tool
    schemas and checker inputs."""


@dataclass
class Episodes:
    """The session's runs: their Horizon home, ``{name: run id}``, ``{name: RunResult}``, the scripts
    and the names of the gate test's ten episodes."""

    home: Path
    ids: dict[str, str]
    results: dict[str, RunResult]
    scripts: dict[str, list[dict]]
    ten: list[str]


def notes_folder(root: Path, name: str, other: bool = False) -> Path:
    """A task's starting folder: ANSWER.txt says todo, CHECK.txt the text it must hold (done)."""
    folder = root / name
    folder.mkdir()
    (folder / "ANSWER.txt").write_text("todo\n")
    (folder / "CHECK.txt").write_text("done\n")
    if other:
        (folder / "draft.md").write_text("# Draft\nfinished\n")
    else:
        (folder / "log.md").write_text("# Log\n<!-- end -->\n")
    return folder


def break_scratch(folder: Path) -> None:
    """A storage fault: the run's scratch folder is gone and a file has its name."""
    scratch = folder / "scratch"
    shutil.rmtree(scratch)
    scratch.write_text("the disk that held this folder was lost\n")


def _run(name: str, repo: Path, home: Path) -> RunResult:
    holder: dict[str, Run] = {}

    def on_event(kind: str, data: dict) -> None:
        if name == "infra_mid" and kind == "tool" and data["step"] == 1:
            break_scratch(holder["run"].folder)

    if name == "infra_setup":
        policy, config = OpenAIServerPolicy(DEAD_SERVER, "m", timeout_s=5), {"kind": "openai", "base_url": DEAD_SERVER, "model": "m"}
    else:
        policy, config = ScriptedPolicy(SCRIPTS[name], name=f"scripted:{name}"), {"kind": "scripted", "script": name}
    instruction = OTHER_TASK if name == "other_fix" else NOTES_TASK
    run = Run.start(Task(plugin="notes", instruction=instruction, repo=repo), policy, policy_config=config, limits=Limits(max_steps=10),
                    pricing=Pricing(), home=home, on_event=on_event)  # fmt: skip
    holder["run"] = run
    try:
        return run.execute()
    finally:
        run.close()


@pytest.fixture(scope="session")
def episodes(tmp_path_factory) -> Episodes:
    """Make the eleven runs once: the ten two at a time (runs share nothing but the machine), then
    the duplicate, so that it is certainly the younger of the pair."""
    root = tmp_path_factory.mktemp("export-episodes")
    home = root / "home"
    first, other = notes_folder(root, "notes"), notes_folder(root, "other-notes", other=True)
    results = {}
    with pytest.MonkeyPatch.context() as env:
        env.syspath_prepend(str(NOTES_PLUGIN))
        env.setenv("HORIZON_HOME", str(home))
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {name: pool.submit(_run, name, other if name == "other_fix" else first, home) for name in TEN}
            results = {name: future.result() for name, future in futures.items()}
        results["view_again"] = _run("view_again", first, home)
    (root / "ids.json").write_text(json.dumps({n: r.run_id for n, r in results.items()}))
    return Episodes(home=home, ids={n: r.run_id for n, r in results.items()}, results=results, scripts=SCRIPTS, ten=TEN)


# --------------------------------------------------------------------------- a notes run (issue 17)


@dataclass
class NotesRun:
    """A finished run of ``notes`` (the test plugin): its Horizon home, run id and starting folder."""

    home: Path
    run_id: str
    repo: Path


@pytest.fixture(scope="session")
def notes_run(tmp_path_factory) -> NotesRun:
    """One real ``notes`` run, made once: it views ANSWER.txt, makes the fix and finishes (reward 1).
    Its starting folder stays where it was, as an exported run's repository does. A test that
    drives the run's plugin again (the verl adapter) installs it with the ``notes_plugin`` fixture."""
    root = tmp_path_factory.mktemp("notes-run")
    repo = root / "notes"
    repo.mkdir()
    (repo / "log.md").write_text("# Log\n<!-- end -->\n")
    (repo / "ANSWER.txt").write_text("todo\n")
    script = [{"tool": "view_file", "arguments": {"path": "ANSWER.txt"}}, NOTES_FIX, FINISH]
    with pytest.MonkeyPatch.context() as mp:
        mp.syspath_prepend(str(NOTES_PLUGIN))
        run = Run.start(Task(plugin="notes", instruction=NOTES_TASK, repo=repo), ScriptedPolicy(script, name="scripted:notes_fix"),
                        policy_config={"kind": "scripted", "script": "notes_fix"}, limits=Limits(max_steps=10), pricing=Pricing(),
                        home=root / "home")  # fmt: skip
        try:
            result = run.execute()
        finally:
            run.close()
    assert (result.status, result.reward) == ("finished", 1.0), result
    return NotesRun(home=root / "home", run_id=result.run_id, repo=repo)
