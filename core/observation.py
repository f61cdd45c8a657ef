"""Cutting a tool's output to one call's budget, on line boundaries, saying which lines are missing.

Every tool call of a model reply has its own budget (``Episode.max_observation_chars``); the
calls of one reply never share one. An output over its budget keeps its first and last lines
(the head usually says what ran, the tail how it ended: a test summary, an exit code) and, where
lines were left out, one line naming them: ``[lines 61-120 of 164 not shown; ...]`` with the
way to read them, given by the caller. A line too long to show whole (minified code, a 1 MB
JSON line) is shortened in place with a marker giving how many characters it lost, so the line
numbers still match the saved text.
"""

from __future__ import annotations

from collections.abc import Callable

#: Characters kept for the line that names the missing lines (it holds a path and a command).
NOTE_RESERVE = 400


def _shorten_line(line: str, cap: int) -> str:
    return line if len(line) <= cap else f"{line[:cap]} … [{len(line) - cap} more characters on this line]"


def cut_lines(text: str, limit: int, note: Callable[[int, int, int], str]) -> str:
    """Cut ``text`` to about ``limit`` characters, keeping whole lines from its start and its end.

    Lines are counted as ``str.splitlines`` counts them (as ``view_file`` numbers a file), so
    ``note``'s numbers are those of the text saved whole.

    Args:
        text: the whole output.
        limit: the budget in characters (the result may exceed it by the note's length when
            ``limit`` is under ``NOTE_RESERVE``).
        note: ``note(first, last, total)`` -> the line put in place of lines ``first..last``
            (1-based, inclusive) of ``total``; ``note(0, 0, total)`` -> the line put at the end
            when no line was left out but long ones were shortened.

    Returns:
        ``text`` itself when it fits; else its first lines, the note, its last lines. Lines
        longer than a quarter of the budget are shortened with a marker.
    """
    if len(text) <= limit:
        return text
    budget = max(limit - NOTE_RESERVE, limit // 2)
    cap = max(80, budget // 4)
    lines = [_shorten_line(line, cap) for line in text.splitlines()]
    total = len(lines)
    head: list[str] = []
    used = 0
    for line in lines:
        if used + len(line) + 1 > budget // 2 and head:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    used_tail = 0
    for line in reversed(lines[len(head) :]):
        if used + used_tail + len(line) + 1 > budget:
            break
        tail.append(line)
        used_tail += len(line) + 1
    tail.reverse()
    first, last = len(head) + 1, total - len(tail)
    if first > last:  # every line fits once the long ones are shortened
        return "\n".join([*lines, note(0, 0, total)])
    return "\n".join([*head, note(first, last, total), *tail])
