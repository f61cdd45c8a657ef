"""Each test runner on a small real project made in a tmp folder, run through the real sandbox,
and SWE-bench-style grading (test files reset, exit code checked) through the plugin."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from core.plugin import Task
from core.reward import Trajectory
from core.sandbox import open_sandbox
from core.tools import ToolContext
from plugins.coding.plugin import CodingPlugin
from plugins.coding.testing import detect_framework, run_test_suite, test_files
from plugins.coding.testing_go import go_binary


def make(root: Path, files: dict[str, str]) -> ToolContext:
    """Write ``files`` under ``root/ws`` and open a sandbox on it."""
    workspace, scratch = root / "ws", root / "scratch"
    for rel, text in files.items():
        (workspace / rel).parent.mkdir(parents=True, exist_ok=True)
        (workspace / rel).write_text(text)
    scratch.mkdir(parents=True)
    return ToolContext(workspace=workspace, sandbox=open_sandbox(workspace, scratch), scratch=scratch)


UNITTEST_PROJECT = {
    "mathlib/__init__.py": "",
    "mathlib/ops.py": "def mean(xs):\n    return sum(xs) / len(xs)\n",
    "tests/testops.py": (  # unittest's naming (test*.py), which pytest alone would not collect
        "import unittest\nfrom mathlib.ops import mean\n\n\nclass MeanTest(unittest.TestCase):\n"
        "    def test_mean(self):\n        self.assertEqual(mean([1, 2, 3]), 2)\n\n"
        "    def test_empty_is_zero(self):\n        self.assertEqual(mean([]), 0)\n\n"
        "    @unittest.skip('not yet')\n    def test_later(self):\n        pass\n"
    ),
    "tests/test_broken.py": "import mathlib.missing_module\n",
}


def test_unittest_suite_runs_with_per_test_outcomes_and_a_broken_module_hides_nothing(tmp_path):
    ctx = make(tmp_path, UNITTEST_PROJECT)
    assert detect_framework(ctx.workspace) == "pytest"
    run = run_test_suite(ctx.sandbox, ctx.workspace, ctx.scratch)
    assert run.outcomes == {
        "tests/testops.py::MeanTest::test_mean": "passed",
        "tests/testops.py::MeanTest::test_empty_is_zero": "failed",
        "tests/testops.py::MeanTest::test_later": "skipped",
        "tests/test_broken.py": "error",
    }
    assert run.exit_code == 1 and run.build_failed and run.report_trusted
    assert "ZeroDivisionError" in run.messages["tests/testops.py::MeanTest::test_empty_is_zero"]


NODE_PROJECT = {
    "package.json": '{"name": "calc", "version": "1.0.0", "type": "module", "scripts": {"test": "node --test"}}\n',
    "calc.js": "export function add(a, b) { return a + b }\nexport function div(a, b) { return a / b }\n",
    "test/calc.test.js": (
        "import { test, describe } from 'node:test'\nimport assert from 'node:assert/strict'\n"
        "import { add, div } from '../calc.js'\n"
        "test('adds', () => { assert.equal(add(1, 2), 3) })\n"
        "describe('division', () => {\n"
        "  test('divides', () => { assert.equal(div(6, 3), 2) })\n"
        "  test('by zero throws', () => { assert.throws(() => div(1, 0)) })\n"
        "})\n"
        "test('later', { skip: true }, () => {})\n"
    ),
    "test/other.test.js": "import { test } from 'node:test'\nimport assert from 'node:assert/strict'\ntest('adds', () => assert.ok(true))\n",
    "test/broken.test.js": "import { nope } from '../missing.js'\n",
}


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_node_test_runner_reports_each_test_with_its_file_and_suite(tmp_path):
    ctx = make(tmp_path, NODE_PROJECT)
    assert detect_framework(ctx.workspace) == "node"
    assert test_files(ctx.workspace) == ["test/broken.test.js", "test/calc.test.js", "test/other.test.js"]
    run = run_test_suite(ctx.sandbox, ctx.workspace, ctx.scratch)
    assert run.framework == "node"
    assert run.outcomes == {
        "test/calc.test.js::adds": "passed",
        "test/calc.test.js::division > divides": "passed",
        "test/calc.test.js::division > by zero throws": "failed",
        "test/calc.test.js::later": "skipped",
        "test/other.test.js::adds": "passed",  # same name, other file: its own id
        "test/broken.test.js": "error",
    }
    assert run.exit_code == 1 and run.report_trusted and run.build_failed
    assert "Missing expected exception" in run.messages["test/calc.test.js::division > by zero throws"]
    only = run_test_suite(ctx.sandbox, ctx.workspace, ctx.scratch, ["test/other.test.js"])
    assert only.outcomes == {"test/other.test.js::adds": "passed"} and only.exit_code == 0


GO_PROJECT = {
    "go.mod": "module example.com/calc\n\ngo 1.19\n",
    "calc.go": "package calc\n\nfunc Add(a, b int) int { return a + b }\n\nfunc Abs(x int) int { return x }\n",
    "calc_test.go": (
        "package calc\n\nimport \"testing\"\n\n"
        "func TestAdd(t *testing.T) { if Add(1, 2) != 3 { t.Fatal(\"bad sum\") } }\n\n"
        "func TestAbs(t *testing.T) {\n\tfor _, c := range []struct{ in, want int }{{1, 1}, {-2, 2}} {\n"
        "\t\tif got := Abs(c.in); got != c.want { t.Errorf(\"Abs(%d) = %d, want %d\", c.in, got, c.want) }\n\t}\n}\n\n"
        "func TestLater(t *testing.T) { t.Skip(\"not yet\") }\n"
    ),
    "broken/broken.go": "package broken\n\nfunc F() int { return \"x\" }\n",
    "broken/broken_test.go": "package broken\n\nimport \"testing\"\n\nfunc TestF(t *testing.T) { F() }\n",
}


@pytest.mark.skipif(go_binary() is None, reason="go is not installed (Debian package golang-go)")
def test_go_test_json_outcomes_and_a_package_that_does_not_compile(tmp_path):
    ctx = make(tmp_path, GO_PROJECT)
    assert detect_framework(ctx.workspace) == "go"
    run = run_test_suite(ctx.sandbox, ctx.workspace, ctx.scratch)
    assert run.framework == "go", run.output
    assert run.outcomes == {
        "example.com/calc::TestAdd": "passed",
        "example.com/calc::TestAbs": "failed",
        "example.com/calc::TestLater": "skipped",
        "example.com/calc/broken": "error",
    }, run.output
    assert run.exit_code != 0 and run.report_trusted and run.build_failed
    assert "Abs(-2) = -2, want 2" in run.messages["example.com/calc::TestAbs"]
    assert "cannot use" in run.messages["example.com/calc/broken"]
    one = run_test_suite(ctx.sandbox, ctx.workspace, ctx.scratch, ["example.com/calc::TestAdd"])
    assert one.outcomes == {"example.com/calc::TestAdd": "passed"} and one.exit_code == 0
    assert not (ctx.workspace / "go.sum").exists()  # nothing written into the repository


def test_jest_is_used_only_when_configured_and_installed(tmp_path):
    files = {**NODE_PROJECT, "package.json": '{"name": "calc", "scripts": {"test": "jest"}, "jest": {}}\n'}
    ctx = make(tmp_path, files)
    assert detect_framework(ctx.workspace) == "node"  # jest configured but not in node_modules
    jest = ctx.workspace / "node_modules" / ".bin" / "jest"
    jest.parent.mkdir(parents=True)
    jest.write_text("#!/bin/sh\n")
    assert detect_framework(ctx.workspace) == "jest"


def _global_jest() -> Path | None:
    """Jest installed with ``npm install -g jest@29`` (its ``bin/jest.js``), or None."""
    npm = shutil.which("npm")
    if npm is None:
        return None
    root = subprocess.run([npm, "root", "-g"], capture_output=True, text=True, check=False).stdout.strip()
    candidate = Path(root) / "jest" / "bin" / "jest.js" if root else None
    return candidate if candidate is not None and candidate.is_file() else None


JEST_PROJECT = {
    "package.json": '{"name": "calc", "version": "1.0.0", "scripts": {"test": "jest"}, "jest": {}}\n',
    "src/calc.js": "function add(a, b) { return a + b }\nfunction div(a, b) { return a / b }\nmodule.exports = { add, div }\n",
    "src/calc.test.js": (
        "const { add, div } = require('./calc')\ndescribe('math', () => {\n"
        "  test('adds', () => { expect(add(1, 2)).toBe(3) })\n"
        "  test('divides by zero throws', () => { expect(() => div(1, 0)).toThrow() })\n"
        "  test.skip('later', () => {})\n})\n"
    ),
    "src/broken.test.js": "const x = require('./missing')\ntest('never', () => {})\n",
}


@pytest.mark.skipif(_global_jest() is None, reason="jest is not installed (npm install -g jest@29)")
def test_jest_runs_for_real_when_installed_in_node_modules(tmp_path):
    ctx = make(tmp_path, JEST_PROJECT)
    binary = ctx.workspace / "node_modules" / ".bin" / "jest"
    binary.parent.mkdir(parents=True)
    binary.symlink_to(_global_jest())  # as npm links it; node resolves jest's own modules from its real path
    assert detect_framework(ctx.workspace) == "jest"
    run = run_test_suite(ctx.sandbox, ctx.workspace, ctx.scratch)
    assert run.outcomes == {
        "src/calc.test.js::math adds": "passed",
        "src/calc.test.js::math divides by zero throws": "failed",
        "src/calc.test.js::math later": "skipped",
        "src/broken.test.js": "error",
    }, run.output
    assert run.exit_code == 1 and run.report_trusted and run.build_failed
    assert "did not throw" in run.messages["src/calc.test.js::math divides by zero throws"]
    assert "Cannot find module './missing'" in run.messages["src/broken.test.js"]


def test_jest_json_report_is_read(tmp_path):
    """Jest's ``--json`` report format (as documented for ``--json``/``--outputFile``)."""
    from plugins.coding.testing_node import parse_jest_report

    report = tmp_path / "report.json"
    report.write_text(json.dumps({"testResults": [
        {"name": str(tmp_path / "src" / "a.test.js"), "status": "failed", "assertionResults": [
            {"fullName": "math adds", "title": "adds", "status": "passed", "failureMessages": []},
            {"fullName": "math divides", "title": "divides", "status": "failed", "failureMessages": ["Error: expected 2"]},
            {"fullName": "math later", "title": "later", "status": "pending", "failureMessages": []},
        ]},
        {"name": str(tmp_path / "src" / "b.test.js"), "status": "failed", "message": "SyntaxError: Unexpected token", "assertionResults": []},
    ]}))  # fmt: skip
    outcomes, messages, suite_failed = parse_jest_report(tmp_path, report)
    assert outcomes == {
        "src/a.test.js::math adds": "passed", "src/a.test.js::math divides": "failed",
        "src/a.test.js::math later": "skipped", "src/b.test.js": "error",
    }  # fmt: skip
    assert suite_failed and "expected 2" in messages["src/a.test.js::math divides"]


PYTHON_BUG = {
    "calc/__init__.py": "",
    "calc/core.py": "def add(a, b):\n    return a - b\n\n\ndef neg(a):\n    return -a\n",
    "tests/test_core.py": "from calc.core import add, neg\n\n\ndef test_add():\n    assert add(2, 2) == 4\n\n\ndef test_neg():\n    assert neg(1) == -1\n",
}
FIX = {"path": "calc/core.py", "old_text": "return a - b", "new_text": "return a + b"}


def episode(tmp_path: Path, edits: list[tuple[str, str, str]]):
    """Set up the plugin on the buggy project, make ``edits`` ((path, old, new); old "" writes a new file), verify."""
    ctx = make(tmp_path, PYTHON_BUG)
    plugin = CodingPlugin()
    task = Task(plugin="coding", instruction="add() subtracts", repo=ctx.workspace)
    plugin.setup(task, ctx)
    for rel, old, new in edits:
        path = ctx.workspace / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(path.read_text().replace(old, new) if old else new)
    return ctx, plugin.reward(task, Trajectory(context=ctx))


FAKE_CONFTEST = (
    "import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
    "    outcome = yield\n    report = outcome.get_result()\n    report.outcome = 'passed'\n"
)


def test_tests_are_reset_before_grading_and_edits_still_score_zero(tmp_path):
    fix = ("calc/core.py", "return a - b", "return a + b")
    weakened = ("tests/test_core.py", "assert neg(1) == -1", "assert neg(1) == 1")
    planted = ("tests/conftest.py", "", FAKE_CONFTEST)  # would turn every failure into a pass
    ctx, verification = episode(tmp_path, [fix, weakened, planted])
    assert not verification.correct and verification.reward == 0.0  # a test weakened, a conftest planted
    detail = verification.components["fail_to_pass"].detail
    # Graded against the original tests, without the planted conftest: the real fix shows.
    assert detail["after"] == {"tests/test_core.py::test_add": "passed", "tests/test_core.py::test_neg": "passed"}
    assert detail["fixed"] == ["tests/test_core.py::test_add"]
    untouched = verification.components["tests_untouched"].detail
    assert untouched["edited"] == ["tests/test_core.py"]  # the weakened file; the added conftest weakens no test (and is removed)
    assert untouched["test_files_changed"] == ["tests/conftest.py", "tests/test_core.py"]
    assert [line.split(": ", 1)[0] for line in untouched["weakened"]["tests/test_core.py"]] == ["tests/test_core.py:9"]
    assert untouched["reset_before_grading"] == {"restored": ["tests/test_core.py"], "removed": ["tests/conftest.py"]}
    assert verification.components["exit_code_agrees"].value == 1.0
    assert "assert neg(1) == 1" in (ctx.workspace / "tests" / "test_core.py").read_text()  # the final diff keeps it
    assert (ctx.workspace / "tests" / "conftest.py").is_file()


def test_a_report_that_contradicts_the_exit_code_is_not_believed(tmp_path):
    # Code under test makes the run exit non-zero after every test passed (a crash at exit, or a
    # run that printed or planted its own results): the exit code wins, reward 0.
    crash_at_exit = ("calc/core.py", "return a - b", "return a + b\n\n\nimport atexit, os\natexit.register(lambda: os._exit(3))")
    _ctx, verification = episode(tmp_path, [crash_at_exit])
    assert verification.components["fail_to_pass"].detail["fixed"] == ["tests/test_core.py::test_add"]  # the report says so
    assert verification.components["exit_code_agrees"].value == 0.0
    assert verification.components["exit_code_agrees"].detail == {"exit_code": 3}
    assert verification.reward == 0.0 and not verification.correct
    assert "exited with code 3, which contradicts its report" in verification.summary


FAKE_PYTEST = (  # imports the real pytest, then reports every test as passed
    "import importlib.util, os, sys\n"
    "here = os.path.dirname(os.path.abspath(__file__))\n"
    "sys.path[:] = [p for p in sys.path if os.path.abspath(p or '.') != here]\n"
    "sys.modules.pop('pytest', None)\n"
    "import pytest as _real\n"
    "sys.path.insert(0, here)\n"
    "class _Pass:\n"
    "    @_real.hookimpl(hookwrapper=True)\n"
    "    def pytest_runtest_makereport(self, item, call):\n"
    "        report = (yield).get_result()\n"
    "        report.outcome = 'passed'\n"
    "def console_main():\n"
    "    return _real.main(plugins=[_Pass()])\n"
    "main = _real.main\n"
    "if __name__ == '__main__':\n"
    "    sys.exit(console_main())\n"
)


def test_a_pytest_module_in_the_repository_does_not_replace_the_test_runner(tmp_path):
    """``python -m pytest`` would import ``./pytest.py`` from the repository instead of pytest;
    the grader imports pytest first (``PYTEST_LAUNCHER``), so the bug stays unfixed: reward 0,
    and the export gate counts the file as a checker input."""
    from plugins.coding.checker_inputs import is_checker_input

    _ctx, verification = episode(tmp_path, [("pytest.py", "", FAKE_PYTEST)])
    assert verification.reward == 0.0 and not verification.correct
    assert verification.components["fail_to_pass"].detail["after"]["tests/test_core.py::test_add"] == "failed"
    assert all(is_checker_input(p) for p in ("pytest.py", "src/_pytest/main.py", "sitecustomize.py"))
    assert not is_checker_input("calc/core.py")


def test_checker_inputs_are_named_by_the_coding_plugin():
    """The export's reward-hacking gate asks the run's plugin (``is_checker_input`` hook) which
    files its reward checks against; the coding plugin names tests and the runner's configuration."""
    from core.export.source import plugin_checker_inputs

    checks = plugin_checker_inputs("coding")
    assert checks("tests/test_service.py") and checks("conftest.py") and checks("pkg/.venv/x.pth")
    assert checks("src/test/java/com/example/users/UserServiceTest.java")
    assert checks("pkg/thing_test.go") and checks("web/app.spec.ts") and checks("lib/pytest/__init__.py")
    assert not checks("users/service.py") and not checks("src/main/java/com/example/users/UserService.java")
    assert not plugin_checker_inputs("finance")("tests/test_service.py")  # no hook: its reward reads no workspace test
