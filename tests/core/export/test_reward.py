"""The shared reward interface: results, not-applicable, sync and async reward functions."""

import asyncio

import pytest
from pydantic import ValidationError

from core.plugin import RewardComponent, Task, Verification
from core.reward import NOT_APPLICABLE, RewardFn, RewardResult, Trajectory, aevaluate, evaluate, from_verification
from core.state import Message

TASK = Task(plugin="coding", instruction="fix it")
TRAJ = Trajectory(messages=[Message(role="user", content="fix it")])


def test_from_verification_keeps_reward_components_and_correctness():
    v = Verification(reward=0.5, passed=False, summary="1/2", components={
        "fail_to_pass": RewardComponent(value=0.5, weight=1.0), "tests_untouched": RewardComponent(value=1.0, weight=0.0)})
    r = from_verification(v, "coding-tests/1", step_rewards=[0.0, 0.5])
    assert (r.reward, r.correct, r.version, r.step_rewards, r.applicable) == (0.5, False, "coding-tests/1", [0.0, 0.5], True)
    assert r.components["fail_to_pass"].value == 0.5 and r.weighted_mean() == 0.5


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
