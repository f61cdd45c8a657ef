"""The system prompt an episode gets: a Terminal-Bench task's (hidden tests run on the final
state, no reproduction test asked) against a coding task's (credit through a reproduction test)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from core import eval as ev
from core.plugin import Task
from core.policy import ScriptedPolicy
from core.reward import Trajectory
from core.runner import Run
from core.state import Limits, Pricing
from plugins.coding.plugin import SYSTEM_PROMPT, TERMINAL_BENCH_PROMPT, CodingPlugin

SUITE = Path(__file__).resolve().parents[3] / "suites" / "terminal-bench"
needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bwrap is not installed")
FINISH = [{"tool": "finish", "arguments": {"summary": "nothing to do"}}]


def test_the_two_prompts_say_different_things_about_grading():
    assert "reproduction test" in SYSTEM_PROMPT and "run_tests" in SYSTEM_PROMPT
    assert "tests you cannot see" in TERMINAL_BENCH_PROMPT and "after you call finish" in TERMINAL_BENCH_PROMPT
    assert "No reproduction test is asked" in TERMINAL_BENCH_PROMPT and "run_tests" not in TERMINAL_BENCH_PROMPT
    plugin = CodingPlugin()
    tb_task = Task(plugin="coding", instruction="x", metadata={"terminal_bench": {"workdir": "/app"}})
    assert plugin.system_prompt(tb_task) == TERMINAL_BENCH_PROMPT
    assert plugin.system_prompt(Task(plugin="coding", instruction="x")) == SYSTEM_PROMPT


@needs_bwrap
def test_a_terminal_bench_episode_gets_its_prompt_and_a_coding_episode_the_coding_one(horizon_home, tmp_path):
    (task,) = ev.load_suite(SUITE, ["fix-calc"])
    (spec,) = ev.episode_specs([task], plugin="coding", attempts=1, policy="finish-only", policy_config=None, limits={"max_steps": 3},
                               pricing={}, isolated=True, home=horizon_home, scripts_dir=tmp_path / "scripts")  # fmt: skip
    result = ev.run_episode(spec)
    assert result.exit_status == "submitted", result
    system = Trajectory.from_run(result.run_id, horizon_home).messages[0]
    assert system.role == "system" and system.content == TERMINAL_BENCH_PROMPT

    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (repo / "test_calc.py").write_text("from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n")
    run = Run.start(Task(plugin="coding", instruction="add subtracts", repo=repo), ScriptedPolicy(FINISH),
                    policy_config={"kind": "scripted"}, limits=Limits(max_steps=3), pricing=Pricing(), home=horizon_home)  # fmt: skip
    try:
        outcome = run.execute()
    finally:
        run.close()
    opening = Trajectory.from_run(outcome.run_id, horizon_home).messages
    assert opening[0].content == SYSTEM_PROMPT and "reproduction test" in opening[0].content
    assert "1 fail now" in opening[1].content  # the coding set-up ran its baseline, the Terminal-Bench one does not
