"""Stuck detection: notice an agent repeating itself, warn it once, then end the episode.

Three patterns, each checked after every tool call (the same ones OpenHands' ``StuckDetector``
and SWE-agent's loop guards look for):

* **repeat**: the same action with the same observation several times in a row (the agent
  learns nothing new: ``view_file a.py`` five times).
* **failing**: the same action failing several times in a row, whatever the error text (a
  command that keeps timing out with slightly different output).
* **alternating**: two (action, observation) pairs taking turns, ``A B A B ...`` (edit, undo,
  edit, undo).

Each pattern has a warn and a stop threshold, counted in consecutive steps. ``observe`` returns
``warn`` once when a streak reaches its warn threshold (the loop shows the reason to the model),
``stop`` when it reaches the stop threshold (the loop ends the episode with the reason), and
``ok`` otherwise. A different action or observation breaks the streak.

Wiring (``core/loop.py``): one ``StuckDetector`` per episode; after each tool call,
``verdict = detector.observe(action_key(name, arguments), result.output, result.is_error)``;
on ``warn`` append ``verdict.reason`` to that observation; on ``stop`` end the episode with the
exit status for a stuck agent and the reason. A resumed run can rebuild the detector by
replaying the episode's recorded tool calls through ``observe``.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Literal

Level = Literal["ok", "warn", "stop"]


@dataclass(frozen=True)
class Verdict:
    """What the detector concludes after one step.

    Attributes:
        level: ``ok`` (carry on), ``warn`` (tell the model) or ``stop`` (end the episode).
        reason: for ``warn`` and ``stop``, a sentence for the model and the run record naming the
            pattern and the count; empty for ``ok``.
        pattern: ``repeat``, ``failing``, ``alternating``, or "" for ``ok``.
    """

    level: Level
    reason: str = ""
    pattern: str = ""


OK = Verdict("ok")


def action_key(name: str, arguments: Any) -> str:
    """A canonical key for a tool call: the tool name and its arguments as sorted, compact JSON.

    Args:
        name: the tool's name.
        arguments: the call's arguments (a dict, or the JSON text a model server returned;
            text that is not JSON is used as it is).

    Returns:
        ``"name {json}"``; two calls with equal arguments in any key order give the same key.
    """
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):
            return f"{name} {arguments}"
    try:
        return f"{name} {json.dumps(arguments, sort_keys=True, separators=(',', ':'), ensure_ascii=False, default=str)}"
    except (TypeError, ValueError, RecursionError):
        return f"{name} {arguments!r}"


class StuckDetector:
    """Counts repeated, failing and alternating tool calls of one episode.

    Args:
        repeat_warn: identical (action, observation) steps in a row before a warning.
        repeat_stop: ... before the episode ends.
        failing_warn: failed steps of the same action in a row before a warning.
        failing_stop: ... before the episode ends.
        alternating_warn: steps of an ``A B A B`` pattern before a warning (6 = three rounds).
        alternating_stop: ... before the episode ends.

    Raises:
        ValueError: a threshold is below 2 (alternating: below 4), or a warn threshold is not
            below its stop threshold.
    """

    def __init__(
        self,
        repeat_warn: int = 3,
        repeat_stop: int = 5,
        failing_warn: int = 3,
        failing_stop: int = 6,
        alternating_warn: int = 6,
        alternating_stop: int = 10,
    ) -> None:
        for name, warn, stop, least in (
            ("repeat", repeat_warn, repeat_stop, 2),
            ("failing", failing_warn, failing_stop, 2),
            ("alternating", alternating_warn, alternating_stop, 4),
        ):
            if warn < least or stop <= warn:
                raise ValueError(
                    f"{name} thresholds must satisfy {least} <= warn < stop, got warn={warn}, stop={stop}"
                )
        self.thresholds = {
            "repeat": (repeat_warn, repeat_stop),
            "failing": (failing_warn, failing_stop),
            "alternating": (alternating_warn, alternating_stop),
        }
        self._history: list[tuple[str, str]] = []  # (action key, observation digest), newest last
        self._failing_action = ""
        self._failing = 0
        self._warned: set[tuple[str, int]] = set()  # (pattern, streak start) already warned about
        self._steps = 0

    def observe(self, action: str, observation: str, failed: bool) -> Verdict:
        """Record one step and say whether the agent looks stuck.

        Args:
            action: the call's key (``action_key``), equal for equal calls.
            observation: the text the model was shown for it.
            failed: whether the call failed (a tool error, a non-zero exit).

        Returns:
            The most severe verdict over the three patterns (``stop`` over ``warn`` over ``ok``).
        """
        self._steps += 1
        digest = hashlib.sha256(observation.encode("utf-8", "surrogatepass")).hexdigest()
        self._history.append((action, digest))
        del self._history[: -max(stop for _warn, stop in self.thresholds.values())]
        if failed and action == self._failing_action:
            self._failing += 1
        else:
            self._failing_action, self._failing = (action, 1) if failed else ("", 0)
        streaks = {
            "repeat": self._repeat_streak(),
            "failing": self._failing,
            "alternating": self._alternating_streak(),
        }
        verdicts = [self._judge(pattern, count) for pattern, count in streaks.items()]
        return max(verdicts, key=lambda v: ("ok", "warn", "stop").index(v.level))

    def _repeat_streak(self) -> int:
        last, count = self._history[-1], 0
        for step in reversed(self._history):
            if step != last:
                break
            count += 1
        return count

    def _alternating_streak(self) -> int:
        history = self._history
        if len(history) < 2 or history[-1] == history[-2]:
            return 0
        count = 2
        while count < len(history) and history[-1 - count] == history[-1 - count + 2]:
            count += 1
        return count

    def _judge(self, pattern: str, count: int) -> Verdict:
        warn, stop = self.thresholds[pattern]
        what = {
            "repeat": f"the same call with the same result {count} times in a row",
            "failing": f"the same call failing {count} times in a row",
            "alternating": f"alternating between the same two calls and results for {count} steps",
        }[pattern]
        if count >= stop:
            return Verdict("stop", f"Stopped: {what}; the episode ends because it is making no progress.", pattern)
        if count >= warn:
            streak = (pattern, self._steps - count)  # identifies this streak by where it began
            if streak not in self._warned:
                self._warned.add(streak)
                return Verdict(
                    "warn",
                    f"Warning: {what}. Repeating it will not help; try a different approach (read other code, "
                    f"change the command, or finish). At {stop} the episode ends.",
                    pattern,
                )
        return OK
