"""Damaged state: a garbled run store or checkpoint file, a store held by another process, an
unwritable ``HORIZON_HOME``; each ends as one clear line, never a traceback.

Real files throughout: a real run made by ``agent run`` (scripted), its stores garbled by
overwriting bytes, the real command line (typer's CliRunner). The runs are of the ``notes`` test
plugin (``tests/notes_plugin``): what is tested is core's stores and command line. The hostile
scratch tests (a command filling ``scratch/runs``), whose subject is the coding plugin's test
runs, moved to ``tests/plugins/coding/test_coding_scratch_runs.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
FINISH = '{"tool": "finish", "arguments": {"summary": "looked"}}\n'


@pytest.fixture(scope="module")
def made_run(tmp_path_factory) -> Path:
    """One finished run of the notes plugin on a folder of two notes (made once, copied per test)."""
    base = tmp_path_factory.mktemp("made-run")
    notes = base / "notes"
    notes.mkdir()
    (notes / "log.md").write_text("# Log\n")
    (notes / "ANSWER.txt").write_text("todo\n")
    script = base / "finish.jsonl"
    script.write_text(FINISH)
    with pytest.MonkeyPatch.context() as mp:  # the notes_plugin fixture's install, for the whole module
        mp.syspath_prepend(str(ROOT / "tests" / "notes_plugin"))
        mp.setenv("HORIZON_HOME", str(base / "home"))
        result = runner.invoke(app, ["run", "notes", "look", "--repo", str(notes), "--policy", "scripted", "--script", str(script)])
    assert result.exit_code == 0, result.output
    (folder,) = (base / "home" / "runs").iterdir()
    return folder


@pytest.fixture
def run_folder(made_run: Path, horizon_home: Path, notes_plugin: str) -> Path:
    """A private copy of the made run in this test's HORIZON_HOME."""
    return Path(shutil.copytree(made_run, horizon_home / "runs" / made_run.name, symlinks=True))


def garble(path: Path, offset: int, length: int = 4096) -> bytes:
    """Overwrite ``length`` bytes of ``path`` at ``offset`` with a fixed pattern; return the file's new bytes."""
    with open(path, "r+b") as f:
        f.seek(offset)
        f.write(bytes((i * 151 + 7) % 256 for i in range(length)))
    return path.read_bytes()


def one_clean_line(result, code: int = 2) -> str:
    """The CLI said one ``error:`` line and exited with ``code`` (no exception escaped)."""
    assert result.exit_code == code, (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), result.output
    return lines[0]


# ------------------------------------------------------------------------------ the run store


@pytest.mark.parametrize("offset", [0, 8192], ids=["header", "block"])
def test_a_garbled_run_store_is_damaged_not_in_use(run_folder, offset):
    store = run_folder / "trajectory.duckdb"
    garbled = garble(store, offset)
    listed = runner.invoke(app, ["runs"])
    row = next(line for line in listed.output.splitlines() if run_folder.name in line)
    assert " damaged " in row and "in use" not in row
    for command in (["show", run_folder.name], ["resume", run_folder.name]):
        line = one_clean_line(runner.invoke(app, command))
        assert line.startswith(f"error: damaged: {store} ("), line
        assert "patch.diff" in line and f"delete {run_folder}" in line  # what to do, and where the rest is
    assert store.read_bytes() == garbled  # nothing was repaired or thrown away behind the user's back
    assert (run_folder / "patch.diff").exists() and (run_folder / "checkpoints.sqlite").exists()


def test_a_store_held_by_another_process_is_in_use(run_folder):
    holder = subprocess.Popen(
        [sys.executable, "-c", "import duckdb, sys, time; c = duckdb.connect(sys.argv[1]); print('held', flush=True); time.sleep(60)",
         str(run_folder / "trajectory.duckdb")], stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "held"
        row = next(line for line in runner.invoke(app, ["runs"]).output.splitlines() if run_folder.name in line)
        assert " in use " in row
        line = one_clean_line(runner.invoke(app, ["show", run_folder.name]))
        assert "in use by another process" in line
    finally:
        holder.kill()
        holder.wait()
    assert runner.invoke(app, ["show", run_folder.name]).exit_code == 0  # released: readable again


def test_the_lock_test_reads_duckdbs_words_not_any_word_with_lock():
    import duckdb

    from core.runs import store_problem

    assert store_problem(duckdb.IOException('IO Error: Could not set lock on file "/x": Conflicting lock is held in p (PID 1)')) == "in use"
    assert store_problem(duckdb.Error("Corrupt database file: checksum mismatch in block at location 8192")) == "damaged"
    assert store_problem(duckdb.IOException('IO Error: The file "/x" exists, but it is not a valid DuckDB database file!')) == "damaged"
    assert store_problem(duckdb.IOException('IO Error: Cannot open file "/x": Permission denied')) == "unreadable"


# ------------------------------------------------------------------------------ the checkpoints


def _garble_header(path: Path) -> None:
    garble(path, 0, 100)


def _garble_pages(path: Path) -> None:
    garble(path, 4096, path.stat().st_size - 4096)


def _garble_newest_checkpoint(path: Path) -> None:
    con = sqlite3.connect(path)  # a valid database whose newest checkpoint is noise
    with con:
        con.execute("UPDATE checkpoints SET checkpoint = zeroblob(64) WHERE checkpoint_id = (SELECT max(checkpoint_id) FROM checkpoints)")
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")  # into the main file, so its bytes can be compared
    con.close()


@pytest.mark.parametrize("damage", [_garble_header, _garble_pages, _garble_newest_checkpoint], ids=["header", "pages", "newest"])
def test_garbled_checkpoints_say_damaged_on_resume(run_folder, damage):
    checkpoints = run_folder / "checkpoints.sqlite"
    damage(checkpoints)
    before = checkpoints.read_bytes()
    line = one_clean_line(runner.invoke(app, ["resume", run_folder.name]))
    assert line.startswith(f"error: damaged: {checkpoints} ("), line
    assert f"agent show {run_folder.name}" in line and "agent run" in line
    assert checkpoints.read_bytes() == before
    shown = runner.invoke(app, ["show", run_folder.name])  # the trajectory is intact and unlocked
    assert shown.exit_code == 0 and "finish" in shown.output


# ------------------------------------------------------------------------------ HORIZON_HOME


def test_a_horizon_home_under_a_file_is_one_line(tmp_path, notes_folder, notes_plugin, monkeypatch):
    (tmp_path / "a-file").write_text("not a folder\n")
    monkeypatch.setenv("HORIZON_HOME", str(tmp_path / "a-file" / "home"))
    script = tmp_path / "finish.jsonl"
    script.write_text(FINISH)
    line = one_clean_line(runner.invoke(app, ["run", notes_plugin, "look", "--repo", str(notes_folder), "--policy", "scripted",
                                              "--script", str(script)]))
    assert f"cannot write Horizon's data folder {tmp_path / 'a-file' / 'home' / 'runs'}" in line
    assert "HORIZON_HOME" in line
    task = tmp_path / "suite" / "write-done"  # a suite of one notes task, graded by its reference trajectory
    shutil.copytree(notes_folder, task / "repo")
    (task / "task.json").write_text(json.dumps({"instruction": "write done in ANSWER.txt"}))
    (task / "reference.jsonl").write_text(json.dumps({"tool": "edit_file", "arguments": {"path": "ANSWER.txt", "old_text": "todo",
                                                                                  "new_text": "done"}}) + "\n" + FINISH)
    line = one_clean_line(runner.invoke(app, ["eval", notes_plugin, str(tmp_path / "suite"), "--policy", "reference",
                                              "--task", "write-done", "--backend", "processes"]))
    assert "cannot write Horizon's data folder" in line and "evals" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permissions")
def test_a_read_only_horizon_home_is_one_line(tmp_path, notes_folder, notes_plugin, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o555)
    try:
        monkeypatch.setenv("HORIZON_HOME", str(home))
        script = tmp_path / "finish.jsonl"
        script.write_text(FINISH)
        line = one_clean_line(runner.invoke(app, ["run", notes_plugin, "look", "--repo", str(notes_folder), "--policy", "scripted",
                                                  "--script", str(script)]))
        assert "cannot write Horizon's data folder" in line and "Permission denied" in line
    finally:
        home.chmod(0o755)


def test_a_read_only_file_system_counts_as_unwritable(tmp_path, monkeypatch):
    """``make_data_folder`` checks write access (EROFS is refused even to root), not only mkdir."""
    from core.config import make_data_folder
    from core.errors import UserError

    folder = tmp_path / "runs"
    folder.mkdir()
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(UserError, match=r"cannot write Horizon's data folder .*runs \(not writable\)"):
        make_data_folder(folder)
