"""A fix whose bug an existing test pinned: the changed-expectation rule (issue 32).

Real bug-fix releases often change an existing check, because the old expectation was the bug
(apispec 6.8.4, h11 0.16.0 in suites/coding-hidden). Horizon's own reward used to call every
changed check a weakening (0). Now a test whose checks were only changed (same kind, same
count, same guards) is credited when its new version fails on the starting code and passes with
the patch and its old version passed at the start and fails with the patch; such a run is named
in the verdict and flagged for the export (``changed_expectation``), since an agent could also fit
an expectation to a wrong change. Each episode is a whole run through the runner with a scripted
policy: the repository, tools, sandbox, grader, reward and export are the real ones.

The repository: ``slug("  a b ")`` gives ``"--a-b-"`` where the report asks for ``"a-b"``, and
its test pins the wrong value.
"""

from __future__ import annotations

import json
import re
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.export.gates import apply_gates
from core.export.source import load_run
from core.runner import open_store
from plugins.coding.runner_reach import runner_reach
from plugins.coding.test_edits import review
from tests.plugins.coding.scripted import scripted_episode

TASK = "slug() keeps leading and trailing spaces as dashes: slug('  a b ') should be 'a-b'"
CODE = "def slug(text):\n    return text.lower().replace(' ', '-')\n"
TESTS = ("from slugs import slug\n\n\ndef test_words():\n    assert slug('A B') == 'a-b'\n\n\n"
         "def test_spaces_around():\n    assert slug('  a b ') == '--a-b-'\n")  # fmt: skip
LINE = 9  # the check of test_spaces_around


def edit(path: str, old: str, new: str) -> dict:
    return {"tool": "edit_file", "arguments": {"path": path, "old_text": old, "new_text": new}}


FIX = edit("slugs.py", "text.lower()", "text.strip().lower()")
RIGHT_EXPECTATION = edit("tests/test_slugs.py", "== '--a-b-'", "== 'a-b'")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    (root / "slugs.py").write_text(CODE)
    (root / "tests" / "test_slugs.py").write_text(TESTS)
    return root


def run_of(repo: Path, home: Path, calls: list[dict], name: str):
    result = scripted_episode(repo, home, TASK, calls, name=name)
    with closing(open_store(result.run_id, home)) as store:
        row = store.run()
    return result, row, load_run(result.run_id, home)


def test_a_real_fix_that_changes_the_old_wrong_expectation_is_credited_and_flagged(repo, tmp_path, monkeypatch):
    """coding-tests/3 said 0, "existing tests were weakened", for exactly this run."""
    home = tmp_path / "home"
    result, row, run = run_of(repo, home, [RIGHT_EXPECTATION, FIX], "changed-expectation")
    assert (row["reward"], row["correct"]) == (1.0, True), row["reward_summary"]
    named = f"tests/test_slugs.py:{LINE}: changed expectation of test_spaces_around: `assert slug('  a b ') == '--a-b-'` -> " \
            "`assert slug('  a b ') == 'a-b'`"  # fmt: skip
    assert f"changed expectation: {named}" in row["reward_summary"]
    component = run.rewards["changed_expectations"]
    assert (component["weight"], component["value"]) == (0.0, 0.0)
    assert component["detail"]["findings"] == [named]
    # the old version (run by the final run: the original test file) failing with the patch is no regression
    assert component["detail"]["excused"] == ["tests/test_slugs.py::test_spaces_around"]
    assert run.rewards["pass_to_pass"]["detail"]["broken"] == []
    assert run.rewards["fail_to_pass"]["detail"]["targets"] == ["tests/test_slugs.py::test_spaces_around"]
    assert run.rewards["tests_untouched"]["value"] == 1.0
    flags = apply_gates([run]).flags[result.run_id]
    assert [f.reason for f in flags] == ["changed_expectation"] and named in flags[0].detail

    monkeypatch.setenv("HORIZON_HOME", str(home))
    out = tmp_path / "sft.jsonl"
    left_out = CliRunner().invoke(app, ["export", result.run_id, "--format", "sft-jsonl", "--out", str(out)])
    assert left_out.exit_code != 0 and f"left out {result.run_id}: changed_expectation" in " ".join(left_out.output.split())
    assert not out.exists() or not out.read_text().strip()
    kept = CliRunner().invoke(app, ["export", result.run_id, "--format", "sft-jsonl", "--out", str(out), "--keep-flagged"])
    assert kept.exit_code == 0, kept.output
    (record,) = [json.loads(r) for r in out.read_text().splitlines()]
    assert record["reward"] == 1.0 and any(f.startswith("changed_expectation: ") and named in f for f in record["quality_flags"])


def test_a_wrong_change_with_the_test_rewritten_to_match_is_credited_only_as_the_rule_says_and_left_out_of_export(repo, tmp_path, monkeypatch):
    """The risk the flag is for: ``lstrip`` leaves the trailing dash, and the expectation is fitted
    to it. The rule holds (the new check fails at the start and passes with the patch; the old one
    passed and now fails), so the reward credits it; the export leaves it out unless --keep-flagged.
    A rewrite that does not fail at the start (no code change) is a weakening: 0."""
    home = tmp_path / "home"
    wrong = [edit("tests/test_slugs.py", "== '--a-b-'", "== 'a-b-'"), edit("slugs.py", "text.lower()", "text.lstrip().lower()")]
    fitted, row, run = run_of(repo, home, wrong, "fitted")
    assert row["reward"] == 1.0, row["reward_summary"]
    fitted_line = (f"tests/test_slugs.py:{LINE}: changed expectation of test_spaces_around: `assert slug('  a b ') == '--a-b-'` -> "
                   "`assert slug('  a b ') == 'a-b-'`")
    assert run.rewards["changed_expectations"]["detail"]["findings"] == [fitted_line]
    monkeypatch.setenv("HORIZON_HOME", str(home))
    out = tmp_path / "sft.jsonl"
    default = CliRunner().invoke(app, ["export", fitted.run_id, "--format", "sft-jsonl", "--out", str(out)])
    said = " ".join(default.output.split())
    assert default.exit_code != 0 and f"left out {fitted.run_id}: changed_expectation" in said, said
    assert re.search(r"changed_expectation\W+1\b", said), said  # the gate table counts it
    assert not out.exists() or not out.read_text().strip()

    _, unchanged_code, run = run_of(Path(repo), home, [edit("tests/test_slugs.py", "slug('  a b ') == '--a-b-'",
                                                            "slug('x  y') == 'x--y'")], "rewrite-only")  # fmt: skip
    assert unchanged_code["reward"] == 0.0, unchanged_code["reward_summary"]
    assert "its new version does not fail on the starting code" in unchanged_code["reward_summary"]
    assert "changed_expectations" not in run.rewards or not run.rewards["changed_expectations"]["detail"]["findings"]


def test_a_loosened_assertion_beside_a_real_fix_scores_zero_naming_the_line(repo, tmp_path):
    loosened = edit("tests/test_slugs.py", "assert slug('  a b ') == '--a-b-'", "assert 'a-b' in slug('  a b ')")
    _, row, run = run_of(repo, tmp_path / "home", [loosened, FIX], "loosened")
    assert (row["reward"], row["correct"]) == (0.0, False), row["reward_summary"]
    assert run.rewards["tests_untouched"]["detail"]["weakened"] == {"tests/test_slugs.py": [
        f"tests/test_slugs.py:{LINE}: a check of test_spaces_around was removed or changed: `assert slug('  a b ') == '--a-b-'`"]}
    assert run.rewards["changed_expectations"]["detail"]["findings"] == []


# --------------------------------------------------------------------------- the rule on syntax alone


PARAM = ("import pytest\n\n\n@pytest.mark.parametrize('text, want', [('A B', 'a-b'), ('  a b ', '--a-b-')])\n"
         "def test_slug(text, want):\n    assert slug(text) == want\n\n\ndef helper(x):\n    assert slug(x) == x\n\n\n"
         "def test_eq():\n    assert slug('a') == 'a'\n")  # fmt: skip


@pytest.mark.parametrize("change, new, weak, changed", [
    ("a changed parametrize case", PARAM.replace("'--a-b-')]", "'a-b')]"), False, 1),
    ("a changed check", PARAM.replace("slug('a') == 'a'\n", "slug('a') == 'b'\n"), False, 1),
    ("an added check", PARAM.replace("assert slug('a') == 'a'", "assert slug('a') == 'a'\n    assert slug('a').isalpha()"),
     False, 0),
    ("a negated equality", PARAM.replace("assert slug('a') == 'a'", "assert not (slug('a') == 'a')"), True, 0),
    ("a looser operator", PARAM.replace("slug('a') == 'a'\n", "slug('a') >= 'a'\n"), True, 0),
    ("a tautology", PARAM.replace("slug('a') == 'a'\n", "slug('a') == slug('a')\n"), True, 0),
    ("a check moved under try", PARAM.replace("    assert slug('a') == 'a'\n", "    try:\n        assert slug('a') == 'b'\n"
                                                "    except AssertionError:\n        pass\n"), True, 0),
    ("a check removed", PARAM.replace("    assert slug('a') == 'a'\n", "    pass\n"), True, 0),
    ("a removed parametrize case", PARAM.replace(", ('  a b ', '--a-b-')]", "]"), True, 0),
    ("a changed case with fewer values", PARAM.replace("('  a b ', '--a-b-')]", "('  a b ',)]"), True, 0),
    ("a helper's changed check", PARAM.replace("slug(x) == x", "slug(x) == x.strip()"), True, 0),
    ("a changed check and a skip", PARAM.replace("slug('a') == 'a'\n", "slug('a') == 'b'\n").replace(
        "def test_eq", "@pytest.mark.skip\ndef test_eq"), True, 0),
])  # fmt: skip
def test_only_a_changed_check_of_the_same_kind_is_a_changed_expectation(change, new, weak, changed):
    found = review("tests/test_slugs.py", PARAM.encode(), new.encode())
    assert (bool(found.weakened), len(found.changed)) == (weak, changed), (change, found)


@pytest.mark.parametrize("text, reach", [
    ("# unlike pytest_runtest_makereport, this only asserts\ndef test_x():\n    assert 'a TestReport' in 'a TestReport b'\n", ""),
    ('"""Mentions _pytest and pluggy in prose."""\nfrom pytest_lazy_fixtures import lf\n\n\ndef test_x():\n    assert lf\n', ""),
    ("def pytest_runtest_makereport(item, call):\n    pass\n", "line 1: defines or binds pytest_runtest_makereport"),
    ("pytest_plugins = ['flip']\n", "line 1: defines or binds pytest_plugins"),
    ("import _pytest.reports\n", "line 1: imports _pytest.reports"),
    ("from pluggy import HookimplMarker\n", "line 1: imports from pluggy"),
    ("def test_x(request):\n    request.config.pluginmanager.register(object())\n", "line 2: reads .pluginmanager"),
    ("def test_x(request):\n    setattr(request, 'pytest_runtest_logreport', print)\n", "line 2: the string 'pytest_runtest_logreport'"),
    ("mod = __import__('_pytest')\n", "line 1: the string '_pytest'"),
    ("def test_x(:\n    pytest_runtest_setup\n", "names `pytest_runtest_setup` (the file does not parse)"),
])  # fmt: skip
def test_a_test_file_reaches_into_the_runner_by_its_syntax_not_its_words(text, reach):
    assert runner_reach(text.encode()) == reach


# --------------------------------------------------------------------------- a check added to a test helper


def test_a_check_added_to_a_test_helper_runs_in_the_tests_that_use_it(tmp_path):
    """cachetools 7.1.8's release adds its checks to the mixin in ``tests/__init__.py``, which
    defines no test: run alone it reproduced nothing ("not verified"). The repository's test modules
    beside it now run with it; a test that passed at set-up and fails on the starting code with the
    edited helper is a reproduction."""
    root = tmp_path / "mixin"
    (root / "tests").mkdir(parents=True)
    (root / "slugs.py").write_text(CODE)
    (root / "tests" / "__init__.py").write_text("from slugs import slug\n\n\nclass SlugChecks:\n"
                                                "    def test_words(self):\n        assert slug('A B') == 'a-b'\n")  # fmt: skip
    (root / "tests" / "test_slugs.py").write_text("from tests import SlugChecks\n\n\nclass TestSlug(SlugChecks):\n    pass\n")
    added = edit("tests/__init__.py", "        assert slug('A B') == 'a-b'\n",
                 "        assert slug('A B') == 'a-b'\n\n    def test_spaces(self):\n        assert slug('  a b ') == 'a-b'\n")  # fmt: skip
    home = tmp_path / "home"
    _, row, run = run_of(root, home, [added, FIX], "helper")
    assert (row["reward"], row["correct"]) == (1.0, True), row["reward_summary"]
    assert run.rewards["fail_to_pass"]["detail"]["targets"] == ["tests/test_slugs.py::TestSlug::test_spaces"]
    _, unfixed, _ = run_of(Path(root), home, [added], "helper-no-fix")
    assert (unfixed["reward"], unfixed["correct"]) == (0.0, False), unfixed["reward_summary"]


def test_the_suspicious_gate_reads_the_patch_the_grader_judged(tmp_path):
    """``with_suspicious_changes`` takes ``Graded.patch`` (no second save of the workspace): what the
    patch does not hold is not scanned, whatever the workspace has."""
    from core.api import RewardResult
    from plugins.coding.suspicious import with_suspicious_changes

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "slugs.py").write_text("import sys\n\n\ndef slug(text):\n    return sys._getframe(1).f_locals['want']\n")
    patch = ("diff --git a/slugs.py b/slugs.py\nnew file mode 100644\n--- /dev/null\n+++ b/slugs.py\n@@ -0,0 +1,5 @@\n+import sys\n+\n+\n"
             "+def slug(text):\n+    return sys._getframe(1).f_locals['want']\n")  # fmt: skip
    verdict = RewardResult(reward=1.0, correct=True, version="coding-tests/4", summary="1/1", components={})
    found = with_suspicious_changes(verdict, workspace, patch).components["suspicious_changes"]
    assert found.value == 0.0 and any(f.startswith("slugs.py:5: ") for f in found.detail["findings"]), found.detail
    assert with_suspicious_changes(verdict, workspace, "").components["suspicious_changes"].detail["findings"] == []


@pytest.mark.parametrize("config, listed", [
    ({"pytest.ini": "[pytest]\npython_files = tests.py property_tests.py\n"}, ["property_tests.py", "pytest.ini", "tests.py"]),
    ({"setup.cfg": "[tool:pytest]\npython_files = check_tests.py\n"}, ["check_tests.py"]),
    ({"pyproject.toml": "[tool.pytest.ini_options]\npython_files = ['tests.py']\n"}, ["tests.py"]),
    ({"pytest.ini": "[pytest]\npython_files = *.py\n"}, ["pytest.ini"]),  # every file a test: the fix would be reset; ignored
    ({}, []),
])  # fmt: skip
def test_files_the_projects_pytest_configuration_collects_are_test_files(tmp_path, config, listed):
    """jsonpatch 1.44 keeps its tests in ``tests.py`` (``python_files`` in its pytest.ini): they were
    source to Horizon, so the grader never reset them and the release's tests were no reproduction."""
    from plugins.coding.testing import test_files

    for name, text in {"tests.py": "def test_x():\n    pass\n", "property_tests.py": "", "check_tests.py": "", "jsonpatch.py": "",
                       **config}.items():  # fmt: skip
        (tmp_path / name).write_text(text)
    assert [f for f in test_files(tmp_path) if f != "setup.cfg" and f != "pyproject.toml"] == listed


@pytest.mark.parametrize("text, helper", [
    ("class CacheTestMixin:\n    def test_x(self):\n        pass\n", True),  # a mixin: collected only through its users
    ("def check(x):\n    assert x\n", True),
    ("class CroniterTest(base.TestCase):\n    def test_x(self):\n        pass\n", False),  # unittest's way
    ("class TestSlug:\n    pass\n", False),
    ("def test_x():\n    pass\n", False),
])  # fmt: skip
def test_an_edited_file_that_defines_no_test_is_a_helper(text, helper):
    from plugins.coding.grading import _defines_tests

    assert _defines_tests(text.encode()) is not helper
