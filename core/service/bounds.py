"""What a request to ``agent server`` (or ``agent ui``'s start form) may choose, and its sizes: the
server's owner configures the bounds, a request only picks inside them.

- Repositories and scripts only under the ``--repo-root`` folders (default: the server's working
  folder), each path resolved with its symbolic links followed before the check, so a link under
  a root cannot lead out of it.
- Model servers only by name from the server's configuration (``Settings.model_servers``; no
  name: the configured ``base_url``), never by URL: where a repository's content and a key go is
  the owner's choice.
- The sandbox is always on; only a server started with ``--no-sandbox`` runs without it, and then
  only for clients on its own machine (``core.service.app``).
- Sizes: the request body (``MAX_BODY_BYTES``, counted while it is read), each field
  (``SubmitRequest``), the listing's page (``LIST_DEFAULT``/``LIST_MAX``) and the queue
  (``max_queued`` runs queued or running).

``agent server`` records its bounds in its queue (``RunQueue.record_bounds``) so that ``agent ui``,
which writes the same queue, checks its start form against the same ones.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core.errors import UserError

__all__ = ["DEFAULT_MAX_QUEUED", "LIST_DEFAULT", "LIST_MAX", "MAX_BODY_BYTES", "MAX_NAME_CHARS", "MAX_PATH_CHARS",
           "MAX_TASK_CHARS", "RETRY_AFTER_S", "TASK_LISTED_CHARS", "Bounds", "QueueFull"]

#: Bytes of a ``POST /api/runs`` body; a longer one is answered 413 once this much has been read.
MAX_BODY_BYTES = 1024 * 1024
#: Characters of a task's text.
MAX_TASK_CHARS = 100_000
#: Characters of a repository's or a script's path (Linux's PATH_MAX).
MAX_PATH_CHARS = 4096
#: Characters of a name: plugin, policy, model, model server, tool format.
MAX_NAME_CHARS = 256
#: Runs queued or running at once, unless ``agent server --max-queued`` says otherwise.
DEFAULT_MAX_QUEUED = 100
#: Seconds a client told "the queue is full" (429) is asked to wait (``Retry-After``).
RETRY_AFTER_S = 30
#: Rows of ``GET /api/runs`` without ``limit``, and the most one page holds.
LIST_DEFAULT, LIST_MAX = 100, 1000
#: Characters of a task's text in a listing (the run itself, ``GET /api/runs/{id}``, has all of it).
TASK_LISTED_CHARS = 200


class QueueFull(UserError):
    """The queue holds ``max_queued`` runs queued or running; the answer is 429 with ``Retry-After``."""


@dataclass(frozen=True)
class Bounds:
    """What requests to one server may choose.

    Attributes:
        repo_roots: folders (absolute, symbolic links resolved) under which a request's ``repo``
            and ``script`` must lie.
        max_queued: runs queued or running at once (``queued``, ``running``, ``cancelling``).
        sandbox: False only for a server started with ``--no-sandbox`` (every run unsandboxed).
    """

    repo_roots: tuple[Path, ...]
    max_queued: int = DEFAULT_MAX_QUEUED
    sandbox: bool = True

    @classmethod
    def make(cls, repo_roots: Iterable[Path | str] | None = None, max_queued: int = DEFAULT_MAX_QUEUED,
             sandbox: bool = True) -> Bounds:
        """Bounds from the server's options.

        Args:
            repo_roots: the ``--repo-root`` folders (None or empty: the current working folder).
            max_queued: ``--max-queued`` (at least 1).
            sandbox: False for ``--no-sandbox``.

        Raises:
            UserError: a root that is not a folder, or a cap below 1.
        """
        roots = []
        for given in list(repo_roots or []) or [Path.cwd()]:
            root = Path(given).expanduser().resolve()
            if not root.is_dir():
                raise UserError(f"--repo-root {str(given)!r} is not a folder; give a folder that holds the repositories runs may use")
            roots.append(root)
        if max_queued < 1:
            raise UserError(f"--max-queued must be at least 1, got {max_queued}")
        return cls(tuple(dict.fromkeys(roots)), max_queued, sandbox)

    def inside(self, given: str, what: str) -> Path:
        """``given`` resolved (``~`` expanded, relative to the server's working folder, symbolic
        links followed), when it lies under one of ``repo_roots``.

        Raises:
            UserError: it lies outside them (said before anything about the path itself is).
        """
        try:
            path = Path(os.path.expanduser(given)).resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # a loop of links, a NUL byte
            raise UserError(f"{what} {given!r} cannot be resolved ({exc})") from None
        if not any(path.is_relative_to(root) for root in self.repo_roots):
            raise UserError(f"{what} {given!r} is outside the folders this server may read ({', '.join(map(str, self.repo_roots))}); "
                            "put it under one of them, or start agent server with --repo-root FOLDER")
        return path

    def to_json(self) -> dict[str, Any]:
        """The bounds as JSON (``RunQueue.record_bounds``)."""
        return {"repo_roots": [str(r) for r in self.repo_roots], "max_queued": self.max_queued, "sandbox": self.sandbox}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Bounds:
        """The bounds ``to_json`` wrote (roots kept as recorded: the server resolved them)."""
        return cls(tuple(Path(r) for r in data["repo_roots"]), int(data["max_queued"]), bool(data["sandbox"]))
