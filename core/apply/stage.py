"""Staging beside the repository, where nothing of the user's changes: the new tree of an apply
(a hard-link copy with the patch applied by git, the old permissions kept, then checked against
the review) or of an undo (the touched files put back from the backup), with the record of what
it changes."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from core.apply.area import _Area
from core.apply.files import _changed_paths, _copy_fresh, _dir_modes, _finish_dirs, _link_or_copy, _link_tree, _rmtree, _state
from core.apply.git import _git
from core.apply.paths import EXEC_MODE, _ancestors, _is_git_path, _readlink, _resolve_link, printable
from core.apply.review import Review
from core.errors import UserError


def _stage_apply(area: _Area, tx: Path, review: Review, run_id: str, run_record: Path, extra: list[str], *,
                 allow_outside_links: bool, allow_git_dir: bool) -> dict[str, Any]:
    repo, new = area.repo, tx / "new"
    touched = review.touched()
    (tx / "patch.diff").write_bytes(review.data)
    modes = _link_tree(repo, new)
    # changed files become new files before git writes them: the repository's inodes are never written
    fresh = {c.old_path for c in review.changes if c.kind == "modify" and c.old_path}
    for rel in fresh:
        if (new / rel).is_file() and not (new / rel).is_symlink():
            os.unlink(new / rel)
            _copy_fresh(repo / rel, new / rel)
    proc = _git(["apply", *extra, str(tx / "patch.diff")], new, area.git_dir, lock_fd=area.fd)
    if proc.returncode != 0:
        raise UserError(f"git apply failed on the staged copy: {proc.stderr.decode(errors='replace').strip()}; your files are unchanged")
    _keep_permissions(repo, new, review)
    _finish_dirs(new, modes)
    before = {rel: _state(repo / rel) for rel in touched}
    after = {rel: _state(new / rel) for rel in touched}
    _verify(repo, new, touched, allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir)
    return {
        "op": "apply", "run_id": run_id, "repo": str(repo), "created_at": _now(), "tx": tx.name,
        "backup": str(tx / "before"), "run_record": str(run_record), "state": "staged",
        "files": {
            "added": [c.path for c in review.of_kind("add")] + [c.path for c in review.of_kind("copy")],
            "modified": [c.path for c in review.of_kind("modify")],
            "deleted": [c.path for c in review.of_kind("delete")],
            "renamed": [[c.old_path, c.path] for c in review.of_kind("rename")],
            "mode_changed": [c.path for c in review.mode_changes],
        },
        "touched": {rel: {"before": before[rel], "after": after[rel]} for rel in touched},
        "dirs_before": _dir_modes(repo, touched), "dirs_after": _dir_modes(new, touched),
    }


def _keep_permissions(repo: Path, new: Path, review: Review) -> None:
    """git writes a patched file with default permissions: give it back the old file's (a private
    0600 file stays private), with the executable bits the patch asks for; as root, the owner too."""
    as_root = os.geteuid() == 0
    for c in review.changes:
        if c.kind == "delete" or not c.old_path or c.kind == "add":
            continue
        target = new / c.path
        try:
            old, now = os.lstat(repo / c.old_path), os.lstat(target)
        except FileNotFoundError:
            continue
        if not (stat.S_ISREG(old.st_mode) and stat.S_ISREG(now.st_mode)):
            continue
        mode = stat.S_IMODE(old.st_mode)
        if c.new_mode == EXEC_MODE:
            mode |= (mode & 0o444) >> 2
        elif c.new_mode == "100644":
            mode &= ~0o111
        os.chmod(target, mode)
        if as_root:
            os.chown(target, old.st_uid, old.st_gid)
    if as_root:  # new files: owned like the folder they are in
        for c in review.changes:
            if c.kind in ("add", "copy") and os.path.lexists(new / c.path):
                parent = os.lstat((new / c.path).parent)
                os.chown(new / c.path, parent.st_uid, parent.st_gid, follow_symlinks=False)


def _verify(repo: Path, new: Path, touched: list[str], *, allow_outside_links: bool, allow_git_dir: bool) -> None:
    """Check the staged tree itself, not the patch's text: only reviewed paths (and the folders
    above them) differ from the repository, and no link in them leaves the tree."""
    allowed = set(touched) | {a for p in touched for a in _ancestors(p)}
    extra = sorted(_changed_paths(repo, new) - allowed)
    if extra:
        raise UserError(f"the staged result changes paths the review does not list ({', '.join(printable(p) for p in extra[:5])}); "
                        f"not applied, your files are unchanged")
    for rel in touched:
        if not allow_git_dir and _is_git_path(rel):
            raise UserError(f"the patch changes {printable(rel)} inside .git; not applied, your files are unchanged")
        target = _readlink(new / rel)
        if target is None:
            continue
        where = _resolve_link(new, repo, rel, target)
        if where is None and not allow_outside_links:
            raise UserError(f"the symbolic link {printable(rel)} -> {printable(target)} leaves the repository; not applied, your files are unchanged")
        if where is not None and _is_git_path(where) and not allow_git_dir:
            raise UserError(f"the symbolic link {printable(rel)} -> {printable(target)} points into .git; not applied, your files are unchanged")


def _stage_undo(area: _Area, tx: Path, full: dict[str, Any], run_record: Path, notes: list[str]) -> dict[str, Any]:
    repo, new = area.repo, tx / "new"
    before_tree = area.path / full["tx"] / "before"
    touched: dict[str, dict[str, Any]] = full["touched"]
    modes = _link_tree(repo, new)
    for rel in sorted(touched, key=lambda p: -p.count("/")):
        path = new / rel
        if os.path.lexists(path):
            if path.is_dir() and not path.is_symlink():
                _rmtree(path)
            else:
                path.unlink()
    dirs_before: dict[str, int] = full["dirs_before"]
    for d in sorted(set(full["dirs_after"]) - set(dirs_before), key=lambda p: -p.count("/")):
        try:
            os.rmdir(new / d)
            modes.pop(d, None)
        except FileNotFoundError:
            pass
        except OSError:
            notes.append(f"kept the folder {printable(d)}, made by the patch: it holds files added since")
    for d in sorted(dirs_before, key=lambda p: p.count("/")):
        if not os.path.isdir(new / d):
            os.mkdir(new / d, 0o700)
            modes[d] = (dirs_before[d], *_owner(new / d))
    for rel, s in touched.items():
        if s["before"] is not None:
            _link_or_copy(before_tree / rel, new / rel)
    _finish_dirs(new, modes)
    for rel, s in touched.items():
        if _state(new / rel) != s["before"]:
            raise UserError(f"the backup of {printable(rel)} does not match what was there before; not undone, your files are unchanged")
    return {
        "op": "undo", "run_id": full["run_id"], "repo": str(repo), "created_at": _now(), "tx": tx.name, "undoes": full["tx"],
        "backup": None, "run_record": str(run_record), "state": "staged", "files": full["files"],
        "touched": {rel: {"before": s["after"], "after": s["before"]} for rel, s in touched.items()},
    }


def _owner(path: Path) -> tuple[int, int]:
    st = os.lstat(path.parent)
    return st.st_uid, st.st_gid


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
