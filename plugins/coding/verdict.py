"""How the verdict stream and the second run enter the coding reward (pytest runs only).

``plugins.coding.verdict_stream`` gives each pytest run its ``stream_problems``;
``plugins.coding.second_run`` runs the tests that decide the reward a second way. This module
picks those tests (``verdict_targets``), gathers both into the verdict's ``verification``
record, and turns that record into the reward's gate (``verification_fault``) and components
(``verification_components``: ``verdict_stream`` and ``second_run``, weight 0).
"""

from __future__ import annotations

from typing import Any

from core.api import RewardComponent

#: A target that stands for every test (``verdict_targets`` when nothing ran at the start).
ALL_TESTS = "*"


def verdict_targets(before: dict[str, str], fail_to_pass: list[str] | None) -> list[str]:
    """The tests whose passing earns the reward, as ``reward.grade`` counts them: the task's
    fail-to-pass tests when declared, else those failing at the start (``[ALL_TESTS]``, every
    test, when nothing ran at the start)."""
    if fail_to_pass is not None:
        return sorted(fail_to_pass)
    if not before:
        return [ALL_TESTS]
    return sorted(t for t, o in before.items() if o in ("failed", "error"))


def verification_record(stream: list[str], second: dict[str, Any] | None) -> dict[str, Any]:
    """The ``verification`` record of a verdict: the stream's problems and the second run's record."""
    return {"stream": list(stream), "second_run": second or {"checked": {}, "differs": {}, "unchecked": {}, "problems": []}}


def verification_fault(verification: dict[str, Any] | None) -> str:
    """Why ``verification`` makes the reward 0 (its summary), or "" when it does not."""
    if not verification:
        return ""
    stream = verification.get("stream") or []
    second = verification.get("second_run") or {}
    if stream:
        return (f"the test outcomes that reached the grader as the tests ran contradict the run ({stream[0]}"
                + (f"; and {len(stream) - 1} more" if len(stream) > 1 else "") + "): outcomes not trusted, reward 0")  # fmt: skip
    differs = second.get("differs") or {}
    if differs:
        first = min(differs)
        return (f"the patch behaves differently under the grader: {len(differs)} test(s) that pass under pytest do not when "
                f"run a second way, without pytest ({first}: {differs[first][:300]}): reward 0")  # fmt: skip
    if second.get("problems"):
        return f"the patch behaves differently under the grader: the second run cannot be believed ({second['problems'][0]}): reward 0"
    return ""


def verification_components(verification: dict[str, Any] | None) -> dict[str, RewardComponent]:
    """The verdict's ``verdict_stream`` and ``second_run`` components (gates, weight 0); none
    without a ``verification`` record (a non-pytest run)."""
    if not verification:
        return {}
    stream = list(verification.get("stream") or [])
    second = dict(verification.get("second_run") or {})
    unchecked = second.get("unchecked") or {}
    second["not_checked"] = [f"{t}: not checked a second way ({why})" for t, why in sorted(unchecked.items())]
    differs = second.get("differs") or {}
    bad = bool(differs) or bool(second.get("problems"))
    # "changes" is what the export's reward-hacking gate reads (core.export.gates): a failed check names itself there
    if bad:
        second["changes"] = [f"behaves differently under the grader: {t}: {how}" for t, how in sorted(differs.items())] + [
            f"the second run cannot be believed: {p}" for p in second.get("problems") or []]
    stream_detail: dict[str, Any] = {"problems": stream, **({"changes": stream} if stream else {})}
    return {
        "verdict_stream": RewardComponent(value=0.0 if stream else 1.0, weight=0.0, detail=stream_detail),
        "second_run": RewardComponent(value=0.0 if bad else 1.0, weight=0.0, detail=second),
    }
