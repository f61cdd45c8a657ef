"""The runs catalog (``core.catalog``): ``agent runs`` reads one SQLite file, not every run's
DuckDB store, and the catalog never says less than the stores: rebuilt when deleted or damaged,
a run killed mid-step listed with its real last step. The runs are real ``notes`` episodes
(``tests/notes_plugin``) made by ``agent run``, in a process of their own where one is killed.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest

from core.catalog import list_runs
from core.catalog_db import CATALOG_NAME, catalog_path
from core.runs import scan_runs
from core.store import RunStore

AGENT = [sys.executable, "-c", "from core.cli import main; main()"]
ANSWER = [{"tool": "write_file", "arguments": {"path": "ANSWER.txt", "text": "done\n"}}, {"tool": "finish", "arguments": {"summary": "answered"}}]
#: Lists runs as ``agent runs`` does, then prints the table and the top-level modules it imported.
LIST = ("import json, sys\nfrom core.cli import app\ntry:\n    app(['runs'])\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")


def agent_run(home: Path, folder: Path, script: list[dict], tmp_path: Path, task: str = "answer") -> subprocess.CompletedProcess:
    path = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.jsonl"
    path.write_text("".join(json.dumps(t) + "\n" for t in script))
    env = {**os.environ, "HORIZON_HOME": str(home)}
    return subprocess.run(AGENT + ["run", "notes", task, "--repo", str(folder), "--policy", "scripted", "--script", str(path)],
                          env=env, capture_output=True, text=True, timeout=300, check=True)


def agent_runs(home: Path) -> tuple[str, set[str]]:
    env = {**os.environ, "HORIZON_HOME": str(home), "COLUMNS": "200"}
    done = subprocess.run([sys.executable, "-c", LIST], env=env, capture_output=True, text=True, timeout=120, check=True)
    *table, modules = done.stdout.strip().splitlines()
    return "\n".join(table), set(json.loads(modules))


def catalog_row(home: Path, run_id: str) -> dict | None:
    with closing(sqlite3.connect(catalog_path(home))) as con:
        found = con.execute("SELECT row FROM runs WHERE run_id = ?", [run_id]).fetchone()
    return json.loads(found[0]) if found else None


def test_agent_runs_reads_only_the_catalog_and_it_is_rebuilt_when_deleted(notes_plugin, notes_folder, horizon_home, tmp_path):
    for task in ("first task", "second task"):
        agent_run(horizon_home, notes_folder, ANSWER, tmp_path, task)
    assert (horizon_home / CATALOG_NAME).is_file()  # written by the runs themselves
    table, modules = agent_runs(horizon_home)
    assert "duckdb" not in modules and "pyarrow" not in modules, "agent runs opened a run store"
    assert table.count("finished") == 2 and "first task" in table and "second task" in table
    truth = scan_runs(horizon_home)  # every store, opened: the old way
    assert list_runs(horizon_home) == truth
    from core.catalog import catalog_rows
    from core.runs import read_entry

    for entry in catalog_rows(horizon_home):  # the counts the writers kept as they wrote are the stores' (the metrics read them)
        assert entry["numbers"] == read_entry(horizon_home / "runs" / entry["run_id"] / "trajectory.duckdb")["numbers"]
        assert entry["numbers"]["tools"] == {"write_file": [1, 0], "finish": [1, 0]}

    (horizon_home / CATALOG_NAME).unlink()
    rebuilt, modules = agent_runs(horizon_home)
    assert rebuilt == table  # the same listing, read again from the stores
    assert "duckdb" in modules  # the control: the check sees DuckDB when the stores are read
    assert (horizon_home / CATALOG_NAME).is_file() and list_runs(horizon_home) == truth
    assert "duckdb" not in agent_runs(horizon_home)[1]  # and the next listing reads the catalog alone again


def test_a_run_killed_mid_step_is_listed_with_its_real_last_step(notes_plugin, notes_folder, horizon_home, tmp_path):
    """SIGKILL while step 2's tool runs: the catalog's row, written at step 1's end, says 1 step;
    the store holds step 2's model call. Listed: ``killed`` with 2 steps, as the store says, and
    again after the catalog is deleted and rebuilt."""
    script = tmp_path / "long.jsonl"
    script.write_text(json.dumps(ANSWER[0]) + "\n" + json.dumps({"tool": "shell", "arguments": {"command": "sleep 60"}}) + "\n")
    env = {**os.environ, "HORIZON_HOME": str(horizon_home)}
    proc = subprocess.Popen(AGENT + ["run", "notes", "killed mid-step", "--repo", str(notes_folder), "--policy", "scripted", "--script",
                                     str(script)], env=env, stdout=(tmp_path / "agent.log").open("w"), stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        row = None
        while time.monotonic() < deadline:
            runs = list_runs(horizon_home)
            if runs and runs[0]["steps"] == 1:
                row = runs[0]
                break
            time.sleep(0.1)
        assert row is not None and row["status"] == "running", (runs, (tmp_path / "agent.log").read_text())  # live: its writer keeps its row
        time.sleep(3)  # the scripted policy answers at once: step 2's model call is stored, its sleep runs
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    run_id = row["run_id"]
    assert catalog_row(horizon_home, run_id)["steps"] == 1  # what the writer last wrote: step 1's end
    [listed] = list_runs(horizon_home)
    assert (listed["status"], listed["steps"]) == ("killed", 2)
    with closing(RunStore(horizon_home / "runs" / run_id / "trajectory.duckdb", read_only=True)) as store:
        assert [s["step"] for s in store.steps()] == [1, 2]  # the truth the listing follows
    catalog_path(horizon_home).unlink()
    [rebuilt] = list_runs(horizon_home)
    assert (rebuilt["status"], rebuilt["steps"]) == ("killed", 2) and rebuilt == listed


def test_a_damaged_catalog_is_rebuilt_with_a_one_line_notice_losing_no_run(notes_plugin, notes_folder, horizon_home, tmp_path, caplog):
    for task in ("one", "two", "three"):
        agent_run(horizon_home, notes_folder, ANSWER, tmp_path, task)
    before = list_runs(horizon_home)
    assert len(before) == 3
    path = catalog_path(horizon_home)
    for name in (path.name + "-wal", path.name + "-shm"):
        (path.parent / name).unlink(missing_ok=True)
    path.write_bytes(b"not a database, a torn copy " * 200)
    with caplog.at_level(logging.WARNING, logger="horizon.catalog"):
        after = list_runs(horizon_home)
    assert after == before  # no run lost
    notices = [r.getMessage() for r in caplog.records if r.name == "horizon.catalog"]
    assert len(notices) == 1 and "\n" not in notices[0], notices
    assert f"the runs catalog {path} was damaged" in notices[0] and "rebuilt" in notices[0]
    with closing(sqlite3.connect(path)) as con:  # a catalog again, with every run
        assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 3
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="horizon.catalog"):
        assert list_runs(horizon_home) == before
    assert not caplog.records  # said once, not at every listing


def test_a_store_changed_behind_the_catalog_and_a_deleted_run_are_seen(notes_plugin, notes_folder, horizon_home, tmp_path):
    """A store written by a program that keeps no catalog (its size and time change) is read again;
    a run folder removed drops its row; a half-made (hidden) folder is no run."""
    agent_run(horizon_home, notes_folder, ANSWER, tmp_path, "kept")
    agent_run(horizon_home, notes_folder, ANSWER, tmp_path, "dropped")
    newer, older = [r["run_id"] for r in list_runs(horizon_home)]
    with closing(RunStore(horizon_home / "runs" / older / "trajectory.duckdb")) as store:  # no catalog: another program's write
        store.update_run(exit_detail="changed behind the catalog's back", task="kept, edited")
    import shutil

    shutil.rmtree(horizon_home / "runs" / newer)
    (horizon_home / "runs" / ".20990101-000000-beef.partial").mkdir()
    [row] = list_runs(horizon_home)
    assert (row["run_id"], row["task"], row["exit_detail"]) == (older, "kept, edited", "changed behind the catalog's back")
    with closing(sqlite3.connect(catalog_path(horizon_home))) as con:
        assert [r[0] for r in con.execute("SELECT run_id FROM runs")] == [older]


def test_the_catalog_names_the_stores_mirror_file():
    """``core.catalog`` spells the live mirror's name itself (importing ``core.store_mirror`` would import DuckDB and pyarrow)."""
    from core import catalog
    from core.store_mirror import MIRROR_NAME

    assert catalog.MIRROR_NAME == MIRROR_NAME


@pytest.mark.parametrize("writer", ["other-host:1:", "{host}:{dead}:", "{host}:{pid}:0", "zombie"])
def test_a_writer_that_is_gone_is_not_alive(writer):
    """Another host's process, a dead pid, a live pid with another start time (a reused pid) and
    a process that has exited but is not yet reaped (a zombie: SIGKILLed, its parent busy) are not the writer."""
    from core.catalog_db import alive, process_mark

    assert alive(process_mark())
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    if writer == "zombie":
        mark = process_mark(child.pid)  # while it runs
        while Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
            time.sleep(0.01)
        assert not alive(mark)
        child.wait()
        return
    child.wait()
    assert not alive(writer.format(host=os.uname().nodename, dead=child.pid, pid=os.getpid()))
