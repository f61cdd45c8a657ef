"""``agent eval`` takes the plugin's verdict on a task's declared tests; it never re-grades them."""

from core.eval.runner import declared_tests_outcome
from core.reward import RewardComponent, RewardResult


def verdict(**components: RewardComponent) -> RewardResult:
    return RewardResult(reward=0.0, correct=False, version="notes/1", components=components)


def test_the_plugins_lists_are_taken_as_they_are():
    # The outcomes say the module's only test was skipped; the plugin judged that the module does
    # not pass. The eval says what the plugin said, whatever detail["after"] holds.
    said = verdict(
        fail_to_pass=RewardComponent(value=0.5, detail={"fixed": ["a::x"], "after": {"a::x": "passed", "m.py::t": "skipped"}}),
        pass_to_pass=RewardComponent(value=0.0, weight=0.0, detail={"broken": ["k::y"]}),
    )
    passing, broken = declared_tests_outcome(said, ["a::x", "m.py"], ["k::y", "k::z"])
    assert passing == ["a::x"]
    assert broken == ["k::y"]


def test_a_verdict_silent_on_the_tests_verified_none():
    passing, broken = declared_tests_outcome(verdict(), ["a::x"], ["k::y"])
    assert (passing, broken) == ([], ["k::y"])


def test_a_task_without_declared_tests_has_nothing_to_count():
    assert declared_tests_outcome(verdict(), [], []) == ([], [])
