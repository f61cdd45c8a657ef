"""`agent export` end to end on the session's real runs (of ``notes``, the test plugin: issue 17
moved these tests off the coding plugin with the same assertions)."""

import json

from typer.testing import CliRunner

from core.cli import app

runner = CliRunner()


def test_export_by_plugin_prints_the_gate_table_and_writes_the_file(episodes, tmp_path, monkeypatch):
    monkeypatch.setenv("HORIZON_HOME", str(episodes.home))
    out = tmp_path / "data" / "openai.jsonl"
    result = runner.invoke(app, ["export", "--plugin", "notes", "--format", "openai", "--out", str(out)])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in result.output.splitlines() if line.count("│") == 3}
    assert rows["infrastructure_failure"] == "2" and rows["reward_hacking"] == "1" and rows["near_duplicate"] == "1"
    assert f"left out {episodes.ids['check_edit']}: reward_hacking" in result.output
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert f"wrote {len(lines)} openai rows" in result.output and len(lines) >= 7
    report = json.loads((tmp_path / "data" / "openai.lengths.json").read_text())  # written beside the data, and printed
    assert "lengths with SmolLM2-135M-Instruct.Q4_1.gguf's vocabulary and the qwen3_training chat template:" in result.output
    assert f"prompt: {report['prompt_tokens']['min']}-{report['prompt_tokens']['max']} tokens" in result.output


def test_export_refuses_bad_requests_with_one_line(episodes, tmp_path, monkeypatch):
    monkeypatch.setenv("HORIZON_HOME", str(episodes.home))
    nothing = runner.invoke(app, ["export", "--format", "openai", "--out", str(tmp_path / "x.jsonl")])
    assert nothing.exit_code == 2 and "say which runs to export" in nothing.output
    bad = runner.invoke(app, ["export", episodes.ids["fix"], "--format", "csv", "--out", str(tmp_path / "x.csv")])
    assert bad.exit_code == 2 and "unknown export format 'csv'" in bad.output
    flagged_only = runner.invoke(app, ["export", episodes.ids["infra_setup"], "--format", "sft-jsonl", "--out", str(tmp_path / "y.jsonl")])
    assert flagged_only.exit_code == 1 and "no run left to export" in flagged_only.output
    assert not (tmp_path / "y.jsonl").exists()
