"""The transaction folder beside a repository (``<parent>/.horizon-apply.<name>``; its layout is
in the package's docstring): private to its owner, locked for one transaction at a time, with the
empty git database that git runs with."""

from __future__ import annotations

import fcntl
import os
import secrets
import stat
import time
from datetime import datetime
from pathlib import Path
from typing import Self

from core.apply.git import _empty_git_dir
from core.errors import UserError


def area_of(repo: Path) -> Path:
    """The transaction folder of ``repo``: ``<parent>/.horizon-apply.<name>`` (see ``core.apply``)."""
    return repo.parent / f".horizon-apply.{repo.name}"


class _Area:
    """The transaction folder of one repository, locked while open."""

    def __init__(self, repo: Path, wait_s: float = 5.0) -> None:
        self.repo = repo
        self.path = area_of(repo)
        try:
            self.path.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise UserError(f"cannot create {self.path} beside the repository ({exc.strerror}); agent apply stages "
                            f"the new files there: make {repo.parent} writable") from None
        st = os.lstat(self.path)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.geteuid() or st.st_mode & 0o022:
            raise UserError(f"{self.path} is not a folder that only you can write; move it away and try again")
        self.fd = os.open(self.path / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    os.close(self.fd)
                    raise UserError(f"another agent apply is changing {repo} right now; try again when it ends") from None
                time.sleep(0.05)
        self.git_dir = _empty_git_dir(self.path / "git")

    def close(self) -> None:
        os.close(self.fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def journal(self) -> Path:
        return self.path / "journal.json"

    def new_tx(self) -> Path:
        tx = self.path / f"tx-{datetime.now():%Y%m%d-%H%M%S-%f}-{secrets.token_hex(2)}"  # sorts by time
        tx.mkdir()
        return tx
