"""The transaction by run id: a run's final patch reviewed, applied and undone against the
repository the run was started on, recorded in the run's folder (``apply.json``)."""

from __future__ import annotations

from pathlib import Path

from core.apply.review import Review, review_patch
from core.apply.swap import Outcome, recover
from core.apply.transaction import apply_patch, undo
from core.errors import UserError


def _run_files(run_id: str, home: Path | None) -> tuple[Path, Path, Path]:
    """(repository, patch, run folder) of a run."""
    from contextlib import closing

    from core.config import runs_dir
    from core.runs import open_store

    with closing(open_store(run_id, home)) as store:
        row = store.run()
    if not row["repo"]:
        raise UserError(f"run {run_id} has no repository to apply a patch to")
    folder = runs_dir(home) / run_id
    return Path(row["repo"]), folder / "patch.diff", folder


def recover_run(run_id: str, home: Path | None = None) -> list[str]:
    """``recover`` the repository of a run (before showing what an apply or undo would do).

    Raises:
        RunNotFound, UserError: no such run, no repository, or see ``recover``.
    """
    return recover(_run_files(run_id, home)[0])


def review_run(run_id: str, home: Path | None = None, *, recover_first: bool = True) -> Review:
    """``review_patch`` of a run's final patch against the repository it was started on.

    Args:
        recover_first: finish a killed transaction on that repository first (``recover``); False
            for a review that must change nothing (the UI's ``GET /runs/ID/apply``: a GET any
            site can make); the apply itself recovers.

    Raises:
        RunNotFound, UserError: no such run, no repository, or see ``review_patch``.
    """
    repo, patch, _ = _run_files(run_id, home)
    notes = recover(repo) if recover_first else []  # a killed transaction finished (a fallback swap may have left it missing)
    review = review_patch(repo, patch)
    review.notes = notes
    return review


def apply_run_patch(run_id: str, home: Path | None = None, *, review: Review | None = None,
                    allow_outside_links: bool = False, allow_git_dir: bool = False) -> Outcome:
    """Apply a run's final patch to its repository (``apply_patch``), recorded in the run's folder
    (``apply.json``).

    Args:
        run_id: the run.
        home: Horizon's data folder (default ``$HORIZON_HOME`` or ``~/.horizon``).
        review: the review the user saw (default: made now).
        allow_outside_links, allow_git_dir: see ``apply_patch``.

    Raises:
        RunNotFound, UserError: see ``review_patch`` and ``apply_patch``.
    """
    _, _, folder = _run_files(run_id, home)
    review = review or review_run(run_id, home)
    outcome = apply_patch(review, run_id=run_id, run_record=folder / "apply.json",
                          allow_outside_links=allow_outside_links, allow_git_dir=allow_git_dir)
    outcome.notes[:0] = review.notes
    return outcome


def undo_run(run_id: str, home: Path | None = None) -> Outcome:
    """``undo`` of a run's last apply.

    Raises:
        UserError: see ``undo``.
    """
    from core.config import runs_dir

    folder = runs_dir(home) / run_id
    if not folder.is_dir():
        from core.errors import RunNotFound

        raise RunNotFound(f"no run {run_id!r} in {runs_dir(home)}; list runs with: agent runs")
    return undo(folder / "apply.json")
