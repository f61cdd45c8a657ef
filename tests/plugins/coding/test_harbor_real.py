"""Horizon's Harbor agent run by Harbor itself: ``harbor run --agent plugins.coding.harbor:HorizonAgent``
on the fixture task, with Harbor's own trial, agent factory, ``AgentContext`` and verifier.

Harbor needs Python 3.12+, which Horizon's environment is not; set ``HORIZON_HARBOR_PYTHON`` to the
``python`` of a 3.12+ environment that has ``harbor`` and Horizon's dependencies (this checkout is
put on its ``PYTHONPATH``). Without a container engine here, the environment is
``harbor_real/folder_environment.py``: a subclass of Harbor's ``BaseEnvironment`` over a folder
(``harbor_env.FolderEnvironment``), loaded with ``--env``. Skipped when no such Python is given.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HERE = Path(__file__).parent
TASK = HERE / "data" / "harbor-wordcount"
PYTHON = os.environ.get("HORIZON_HARBOR_PYTHON", "")
pytestmark = [
    pytest.mark.skipif(not PYTHON, reason="HORIZON_HARBOR_PYTHON (a Python 3.12+ with harbor installed) is not set"),
    pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed"),
]
SOLVE = [
    {"tool": "view_file", "arguments": {"path": "wordcount.py"}},
    {"tool": "edit_file", "arguments": {"path": "wordcount.py", "old_text": "len(text.splitlines())", "new_text": "len(text.split())"}},
    {"tool": "shell", "arguments": {"command": "python3 wordcount.py input.txt > count.txt && wc -l < input.txt > /tmp/lines.txt"}},
    {"tool": "shell", "arguments": {"command": "rm old.log"}},
    {"tool": "edit_file", "arguments": {"path": "NOTES.md", "old_text": "", "new_text": "counted lines, not words\n"}},
    {"tool": "finish", "arguments": {"summary": "fixed the count, wrote the outputs"}},
]
FINISH_ONLY = [{"tool": "finish", "arguments": {"summary": "finished without changing anything"}}]


def harbor_run(tmp_path: Path, turns: list[dict]) -> dict:
    """``harbor run`` of the fixture task with a scripted policy; the trial's ``result.json``."""
    script = tmp_path / "script.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in turns))
    harbor = Path(PYTHON).with_name("harbor")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{HERE / 'harbor_real'}", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("HORIZON_HOME", None)
    done = subprocess.run([str(harbor), "run", "--path", str(TASK), "--agent", "plugins.coding.harbor:HorizonAgent",
                           "--env", "folder_environment:FolderHarborEnvironment", "--model", "openai/scripted",
                           "--agent-kwarg", f"script={script}", "-o", str(tmp_path / "jobs")],
                          capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = [json.loads(p.read_text()) for p in (tmp_path / "jobs").glob("*/*/result.json")]
    return result


def test_harbor_runs_horizon_and_its_verifier_gives_reward_1(tmp_path):
    result = harbor_run(tmp_path, SOLVE)
    assert result["verifier_result"]["rewards"]["reward"] == 1.0, result.get("exception_info")
    assert result["agent_info"]["name"] == "horizon"
    horizon = result["agent_result"]["metadata"]["horizon"]
    assert horizon["exit_status"] == "submitted" and horizon["steps"] == len(SOLVE) and horizon["workdir"] == "/app"
    assert result["agent_result"]["n_input_tokens"] == 0 and result["agent_result"]["n_output_tokens"] == 0  # a script: no tokens
    run_dir = Path(horizon["run_dir"])
    assert (run_dir / "trajectory.duckdb").is_file() and "len(text.split())" in Path(horizon["patch"]).read_text()


def test_harbor_gives_finish_only_reward_0(tmp_path):
    result = harbor_run(tmp_path, FINISH_ONLY)
    assert result["verifier_result"]["rewards"]["reward"] == 0.0
