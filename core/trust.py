"""Which configuration files the user trusts: ``agent trust PATH``, recorded with the file's SHA-256.

A file that a repository or the working folder ships (``./horizon.toml``, a suite's or a
repository's ``task.json``) is written by whoever wrote that repository. Until the user trusts it,
the settings in it that send data somewhere or start programs are ignored (``core.config``
decides which those are; ``core.eval.tasks`` ignores a task file's ``mcp_servers``), the way
direnv, mise and VS Code's workspace trust treat a folder's own configuration.

The record is ``$HORIZON_HOME/trusted.json`` (default ``~/.horizon/trusted.json``), written
atomically with mode 0600::

    {"version": 1, "files": {"/abs/path/horizon.toml": {"sha256": "...", "trusted_at": "2026-12-03T14:00:00Z"}}}

A file is trusted when its resolved path is recorded with the SHA-256 of its current bytes: a
file that changed after ``agent trust`` is untrusted again (``status == "changed"``) until the
user trusts it again. The trust store lives in the user's own Horizon folder, which the sandbox
hides from the agent's commands, so a run cannot trust a file for the user.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
import tempfile
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from core.errors import UserError

__all__ = ["TrustState", "check_trust", "revoke", "trust", "trust_store_path", "trusted_files", "trusted_part", "warn_untrusted"]

TRUST_FILE = "trusted.json"
_VERSION = 1


def trust_store_path() -> Path:
    """The trust record: ``$HORIZON_HOME/trusted.json`` (``~/.horizon/trusted.json``)."""
    from core.config import horizon_home  # core.config imports this module

    return horizon_home() / TRUST_FILE


@dataclass(frozen=True)
class TrustState:
    """Whether one file, as read now, is trusted.

    Attributes:
        path: the file's resolved absolute path (the record's key).
        sha256: the hex SHA-256 of the bytes that were checked.
        status: ``trusted`` (recorded with this digest), ``untrusted`` (never trusted, or
            revoked) or ``changed`` (trusted once, with other content).
    """

    path: Path
    sha256: str
    status: Literal["trusted", "untrusted", "changed"]

    @property
    def trusted(self) -> bool:
        """True when the file may set every setting."""
        return self.status == "trusted"


def digest(content: bytes) -> str:
    """The hex SHA-256 of a file's bytes."""
    return hashlib.sha256(content).hexdigest()


def _read_store() -> dict[str, dict[str, Any]]:
    """The recorded files (path -> record); an unreadable or damaged record trusts nothing."""
    try:
        raw = json.loads(trust_store_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    files = raw.get("files") if isinstance(raw, dict) else None
    if not isinstance(files, dict):
        return {}
    return {k: v for k, v in files.items() if isinstance(v, dict) and isinstance(v.get("sha256"), str)}


def _write_store(files: dict[str, dict[str, Any]]) -> None:
    """Replace the record atomically (a temporary file in its folder, fsync, rename), mode 0600."""
    from core.config import make_data_folder

    path = trust_store_path()
    make_data_folder(path.parent)
    text = json.dumps({"version": _VERSION, "files": files}, indent=2, sort_keys=True) + "\n"
    fd, temp = tempfile.mkstemp(prefix=".trusted-", suffix=".json", dir=path.parent)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def check_trust(path: Path, content: bytes) -> TrustState:
    """Whether ``content`` (the bytes just read from ``path``) is what the user trusted.

    The caller reads the file once and passes those bytes, so what is checked is what is used.

    Args:
        path: the file (resolved here).
        content: its bytes.

    Returns:
        The file's ``TrustState``.
    """
    resolved = Path(path).resolve()
    found = digest(content)
    record = _read_store().get(str(resolved))
    if record is None:
        status: Literal["trusted", "untrusted", "changed"] = "untrusted"
    else:
        status = "trusted" if record["sha256"] == found else "changed"
    return TrustState(resolved, found, status)


def trust(path: Path) -> TrustState:
    """Record ``path`` as trusted with the SHA-256 of its current content (``agent trust PATH``).

    A folder means its ``horizon.toml``.

    Returns:
        The file's new state (``trusted``).

    Raises:
        UserError: no such file, or it cannot be read.
    """
    target = _file_of(path)
    try:
        content = target.read_bytes()
    except OSError as exc:
        raise UserError(f"cannot read {target} ({exc.strerror}); give the config file to trust, e.g. agent trust ./horizon.toml") from None
    files = _read_store()
    resolved = target.resolve()
    files[str(resolved)] = {"sha256": digest(content), "trusted_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    _write_store(files)
    return TrustState(resolved, digest(content), "trusted")


def revoke(path: Path) -> bool:
    """Forget ``path`` (``agent trust --revoke PATH``); a folder means its ``horizon.toml``.

    Returns:
        True when it was recorded (the file need not exist any more).
    """
    candidate = Path(path).expanduser()
    if candidate.is_dir():
        candidate = candidate / "horizon.toml"
    files = _read_store()
    key = str(candidate.resolve())
    if key not in files:
        return False
    del files[key]
    _write_store(files)
    return True


def trusted_files() -> dict[Path, dict[str, Any]]:
    """The recorded files (path -> ``{"sha256", "trusted_at"}``), sorted by path."""
    return {Path(k): v for k, v in sorted(_read_store().items())}


def _file_of(path: Path) -> Path:
    candidate = Path(path).expanduser()
    if candidate.is_dir():
        candidate = candidate / "horizon.toml"
    if not candidate.is_file():
        raise UserError(f"{candidate} is not a file; give the config file to trust, e.g. agent trust ./horizon.toml")
    return candidate


def trusted_part(path: Path, content: bytes, data: dict[str, Any], keys: set[str] | frozenset[str]) -> dict[str, Any]:
    """``data`` (what ``content``, the bytes of ``path``, parsed into) without ``keys`` unless the
    user trusts the file; the dropped keys are named on stderr (``warn_untrusted``).

    The one rule for a file a repository or a suite ships (a task file's ``mcp_servers``): core's
    readers call it, and so may a plugin's.
    """
    present = sorted(k for k in keys if data.get(k))
    if not present:
        return data
    state = check_trust(path, content)
    if state.trusted:
        return data
    warn_untrusted(state, present)
    return {k: v for k, v in data.items() if k not in present}


_warned: set[tuple[Path, str, tuple[str, ...]]] = set()
_warn_lock = threading.Lock()


def warn_untrusted(state: TrustState, keys: list[str]) -> None:
    """Say on stderr, once per process for this file, content and keys, which settings of an
    untrusted file were ignored and how to trust it. One line; the path is made terminal-safe."""
    from core.text import terminal_safe

    key = (state.path, state.sha256, tuple(keys))
    with _warn_lock:
        if key in _warned:
            return
        _warned.add(key)
    why = "changed since you trusted it" if state.status == "changed" else "not trusted"
    path = terminal_safe(str(state.path))
    sys.stderr.write(f"horizon: ignoring {', '.join(keys)} from {path} ({why}: such settings send your code and keys "
                     f"somewhere or start programs); review the file, and if you trust it: agent trust {shlex.quote(path)}\n")  # fmt: skip
