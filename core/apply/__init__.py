"""``agent apply``: a run's patch reviewed, then applied to the user's repository in one atomic
step, with an undo.

The user's repository changes all at once or not at all::

    review   the patch's file sections read into what it adds, modifies, deletes, renames, makes
             executable or a symbolic link (``review_patch``), cross-checked with git's own reading
             (``git apply --numstat``); links that leave the repository and changes inside ``.git``
             are refused unless allowed
    stage    next to the repository, on the same filesystem: a copy of the repository whose
             unchanged files are hard links and whose changed files are new files, the patch
             applied there by ``git apply``; then checked: every path that differs from the
             repository is one the review lists, and no link leaves the tree
    swap     ``renameat2(RENAME_EXCHANGE)`` swaps the staged folder and the repository in one
             system call: killed at any instant (SIGKILL, power loss), the repository's path
             names either the old tree or the new one
    finish   the old tree, pruned to the files the patch touched, is kept as the backup that
             ``undo`` puts back (``agent apply --undo RUN_ID``, itself the same kind of
             transaction); the run's folder records what was applied (``apply.json``)

Where the filesystem cannot exchange two paths (``EINVAL``, ``ENOSYS``, ``EXDEV``: some network
and FUSE filesystems, kernels before 3.15, a C library without ``renameat2``), the swap is two
renames (repository -> ``old``, staged -> repository) under a journal. Killed between the two,
the repository's path is missing until the next ``agent apply`` or ``agent apply --undo`` on that
repository, whose first act (``recover``) finishes the swap.

Everything lives in a transaction folder beside the repository ``<parent>/<name>``::

    <parent>/.horizon-apply.<name>/     mode 0700; refused if it is not a folder you own
        lock                            flock: one transaction per repository at a time
        git/                            an empty git database: git runs with it, never with the
                                        repository's own configuration, hooks or filters
        journal.json                    the transaction in flight, from just before the swap until
                                        it is finished; ``recover`` reads it
        tx-<id>/record.json             what the transaction did (also the run's ``apply.json``)
        tx-<id>/new/                    the staged tree, until the swap
        tx-<id>/old/                    the old tree between the two renames (fallback only)
        tx-<id>/before/                 after an apply: the touched files as they were (the backup)

The backups of the last ``KEEP_BACKUPS`` applies to a repository are kept; older ones are
removed at the start of the next apply, and an undone apply's backup at once. Unchanged files of
the staged tree are hard links to the repository's, so staging costs directory entries, not data;
the backups keep only the touched files.

What it does not promise: a program that edits the repository while ``agent apply`` runs may
lose that edit (a file replaced between staging and the swap is in the old tree); a shell, editor
or process whose current folder is inside the repository keeps seeing the old folder after the
swap (``cd .`` in a shell moves it to the new one); extended attributes and ACLs of folders are
not copied to the new tree; hard links between two files of the repository become two files
when one of them is patched.

The parts, in the order a transaction uses them::

    review.py       the review and its flags and refusals, ``format_review`` (diff.py reads the
                    patch's sections; paths.py: printable names, where a link leads)
    git.py          git with a scrubbed environment and the empty database
    area.py         the transaction folder and its lock
    files.py        hard-link copies of trees, their differences, durable records, removal
    stage.py        the new tree of an apply or an undo, staged and checked
    swap.py         the swap (libc.py: ``renameat2``), its journal, ``recover``
    transaction.py  ``apply_patch``, ``undo``, the backups kept
    runs.py         the same by run id
"""

from __future__ import annotations

from core.apply.area import area_of
from core.apply.files import _read_json as _read_json  # the tests read records with it
from core.apply.paths import printable
from core.apply.review import Change, Flag, Review, format_review, review_patch
from core.apply.runs import apply_run_patch, recover_run, review_run, undo_run
from core.apply.swap import Outcome, recover
from core.apply.transaction import KEEP_BACKUPS, apply_patch, undo, undo_summary

__all__ = [
    "KEEP_BACKUPS", "Change", "Flag", "Outcome", "Review", "apply_patch", "apply_run_patch", "area_of", "format_review",
    "printable", "recover", "recover_run", "review_patch", "review_run", "undo", "undo_run", "undo_summary",
]
