"""Workspaces: private copies, a baseline outside them, and patches that apply to the user's repo."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from core import apply as patching
from core import workspace as ws
from core.errors import UserError


def apply_patch(repo: Path, patch: Path) -> None:
    """Apply a run's patch the way ``agent apply --yes`` does (``core.apply``)."""
    patching.apply_patch(patching.review_patch(repo, patch), run_id="test", run_record=patch.with_name("apply.json"))


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
    apply_patch(repo, tmp_path / "p.diff")
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
    apply_patch(repo, tmp_path / "p.diff")
    assert (repo / "app.py").read_text() == "x = 3\n"


def test_a_patch_that_no_longer_applies_changes_nothing(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    work, base = start_episode(repo, tmp_path)
    (work / "app.py").write_text("x = 2\n")
    (work / "notes.txt").write_text("changed\n")
    (tmp_path / "p.diff").write_text(ws.diff(work, base))
    (repo / "app.py").write_text("x = 100\n")  # the user changed the file meanwhile
    with pytest.raises(UserError, match="does not apply"):
        apply_patch(repo, tmp_path / "p.diff")
    assert (repo / "notes.txt").read_text() == "keep\n"


def test_copy_of_a_missing_folder_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="not a folder"):
        ws.copy_repository(tmp_path / "nope", tmp_path / "w")


def test_apply_refuses_empty_and_already_applied_patches(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    work, base = start_episode(repo, tmp_path)
    (tmp_path / "empty.diff").write_text("")
    with pytest.raises(UserError, match="empty"):
        apply_patch(repo, tmp_path / "empty.diff")
    (work / "app.py").write_text("x = 2\n")
    (tmp_path / "p.diff").write_text(ws.diff(work, base))
    apply_patch(repo, tmp_path / "p.diff")
    with pytest.raises(UserError, match="already applied"):
        apply_patch(repo, tmp_path / "p.diff")
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


def test_a_tracked_file_stays_in_the_patch_when_gitignore_later_names_it(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    work, base = start_episode(repo, tmp_path)
    (work / ".gitignore").write_text("secret.env\napp.py\nbuild/\n")  # as git: ignore rules skip only untracked files
    (work / "app.py").write_text("x = 5\n")
    (work / "build").mkdir()
    (work / "build" / "out.bin").write_bytes(b"\0")
    patch = ws.diff(work, base)
    assert "+x = 5" in patch and "deleted file" not in patch and "build/out.bin" not in patch


def test_restoring_a_tree_never_writes_through_a_link_the_agent_left(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("A = 1\n")
    work, base = start_episode(repo, tmp_path)
    tree = ws.save_tree(work, base)
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.rmtree(work / "pkg")
    (work / "pkg").symlink_to(outside)  # a folder replaced by a link out of the workspace
    ws.restore_tree(work, base, tree)
    assert list(outside.iterdir()) == []  # nothing written through the link
    assert not (work / "pkg").is_symlink() and (work / "pkg" / "mod.py").read_text() == "A = 1\n"


def test_git_folders_at_any_depth_and_in_any_case_stay_out_of_snapshots(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    work, base = start_episode(repo, tmp_path)
    for nested in ("lib/.git", "vendor/x/.GIT"):
        (work / nested).mkdir(parents=True)
        (work / nested / "config").write_text("[core]\n\tfsmonitor = touch /tmp/never\n")
    (work / "lib" / "mod.py").write_text("y = 1\n")
    patch = ws.diff(work, base)
    assert "lib/mod.py" in patch and ".git/" not in patch and ".GIT/" not in patch


def test_a_very_deep_tree_is_snapshotted_without_recursion(tmp_path):
    repo = make_repo(tmp_path / "repo", git=False)
    work, base = start_episode(repo, tmp_path)
    deep = "/".join(["d"] * 1500)
    subprocess.run(["mkdir", "-p", deep], cwd=work, check=True)  # Python's own makedirs recurses
    try:
        (work / deep / "leaf.txt").write_text("leaf\n")  # absolute path: 3,000 characters, under PATH_MAX
        assert f"b/{deep}/leaf.txt" in ws.diff(work, base)
    finally:  # pytest's clean-up of old temporary folders (shutil.rmtree) recurses too
        subprocess.run(["rm", "-rf", str(work / "d")], check=True)


def test_a_bare_repository_is_refused_with_what_to_do(tmp_path):
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare.git")], check=True)
    with pytest.raises(UserError, match="bare git repository.*git clone"):
        ws.copy_repository(tmp_path / "bare.git", tmp_path / "w")


def test_a_linked_worktree_copies_with_its_git_file_and_tracked_ignored_files_stay(tmp_path):
    main = make_repo(tmp_path / "main", git=True)
    (main / ".gitignore").write_text("secret.env\ngenerated.py\n")
    (main / "generated.py").write_text("G = 1\n")
    subprocess.run(["git", "add", "-f", "generated.py", ".gitignore"], cwd=main, check=True)
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "start"], cwd=main, check=True)
    subprocess.run(["git", "worktree", "add", "-q", str(tmp_path / "wt")], cwd=main, check=True, capture_output=True)
    work, base = tmp_path / "w", tmp_path / "base.git"
    tracked = ws.copy_repository(tmp_path / "wt", work)
    assert (work / ".git").is_file() and "generated.py" in tracked
    ws.snapshot(work, base, tracked)
    (work / "generated.py").write_text("G = 2\n")  # tracked, though .gitignore names it
    assert "+G = 2" in ws.diff(work, base)


def test_fifos_in_the_repository_are_not_copied(tmp_path):
    for git in (False, True):
        repo = make_repo(tmp_path / f"repo-{git}", git=git)
        os.mkfifo(repo / "pipe")
        ws.copy_repository(repo, tmp_path / f"w-{git}")
        assert not (tmp_path / f"w-{git}" / "pipe").exists() and (tmp_path / f"w-{git}" / "app.py").exists()


def test_files_and_folders_it_cannot_read_are_kept_as_last_seen_not_deleted(tmp_path, monkeypatch):
    # as a user other than root, `chmod 000` makes them unreadable (root reads them anyway: simulated)
    from core import gitstore

    repo = make_repo(tmp_path / "repo", git=False)
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_text("A = 1\n")
    work, base = start_episode(repo, tmp_path)
    ws.save_tree(work, base)
    real_scandir, real_read = gitstore.os.scandir, gitstore.read_for_cache

    def scandir(path):
        if Path(path).name == "pkg":
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    def read(path, info):
        if Path(path).name == "app.py":  # the save reads it again: its stat changed
            raise PermissionError(13, "Permission denied", str(path))
        return real_read(path, info)

    (work / "app.py").write_text("x = 9\n")  # changed, then unreadable: its change cannot be seen
    monkeypatch.setattr(gitstore.os, "scandir", scandir)
    monkeypatch.setattr(gitstore, "read_for_cache", read)
    patch = ws.diff(work, base)
    assert "deleted file" not in patch and "pkg/mod.py" not in patch and "x = 9" not in patch
