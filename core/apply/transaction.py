"""``apply_patch`` and ``undo``, each one transaction: recover what a kill left, check, stage the
new tree beside the repository (``stage``), swap it in (``swap``). The backups of the last
``KEEP_BACKUPS`` applies to a repository are kept for ``undo``."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from core.apply.area import _Area
from core.apply.files import _read_json, _rmtree, _state, _write_json
from core.apply.git import _git
from core.apply.paths import _resolved_repo, printable
from core.apply.review import Review
from core.apply.stage import _stage_apply, _stage_undo
from core.apply.swap import Outcome, _commit, _recover
from core.errors import UserError

#: How many applies per repository keep their backup (for ``undo``).
KEEP_BACKUPS = 5


def apply_patch(review: Review, *, run_id: str, run_record: Path, allow_outside_links: bool = False,
                allow_git_dir: bool = False) -> Outcome:
    """Apply a reviewed patch to its repository as one transaction (see ``core.apply``).

    Args:
        review: from ``review_patch``; exactly its bytes are applied.
        run_id: the run the patch comes from (recorded).
        run_record: where to record what was applied (the run folder's ``apply.json``).
        allow_outside_links: apply symbolic links whose target leaves the repository.
        allow_git_dir: apply changes inside ``.git``.

    Returns:
        The outcome: ``state`` is ``applied``; the repository holds the new tree.

    Raises:
        UserError: the review refuses the patch, the patch is already applied or does not apply
            to the repository as it is now, the repository cannot be staged or swapped (a mount
            point, an unwritable parent folder), or another apply is running. The repository is
            unchanged in every one of these cases, and the message says so.
    """
    refused = review.refusals(allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir)
    if refused:
        raise UserError("not applied: " + "; ".join(refused) + "; your files are unchanged")
    repo = review.repo
    if os.path.ismount(repo):
        raise UserError(f"{repo} is a mount point; agent apply cannot swap it (apply by hand: git apply {review.patch})")
    with _Area(repo) as area:
        notes = _recover(area)
        extra = ["--unsafe-paths"] if allow_git_dir else []
        check = _git(["apply", "--check", *extra, "-"], repo, area.git_dir, stdin=review.data)
        if check.returncode != 0:
            reverse = _git(["apply", "--check", "--reverse", *extra, "-"], repo, area.git_dir, stdin=review.data)
            if reverse.returncode == 0:
                raise UserError(f"the patch is already applied to {repo}; your files are unchanged")
            raise UserError(
                f"the patch does not apply to {repo}: {check.stderr.decode(errors='replace').strip()}; your files are "
                f"unchanged. Inspect it with: git apply --stat {review.patch}"
            )
        notes += _prune_backups(area, KEEP_BACKUPS - 1)  # with this one, KEEP_BACKUPS
        return _stage_and_commit(area, repo, "new", run_record, notes, lambda tx: _stage_apply(
            area, tx, review, run_id, run_record, extra, allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir))


def _stage_and_commit(area: _Area, repo: Path, which: str, run_record: Path, notes: list[str],
                      stage: Callable[[Path], dict[str, Any]]) -> Outcome:
    """Stage a tree in a new transaction folder with ``stage(tx)`` and swap it in (``_commit``);
    a failure while staging removes the folder and leaves the repository as it was.

    Raises:
        UserError: the ``which`` ("new" or "old") files cannot be staged beside ``repo``.
    """
    tx = area.new_tx()
    try:
        record = stage(tx)
    except OSError as exc:
        _rmtree(tx)
        raise UserError(f"cannot stage the {which} files beside {repo}: {exc}; your files are unchanged") from None
    except BaseException:
        _rmtree(tx)
        raise
    return _commit(area, tx, record, run_record, notes)


def _prune_backups(area: _Area, keep: int = KEEP_BACKUPS) -> list[str]:
    """Remove the backups of all but the last ``keep`` applies (their undo is then impossible)."""
    done = sorted(tx for tx in area.path.glob("tx-*") if (tx / "before").is_dir())
    notes = []
    for tx in done[: max(0, len(done) - keep)]:
        record = _read_json(tx / "record.json") if (tx / "record.json").is_file() else {}
        run_record = Path(record.get("run_record", ""))
        if run_record.is_file():
            try:
                applied = _read_json(run_record)
                if applied.get("tx") == tx.name:
                    applied["backup"] = None
                    _write_json(run_record, applied)
            except (OSError, ValueError):
                pass
        if not _rmtree(tx):
            notes.append(f"could not remove the old backup {tx}; remove it by hand")
    return notes


def undo_summary(run_record: Path) -> dict[str, Any]:
    """The record of an apply that ``undo`` would reverse (the run folder's ``apply.json``).

    Raises:
        UserError: the run's patch was never applied by ``agent apply`` (or by an older Horizon
            that kept no record), or it was undone already.
    """
    if not run_record.is_file():
        raise UserError(f"no record of an agent apply of this run ({run_record} is missing): nothing to undo")
    record = _read_json(run_record)
    if record.get("state") != "applied":
        raise UserError(f"the patch of run {record.get('run_id')} was undone already ({record.get('undone_at')}); nothing to undo")
    return record


def undo(run_record: Path) -> Outcome:
    """Put back the files an apply touched, as they were before it, as one transaction.

    Files the patch did not touch are left as they are now: later edits elsewhere survive.

    Args:
        run_record: the run folder's ``apply.json`` written by ``apply_patch``.

    Returns:
        The outcome: ``state`` is ``restored``.

    Raises:
        UserError: nothing to undo, the backup was removed (only the last ``KEEP_BACKUPS`` applies
            per repository keep theirs), the repository is gone, or a file the patch touched
            changed since the apply (the message lists them: undo would lose those changes). The
            repository is unchanged in every one of these cases.
    """
    record = undo_summary(run_record)
    repo = _resolved_repo(Path(record["repo"]))
    with _Area(repo) as area:
        notes = _recover(area)
        record = undo_summary(run_record)  # recovery may have finished an earlier undo
        applied_tx = area.path / record["tx"]
        full = _read_json(applied_tx / "record.json") if (applied_tx / "record.json").is_file() else None
        if full is None or not (applied_tx / "before").is_dir() or full.get("state") != "applied":
            raise UserError(f"the backup of this apply is gone ({applied_tx}; Horizon keeps the last {KEEP_BACKUPS} applies "
                            f"per repository), so it cannot be undone here; use git to revert the files")
        touched: dict[str, dict[str, Any]] = full["touched"]
        changed = [rel for rel, s in touched.items() if _state(repo / rel) != s["after"]]
        if changed:
            shown = ", ".join(printable(p) for p in changed[:10]) + (f" and {len(changed) - 10} more" if len(changed) > 10 else "")
            raise UserError(f"cannot undo: files the patch touched changed since it was applied ({shown}); undo would lose "
                            f"those changes. Your files are unchanged; revert by hand (the old versions are in {applied_tx / 'before'})")
        return _stage_and_commit(area, repo, "old", run_record, notes, lambda tx: _stage_undo(area, tx, full, run_record, notes))
