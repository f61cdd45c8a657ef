"""An evaluation's suite is out of the agent's sight: the reference fix and the task's test lists
(and hidden tests) lie beside the repository, and a command in the sandbox could read them."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest

from core.eval.runner import EpisodeSpec, run_episode
from core.export.source import load_run
from core.sandbox.bwrap import BwrapSandbox

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "python-user-service"
SECRET = "REFERENCE-FIX-7f3a"


@pytest.fixture
def visible(tmp_path):
    """A folder a sandboxed command could see: not under /tmp or a home, which the sandbox hides anyway."""
    folder = Path(tempfile.mkdtemp(prefix="horizon-suite-", dir="/var/tmp"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_a_command_in_an_eval_episode_cannot_read_the_suite(tmp_path, visible):
    task = visible / "suite" / "npe"
    shutil.copytree(EXAMPLE, task / "repo", ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    (task / "fix.diff").write_text(f"# {SECRET}\n")
    (task / "task.json").write_text(json.dumps({"instruction": "fix NPE in user module", "fail_to_pass": []}))
    peek = f"cat {task}/fix.diff; ls -a {task.parent} | wc -l"
    script = tmp_path / "peek.jsonl"
    script.write_text("\n".join(json.dumps(c) for c in [
        {"tool": "shell", "arguments": {"command": peek, "timeout_s": 30}},
        {"tool": "finish", "arguments": {"summary": "looked"}},
    ]) + "\n")  # fmt: skip
    spec = EpisodeSpec(task="npe", task_folder=str(task), attempt=0, plugin="coding", instruction="fix NPE in user module",
                       fail_to_pass=[], pass_to_pass=[], policy={"kind": "scripted", "script": str(script)},
                       limits={"max_steps": 4}, pricing={}, home=str(tmp_path / "home"))  # fmt: skip
    result = run_episode(spec)
    assert result.run_id, result.summary
    output = load_run(result.run_id, tmp_path / "home").tool_calls[0]["output"]
    assert SECRET not in output and "No such file" in output, output
    assert "\n2\n" in output or output.strip().splitlines()[1:2] == ["2"], output  # the suite folder looks empty: . and ..
    # the same command in a sandbox outside an evaluation sees it: the protection is the eval's, not the folder's place
    (tmp_path / "ws").mkdir()
    plain = BwrapSandbox(tmp_path / "ws", tmp_path / "scratch").run(["/bin/sh", "-c", peek], cwd=tmp_path / "ws")
    assert SECRET in plain.stdout
