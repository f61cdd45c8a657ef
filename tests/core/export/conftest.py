"""Real runs to export, made once per test session: scripted policies on the example repositories.

Eleven coding episodes (for the export tests that still need the coding plugin, issue 17), all
through ``core.runner.Run`` with the real coding plugin, sandbox and run store:

- ``py_fix``, ``java_fix``: the example scripts that fix the NPE (reward 1);
- ``py_view``, ``py_edit``, ``py_search``, ``py_view_edit``, ``py_view_mid``: short, distinct
  attempts at the same Python task (rewards 1 or 0): a GRPO group with contrast;
- ``py_test_edit``: "fixes" the task by editing a test file (reward hacking);
- ``infra_setup``: the run's scratch folder is replaced by a file before it starts, so the
  plugin's set-up cannot run the test suite (a storage fault; the run crashes in set-up);
- ``infra_mid``: the same fault strikes after the first step, so the test run and the final
  verification fail (the run crashes at verification);
- ``py_view_again``: ``py_view``'s script again: a duplicate trajectory.

The first ten are the "ten episodes" of the gate test; ``py_view_again`` is the eleventh.

``notes_run``: one run of ``notes``, the test plugin (tests/notes_plugin), for the verl adapter's
tests, which issue 17 moved off the coding plugin.
"""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from core.plugin import Task
from core.policy import ScriptedPolicy, load_script
from core.runner import Run, RunResult
from core.state import Limits, Pricing
from tests.core.export.notes_task import NOTES_FIX, NOTES_PLUGIN, NOTES_TASK

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
TASK = "fix NPE in user module"
FINISH = {"tool": "finish", "arguments": {"summary": "done"}}
FIX = {"tool": "edit_file", "arguments": {"path": "users/service.py", "old_text": "        nickname = user.nickname.strip()",
                                          "new_text": '        nickname = (user.nickname or "").strip()'}}
TEST_EDIT = {"tool": "edit_file", "arguments": {"path": "tests/test_service.py", "old_text": "    assert user.active\n",
                                                "new_text": "    assert True\n"}}


def view(start: int, end: int) -> dict:
    return {"tool": "view_file", "arguments": {"path": "users/service.py", "start_line": start, "end_line": end}}


SCRIPTS: dict[str, list[dict]] = {
    "py_fix": load_script(EXAMPLES / "scripts" / "fix-python-npe.jsonl"),
    "java_fix": load_script(EXAMPLES / "scripts" / "fix-java-npe.jsonl"),
    "py_view": [view(1, 10), FINISH],
    "py_edit": [FIX, FINISH],
    "py_search": [{"tool": "search_code", "arguments": {"pattern": "def display_name", "path": "users"}}, FINISH],
    "py_view_edit": [view(54, 67), FIX, FINISH],
    "py_view_mid": [view(20, 30), FINISH],
    "py_test_edit": [TEST_EDIT, FINISH],
    "infra_setup": [FINISH],
    "infra_mid": [view(1, 5), {"tool": "run_tests", "arguments": {}}, FINISH],
    "py_view_again": [view(1, 10), FINISH],
}
TEN = [name for name in SCRIPTS if name != "py_view_again"]


@dataclass
class Episodes:
    """The session's runs: their Horizon home, ``{name: run id}``, ``{name: RunResult}``, the scripts
    and the names of the gate test's ten episodes."""

    home: Path
    ids: dict[str, str]
    results: dict[str, RunResult]
    scripts: dict[str, list[dict]]
    ten: list[str]


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

    run = Run.start(
        Task(plugin="coding", instruction=TASK, repo=repo), ScriptedPolicy(SCRIPTS[name], name=f"scripted:{name}"),
        policy_config={"kind": "scripted", "script": name}, limits=Limits(max_steps=10), pricing=Pricing(), home=home,
        on_event=on_event,
    )
    holder["run"] = run
    if name == "infra_setup":
        break_scratch(run.folder)
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
    python_repo = Path(shutil.copytree(EXAMPLES / "python-user-service", root / "python-user-service"))
    java_repo = Path(shutil.copytree(EXAMPLES / "java-user-service", root / "java-user-service"))
    results = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HORIZON_HOME", str(home))
        with ThreadPoolExecutor(max_workers=2) as pool:
            futures = {name: pool.submit(_run, name, java_repo if name == "java_fix" else python_repo, home) for name in TEN}
            results = {name: future.result() for name, future in futures.items()}
        results["py_view_again"] = _run("py_view_again", python_repo, home)
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
