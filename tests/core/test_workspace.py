"""Workspaces: private copies, a baseline outside them, and patches that apply to the user's repo."""

import subprocess
from pathlib import Path

import pytest

from core import workspace as ws
from core.errors import UserError


def make_repo(path: Path, git: bool) -> Path:
    path.mkdir()
    (path / "app.py").write_text("x = 1\n")
    (path / "notes.txt").write_text("keep\n")
    (path / ".gitignore").write_text("secret.env\n")
    (path / "secret.env").write_text("TOKEN=1\n")
    if git:
        subprocess.run(["git", "init", "-q"], cwd=path, check=True)
        subprocess.run(["git", "add", "app.py", ".gitignore"], cwd=path, check=True)
    return path


def start_episode(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """Copy ``repo`` into a workspace and snapshot it, as a run starts; return (workspace, baseline)."""
    work, base = tmp_path / "w", tmp_path / "base.git"
    ws.copy_repository(repo, work)
    ws.snapshot(work, base)
    return work, base


def test_git_repo_copy_skips_ignored_files_and_keeps_git(tmp_path):
    repo = make_repo(tmp_path / "repo", git=True)
    ws.copy_repository(repo, tmp_path / "w")
    assert (tmp_path / "w" / "app.py").read_text() == "x = 1\n"
    assert (tmp_path / "w" / "notes.txt").exists()  # untracked, not ignored
    assert not (tmp_path / "w" / "secret.env").exists()
    assert (tmp_path / "w" / ".git" / "HEAD").exists()


def test_patch_covers_edits_new_and_deleted_files_but_not_caches(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    work, base = start_episode(repo, tmp_path)
    assert ws.diff(work, base) == ""
    (work / "app.py").write_text("x = 2\n")
    (work / "new.py").write_text("y = 1\n")
    (work / "notes.txt").unlink()
    (work / "__pycache__").mkdir()
    (work / "__pycache__" / "app.cpython-311.pyc").write_bytes(b"\0\1")
    patch = ws.diff(work, base)
    assert "+x = 2" in patch and "new.py" in patch and "deleted file" in patch
    assert "__pycache__" not in patch
    # the user's files are untouched until the patch is applied
    assert (repo / "app.py").read_text() == "x = 1\n"
    (tmp_path / "p.diff").write_text(patch)
    ws.apply_patch(repo, tmp_path / "p.diff")
    assert (repo / "app.py").read_text() == "x = 2\n"
    assert (repo / "new.py").exists() and not (repo / "notes.txt").exists()


def test_apply_inside_an_enclosing_git_repository(tmp_path):
    outer = tmp_path / "outer"
    outer.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=outer, check=True)
    repo = make_repo(outer / "sub", git=False)
    work, base = start_episode(repo, tmp_path)
    (work / "app.py").write_text("x = 3\n")
    (tmp_path / "p.diff").write_text(ws.diff(work, base))
    ws.apply_patch(repo, tmp_path / "p.diff")
    assert (repo / "app.py").read_text() == "x = 3\n"


def test_a_patch_that_no_longer_applies_changes_nothing(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    work, base = start_episode(repo, tmp_path)
    (work / "app.py").write_text("x = 2\n")
    (work / "notes.txt").write_text("changed\n")
    (tmp_path / "p.diff").write_text(ws.diff(work, base))
    (repo / "app.py").write_text("x = 100\n")  # the user changed the file meanwhile
    with pytest.raises(UserError, match="does not apply"):
        ws.apply_patch(repo, tmp_path / "p.diff")
    assert (repo / "notes.txt").read_text() == "keep\n"


def test_copy_of_a_missing_folder_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not a folder"):
        ws.copy_repository(tmp_path / "nope", tmp_path / "w")


def test_apply_refuses_empty_and_already_applied_patches(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    work, base = start_episode(repo, tmp_path)
    (tmp_path / "empty.diff").write_text("")
    with pytest.raises(UserError, match="empty"):
        ws.apply_patch(repo, tmp_path / "empty.diff")
    (work / "app.py").write_text("x = 2\n")
    (tmp_path / "p.diff").write_text(ws.diff(work, base))
    ws.apply_patch(repo, tmp_path / "p.diff")
    with pytest.raises(UserError, match="already applied"):
        ws.apply_patch(repo, tmp_path / "p.diff")
    assert (repo / "app.py").read_text() == "x = 2\n"


def test_a_cut_short_call_is_rolled_back_before_it_runs_again(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    work, base = start_episode(repo, tmp_path)
    journal = ws.CallJournal(work, base, tmp_path / "inflight.json")
    assert journal.before("call_1") is False
    (work / "app.py").write_text("half-written")  # the call's partial effects, then a crash
    (work / "stray.txt").write_text("left behind")
    (work / "notes.txt").unlink()
    assert journal.before("call_1") is True  # the same call again, on resume
    assert (work / "app.py").read_text() == "x = 1\n" and (work / "notes.txt").read_text() == "keep\n"
    assert not (work / "stray.txt").exists()
    (work / "app.py").write_text("x = 5\n")  # call_1 completes this time
    assert journal.before("call_2") is False  # a new call: nothing to undo
    assert (work / "app.py").read_text() == "x = 5\n"


def test_a_failing_git_command_is_a_user_error_naming_it(tmp_path):
    """A git failure reads as one line with git's own message (it used to raise NameError)."""
    from core.errors import UserError
    from core.workspace import restore_tree, snapshot

    workspace, baseline = tmp_path / "ws", tmp_path / "baseline.git"
    workspace.mkdir()
    (workspace / "a.txt").write_text("a\n")
    snapshot(workspace, baseline)
    try:
        restore_tree(workspace, baseline, "0" * 40)  # no such tree
    except UserError as exc:
        assert str(exc).startswith("git ") and "failed:" in str(exc)
    else:
        raise AssertionError("restoring a missing tree succeeded")
