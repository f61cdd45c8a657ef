"""The agent command line on the coding plugin, run as a user would: `agent run coding` on the
example repository with the scripted fix (the main job), and the coding reward's not-applicable
verdict as `agent run`, `agent runs` and `agent show` print it.

Moved unchanged from tests/core/test_cli.py (issue 17): their subject is the coding plugin through
the CLI; the CLI's own behaviour is tested on ``notes`` there.
"""

import re
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
SCRIPT = EXAMPLES / "scripts" / "fix-python-npe.jsonl"
runner = CliRunner()


@pytest.fixture
def python_repo(tmp_path):
    """A private copy of examples/python-user-service, a plain folder as in tests/conftest.py (this
    folder's conftest.py gives a ``Repo`` with a sandbox under that name)."""
    return Path(shutil.copytree(EXAMPLES / "python-user-service", tmp_path / "python-user-service"))


def test_run_show_runs_apply(python_repo):
    result = runner.invoke(app, ["run", "coding", "fix NPE in user module", "--repo", str(python_repo),
                                 "--policy", "scripted", "--script", str(SCRIPT), "--apply"])
    assert result.exit_code == 0, result.output
    assert "run_tests" in result.output and "edit_file" in result.output
    assert "submitted" in result.output and "1.000" in result.output
    assert "applied the patch" in result.output
    assert "(user.nickname or" in (python_repo / "users" / "service.py").read_text()
    run_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{4})", result.output).group(1)
    listed = runner.invoke(app, ["runs"])
    assert run_id in listed.output and "submitted" in listed.output
    shown = runner.invoke(app, ["show", run_id])
    assert shown.exit_code == 0 and "fail_to_pass = 1.000" in shown.output and "edit_file" in shown.output
    assert "reward 1.000 (coding-tests/4, scored): 2/2 failing tests now pass" in shown.output


def test_a_reward_with_nothing_to_judge_reads_not_applicable_everywhere(tmp_path):
    repo = tmp_path / "tool"
    repo.mkdir()
    (repo / "tool.py").write_text("def double(x):\n    return x * 3\n")
    script = tmp_path / "finish.jsonl"
    script.write_text('{"tool": "finish", "arguments": {"summary": "looked"}}\n')
    result = runner.invoke(app, ["run", "coding", "double() triples", "--repo", str(repo), "--policy", "scripted", "--script", str(script)])
    assert result.exit_code == 0, result.output
    assert "reward not applicable, coding-tests/4" in result.output  # the verify line
    assert "n/a (not applicable: nothing to judge)" in result.output  # the summary
    run_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{4})", result.output).group(1)
    row = next(line for line in runner.invoke(app, ["runs"]).output.splitlines() if run_id in line)
    assert " n/a " in row
    shown = runner.invoke(app, ["show", run_id]).output
    assert "reward n/a (coding-tests/4, not_applicable): the repository has no test suite" in shown
