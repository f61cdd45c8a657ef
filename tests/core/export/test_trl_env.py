"""``agent export --format trl-env``: a finished run's task as a row for TRL's ``environment_factory``,
read with ``datasets`` (as TRL reads it), reset into a fresh episode whose opening is the run's."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from core.cli import app
from core.export.source import load_run
from core.trainers.trl import ROW_COLUMNS, environment_class


def test_trl_env_export_loads_with_datasets_and_reopens_the_runs_opening(notes_run, notes_plugin, horizon_home, tmp_path, monkeypatch):
    from datasets import load_dataset

    monkeypatch.setenv("HORIZON_HOME", str(notes_run.home))
    out = tmp_path / "trl" / "tasks.jsonl"
    result = CliRunner().invoke(app, ["export", notes_run.run_id, "--format", "trl-env", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 1 trl-env rows from 1 runs" in result.output
    rows = load_dataset("json", data_files=str(out), split="train")
    assert rows.column_names == list(ROW_COLUMNS) and len(rows) == 1
    row = rows[0]
    assert (row["plugin"], row["environment"], row["task"], row["repo"]) == ("notes", "notes", notes_run.run_id, str(notes_run.repo))
    assert json.loads(row["metadata"]) == {} and len(row["start_tree"]) == 40

    run = load_run(notes_run.run_id, notes_run.home)
    opening = run.messages[:2]
    monkeypatch.setenv("HORIZON_HOME", str(horizon_home))
    with environment_class("notes")() as env:
        appended = env.reset(**row)
        # what TRL renders: the row's prompt with reset()'s text appended to its last user message
        assert row["prompt"][0] == {"role": "system", "content": opening[0].content}
        assert row["prompt"][1]["content"] + appended == opening[1].content
        assert "1: todo" in env.view_file(path="ANSWER.txt")
