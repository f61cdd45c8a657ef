"""The agent command line, run as a user would: real runs with the scripted policy."""

import re
from pathlib import Path

from typer.testing import CliRunner

from core.cli import app

SCRIPT = Path(__file__).resolve().parents[2] / "examples" / "scripts" / "fix-python-npe.jsonl"
runner = CliRunner()


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
    assert "reward 1.000 (coding-tests/2, scored): 2/2 failing tests now pass" in shown.output


def test_a_reward_with_nothing_to_judge_reads_not_applicable_everywhere(tmp_path):
    repo = tmp_path / "tool"
    repo.mkdir()
    (repo / "tool.py").write_text("def double(x):\n    return x * 3\n")
    script = tmp_path / "finish.jsonl"
    script.write_text('{"tool": "finish", "arguments": {"summary": "looked"}}\n')
    result = runner.invoke(app, ["run", "coding", "double() triples", "--repo", str(repo), "--policy", "scripted", "--script", str(script)])
    assert result.exit_code == 0, result.output
    assert "reward not applicable, coding-tests/2" in result.output  # the verify line
    assert "n/a (not applicable: nothing to judge)" in result.output  # the summary
    run_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{4})", result.output).group(1)
    row = next(line for line in runner.invoke(app, ["runs"]).output.splitlines() if run_id in line)
    assert " n/a " in row
    shown = runner.invoke(app, ["show", run_id]).output
    assert "reward n/a (coding-tests/2, not_applicable): the repository has no test suite" in shown


def test_user_errors_are_one_clean_line():
    result = runner.invoke(app, ["run", "nope", "x"])
    assert result.exit_code == 2
    assert "error: no plugin named 'nope'" in result.output and "Traceback" not in result.output
    result = runner.invoke(app, ["show", "20990101-000000-dead"])
    assert result.exit_code == 2 and "no run" in result.output
    result = runner.invoke(app, ["run", "coding", "x", "--policy", "openai"])
    assert result.exit_code == 2 and "--base-url" in result.output
    result = runner.invoke(app, ["run", "coding", "x", "--repo", "/nonexistent/repo", "--policy", "scripted", "--script", str(SCRIPT)])
    assert result.exit_code == 2 and "not a folder" in result.output
    result = runner.invoke(app, ["run", "coding", "  ", "--policy", "scripted", "--script", str(SCRIPT)])
    assert result.exit_code == 2 and "the task is empty" in result.output
    for flag, value in [("--max-steps", "0"), ("--max-steps", "-3"), ("--max-time", "0"), ("--max-cost", "-1")]:
        result = runner.invoke(app, ["run", "coding", "x", flag, value])
        assert result.exit_code == 2 and "Traceback" not in result.output, (flag, value)


def test_dead_model_server_ends_with_a_stated_reason(python_repo):
    result = runner.invoke(app, ["run", "coding", "fix", "--repo", str(python_repo),
                                 "--base-url", "http://127.0.0.1:9/v1", "--model", "m"])
    assert result.exit_code == 1
    assert "model_error" in result.output and "cannot reach the model server" in result.output
    assert "agent resume" in result.output
    run_id = re.search(r"run (\d{8}-\d{6}-[0-9a-f]{4})", result.output).group(1)
    # the server is still dead: resuming says so again, and the run stays resumable
    again = runner.invoke(app, ["resume", run_id, "--base-url", "http://127.0.0.1:9/v1"])
    assert again.exit_code == 1 and "cannot reach the model server at http://127.0.0.1:9/v1" in again.output
