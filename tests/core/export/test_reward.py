"""The shared reward interface: results, not-applicable, sync and async reward functions, and
the plugins' rewards stored with their version by real runs.

Issue 17: the stored verdict is of a ``notes`` run (conftest.py), the test plugin; the coding
runs' verdict (and the coding reward's need of a ToolContext) and the coding repository without
tests (not applicable, not zero) moved unchanged to tests/plugins/coding/test_coding_export.py."""

import asyncio
from contextlib import closing

import pytest
from pydantic import ValidationError

from core.export.sft import is_correct, reward_version
from core.export.source import load_run
from core.plugin import RewardComponent, Task, load_plugin
from core.reward import NOT_APPLICABLE, RewardFn, RewardResult, Trajectory, aevaluate, evaluate
from core.runner import open_store
from core.state import Message

TASK = Task(plugin="notes", instruction="fix it")
TRAJ = Trajectory(messages=[Message(role="user", content="fix it")])


def test_scored_result_is_the_weighted_mean_of_its_components():
    r = RewardResult.scored("coding-tests/2", {
        "fail_to_pass": RewardComponent(value=0.5, weight=1.0), "tests_untouched": RewardComponent(value=0.0, weight=0.0),
        "style": RewardComponent(value=1.0, weight=3.0)}, correct=False, summary="1/2")
    assert (r.reward, r.correct, r.version, r.applicable) == (0.875, False, "coding-tests/2", True)
    with pytest.raises(ValueError, match="no component has weight"):
        RewardResult.scored("v/1", {"gate": RewardComponent(value=1.0, weight=0.0)}, correct=True, summary="")


def test_a_finished_run_stores_the_verdict_with_its_version(episodes):
    """The notes plugin's reward is judged through the interface and stored whole with the run."""
    fixed, unsolved = episodes.ids["fix"], episodes.ids["view"]
    with closing(open_store(fixed, episodes.home)) as store:
        row = store.run()
    assert (row["reward"], row["reward_status"], row["reward_version"], row["correct"]) == (1.0, "scored", "notes/1", True)
    assert row["reward_summary"] == "ANSWER.txt holds 'done'"
    run = load_run(unsolved, episodes.home)
    assert (run.reward, is_correct(run), reward_version(run)) == (0.0, False, "notes/1")
    trajectory = Trajectory.from_run(fixed, episodes.home)
    assert trajectory.exit_status == "submitted" and trajectory.context is None
    assert any(d["tool"] == "edit_file" for d in trajectory.tool_data)
    # the notes reward reads the episode's workspace: a stored trajectory has none, so nothing to judge
    assert not load_plugin("notes").reward(Task(plugin="notes", instruction="x"), trajectory).applicable


def test_not_applicable_is_not_zero():
    r = RewardResult.not_applicable("finance/1", "no question to grade")
    assert r.status is NOT_APPLICABLE and r.reward is None and r.correct is None and not r.applicable
    with pytest.raises(ValidationError, match="not_applicable"):
        RewardResult(reward=None, correct=None, version="v")  # scored without a reward
    with pytest.raises(ValidationError, match="not-applicable"):
        RewardResult(status=NOT_APPLICABLE, reward=0.0, version="v")


def test_components_outside_unit_interval_and_missing_version_are_refused():
    with pytest.raises(ValidationError):
        RewardComponent(value=1.5)
    with pytest.raises(ValidationError):
        RewardResult(reward=1.0, correct=True, version="")


def test_sync_and_async_reward_functions():
    def sync_fn(task: Task, trajectory: Trajectory) -> RewardResult:
        return RewardResult(reward=1.0, correct=True, version="s/1")

    async def async_fn(task: Task, trajectory: Trajectory) -> RewardResult:
        await asyncio.sleep(0)
        return RewardResult(reward=len(trajectory.messages) / 2, correct=False, version="a/1")

    assert isinstance(sync_fn, RewardFn)
    assert evaluate(sync_fn, TASK, TRAJ).reward == 1.0
    assert evaluate(async_fn, TASK, TRAJ).reward == 0.5
    assert asyncio.run(aevaluate(async_fn, TASK, TRAJ)).version == "a/1"
    with pytest.raises(TypeError, match="not a RewardResult"):
        evaluate(lambda task, trajectory: 0.3, TASK, TRAJ)
