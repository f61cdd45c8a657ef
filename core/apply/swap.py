"""The swap and its journal: ``_commit`` puts a staged tree at the repository's path in one
``renameat2(RENAME_EXCHANGE)`` (or two renames under the journal, where the filesystem cannot
exchange two paths) and finishes the transaction; ``recover`` finishes or rolls back one that a
kill cut short."""

from __future__ import annotations

import errno
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.apply.area import _Area, area_of
from core.apply.files import _fsync_dir, _prune, _read_json, _rmtree, _write_json
from core.apply.libc import _exchange, _syncfs
from core.errors import UserError


@dataclass
class Outcome:
    """What ``apply_patch`` or ``undo`` did.

    Attributes:
        state: ``applied`` (the repository holds the patched tree) or ``restored`` (an undo put
            the touched files back).
        repo: the repository.
        run_id: the run whose patch it was.
        files: how many paths changed.
        backup: where the touched files' old versions are kept (None after an undo).
        swap: ``exchange`` (one atomic system call) or ``two renames`` (the journaled fallback).
        notes: what else a person should know (an earlier transaction recovered, a folder left).
    """

    state: str
    repo: Path
    run_id: str
    files: int
    backup: Path | None
    swap: str
    notes: list[str] = field(default_factory=list)


def _commit(area: _Area, tx: Path, record: dict[str, Any], run_record: Path, notes: list[str]) -> Outcome:
    """Swap the staged tree in and finish; before the swap any failure leaves the repository as it was.

    Ctrl-C (SIGINT) is held back from the journal to the end, so Python never stops between the
    swap and its record; a SIGKILL there is what ``recover`` is for.
    """
    repo = area.repo
    new = tx / "new"
    _write_json(tx / "record.json", record, compact=True)
    journal = {"op": record["op"], "tx": tx.name, "run_id": record["run_id"], "repo": str(repo),
               "run_record": str(run_record), "new_inode": _inode(new), "repo_inode": _inode(repo)}
    with _held_signals() as held:
        try:
            swap = _swap(area, tx, journal)
        except BaseException:
            if _inode(repo) != journal["new_inode"]:  # not swapped: put everything back as it was
                if _inode(repo) is None and _inode(tx / "old") == journal["repo_inode"]:
                    os.rename(tx / "old", repo)
                if area.journal.exists():
                    area.journal.unlink()
                _rmtree(tx)
                raise
            swap = journal.get("swap", "exchange")
        # from here on the repository holds the new tree, whatever happens
        try:
            _finish(area, journal, notes)
        except OSError as exc:
            notes.append(f"the swap is done, but tidying up failed ({exc}); the next agent apply on {repo} finishes it")
    if held:
        notes.append("Ctrl-C came during the swap; it waited until the transaction was complete")
    files = len(record["touched"])
    if record["op"] == "apply":
        return Outcome("applied", repo, record["run_id"], files, tx / "before", swap, notes)
    return Outcome("restored", repo, record["run_id"], files, None, swap, notes)


def _swap(area: _Area, tx: Path, journal: dict[str, Any]) -> str:
    """Put the staged tree ``tx/new`` at the repository's path; the old tree ends at ``tx/new``
    (exchange) or ``tx/old`` (two renames). Returns the way it was done."""
    repo, new = area.repo, tx / "new"
    _syncfs(new)
    journal["swap"] = "exchange"
    _write_json(area.journal, journal)
    try:
        _exchange(new, repo)
        _fsync_dir(repo.parent)
        return "exchange"
    except OSError as exc:
        if exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EXDEV, errno.ENOTSUP):
            area.journal.unlink()
            raise UserError(f"cannot swap the new files into {repo}: {exc.strerror}") from None
    journal["swap"] = "two renames"
    _write_json(area.journal, journal)
    os.rename(repo, tx / "old")
    os.rename(new, repo)  # killed just before this line: the repository is missing until recover()
    _fsync_dir(repo.parent)
    return "two renames"


def _old_tree(tx: Path, journal: dict[str, Any]) -> Path | None:
    """Where the swapped-out tree of a transaction is, if it still exists."""
    for name in ("new", "old"):
        if _inode(tx / name) == journal["repo_inode"]:
            return tx / name
    return None


def _finish(area: _Area, journal: dict[str, Any], notes: list[str]) -> None:
    """The steps after the swap, each safe to repeat: keep the backup (apply) or drop the old
    tree and the undone backup (undo), write the records, forget the journal."""
    tx = area.path / journal["tx"]
    record = _read_json(tx / "record.json")
    record["swap"] = journal.get("swap", "exchange")
    old = _old_tree(tx, journal)
    if journal["op"] == "apply":
        before = tx / "before"
        if old is not None:
            os.rename(old, before)
        if before.exists():
            _prune(before, set(record["touched"]))
        record["state"] = "applied"
    else:
        if old is not None:
            os.rename(old, tx / "trash")
        _rmtree(tx / "trash")
        record["state"] = "restored"
    _write_json(tx / "record.json", record, compact=True)
    run_record = Path(journal["run_record"])
    for tmp in [*tx.glob("*.tmp-*"), *run_record.parent.glob(run_record.name + ".tmp-*")]:  # a write a kill cut short
        tmp.unlink()
    if run_record.parent.is_dir():
        if journal["op"] == "apply":
            _write_json(run_record, _public_record(record))
        elif run_record.is_file():
            applied = _read_json(run_record)
            applied.update(state="undone", undone_at=record["created_at"], backup=None)
            _write_json(run_record, applied)
    if journal["op"] == "undo":
        undone = area.path / record["undoes"]
        if not _rmtree(undone):
            notes.append(f"could not remove the old backup {undone}; remove it by hand")
    area.journal.unlink()
    _fsync_dir(area.path)
    if journal["op"] == "undo":
        _rmtree(tx)  # killed before this: the next recover removes it (no before/)


def _public_record(record: dict[str, Any]) -> dict[str, Any]:
    """The run folder's ``apply.json``: what was applied, when, where the backup is (its
    ``record.json`` holds every touched path's state before and after, for ``undo``)."""
    return {k: record[k] for k in ("run_id", "state", "repo", "swap", "tx", "backup", "files")} | {
        "applied_at": record["created_at"], "undone_at": None, "paths": len(record["touched"])}


@contextmanager
def _held_signals() -> Iterator[list[int]]:
    """SIGINT, SIGTERM and SIGHUP recorded instead of acted on inside the block (main thread
    only); yields the list of those that came."""
    came: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield came
        return
    wanted = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {sig: signal.signal(sig, lambda signum, _frame: came.append(signum)) for sig in wanted}
    try:
        yield came
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _inode(path: Path) -> list[int] | None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return None
    return [st.st_dev, st.st_ino]


def recover(repo: Path) -> list[str]:
    """Finish or roll back a transaction on ``repo`` that a kill cut short, and remove what it
    left (staged trees, half-made folders). ``apply_patch`` and ``undo`` call it first.

    Args:
        repo: the repository.

    Returns:
        One line per thing done, for the user (empty when there was nothing to recover).

    Raises:
        UserError: the repository's path was replaced by something else meanwhile; the old and
            new trees are left where they are, and the message names them.
    """
    repo = Path(os.path.realpath(repo))
    if not area_of(repo).is_dir():
        return []
    with _Area(repo) as area:
        return _recover(area)


def _recover(area: _Area) -> list[str]:
    notes: list[str] = []
    repo = area.repo
    if area.journal.is_file():
        journal = _read_json(area.journal)
        tx = area.path / journal["tx"]
        what = f"an interrupted agent apply{' --undo' if journal['op'] == 'undo' else ''} of run {journal['run_id']}"
        here = _inode(repo)
        if here == journal["new_inode"]:
            _finish(area, journal, notes)
            notes.append(f"{what} was finished: its swap had happened, so {repo} holds its result")
        elif here is None and (tx / "new").is_dir() and (tx / "old").is_dir():
            os.rename(tx / "new", repo)  # the second rename of the fallback swap
            _fsync_dir(repo.parent)
            _finish(area, journal, notes)
            notes.append(f"{what} was finished: it was killed between its two renames and {repo} was missing; it is back, with the result")
        elif here == journal["repo_inode"]:
            area.journal.unlink()
            _rmtree(tx)
            notes.append(f"{what} was rolled back: it was killed before its swap, so {repo} was never changed")
        else:
            raise UserError(
                f"{what} cannot be recovered: {repo} is neither the tree before it nor the one after it "
                f"(replaced meanwhile?). The trees are in {tx} (new/ or old/); {area.journal} describes them. "
                f"Move what you need, then delete {area.journal}."
            )
    # what a transaction without a journal left: a staged tree never swapped, a finished undo's
    # folder; what stays is a backup (before/ and its record)
    for tx in sorted(area.path.glob("tx-*")):
        backup = (tx / "before").is_dir() and (tx / "record.json").is_file()
        unfinished = not backup or any(os.path.lexists(tx / name) for name in ("new", "old", "trash"))
        if unfinished and not _rmtree(tx):
            notes.append(f"could not remove {tx}; remove it by hand")
    for tmp in [*area.path.glob("*.tmp-*"), *area.path.glob("tx-*/*.tmp-*")]:
        _rmtree(tmp)
    return notes
