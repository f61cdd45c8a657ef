"""Horizon's error tree.

    HorizonError                 base of every error Horizon raises on purpose
    ├── UserError                a mistake the user can fix (bad flag, unknown run id); the CLI
    │   │                        prints it as one line with what to do, no traceback
    │   ├── ConfigError          config file, environment variable or flag is invalid
    │   ├── PluginNotFound       no installed plugin has that name
    │   ├── RunNotFound          no run with that id in the run store
    │   ├── NoReference          a task has no reference solution to replay (``agent eval --policy reference`` skips it)
    │   └── DiskFull             the disk holding Horizon's data is full (``disk_full``): free space, then resume
    ├── SandboxUnavailable       bwrap is missing or cannot start here (the cause is in the text)
    ├── ModelUnavailable         the model server is down or the embedded model cannot load
    └── ToolError                a tool failed in a way the model should see and can react to;
                                 the loop turns it into an error observation, never a crash

Signals that end an episode are not errors: the loop records an ``ExitStatus`` instead.
"""

from __future__ import annotations

import errno
import sqlite3


class HorizonError(Exception):
    """Base class of every error Horizon raises on purpose."""


class UserError(HorizonError):
    """A mistake the user can fix; the message says what was wrong and what to do."""


class ConfigError(UserError):
    """A config file, environment variable or command-line flag holds an invalid value."""


class PluginNotFound(UserError):
    """No installed plugin is registered under the requested name."""


class PluginContractError(UserError, TypeError):
    """An installed plugin breaks the plugin contract (``core.plugin.check_plugin``); the message
    names the plugin, the hook and what is wrong. A ``TypeError`` too: the object has the wrong shape."""


class NoReference(UserError):
    """A task has no reference solution Horizon can replay; ``agent eval --policy reference``
    skips that task with a line saying why, and runs the rest."""


class RunNotFound(UserError):
    """The run store holds no run with the requested id."""


class DiskFull(UserError):
    """The disk holding Horizon's data (or a run's folder) is full; the message names the folder
    and what to do (free space, then ``agent resume RUN_ID``)."""


def disk_full(exc: BaseException | None) -> bool:
    """Whether ``exc`` (or an exception it was raised from or during) says that a disk is full:
    ``OSError`` ENOSPC or EDQUOT (also in ``shutil.copytree``'s collected errors), SQLite's ``SQLITE_FULL`` ("database or disk is full"), a DuckDB
    error quoting "No space left on device" (its IO errors carry the operating system's words)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return True
        if isinstance(exc, sqlite3.Error) and (getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_FULL
                                               or "database or disk is full" in str(exc)):
            return True
        if (type(exc).__module__, type(exc).__name__) == ("shutil", "Error") and any(  # copytree's list of (src, dst, why)
                f"[Errno {errno.ENOSPC}]" in str(entry[-1]) for entry in (exc.args[0] if exc.args and isinstance(exc.args[0], list) else [])):
            return True
        if type(exc).__module__.split(".")[0] in ("duckdb", "_duckdb") and any(
                words in str(exc) for words in ("No space left on device", "Disk quota exceeded")):  # the OS's words in DuckDB's IO errors
            return True
        exc = exc.__cause__ or exc.__context__
    return False


class SandboxUnavailable(HorizonError):
    """The process sandbox cannot be used on this machine; the message names the cause."""


class ModelUnavailable(HorizonError):
    """The model cannot be reached or loaded (dead server, missing package, bad model file)."""


class ToolError(HorizonError):
    """A tool failed; the message becomes an error observation the model reads."""
