"""A long coding episode for ``bench/prefix_cache.py``: ``tests/core/policy/episode.py``'s recording
server replaying real coding tool calls on ``examples/python-user-service`` (search, symbols, views,
shell commands, an observation long enough to be cut, a malformed call, a text reply without a
tool call, the fix, two test runs, ``finish`` last). Moved from ``tests/core/policy/episode.py``,
whose own episode (for ``tests/core/test_prefix_stability.py``) is on the test plugin, ``notes``."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from core.plugin import Task
from core.runner import RunResult
from tests.core.policy.episode import EpisodeServer, replay, spread

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "python-user-service"
OLD = "        nickname = user.nickname.strip()"
NEW = '        nickname = (user.nickname or "").strip()'

# Read-only actions an agent takes while it explores; cycled to fill a long episode.
EXPLORE: list[dict[str, Any]] = [
    {"tool": "search_code", "arguments": {"pattern": "nickname", "path": "users"}},
    {"tool": "view_file", "arguments": {"path": "users/service.py"}},
    {"tool": "find_symbol", "arguments": {"name": "display_name", "kind": "definition"}},
    {"tool": "view_file", "arguments": {"path": "users/models.py"}},
    {"tool": "view_file", "arguments": {"path": "tests/test_service.py", "start_line": 1, "end_line": 40}},
    {"tool": "search_code", "arguments": {"pattern": "def ", "path": "users/repository.py"}},
    {"tool": "view_file", "arguments": {"path": "users/repository.py"}},
    {"tool": "find_symbol", "arguments": {"name": "nickname", "kind": "reference"}},
    {"tool": "view_file", "arguments": {"path": "users/validation.py"}},
    {"tool": "view_file", "arguments": {"path": "tests/test_repository.py"}},
]


def coding_turns(steps: int) -> list[dict[str, Any]]:
    """``steps`` scripted turns (at least 8): exploration, odd turns, the fix, tests, ``finish`` last.

    Each turn is ``{"tool": name, "arguments": {...}}``, or ``{"content": text}`` for a reply
    without a tool call, or ``{"tool": name, "raw_arguments": text}`` for malformed arguments.
    """
    if steps < 8:
        raise ValueError(f"a coding episode needs at least 8 steps, not {steps}")
    special = [
        {"tool": "run_tests", "arguments": {}},
        {"tool": "shell", "arguments": {"command": "ls -la users && git status --short"}},
        {"tool": "shell", "arguments": {"command": "cat users/*.py tests/*.py"}},  # over 8,000 characters: cut, full text saved
        {"tool": "view_fil", "arguments": {"path": "users/service.py"}},  # unknown tool: an error observation
        {"content": "Let me think about where nickname can be None."},  # no tool call: a nudge follows
        {"tool": "edit_file", "raw_arguments": '{"path": "users/service.py", "old_text": '},  # cut-off JSON
    ]
    ending = [
        {"tool": "edit_file", "arguments": {"path": "users/service.py", "old_text": OLD, "new_text": NEW}},
        {"tool": "run_tests", "arguments": {}},
        {"tool": "finish", "arguments": {"summary": "nickname may be None: fall back to an empty string"}},
    ]
    middle = steps - len(special) - len(ending)
    return spread([EXPLORE[i % len(EXPLORE)] for i in range(middle)], special, ending)


def run_episode(workdir: Path, steps: int, *, owned_by: str | None = "vllm") -> tuple[RunResult, EpisodeServer, list[dict[str, Any]]]:
    """Run a ``steps``-step coding episode on a fresh copy of the example through the OpenAI policy
    (``replay``'s result: the run's result, the server, the stored model calls)."""
    repo = Path(shutil.copytree(EXAMPLE, workdir / f"python-user-service-{steps}"))
    task = Task(plugin="coding", instruction="fix NPE in user module", repo=repo)
    return replay(task, coding_turns(steps), owned_by=owned_by)
