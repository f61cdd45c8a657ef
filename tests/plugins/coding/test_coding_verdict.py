"""The verdict stream's reading and the second run's test styles (``verdict_stream``, ``second_run``).

The whole-episode attacks are in ``tests/security/test_verdict.py``; here, the rules one by one:
which streams are believed, and which test styles the second run checks, on a small repository
whose tests all pass under pytest (a second run that disagreed with them would score a right fix 0).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.sandbox import open_sandbox
from plugins.coding.second_run import second_run, second_run_tests
from plugins.coding.testing import run_test_suite
from plugins.coding.verdict_stream import read_stream


def _records(*records: dict) -> bytes:
    return b"".join(json.dumps({**r, "n": i}).encode() + b"\n" for i, r in enumerate(records))


def _phase(test: str, when: str, outcome: str, raised: bool = False) -> list[dict]:
    name = test.rpartition("::")[2]
    common = {"id": test, "when": when, "outcome": outcome}
    return [{"k": "made", **common, "raised": raised, "exc": "AssertionError" if raised else ""},
            {"k": "logged", **common, "classname": "tests.test_a", "name": name, "file": "tests/test_a.py"}]  # fmt: skip


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_x():\n    pass\n")
    return tmp_path


def _ordinary(outcome: str = "passed", raised: bool = False, exitstatus: int = 0) -> list[dict]:
    test = "tests/test_a.py::test_x"
    return [{"k": "start", "pid": 1, "distributed": False}, {"k": "collected", "ids": [test]},
            *_phase(test, "setup", "passed"), *_phase(test, "call", outcome, raised), *_phase(test, "teardown", "passed"),
            {"k": "end", "exitstatus": exitstatus, "stopped": ""}]  # fmt: skip


def test_an_ordinary_stream_is_believed_and_names_tests_as_the_report_does(tree):
    verdict = read_stream(_records(*_ordinary("failed", raised=True, exitstatus=1)), tree, exit_code=1, timed_out=False,
                          report={"tests/test_a.py::test_x": "failed"})  # fmt: skip
    assert verdict.problems == [] and verdict.outcomes == {"tests/test_a.py::test_x": "failed"}


@pytest.mark.parametrize("change, expected", [
    ("exit", "exited with code 0, but pytest's session ended with 1"),
    ("no-end", "before pytest's end-of-session record"),
    ("forged", "records were forged, repeated or held back"),
    ("after-end", "after pytest's end-of-session record"),
    ("raised-passed", "raised AssertionError but its report says passed"),
    ("report", "the JUnit report disagrees"),
    ("missing", "never reported an outcome"),
])  # fmt: skip
def test_an_unusual_stream_fails_the_verification_with_its_reason(tree, change, expected):
    records = _ordinary("failed", raised=True, exitstatus=1)
    exit_code, report = 1, {"tests/test_a.py::test_x": "failed"}
    if change == "exit":
        exit_code = 0
    elif change == "no-end":
        records = records[:-1]
    elif change == "after-end":
        records.append({"k": "logged", "id": "x", "when": "call", "outcome": "passed"})
    elif change == "raised-passed":
        records = [r if r.get("when") != "call" else {**r, "outcome": "passed"} for r in records]
        records[-1]["exitstatus"] = exit_code = 0
        report = {"tests/test_a.py::test_x": "passed"}
    elif change == "report":
        report = {"tests/test_a.py::test_x": "passed"}
    elif change == "missing":
        records[1] = {"k": "collected", "ids": ["tests/test_a.py::test_x", "tests/test_a.py::test_y"]}
    data = _records(*records)
    if change == "forged":
        data = _records(*records[:3]) + json.dumps({"k": "logged", "n": 0}).encode() + b"\n" + _records(*records[3:])
    verdict = read_stream(data, tree, exit_code=exit_code, timed_out=False, report=report)
    assert any(expected in p for p in verdict.problems), verdict.problems
    if change == "raised-passed":
        assert verdict.outcomes["tests/test_a.py::test_x"] == "failed"  # it raised: counted as failed


STYLES = '''import os
import unittest
from unittest import mock

import pytest

from calc import add, Colour


@pytest.fixture
def base():
    yield 40


@pytest.fixture
def more(base):
    return base + 1


def test_plain():
    assert add(1, 2) == 3 and add(2, 2) != 5
    assert "b" in "abc" and 3 in [1, 2, 3] and "k" in {"k": 1} and 4 not in (1, 2)


def test_fixtures(more, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CALC_MODE", "x")
    (tmp_path / "f").write_text("1")
    print("hello")
    assert capsys.readouterr().out == "hello\\n"
    assert more == 41 and os.environ["CALC_MODE"] == "x"


def test_values_that_are_equal_for_real():
    assert Colour.RED == "red" and True == 1 and 1.0 == 1 and add(0.1, 0.2) == pytest.approx(0.3)
    assert {"a": [1, (2, 3)]} == {"a": [1, (2, 3)]} and mock.ANY == object() and {1, 2} == frozenset({2, 1})


@pytest.mark.parametrize("a, b", [(1, 2), (3, 4)])
@pytest.mark.parametrize("c", ["x", pytest.param("y", id="why")])
def test_parametrized(a, b, c):
    assert a < b and c in "xy"


def test_raises():
    with pytest.raises(ZeroDivisionError, match="division"):
        1 / 0


class TestClass:
    def setup_method(self, method):
        self.value = 2

    def test_method(self):
        assert add(self.value, 1) == 3


class TestCaseStyle(unittest.TestCase):
    def setUp(self):
        self.value = 5

    def test_equal(self):
        self.assertEqual(add(self.value, 1), 6)
        self.assertIn(1, [1])


def test_needs_a_plugin_fixture(mocker):
    assert mocker


def test_needs_request(request):
    assert request
'''


def test_the_second_run_checks_the_supported_test_styles_and_lists_the_rest(tmp_path):
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "calc.py").write_text("import enum\n\n\nclass Colour(str, enum.Enum):\n    RED = 'red'\n\n\n"
                                  "def add(a, b):\n    return a + b\n")  # fmt: skip
    (repo / "tests" / "test_styles.py").write_text(STYLES)
    (repo / "pyproject.toml").write_text('[tool.pytest.ini_options]\npythonpath = ["."]\n')
    scratch = tmp_path / "scratch"
    sandbox = open_sandbox(repo, scratch)
    run = run_test_suite(sandbox, repo, scratch)
    assert run.stream_problems == []
    passing = sorted(t for t, o in run.outcomes.items() if o == "passed")
    assert len(passing) == 11, run.outcomes  # mocker is no fixture here (no pytest-mock): an error under pytest too
    result = second_run(sandbox, repo, tmp_path / "second", second_run_tests(["*"], run.outcomes))
    assert result.differs == {} and result.problems == []
    assert result.unchecked == {"tests/test_styles.py::test_needs_request": "uses fixture request"}
    assert sorted(result.checked) == [t for t in passing if t not in result.unchecked] and set(result.checked.values()) == {"passed"}
    assert "tests/test_styles.py::test_parametrized[why-3-4]" in result.checked
    assert (repo / "tests" / "test_styles.py").is_file()  # the tree itself is untouched


def test_the_second_run_lists_tests_it_cannot_provide_for(tmp_path):
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "conftest.py").write_text("import pytest\n\n\n@pytest.fixture\ndef shared():\n    return 1\n\n\n"
                                               "@pytest.fixture(params=[1, 2])\ndef each(request):\n    return request.param\n")  # fmt: skip
    (repo / "tests" / "test_b.py").write_text("def test_shared(shared):\n    assert shared == 1\n\n\n"
                                             "def test_each(each):\n    assert each\n\n\n"
                                             "def test_uses_more_pytest():\n    import pytest\n    pytest.register_assert_rewrite('x')\n")  # fmt: skip
    scratch = tmp_path / "scratch"
    sandbox = open_sandbox(repo, scratch)
    run = run_test_suite(sandbox, repo, scratch)
    result = second_run(sandbox, repo, tmp_path / "second", second_run_tests(["*"], run.outcomes))
    assert result.checked == {"tests/test_b.py::test_shared": "passed"}, result
    assert "parametrized" in result.unchecked["tests/test_b.py::test_each[1]"]
    assert "pytest.register_assert_rewrite" in result.unchecked["tests/test_b.py::test_uses_more_pytest"]


def test_a_test_id_of_megabytes_is_an_ordinary_stream(tmp_path):
    """Real suites parametrize with large values (python-multipart 0.0.29: two node ids of 10 MB,
    about 200 MB of records): such a run is believed, not cut off as a flood of records (with
    the first limit of 64 MiB, that task's real fix scored 0)."""
    repo = tmp_path / "repo"
    (repo / "tests").mkdir(parents=True)
    (repo / "tests" / "test_big.py").write_text(
        "import pytest\n\nBIG = 'rn' * 5_000_000\n\n\n@pytest.mark.parametrize('data', [BIG, 'small'], ids=['preamble_' + BIG, 'small'])\n"
        "def test_parses(data):\n    assert data.endswith('n') or data == 'small'\n")  # fmt: skip
    scratch = tmp_path / "scratch"
    run = run_test_suite(open_sandbox(repo, scratch), repo, scratch)
    assert run.stream_problems == [], run.stream_problems
    assert sorted(run.outcomes.values()) == ["passed", "passed"] and max(len(t) for t in run.outcomes) > 5_000_000
