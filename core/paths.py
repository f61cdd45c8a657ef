"""Horizon's data folders, by name only (nothing is made here: ``core.config.make_data_folder``
makes them). Standard library only, so that a command that needs a path (``agent runs``: the
runs catalog, ``core.catalog``) imports no settings machinery."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["horizon_home", "runs_dir"]


def horizon_home() -> Path:
    """Horizon's data folder: ``$HORIZON_HOME``, else ``~/.horizon``."""
    return Path(os.environ.get("HORIZON_HOME") or Path.home() / ".horizon").expanduser()


def runs_dir(home: Path | None = None) -> Path:
    """The folder holding one subfolder per run (``$HORIZON_HOME/runs``); only the path: reading
    needs no folder (no runs yet), writing makes it with ``make_data_folder``."""
    return (home or horizon_home()) / "runs"
