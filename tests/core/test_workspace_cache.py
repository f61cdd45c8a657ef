"""The workspace's stat cache (``core.gitstore.StatCache``, ``store_tree``): a save reads only the
files whose stat changed, and never misses a change: edits that keep size and mtime, changes in
the same timestamp granule as the read ("racy git"), edits during a save, deletions, renames,
mode changes, links (never followed), ``.gitignore`` edits in a folder that did not change.
Trees are git's own: the same hash as ``git add -A && git write-tree`` on the same files."""

from __future__ import annotations

import os
import subprocess
import time
import types
from pathlib import Path

import pytest

from core import gitstore
from core import workspace as ws

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file times and links")


def start(tmp_path: Path, files: dict[str, str]) -> tuple[Path, Path]:
    work, base = tmp_path / "w", tmp_path / "base.git"
    for rel, text in files.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    ws.snapshot(work, base)
    return work, base


def settle() -> None:
    """Wait until the files just written are older than the racy window, so a save trusts their
    stat (otherwise it reads them again anyway and a test would prove nothing)."""
    time.sleep(gitstore.RACY_FINE_NS / 1e9 * 2)


def tree_files(base: Path, tree: str) -> dict[str, tuple[str, bytes]]:
    entries = gitstore.list_tree(base, tree)
    blobs = gitstore.read_blobs(base, [e.sha for e in entries])
    return {e.path: (e.mode, blobs[e.sha]) for e in entries}


def count_reads(monkeypatch) -> list[str]:
    """Record the paths the saves read (``read_for_cache``)."""
    reads: list[str] = []
    real = gitstore.read_for_cache

    def read(path, info):
        reads.append(path)
        return real(path, info)

    monkeypatch.setattr(gitstore, "read_for_cache", read)
    return reads


def git_write_tree(work: Path, tmp_path: Path) -> str:
    """What git itself makes of the folder: ``git add -A && git write-tree`` with its own index."""
    env = {**gitstore.git_env(), "GIT_DIR": str(tmp_path / "check.git"), "GIT_WORK_TREE": str(work), "GIT_INDEX_FILE": str(tmp_path / "check.index")}
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "check.git")], check=True, env=gitstore.git_env())
    subprocess.run(["git", "-c", "core.symlinks=true", "add", "-A"], check=True, env=env, cwd=work)
    return subprocess.run(["git", "write-tree"], check=True, env=env, capture_output=True, text=True).stdout.strip()


def test_trees_are_gits_own_for_names_git_orders_by_bytes(tmp_path):
    work = tmp_path / "w"
    names = ["a.b", "a-", "a0", "a/x.py", "a/b/c.txt", "é.txt", "Z", "_", "sp ace", "\u00e9t\u00e9/deep/f"]
    for rel in names:
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(f"{rel}\n")
    (work / "empty").mkdir()  # git keeps no empty folder
    (work / "run.sh").write_text("#!/bin/sh\n")
    (work / "run.sh").chmod(0o755)
    (work / "link").symlink_to("a/x.py")
    raw = os.fsencode(work) + b"/raw-\xe9\xff"  # a name that is not UTF-8 (a surrogate escape in Python)
    with open(raw, "wb") as out:
        out.write(b"bytes\n")
    base = tmp_path / "base.git"
    ws.snapshot(work, base)
    tree = ws.save_tree(work, base)
    assert tree == git_write_tree(work, tmp_path)
    files = tree_files(base, tree)
    assert files["run.sh"][0] == "100755" and files["link"] == ("120000", b"a/x.py") and "raw-\udce9\udcff" in files
    subprocess.run(["git", f"--git-dir={base}", "fsck", "--strict", "--no-dangling"], check=True, capture_output=True)


def test_a_save_after_a_one_file_edit_reads_that_file_only(tmp_path, monkeypatch):
    work, base = start(tmp_path, {f"pkg{i % 3}/m{i}.py": f"x = {i}\n" for i in range(60)})
    settle()
    ws.save_tree(work, base)  # now every stat is old enough to be trusted
    reads = count_reads(monkeypatch)
    ws.save_tree(work, base)
    assert reads == []
    (work / "pkg1" / "m4.py").write_text("x = 'four'\n")
    tree = ws.save_tree(work, base)
    assert [Path(p).name for p in reads] == ["m4.py"]
    assert tree_files(base, tree)["pkg1/m4.py"][1] == b"x = 'four'\n"


def test_an_edit_that_keeps_size_and_mtime_is_still_seen(tmp_path):
    work, base = start(tmp_path, {"app.py": "x = 1\n"})
    settle()
    ws.save_tree(work, base)
    cache = gitstore.StatCache.open(base / ws.STAT_CACHE)
    assert cache.files["app.py"][0] == os.lstat(work / "app.py").st_ino  # trusted by its stat: the edit below must beat it
    before = os.lstat(work / "app.py")
    (work / "app.py").write_text("x = 2\n")  # same size
    os.utime(work / "app.py", ns=(before.st_atime_ns, before.st_mtime_ns))  # mtime put back
    after = os.lstat(work / "app.py")
    assert (after.st_size, after.st_mtime_ns, after.st_ino) == (before.st_size, before.st_mtime_ns, before.st_ino)
    assert "+x = 2" in ws.diff(work, base)


class CoarseTimes:
    """A file system with whole-second times (ext4 with small inodes, some network file systems):
    every stat Horizon takes has its times cut to the second. A file rewritten within the second
    keeps its size, mtime and ctime, so only the racy rule can tell."""

    def __init__(self, monkeypatch) -> None:
        real_lstat, real_fstat, real_stat, real_scandir = os.lstat, os.fstat, os.stat, os.scandir
        coarse = self.coarse

        class Entry:
            def __init__(self, entry):
                self._entry, self.name, self.path = entry, entry.name, entry.path

            def stat(self, follow_symlinks=True):
                return coarse(self._entry.stat(follow_symlinks=follow_symlinks))

            def is_file(self, follow_symlinks=True):
                return self._entry.is_file(follow_symlinks=follow_symlinks)

        class Listing:
            def __init__(self, path):
                self._it = real_scandir(path)

            def __enter__(self):
                return [Entry(e) for e in self._it]

            def __exit__(self, *exc):
                self._it.close()

        monkeypatch.setattr(os, "lstat", lambda *a, **k: coarse(real_lstat(*a, **k)))
        monkeypatch.setattr(os, "fstat", lambda *a, **k: coarse(real_fstat(*a, **k)))
        monkeypatch.setattr(os, "stat", lambda *a, **k: coarse(real_stat(*a, **k)))
        monkeypatch.setattr(os, "scandir", Listing)

    @staticmethod
    def coarse(info):
        fields = {name: getattr(info, name) for name in dir(info) if name.startswith("st_")}
        for name in ("st_mtime_ns", "st_ctime_ns", "st_atime_ns"):
            fields[name] = fields[name] // 1_000_000_000 * 1_000_000_000
        return types.SimpleNamespace(**fields)


def early_in_a_second() -> None:
    """Wait until the next second has just begun, so the writes that follow share one."""
    time.sleep(1 - time.time() % 1 + 0.01)


def test_a_file_changed_within_the_timestamp_granule_of_its_read_is_read_again(tmp_path, monkeypatch):
    work, base = start(tmp_path, {"app.py": "x = 1\n", "other.py": "y = 1\n"})
    CoarseTimes(monkeypatch)
    early_in_a_second()
    (work / "app.py").write_text("x = 2\n")
    ws.save_tree(work, base)  # read in the same second as the write: its stat cannot be trusted
    assert gitstore.StatCache.open(base / ws.STAT_CACHE).files["app.py"][0] == -1  # known, not trusted
    (work / "app.py").write_text("x = 3\n")  # the same second: size, mtime and ctime all unchanged
    started = os.lstat(work / "app.py")
    assert "+x = 3" in ws.diff(work, base)
    assert int(time.time()) == started.st_mtime_ns // 1_000_000_000, "the test took over a second; it proves nothing then"
    # once the second (and the 2 s window of a whole-second file system) is past, the stat is trusted again
    monkeypatch.setattr(gitstore, "_clock", lambda: time.time_ns() + 10_000_000_000)
    reads = count_reads(monkeypatch)
    ws.save_tree(work, base)
    assert "app.py" in {Path(p).name for p in reads}  # read once more, and now old enough to be trusted
    reads.clear()
    ws.save_tree(work, base)
    assert reads == []


@pytest.mark.parametrize("coarse", [False, True], ids=["ns-times", "whole-seconds"])
def test_a_file_edited_during_a_save_is_seen_by_the_next(tmp_path, monkeypatch, coarse):
    work, base = start(tmp_path, {"a.py": "a = 1\n", "b.py": "b = 1\n"})
    settle()
    ws.save_tree(work, base)
    if coarse:
        CoarseTimes(monkeypatch)
        early_in_a_second()
    real = gitstore.read_for_cache
    (work / "a.py").write_text("a = 2\n")

    def read_then_edit(path, info):
        out = real(path, info)
        if path.endswith("a.py"):  # the agent writes again just after Horizon read it
            old = os.lstat(path)
            Path(path).write_text("a = 3\n")
            os.utime(path, ns=(old.st_atime_ns, old.st_mtime_ns))
        return out

    monkeypatch.setattr(gitstore, "read_for_cache", read_then_edit)
    first = ws.save_tree(work, base)
    monkeypatch.setattr(gitstore, "read_for_cache", real)
    assert tree_files(base, first)["a.py"][1] == b"a = 2\n"  # what was read
    assert tree_files(base, ws.save_tree(work, base))["a.py"][1] == b"a = 3\n"


def test_deletions_renames_mode_changes_and_links_are_seen(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("never stored\n")
    work, base = start(tmp_path, {"keep.py": "k\n", "gone.py": "g\n", "old/name.py": "n = 1\n" * 20, "tool.sh": "echo\n",
                                  "target.txt": "t\n", "swap/inner.py": "i\n"})  # fmt: skip
    settle()
    ws.save_tree(work, base)
    (work / "gone.py").unlink()
    (work / "new").mkdir()
    (work / "old" / "name.py").rename(work / "new" / "name.py")
    (work / "tool.sh").chmod(0o755)
    (work / "keep.py").unlink()
    (work / "keep.py").symlink_to("target.txt")  # a file replaced by a link to another
    (work / "out").symlink_to(outside)  # a link to a folder outside: stored as a link, never entered
    (work / "swap" / "inner.py").unlink()
    (work / "swap").rmdir()
    (work / "swap").write_text("now a file\n")  # a folder replaced by a file of its name
    tree = ws.save_tree(work, base)
    files = tree_files(base, tree)
    assert "gone.py" not in files and "old/name.py" not in files and files["new/name.py"][1] == b"n = 1\n" * 20
    assert files["tool.sh"][0] == "100755"
    assert files["keep.py"] == ("120000", b"target.txt") and files["out"] == ("120000", os.fsencode(outside))
    assert not any(p.startswith("out/") for p in files) and files["swap"] == ("100644", b"now a file\n")
    patch = ws.diff(work, base)
    assert "rename from old/name.py" in patch and "old mode 100644\nnew mode 100755" in patch and "deleted file mode 100644\nindex" in patch
    os.replace(work / "keep.py", work / "kept")  # a link moved: same target
    (work / "tmp").symlink_to("other.txt")
    os.replace(work / "tmp", work / "out")  # a link's target changed (a new link in its place)
    files = tree_files(base, ws.save_tree(work, base))
    assert files["kept"] == ("120000", b"target.txt") and files["out"] == ("120000", b"other.txt") and "keep.py" not in files
    assert tree == git_write_tree_of(base, tree)


def git_write_tree_of(base: Path, tree: str) -> str:
    """The tree again through git's own index (``update-index`` and ``write-tree``): git agrees."""
    return gitstore.write_tree(base, gitstore.list_tree(base, tree), base / "check.index")


def test_a_gitignore_edited_in_a_folder_that_did_not_change_is_applied(tmp_path):
    work, base = start(tmp_path, {"pkg/.gitignore": "*.log\n", "pkg/a.log": "l\n", "pkg/start.csv": "0\n", "pkg/sub/deep.py": "d\n"})
    for rel in ("pkg/data.csv", "pkg/sub/more.csv"):  # new since the start: untracked, so .gitignore applies
        (work / rel).write_text("1\n")
    settle()
    ws.save_tree(work, base)
    ws.save_tree(work, base)  # the folder records are made: the next save does not list these folders
    assert "pkg/data.csv" in tree_files(base, ws.save_tree(work, base))
    folder = os.lstat(work / "pkg")
    with open(work / "pkg" / ".gitignore", "a") as out:  # edited in place: the folder's own stat is the same
        out.write("*.csv\n")
    assert os.lstat(work / "pkg").st_mtime_ns == folder.st_mtime_ns
    files = tree_files(base, ws.save_tree(work, base))
    assert "pkg/data.csv" not in files and "pkg/sub/more.csv" not in files and "pkg/sub/deep.py" in files
    assert "pkg/start.csv" in files  # in the baseline: tracked, never ignored (as git)
    assert "pkg/a.log" not in files  # ignored from the start


def test_a_new_process_reads_the_cache_from_disk_and_misses_nothing(tmp_path, monkeypatch):
    work, base = start(tmp_path, {f"m{i}.py": f"x = {i}\n" for i in range(20)})
    settle()
    ws.save_tree(work, base)
    (work / "m3.py").write_text("x = 'three'\n")
    ws.save_tree(work, base)
    monkeypatch.setattr(gitstore, "_MEMORY", {})  # as a new process: nothing in memory
    reads = count_reads(monkeypatch)
    (work / "m5.py").write_text("x = 'five'\n")
    files = tree_files(base, ws.save_tree(work, base))
    assert files["m3.py"][1] == b"x = 'three'\n" and files["m5.py"][1] == b"x = 'five'\n"
    assert "m0.py" not in {Path(p).name for p in reads}  # the cache on disk spared the unchanged files


def test_an_unreadable_or_foreign_cache_file_only_costs_reading_again(tmp_path, monkeypatch):
    work, base = start(tmp_path, {"a.py": "a\n"})
    (base / ws.STAT_CACHE).write_bytes(b"not a cache")
    monkeypatch.setattr(gitstore, "_MEMORY", {})
    (work / "a.py").write_text("b\n")
    assert "+b" in ws.diff(work, base)


def test_a_database_made_again_at_the_same_path_gets_every_blob(tmp_path):
    import shutil

    work, base = start(tmp_path, {"a.py": "a\n", "pkg/b.py": "b\n"})
    settle()
    ws.save_tree(work, base)
    shutil.rmtree(base)  # the same workspace, unchanged, and a new database where the old one was
    ws.snapshot(work, base)
    tree = ws.save_tree(work, base)
    assert tree_files(base, tree) == {"a.py": ("100644", b"a\n"), "pkg/b.py": ("100644", b"b\n")}
    subprocess.run(["git", f"--git-dir={base}", "fsck", "--strict", "--no-dangling"], check=True, capture_output=True)
