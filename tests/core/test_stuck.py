"""The stuck detector (core/stuck.py): repeats, repeated failures and A-B alternation; warn, then stop."""

from __future__ import annotations

import pytest

from core.stuck import StuckDetector, action_key


def levels(detector: StuckDetector, steps: list[tuple[str, str, bool]]) -> list[str]:
    return [detector.observe(*step).level for step in steps]


def test_same_action_same_observation_warns_once_then_stops():
    detector = StuckDetector(repeat_warn=3, repeat_stop=5)
    step = ("view_file {\"path\":\"a.py\"}", "1\tx = 1", False)
    assert levels(detector, [step] * 5) == ["ok", "ok", "warn", "ok", "stop"]
    verdict = detector.observe(*step)
    assert verdict.level == "stop" and verdict.pattern == "repeat"
    assert "6 times in a row" in verdict.reason


def test_a_new_observation_breaks_the_streak():
    detector = StuckDetector(repeat_warn=3, repeat_stop=5)
    action = "run_tests {}"
    steps = [(action, "1 failed", False)] * 2 + [(action, "0 failed", False)] * 2 + [(action, "1 failed", False)] * 2
    assert levels(detector, steps) == ["ok"] * 6


def test_same_action_failing_with_changing_errors():
    detector = StuckDetector(failing_warn=3, failing_stop=5)
    action = action_key("shell", {"command": "make", "timeout_s": 5})
    steps = [(action, f"timed out after 5 s (run {i})", True) for i in range(5)]
    out = [detector.observe(*s) for s in steps]
    assert [v.level for v in out] == ["ok", "ok", "warn", "ok", "stop"]
    assert out[2].pattern == "failing" and "failing 3 times in a row" in out[2].reason
    assert "try a different approach" in out[2].reason


def test_a_success_or_another_action_resets_the_failure_count():
    detector = StuckDetector(failing_warn=3, failing_stop=5)
    a, b = "shell {\"command\":\"make\"}", "shell {\"command\":\"make -j2\"}"
    steps = [(a, "e1", True), (a, "e2", True), (a, "ok", False), (a, "e3", True), (a, "e4", True), (b, "e5", True), (a, "e6", True)]
    assert levels(detector, steps) == ["ok"] * 7


def test_alternating_between_two_calls():
    detector = StuckDetector(alternating_warn=6, alternating_stop=10)
    edit = ('edit_file {"old_text":"a","new_text":"b"}', "edited", False)
    undo = ('edit_file {"old_text":"b","new_text":"a"}', "edited", False)
    verdicts = [detector.observe(*(edit if i % 2 == 0 else undo)) for i in range(10)]
    assert [v.level for v in verdicts] == ["ok"] * 5 + ["warn"] + ["ok"] * 3 + ["stop"]
    assert verdicts[5].pattern == "alternating" and verdicts[-1].pattern == "alternating"


def test_alternation_with_progress_is_not_stuck():
    detector = StuckDetector(alternating_warn=6, alternating_stop=10)
    steps = []
    for i in range(10):
        steps.append(("run_tests {}", f"{10 - i} failed", False))  # the results change: progress
        steps.append(('edit_file {"path":"a.py"}', f"edited at line {i}", False))
    assert set(levels(detector, steps)) == {"ok"}


def test_a_fresh_streak_warns_again():
    detector = StuckDetector(repeat_warn=2, repeat_stop=4)
    a, b = ("view_file a", "A", False), ("view_file b", "B", False)
    assert levels(detector, [a, a, b, a, a]) == ["ok", "warn", "ok", "ok", "warn"]


def test_action_key_is_canonical():
    assert action_key("edit", {"b": 1, "a": [1, 2]}) == action_key("edit", '{"a": [1, 2], "b": 1}') == 'edit {"a":[1,2],"b":1}'
    assert action_key("edit", "not json") == "edit not json"
    assert action_key("edit", {"a": 1}) != action_key("view", {"a": 1})


@pytest.mark.parametrize(
    "kwargs",
    [{"repeat_warn": 5, "repeat_stop": 5}, {"failing_warn": 1}, {"alternating_warn": 3}, {"repeat_warn": 4, "repeat_stop": 3}],
)
def test_bad_thresholds_are_refused(kwargs):
    with pytest.raises(ValueError, match="warn < stop"):
        StuckDetector(**kwargs)
