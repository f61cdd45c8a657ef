"""Fuzzing the coding tools with malformed model output: 10,000 seeded replies through every coding tool.

Moved here unchanged from ``tests/core/test_fuzz_model_output.py`` and
``tests/core/test_fuzz_regressions.py`` when core's tests moved to the ``notes`` test plugin:
the subject of these is the coding plugin's tools, not core's loop (which the core modules still
fuzz, on the ``notes`` plugin). The replies come from ``tests/core/fuzz_replies.py`` with the
coding vocabulary below; with the same seed they are the same replies as before the move.

1. Every call goes through ``Tool.parse`` of every coding tool, and ``Tool.__call__`` where that
   is cheap and has no side effects; nothing but ``ToolError`` may come out, apart from the
   escapes listed in ``KNOWN_ESCAPES`` (bugs reported for ``core/tools.py`` and the coding
   tools, which the loop contains).
2. Paths the OS refuses and NUL bytes in commands are tool errors of the coding tools.
"""

from __future__ import annotations

import random

import pytest

from core.text import utf8_safe
from core.tools import ToolContext, ToolResult
from plugins.coding.tools import CODING_TOOLS
from tests.core.fuzz_replies import Vocabulary, replies, through_every_tool, weird

SEED = 20261201
N_REPLIES = 10_000
TOOLS = {t.name: t for t in CODING_TOOLS}


def valid_args(rng: random.Random, name: str) -> dict:
    """Arguments that validate (read-only tools get ones that also run quickly)."""
    if name == "view_file":
        return {"path": rng.choice(["users/service.py", "users/models.py", "README.md", "missing.py", "tests"]),
                "start_line": rng.randint(1, 90), "end_line": rng.choice([None, rng.randint(1, 120)])}
    if name == "search_code":
        return {"pattern": rng.choice(["nickname", "def ", "(?i)USER", "[", "x{2,}", "\\bclass\\b"]), "max_results": rng.randint(1, 30)}
    if name == "find_symbol":
        return {"name": rng.choice(["display_name", "User", "UserService.display_name", "nothing_here"]),
                "kind": rng.choice(["definition", "reference", "any"])}
    if name == "edit_file":
        # UTF-8 text only: a file of other bytes breaks the final patch
        return {"path": f"fuzz/note_{rng.randint(0, 10**9)}.txt", "old_text": "", "new_text": utf8_safe(weird(rng))}
    if name == "run_tests":
        return {"tests": ["tests/test_repository.py::test_find_by_id_returns_saved_user"]}
    if name == "static_check":
        return {"path": "users/models.py"}
    if name == "shell":
        return {"command": rng.choice(["true", "echo fuzz", "exit 3"])}
    return {"summary": "done"}


CODING = Vocabulary(
    tools=TOOLS,
    read_only=("view_file", "search_code", "find_symbol"),
    side_effects=("edit_file", "run_tests", "static_check", "shell", "finish"),
    valid_args=valid_args,
    field_names=("path", "pattern", "name", "tests", "summary", "command"),
    text_fields={"view_file": "path", "search_code": "pattern", "find_symbol": "name"},
    second_text_fields={"search_code": "path"},
    huge_targets=("view_file", "find_symbol", "find_symbol", "search_code", "shell", "nope"),
    huge_keys={"view_file": "path", "search_code": "path", "shell": "timeout_s", "nope": "x", "find_symbol": ("name", "kind")},
    real=("shell", "run_tests", "static_check", "edit_file"),
)

#: Exceptions other than ToolError that a tool lets out for some model input, as (tool or
#: "parse", exception type, words of its message). The loop turns each into an observation.
KNOWN_ESCAPES = {
    ("parse", "ValueError", "Exceeds the limit"),  # json.loads of an integer over 4,300 digits
    ("parse", "RecursionError", "maximum recursion depth"),  # json.loads of deeply nested arrays
    ("view_file", "ValueError", "embedded null byte"),  # a NUL in a path
    ("search_code", "ValueError", "embedded null byte"),
    ("view_file", "OSError", "File name too long"),  # a path component over 255 bytes
    ("search_code", "OSError", "File name too long"),
    ("view_file", "UnicodeEncodeError", "surrogates not allowed"),  # a lone surrogate in a path
    ("search_code", "UnicodeEncodeError", "surrogates not allowed"),
}


def test_ten_thousand_replies_through_every_coding_tool(python_repo):
    generated = replies(CODING, SEED, N_REPLIES)
    assert len(generated) == N_REPLIES
    calls = [c for r in generated for c in r.message.tool_calls]
    assert len(calls) > N_REPLIES  # no-call replies, single calls and many-call turns
    ctx = python_repo.ctx  # a copy of the Python example with a real sandbox (tests/plugins/coding/conftest.py)
    caps = {"view_file": 400, "search_code": 200, "find_symbol": 40}
    parsed_ok, ran, _escapes = through_every_tool(CODING_TOOLS, calls, ctx, caps, KNOWN_ESCAPES)
    assert parsed_ok > 1000 and all(ran[name] > 10 for name in caps)
    # ``_escapes`` counts the known bugs reached (about 4,500 with this seed); it may shrink to
    # nothing once core/tools.py and the coding tools turn them into ToolErrors
    assert not (python_repo.root / "fuzz").exists()  # nothing with side effects ran


# -- bad input that the coding tools must reject as tool errors, not crashes (from test_fuzz_regressions.py)


@pytest.fixture
def ctx(python_repo) -> ToolContext:
    return python_repo.ctx


@pytest.mark.parametrize("tool", ["view_file", "search_code", "static_check", "edit_file"])
@pytest.mark.parametrize("path", ["a\x00b", "p" * 300, "x\udfff"])
def test_paths_the_os_refuses_are_tool_errors(ctx, tool, path):
    args = {"path": path, **({"pattern": "x"} if tool == "search_code" else {}),
            **({"old_text": "a", "new_text": "b"} if tool == "edit_file" else {})}
    result = TOOLS[tool](args, ctx)
    assert isinstance(result, ToolResult) and result.is_error


@pytest.mark.parametrize("tool,args", [("shell", {"command": "echo \x00"}), ("run_tests", {"tests": ["a\x00b"]})])
def test_nul_bytes_in_commands_are_tool_errors(ctx, tool, args):
    result = TOOLS[tool](args, ctx)
    assert isinstance(result, ToolResult) and result.is_error
