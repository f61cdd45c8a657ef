"""Damaged state and hostile scratch: each ends as one clear line or an observation, never a traceback.

Real files throughout: a real run made by ``agent run`` (scripted), its stores garbled by
overwriting bytes, the real command line (typer's CliRunner), the real sandbox for the commands.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core.cli import app
from core.errors import ToolError
from plugins.coding import testing

runner = CliRunner()
ROOT = Path(__file__).resolve().parents[2]
FINISH = '{"tool": "finish", "arguments": {"summary": "looked"}}\n'


@pytest.fixture(scope="module")
def made_run(tmp_path_factory) -> Path:
    """One finished run of the coding plugin on a copy of the Python example (made once, copied per test)."""
    base = tmp_path_factory.mktemp("made-run")
    repo = Path(shutil.copytree(ROOT / "examples" / "python-user-service", base / "repo"))
    script = base / "finish.jsonl"
    script.write_text(FINISH)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HORIZON_HOME", str(base / "home"))
        result = runner.invoke(app, ["run", "coding", "look", "--repo", str(repo), "--policy", "scripted", "--script", str(script)])
    assert result.exit_code == 0, result.output
    (folder,) = (base / "home" / "runs").iterdir()
    return folder


@pytest.fixture
def run_folder(made_run: Path, horizon_home: Path) -> Path:
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


def test_a_horizon_home_under_a_file_is_one_line(tmp_path, python_repo, monkeypatch):
    (tmp_path / "a-file").write_text("not a folder\n")
    monkeypatch.setenv("HORIZON_HOME", str(tmp_path / "a-file" / "home"))
    script = tmp_path / "finish.jsonl"
    script.write_text(FINISH)
    line = one_clean_line(runner.invoke(app, ["run", "coding", "look", "--repo", str(python_repo), "--policy", "scripted",
                                              "--script", str(script)]))
    assert f"cannot write Horizon's data folder {tmp_path / 'a-file' / 'home' / 'runs'}" in line
    assert "HORIZON_HOME" in line
    line = one_clean_line(runner.invoke(app, ["eval", "coding", str(ROOT / "suites" / "coding"), "--policy", "reference",
                                              "--task", "tomlkit-0.13.2-delete-out-of-order", "--backend", "processes"]))
    assert "cannot write Horizon's data folder" in line and "evals" in line


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through permissions")
def test_a_read_only_horizon_home_is_one_line(tmp_path, python_repo, monkeypatch):
    home = tmp_path / "home"
    home.mkdir()
    home.chmod(0o555)
    try:
        monkeypatch.setenv("HORIZON_HOME", str(home))
        script = tmp_path / "finish.jsonl"
        script.write_text(FINISH)
        line = one_clean_line(runner.invoke(app, ["run", "coding", "look", "--repo", str(python_repo), "--policy", "scripted",
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


# ------------------------------------------------------------------------------ scratch/runs


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
    result = runner.invoke(app, ["run", "coding", "look", "--repo", str(python_repo), "--policy", "scripted", "--script", str(script)])
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


def test_new_run_dir_is_fast_with_100001_entries(tmp_path):
    scratch = tmp_path / "scratch"
    testing.new_run_dir(scratch, "pytest")
    runs = scratch / "runs"
    for n in range(100_001):
        os.close(os.open(runs / f"e{n}", os.O_CREAT | os.O_WRONLY))
    start = time.perf_counter()
    for _ in range(50):
        testing.new_run_dir(scratch, "pytest")
    assert time.perf_counter() - start < 1.0  # 50 calls; listing 100,001 entries each time took about 3 s
