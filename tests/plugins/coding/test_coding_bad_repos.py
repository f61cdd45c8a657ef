"""Bad repositories through the coding plugin: suites that do not build, no tests, tests that hang.

Each case goes through a real run (``core.runner.Run``, a scripted policy, the coding plugin, the
bubblewrap sandbox and the run store) or, where a whole run would only repeat the same slow
command three times, through the tools. Every case must end with an observation that says what
is wrong, a stated exit status, reward 0 when nothing was verified, no crash, and a later tool
call that still works. Hanging suites are bounded with ``HORIZON_TEST_TIMEOUT_S`` (seconds), so
they cost a few seconds, not the sandbox's default 120.
"""

from __future__ import annotations

import re
import time
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from core.plugin import Task
from core.policy import ScriptedPolicy
from core.runner import Run, RunResult, open_store
from core.sandbox import open_sandbox
from core.state import ExitStatus, Limits, Pricing
from core.tools import ToolContext
from plugins.coding.reward import grade
from plugins.coding.testing import TEST_TIMEOUT_ENV, default_limits
from plugins.coding.tools import run_tests, view_file

PYPROJECT = '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n'
CALC = "def add(a, b):\n    return a + b\n"
TEXT = 'def shout(s):\n    return s.upper() + "!"\n'
TEST_ADD = "from calc.core import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"
TEST_SHOUT = 'from calc.text import shout\n\n\ndef test_shout():\n    assert shout("hi") == "HI!"\n'
TEST_HANGS = "import time\n\n\ndef test_hangs():\n    time.sleep(10**6)  # forever\n"
JAVA_CALC = """package com.example.calc;

public class Calc {
    public int add(int a, int b) {
        return a + b%s
    }
}
"""
JAVA_TEST = """package com.example.calc;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CalcTest {
    @Test
    void adds() {
        assertEquals(3, new Calc().add(1, 2));
    }
%s}
"""
JAVA_SPIN = """
    @Test
    void spins() {
        long n = 0;
        while (n >= 0) {
            n = (n + 1) % 1000;
        }
    }
"""
FINISH = {"tool": "finish", "arguments": {"summary": "could not verify anything"}}


def make_repo(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def run(repo: Path, turns: list[dict[str, Any]]) -> tuple[RunResult, dict[str, Any]]:
    """Run the scripted turns to the end; return the result and what the store holds."""
    started = Run.start(
        Task(plugin="coding", instruction="make the tests pass", repo=repo), ScriptedPolicy(turns),
        policy_config={"kind": "scripted", "script": "inline"}, limits=Limits(max_steps=len(turns) + 2), pricing=Pricing(),
    )
    try:
        result = started.execute()
    finally:
        started.close()
    with closing(open_store(result.run_id)) as store:
        stored = {"row": store.run(), "steps": store.steps(), "messages": store.messages(), "rewards": store.rewards()}
    stored["calls"] = [c for s in stored["steps"] for c in s["tool_calls"]]
    stored["task"] = stored["messages"][1].content
    stored["crash"] = (started.folder / "crash.txt").is_file()
    return result, stored


def assert_ended_unverified(result: RunResult, stored: dict[str, Any], turns: list[dict[str, Any]]) -> None:
    """The run finished as the script did, with reward 0, every call answered, nothing crashed."""
    assert not stored["crash"]
    assert result.status == "finished" and result.exit_status == ExitStatus.SUBMITTED, result.exit_detail
    assert result.reward == 0.0
    row = stored["row"]
    assert (row["status"], row["exit_status"], row["reward"], row["steps"]) == ("finished", "submitted", 0.0, len(turns))
    assert [c["tool"] for c in stored["calls"]] == [t["tool"] for t in turns]
    assert stored["rewards"]["fail_to_pass"]["value"] == 0.0


def no_process_mentions(text: str) -> bool:
    """True when no running process has ``text`` in its command line (nothing left behind)."""
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if text.encode() in cmdline.read_bytes():
                return False
        except OSError:
            continue
    return True


def test_python_module_with_a_syntax_error(tmp_path):
    repo = make_repo(tmp_path / "repo", {
        "pyproject.toml": PYPROJECT, "calc/__init__.py": "", "calc/core.py": "def add(a, b):\n    return a +\n",
        "calc/text.py": TEXT, "tests/test_core.py": TEST_ADD, "tests/test_text.py": TEST_SHOUT,
    })  # fmt: skip
    turns = [{"tool": "run_tests", "arguments": {}}, {"tool": "view_file", "arguments": {"path": "calc/text.py"}}, FINISH]
    result, stored = run(repo, turns)
    assert_ended_unverified(result, stored, turns)
    assert "- tests/test_core.py (could not be imported: SyntaxError: invalid syntax" in stored["task"]
    assert "could not be collected" in stored["task"]
    tests, view, _ = stored["calls"]
    assert not tests["is_error"]  # a broken suite is a result, not a tool failure
    out = tests["output"]
    # --continue-on-collection-errors: the module that imports fine still runs
    assert out.startswith("pytest: 2 tests: 1 passed, 1 error (exit code 1")
    assert "could not be collected" in out and "ERROR tests/test_core.py" in out
    # it failed at the start too: run_tests names it as such, one line (its traceback is in the task message)
    assert "ERROR tests/test_core.py (failing at the start): SyntaxError: invalid syntax" in out
    assert not view["is_error"] and 'return s.upper() + "!"' in view["output"]
    detail = stored["rewards"]["fail_to_pass"]["detail"]
    assert detail["before"] == detail["after"] == {"tests/test_core.py": "error", "tests/test_text.py::test_shout": "passed"}


def test_fixing_the_syntax_error_earns_the_reward(tmp_path):
    repo = make_repo(tmp_path / "repo", {
        "pyproject.toml": PYPROJECT, "calc/__init__.py": "", "calc/core.py": "def add(a, b):\n    return a +\n",
        "calc/text.py": TEXT, "tests/test_core.py": TEST_ADD, "tests/test_text.py": TEST_SHOUT,
    })  # fmt: skip
    edit = {"path": "calc/core.py", "old_text": "return a +\n", "new_text": "return a + b\n"}
    result, stored = run(repo, [{"tool": "edit_file", "arguments": edit}, FINISH])
    assert not stored["crash"] and (result.exit_status, result.reward) == (ExitStatus.SUBMITTED, 1.0)
    fail_to_pass = stored["rewards"]["fail_to_pass"]["detail"]
    assert fail_to_pass["targets"] == fail_to_pass["fixed"] == ["tests/test_core.py"]  # the module, now importable
    assert fail_to_pass["after"] == {"tests/test_core.py::test_add": "passed", "tests/test_text.py::test_shout": "passed"}


def test_a_module_that_fails_to_import_is_fixed_only_when_its_tests_pass():
    before = {"tests/test_a.py": "error", "tests/test_b.py::test_b": "passed"}
    assert grade(before, {"tests/test_a.py::test_x": "passed", "tests/test_a.py::test_y": "passed",
                          "tests/test_b.py::test_b": "passed"}, []).reward == 1.0
    assert grade(before, {"tests/test_a.py::test_x": "passed", "tests/test_a.py::test_y": "failed",
                          "tests/test_b.py::test_b": "passed"}, []).reward == 0.0
    assert grade(before, {"tests/test_a.py": "error", "tests/test_b.py::test_b": "passed"}, []).reward == 0.0
    assert grade(before, {"tests/test_a.pyx::test_x": "passed", "tests/test_b.py::test_b": "passed"}, []).reward == 0.0


def test_java_that_does_not_compile(tmp_path):
    repo = make_repo(tmp_path / "repo", {
        "src/main/java/com/example/calc/Calc.java": JAVA_CALC % "",  # no semicolon
        "src/test/java/com/example/calc/CalcTest.java": JAVA_TEST % "",
    })  # fmt: skip
    turns = [
        {"tool": "run_tests", "arguments": {}},
        {"tool": "view_file", "arguments": {"path": "src/main/java/com/example/calc/Calc.java", "start_line": 4, "end_line": 6}},
        FINISH,
    ]
    result, stored = run(repo, turns)
    assert_ended_unverified(result, stored, turns)
    assert "The junit test suite does not build" in stored["task"]
    tests, view, _ = stored["calls"]
    assert tests["output"].startswith("junit: BUILD FAILED, no tests ran (javac exit code 1")
    assert "src/main/java/com/example/calc/Calc.java:5: error: ';' expected" in tests["output"]
    assert not view["is_error"] and "5\t        return a + b" in view["output"]
    assert stored["rewards"]["fail_to_pass"]["detail"] == {"before": {}, "after": {}}


def test_repository_without_tests(tmp_path):
    repo = make_repo(tmp_path / "repo", {"calc/__init__.py": "", "calc/core.py": CALC, "README.md": "# calc\n"})
    turns = [
        {"tool": "run_tests", "arguments": {}},
        {"tool": "search_code", "arguments": {"pattern": "def add"}},
        FINISH,
    ]
    result, stored = run(repo, turns)
    assert not stored["crash"] and result.status == "finished" and result.exit_status == ExitStatus.SUBMITTED
    row = stored["row"]  # nothing to judge the change by: not applicable, which is not 0
    assert (result.reward, row["reward"], row["reward_status"], row["correct"]) == (None, None, "not_applicable", None)
    assert "no test suite" in row["reward_summary"]
    assert set(stored["rewards"]) <= {"suspicious_changes"}  # only the gate's record: nothing was judged
    assert "No test suite was found" in stored["task"]
    tests, search, _ = stored["calls"]
    assert tests["is_error"] and "no tests found" in tests["output"]
    assert not search["is_error"] and "calc/core.py:1:" in search["output"]


def test_test_files_without_any_test(tmp_path):
    repo = make_repo(tmp_path / "repo", {
        "pyproject.toml": PYPROJECT, "calc/__init__.py": "", "calc/core.py": CALC,
        "tests/test_helpers.py": "def helper():\n    return 1\n",
    })  # fmt: skip
    (tmp_path / "scratch").mkdir()
    ctx = ToolContext(workspace=repo, sandbox=open_sandbox(repo, tmp_path / "scratch"), scratch=tmp_path / "scratch")
    result = run_tests({}, ctx)
    assert not result.is_error and result.data["tests"] == {} and result.data["exit_code"] == 5  # pytest: no tests collected
    assert result.output.startswith("pytest: 0 tests: 0 passed (exit code 5")
    assert "no tests ran" in result.output
    assert "1\tdef add(a, b):" in view_file({"path": "calc/core.py"}, ctx).output


def test_pytest_suite_that_hangs_is_stopped_by_the_test_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_TIMEOUT_ENV, "5")
    repo = make_repo(tmp_path / "repo", {
        "pyproject.toml": PYPROJECT, "calc/__init__.py": "", "calc/core.py": CALC,
        "tests/test_core.py": TEST_ADD, "tests/test_slow.py": TEST_HANGS,
    })  # fmt: skip
    turns = [
        {"tool": "run_tests", "arguments": {}},
        {"tool": "view_file", "arguments": {"path": "tests/test_slow.py"}},
        FINISH,
    ]
    t0 = time.monotonic()
    result, stored = run(repo, turns)
    took = time.monotonic() - t0
    # nothing passed at the start and no reproduction test came: not applicable, not 0 (coding-tests/3, as RH12)
    assert not stored["crash"] and result.status == "finished" and result.exit_status == ExitStatus.SUBMITTED, result.exit_detail
    assert (result.reward, stored["row"]["reward_status"]) == (None, "not_applicable")
    assert [c["tool"] for c in stored["calls"]] == [t["tool"] for t in turns]
    # three suite runs (baseline, run_tests, verification) stopped at 5 s each, not 3 x 120 s; the margin
    # is for a loaded machine (set-up and pytest's start-up then take longer, the limit does not)
    assert took < 200, took
    assert re.search(r"did not finish: it was stopped by the time limit after \d+ s", stored["task"]), stored["task"]
    tests, view, _ = stored["calls"]
    assert not tests["is_error"]
    assert "timed out" in tests["output"] and "stopped by the time limit" in tests["output"]
    assert 4.5 < tests["duration_s"] < 60  # the 5 s limit, not the default 120 s
    assert not view["is_error"] and "time.sleep(10**6)" in view["output"]
    assert no_process_mentions(str(tmp_path / "horizon-home"))  # the sleeping pytest was killed with its sandbox


def test_junit_test_with_an_infinite_loop_is_stopped_by_the_test_timeout(tmp_path, monkeypatch):
    monkeypatch.setenv(TEST_TIMEOUT_ENV, "8")  # javac and the launcher share it
    repo = make_repo(tmp_path / "repo", {
        "src/main/java/com/example/calc/Calc.java": JAVA_CALC % ";",
        "src/test/java/com/example/calc/CalcTest.java": JAVA_TEST % JAVA_SPIN,
    })  # fmt: skip
    (tmp_path / "scratch").mkdir()
    ctx = ToolContext(workspace=repo, sandbox=open_sandbox(repo, tmp_path / "scratch"), scratch=tmp_path / "scratch")
    t0 = time.monotonic()
    result = run_tests({}, ctx)
    took = time.monotonic() - t0
    assert 7.5 < took < 60, took  # stopped at the 8 s limit, not at the default 120 s (margin for a loaded machine)
    assert not result.is_error and result.data["timed_out"] is True
    assert "timed out" in result.output and "stopped by the time limit" in result.output
    assert no_process_mentions(str(tmp_path / "scratch"))  # the spinning JVM is gone
    later = view_file({"path": "src/test/java/com/example/calc/CalcTest.java", "start_line": 13, "end_line": 18}, ctx)
    assert not later.is_error and "while (n >= 0)" in later.output
    fast = run_tests({"tests": ["com.example.calc.CalcTest#adds"]}, ctx)  # the model can run the other tests
    assert not fast.data["timed_out"] and fast.data["tests"] == {"com.example.calc.CalcTest#adds": "passed"}, fast.output


@pytest.mark.parametrize(("value", "expected"), [("", None), ("7.5", 7.5), ("abc", None), ("-1", None), ("inf", None)])
def test_test_timeout_setting(tmp_path, monkeypatch, value, expected):
    monkeypatch.setenv(TEST_TIMEOUT_ENV, value)
    box = open_sandbox(tmp_path, tmp_path, isolated=False)
    limits = default_limits(box)
    assert (limits.timeout_s if limits else None) == expected
    if limits:
        assert limits.memory_bytes == box.limits.memory_bytes  # only the time limit changes
