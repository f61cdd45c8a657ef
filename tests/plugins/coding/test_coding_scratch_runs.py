"""Hostile scratch: a command that fills ``scratch/runs`` with the names of the next test runs
does not end the episode; ``testing.new_run_dir`` skips planted names without listing the folder.

Moved here unchanged from ``tests/core/test_damaged_state.py`` when core's tests moved to the
``notes`` test plugin: their subject is the coding plugin's test runs (``plugins/coding/testing.py``).
Real files throughout: a real run made by ``agent run`` (scripted), the real command line
(typer's CliRunner), the real sandbox for the commands.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.errors import ToolError
from plugins.coding import testing

runner = CliRunner()


def test_a_scratch_runs_folder_filled_by_a_command_does_not_end_the_episode(python_repo, tmp_path, horizon_home):
    """The command plants 100,001 folders named like the next test runs' in the writable scratch/runs."""
    plant = ("cd ../scratch/runs && python3 -c \"import os; [os.makedirs(f'{n:03d}-pytest', exist_ok=True) for n in range(1, 100002)]; "
             "print(len(os.listdir('.')), 'entries')\"")
    script = tmp_path / "fill.jsonl"
    script.write_text("".join(json.dumps(t) + "\n" for t in [
        {"tool": "shell", "arguments": {"command": plant, "timeout_s": 120}},
        {"tool": "run_tests", "arguments": {}},
        {"tool": "finish", "arguments": {"summary": "looked"}},
    ]))
    result = runner.invoke(app, ["run", "coding", "look", "--repo", str(python_repo.root), "--policy", "scripted", "--script", str(script)])
    assert result.exit_code == 0, result.output
    assert "submitted" in result.output and "crashed" not in result.output
    (folder,) = (horizon_home / "runs").iterdir()
    shown = json.loads(runner.invoke(app, ["show", folder.name, "--json"]).output)
    observations = [m["content"] for m in shown["messages"] if m["role"] == "tool"]
    assert "entries" in observations[0] and int(re.search(r"(\d+) entries", observations[0]).group(1)) > 100_000
    assert observations[1].startswith("pytest: "), observations[1]  # a real test run, in a fresh folder
    fresh = [p.name for p in (folder / "scratch" / "runs").iterdir() if not re.fullmatch(r"\d{3,6}-pytest", p.name)]
    assert any(name.endswith("-grading") for name in fresh) and any("-pytest-" in name for name in fresh), fresh


def test_new_run_dir_skips_planted_names_without_listing_the_folder(tmp_path, monkeypatch):
    scratch = tmp_path / "scratch"
    first = testing.new_run_dir(scratch, "pytest")
    assert first.name == "001-pytest" and (scratch / "runs.next").read_text() == "2\n"
    for n in range(2, 30):  # a command plants the next names, as folders, files and links
        target = scratch / "runs" / f"{n:03d}-pytest"
        (target.mkdir() if n % 3 else target.symlink_to("/etc")) if n % 2 else target.write_text("planted")

    def no_listing(*args, **kwargs):
        raise AssertionError("new_run_dir listed the folder although its counter exists")

    monkeypatch.setattr(testing.os, "scandir", no_listing)
    made = testing.new_run_dir(scratch, "pytest")
    assert made.is_dir() and not made.is_symlink() and not any(made.iterdir())
    assert re.fullmatch(r"00[2-5]-pytest-[0-9a-f]{8}", made.name), made.name  # unguessable after a few taken names


def test_new_run_dir_counts_once_for_a_run_from_before_the_counter(tmp_path):
    scratch = tmp_path / "scratch"
    for n in (1, 2, 3):
        (scratch / "runs" / f"{n:03d}-pytest").mkdir(parents=True)
    assert testing.new_run_dir(scratch, "junit").name == "004-junit"
    assert testing.new_run_dir(scratch, "junit").name == "005-junit"


def test_new_run_dir_that_cannot_be_made_is_a_tool_error(tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    (scratch / "runs").write_text("a file where the folder should be")
    with pytest.raises(ToolError, match=r"cannot make a folder for this command's files in .*runs \(File exists\)"):
        testing.new_run_dir(scratch, "pytest")


def test_new_run_dir_does_not_list_a_folder_of_100001_entries(tmp_path, monkeypatch):
    """The cost does not grow with the folder: after the first call, no call lists it (listing
    100,001 entries 50 times took about 3 s when it did)."""
    scratch = tmp_path / "scratch"
    testing.new_run_dir(scratch, "pytest")
    runs = scratch / "runs"
    for n in range(100_001):
        os.close(os.open(runs / f"e{n}", os.O_CREAT | os.O_WRONLY))

    def listing(*args, **kwargs):
        raise AssertionError("new_run_dir listed the runs folder")

    monkeypatch.setattr(os, "scandir", listing)
    monkeypatch.setattr(os, "listdir", listing)
    made = {testing.new_run_dir(scratch, "pytest") for _ in range(50)}
    monkeypatch.undo()
    assert len(made) == 50 and all(folder.is_dir() and not any(folder.iterdir()) for folder in made)
