"""What the UI's buttons do: start, stop and resume a run through the service's queue, and apply
a run's patch with the review ``agent apply`` prints.

Start, stop and resume only write ``$HORIZON_HOME/service/queue.sqlite`` (and the cancel marker)
through ``core.service``, so the work is done by an ``agent server`` sharing that home: the UI
never runs an episode in its own process, and a run it started survives the UI. Applying a patch
runs ``core.apply`` here, exactly as ``agent apply --yes`` after the review was shown.

Every function is synchronous (the app calls them in a thread) and raises ``HorizonError``
subclasses with a sentence for the page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from core.config import horizon_home
from core.errors import UserError
from core.runs import reading_store

__all__ = ["Review", "apply_patch", "in_service", "queued_runs", "resume_run", "review_patch", "start_run", "stop_run"]

#: The form fields of "Start a run" (``core.service.app.SubmitRequest``'s, flat; ``base_url`` is
#: read only to be refused as the API refuses it: a model server is chosen by its configured name).
START_FIELDS = ("plugin", "task", "repo", "policy", "script", "model_server", "base_url", "model", "max_steps")


def _queue(home: Path | None) -> Any:
    try:
        from core.service.queue import RunQueue, queue_path
    except ImportError as exc:  # pragma: no cover - the service's modules import only core's packages
        raise UserError(f"the service's queue cannot be used here ({exc}); install Horizon with pip install -e '.[service]'") from None
    return RunQueue(queue_path(home))


def start_run(form: dict[str, str], home: Path | None = None) -> str:
    """Queue a new run from the start form, checked as ``POST /api/runs`` checks a submit: inside
    the bounds the last ``agent server`` on this home recorded in its queue (its ``--repo-root``
    folders, ``--max-queued``, ``--no-sandbox``), or, before any server recorded them, the
    defaults of ``core.service.bounds.Bounds.make()`` in this process (its working folder).

    Args:
        form: ``START_FIELDS`` as strings (empty: not given); ``max_steps`` a whole number.

    Returns:
        The new run's id.

    Raises:
        UserError: a field that cannot work (unknown plugin or policy, a repository or script that is
            not there or outside the roots, a model server by URL or not configured, a step count
            that is not a number), or the queue is full (``QueueFull``), with what was wrong.
    """
    from pydantic import ValidationError

    from core.service.app import SubmitRequest, queued_request
    from core.service.bounds import Bounds

    given = {k: form[k].strip() for k in START_FIELDS if (form.get(k) or "").strip()}
    limits = {}
    if "max_steps" in given:
        if not given["max_steps"].isdigit():
            raise UserError(f"max steps must be a whole number, got {given['max_steps']!r}")
        limits["max_steps"] = int(given.pop("max_steps"))
    try:
        body = SubmitRequest.model_validate({**given, "limits": limits})
    except ValidationError as exc:
        raise UserError("the run cannot start: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())) from None
    queue = _queue(home)
    recorded = queue.recorded_bounds()
    bounds = Bounds.from_json(recorded) if recorded else Bounds.make()
    return queue.submit(queued_request(body, bounds), bounds.max_queued)


def stop_run(run_id: str, home: Path | None = None) -> str:
    """Ask the service to stop a run after its step in flight (a queued one is dropped).

    Returns:
        What happened, as a sentence.

    Raises:
        RunNotFound: the service never had the run (``agent run`` in a terminal: Ctrl-C there).
        UserError: the run has already ended.
    """
    from core.service import control

    _state, code, detail = control.cancel(_queue(home), run_id, home or horizon_home())
    if code == 409:
        raise UserError(detail)
    return f"run {run_id}: {detail}"


def resume_run(run_id: str, home: Path | None = None) -> str:
    """Queue a stopped run (``core.service.control.RESUMABLE``: interrupted, a model error, crashed, killed) for the service to resume from its checkpoint.

    Raises:
        RunNotFound: no such run.
        UserError: it is not stopped, its store is in use, or it is queued already.
    """
    from core.service import control

    with reading_store(run_id, home, live=True) as store:
        row = store.run()
        if row["status"] == "running" and not store.live:
            row["status"] = "killed"  # its process is gone: what `agent runs` shows
    _state, _code, detail = control.resume(_queue(home), run_id, home or horizon_home(), row)
    return f"run {run_id}: {detail}"


def in_service(run_id: str, home: Path | None = None) -> bool:
    """Whether the service's queue holds ``run_id`` (only such a run can be stopped from the UI);
    False when the queue is damaged (the runs page says so: ``queued_runs`` raises)."""
    from core.service.queue import QueueDamaged, queue_path

    try:
        return queue_path(home).is_file() and _queue(home).get(run_id) is not None
    except QueueDamaged:
        return False


def queued_runs(home: Path | None = None) -> list[dict[str, Any]]:
    """The service's runs that have no run store yet or are still in its hands (queued, running,
    cancelling), oldest first: ``[{"run_id", "state", "detail", "plugin", "task"}]`` (the task
    clipped as ``GET /api/runs`` clips it); empty when the service was never used here.

    Raises:
        QueueDamaged: ``damaged: <file> (...)`` with what to do (the file is left as it is).
    """
    from core.service.queue import queue_path

    if not queue_path(home).is_file():
        return []
    from core.service.bounds import TASK_LISTED_CHARS

    rows = _queue(home).rows()
    return [{"run_id": r["run_id"], "state": r["state"], "detail": r["detail"], "plugin": r["request"]["plugin"],
             "task": _clip(r["request"]["task"], TASK_LISTED_CHARS)} for r in rows if r["state"] in ("queued", "running", "cancelling")]  # fmt: skip


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


class Review:
    """A run's patch as ``agent apply`` reviews it.

    Attributes:
        repo: the repository it would change (printable).
        lines: ``core.apply.format_review``'s lines (``x `` refusals, ``! `` warnings).
        notes: notes before the review (an earlier transaction recovered, ...).
        refused: why it cannot be applied; empty when it can.
    """

    def __init__(self, repo: str, lines: list[str], notes: list[str], refused: list[str]) -> None:
        self.repo, self.lines, self.notes, self.refused = repo, lines, notes, refused


def review_patch(run_id: str, home: Path | None = None) -> Review:
    """The review of a run's final patch against its repository (nothing is changed: an
    interrupted earlier apply is finished by the apply, not by this GET's review).

    Raises:
        RunNotFound, UserError: no such run, no repository or patch (``core.apply.review_run``).
    """
    from core import apply as transaction

    review = transaction.review_run(run_id, home, recover_first=False)
    return Review(transaction.printable(str(review.repo)), transaction.format_review(review), list(review.notes), review.refusals())


def apply_patch(run_id: str, home: Path | None = None) -> str:
    """Apply a run's patch after its review, as ``agent apply RUN --yes`` (links out of the
    repository and ``.git`` refused; the repository's old files kept for ``agent apply --undo``).

    Returns:
        What happened, as a sentence.

    Raises:
        UserError: the review refuses the patch (the reasons), or applying failed (your files
            unchanged, as ``core.apply`` says).
    """
    from core import apply as transaction

    review = transaction.review_run(run_id, home)
    refused = review.refusals()
    if refused:
        raise UserError("not applied: " + "; ".join(refused) + "; your files are unchanged")
    outcome = transaction.apply_run_patch(run_id, home, review=review)
    notes = " ".join(outcome.notes)
    paths = f"{outcome.files:,} path{'' if outcome.files == 1 else 's'}"
    return (f"applied the patch of run {run_id} to {transaction.printable(str(outcome.repo))}: {paths} changed"
            + (f". {notes}" if notes else "") + f"; undo with: agent apply --undo {run_id}")  # fmt: skip
