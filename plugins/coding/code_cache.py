"""The persistent cache of source-file indexes, shared by calls, runs and repositories.

``plugins.coding.symbols`` indexes a file once per *content*: the key of a file's index is
``sha256(INDEXER, language, bytes)`` (``content_key``), so the same file in another repository,
another run's copy of the repository or a new process is not parsed again. ``INDEXER`` changes
with the indexing code and the queries (``symbols.py``, ``languages.py``) and the installed
tree-sitter, so an index made by other code is never read.

The cache is one SQLite database, ``$HORIZON_HOME/cache/code-index/index.sqlite``
(``$HORIZON_CODE_INDEX_CACHE`` names another folder), two tables:

- ``indexes(key, data, bytes, used)``: a ``FileIndex`` as zlib-compressed JSON (never pickle:
  a repository shapes these contents), its size and when it was last used;
- ``trees(root, data, used)``: per repository root, the file list and the stamps that tell
  whether it is still right (each folder's and ``.gitignore``'s mtime and size) and each file's
  ``(mtime_ns, size, key)``, so that a new process neither walks the tree nor reads unchanged files.

Each write is one SQLite transaction (atomic). What is read is checked: a value of the wrong
shape is dropped and rebuilt, and a file that is not such a database (corrupt, foreign, from a
newer layout) is moved aside and a new one made; the cache never makes a tool fail (any
``sqlite3.Error`` reads as a miss). Its size is bounded: past ``max_bytes()`` the least recently
used indexes are deleted, down to three quarters of it; at most ``MAX_TREES`` trees are kept.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
import zlib
from collections.abc import Iterable
from pathlib import Path

log = logging.getLogger(__name__)

#: The layout of the database; another value in its ``meta`` table means a foreign file.
SCHEMA = "horizon-code-index-1"
#: Default bound of the cache, in bytes of stored (compressed) indexes.
DEFAULT_MAX_BYTES = 512 << 20
#: Repository roots whose file lists are kept (least recently used dropped first).
MAX_TREES = 64
_CHUNK = 500  # keys per SELECT ... IN (...)

_lock = threading.Lock()
_connections: dict[str, sqlite3.Connection] = {}
_indexer: bytes | None = None


def cache_folder() -> Path:
    """The cache's folder: ``$HORIZON_CODE_INDEX_CACHE``, else ``$HORIZON_HOME/cache/code-index``."""
    from core.api import horizon_home

    return Path(os.environ.get("HORIZON_CODE_INDEX_CACHE") or horizon_home() / "cache" / "code-index").expanduser()


def max_bytes() -> int:
    """The size bound in bytes: ``$HORIZON_CODE_INDEX_MAX_MB`` mebibytes, else ``DEFAULT_MAX_BYTES``."""
    value = os.environ.get("HORIZON_CODE_INDEX_MAX_MB", "")
    try:
        return max(1, int(float(value) * (1 << 20))) if value else DEFAULT_MAX_BYTES
    except ValueError:
        log.warning("HORIZON_CODE_INDEX_MAX_MB=%r is not a number of mebibytes; using %d", value, DEFAULT_MAX_BYTES >> 20)
        return DEFAULT_MAX_BYTES


def indexer() -> bytes:
    """A digest of what makes an index: this cache's layout, the indexing code and queries
    (``symbols.py``, ``languages.py``) and the installed tree-sitter packages (each one's file
    path, size and mtime: an upgrade changes it), the same whichever grammars this process loaded."""
    global _indexer
    if _indexer is None:
        import importlib.util

        from plugins.coding.languages import _SPECS

        digest = hashlib.sha256(SCHEMA.encode())
        here = Path(__file__).resolve().parent
        for name in ("symbols.py", "languages.py"):
            digest.update((here / name).read_bytes())
        for package in sorted({"tree_sitter", *(spec.package for spec in _SPECS.values())}):
            try:
                found = importlib.util.find_spec(package)
                origin = (found and found.origin) or ""
                info = os.stat(origin)
                digest.update(f"{package}:{origin}:{info.st_size}:{info.st_mtime_ns}".encode())
            except (ImportError, OSError, ValueError):
                digest.update(f"{package}:missing".encode())
        _indexer = digest.digest()
    return _indexer


def content_key(language: str, source: bytes) -> str:
    """The key of a file's index: hex ``sha256(indexer(), language, source)``."""
    return hashlib.sha256(indexer() + language.encode() + b"\0" + source).hexdigest()


def _open(folder: Path) -> sqlite3.Connection | None:
    from core.api import UserError, make_data_folder

    path = folder / "index.sqlite"
    key = str(path)
    con = _connections.get(key)
    if con is not None:
        return con
    for attempt in (1, 2):
        try:
            make_data_folder(folder)  # 0700, like the rest of Horizon's data
            con = sqlite3.connect(key, timeout=5, check_same_thread=False, isolation_level=None)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = con.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()
            if row is None:
                con.execute("BEGIN IMMEDIATE")
                con.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)", (SCHEMA,))
                con.execute("CREATE TABLE IF NOT EXISTS indexes (key TEXT PRIMARY KEY, data BLOB NOT NULL, bytes INTEGER NOT NULL, used REAL NOT NULL)")
                con.execute("CREATE INDEX IF NOT EXISTS indexes_used ON indexes (used)")
                con.execute("CREATE TABLE IF NOT EXISTS trees (root TEXT PRIMARY KEY, data BLOB NOT NULL, used REAL NOT NULL)")
                con.execute("COMMIT")
                row = (SCHEMA,)
            if row[0] != SCHEMA:
                raise sqlite3.DatabaseError(f"schema {row[0]!r}, not {SCHEMA!r}")
            con.execute("SELECT key, data, bytes, used FROM indexes LIMIT 0")
            con.execute("SELECT root, data, used FROM trees LIMIT 0")
            _connections[key] = con
            return con
        except (sqlite3.Error, OSError, UserError) as exc:
            if con is not None:
                con.close()
                con = None
            if attempt == 2 or isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                log.warning("the code index cache %s cannot be used (%s); indexing without it", path, exc)
                return None
            log.warning("the code index cache %s is not Horizon's or is damaged (%s); starting a new one", path, exc)
            _set_aside(path)
    return None


def connection() -> sqlite3.Connection | None:
    """The open cache database (one per folder and process), or None when it cannot be used."""
    with _lock:
        return _open(cache_folder())


def forget_connections() -> None:
    """Close the open databases (a new process's state; tests and benches)."""
    with _lock:
        for con in _connections.values():
            con.close()
        _connections.clear()


def encode(value: object) -> bytes:
    """``value`` as zlib-compressed compact JSON."""
    return zlib.compress(json.dumps(value, separators=(",", ":")).encode(), 1)


def decode(blob: object) -> object:
    """The JSON value in ``blob`` (from ``encode``), or None when it is not one."""
    if not isinstance(blob, bytes):
        return None
    try:
        return json.loads(zlib.decompress(blob))
    except (zlib.error, ValueError, RecursionError):
        return None


def get_many(keys: Iterable[str]) -> dict[str, object]:
    """``{key: decoded JSON}`` of the stored indexes among ``keys`` (a damaged row is deleted, not returned)."""
    con = connection()
    keys = list(dict.fromkeys(keys))
    if con is None or not keys:
        return {}
    out: dict[str, object] = {}
    bad: list[str] = []
    try:
        for start in range(0, len(keys), _CHUNK):
            chunk = keys[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            for key, blob in con.execute(f"SELECT key, data FROM indexes WHERE key IN ({marks})", chunk):
                value = decode(blob)
                if value is None:
                    bad.append(key)
                else:
                    out[key] = value
        now = time.time()
        with _lock:
            con.execute("BEGIN IMMEDIATE")
            con.executemany("UPDATE indexes SET used = ? WHERE key = ?", ((now, k) for k in out))
            con.executemany("DELETE FROM indexes WHERE key = ?", ((k,) for k in bad))
            con.execute("COMMIT")
    except sqlite3.Error as exc:
        _rollback(con, exc)
    return out


def drop(key: str) -> None:
    """Delete one stored index (its value had the wrong shape)."""
    con = connection()
    if con is None:
        return
    try:
        with _lock:
            con.execute("DELETE FROM indexes WHERE key = ?", (key,))
    except sqlite3.Error as exc:
        _rollback(con, exc)


def put_many(items: dict[str, object]) -> None:
    """Store ``{key: JSON value}`` in one transaction, then keep the cache under ``max_bytes()``."""
    con = connection()
    if con is None or not items:
        return
    now = time.time()
    rows = [(key, blob, len(blob), now) for key, blob in ((k, encode(v)) for k, v in items.items())]
    try:
        with _lock:
            con.execute("BEGIN IMMEDIATE")
            con.executemany("INSERT OR REPLACE INTO indexes VALUES (?, ?, ?, ?)", rows)
            (total,) = con.execute("SELECT COALESCE(SUM(bytes), 0) FROM indexes").fetchone()
            bound = max_bytes()
            if total > bound:
                _evict(con, total - bound * 3 // 4)
            con.execute("COMMIT")
    except sqlite3.Error as exc:
        _rollback(con, exc)


def _evict(con: sqlite3.Connection, excess: int) -> None:
    doomed: list[str] = []
    for key, size in con.execute("SELECT key, bytes FROM indexes ORDER BY used"):
        if excess <= 0:
            break
        doomed.append(key)
        excess -= size
    con.executemany("DELETE FROM indexes WHERE key = ?", ((k,) for k in doomed))


def get_tree(root: str) -> object:
    """The decoded file-list record of repository ``root`` (see ``symbols``), or None."""
    con = connection()
    if con is None:
        return None
    try:
        row = con.execute("SELECT data FROM trees WHERE root = ?", (root,)).fetchone()
    except sqlite3.Error as exc:
        _rollback(con, exc)
        return None
    return decode(row[0]) if row else None


def put_tree(root: str, value: object) -> None:
    """Store repository ``root``'s file-list record (keeping the ``MAX_TREES`` most recently used)."""
    con = connection()
    if con is None:
        return
    try:
        with _lock:
            con.execute("BEGIN IMMEDIATE")
            con.execute("INSERT OR REPLACE INTO trees VALUES (?, ?, ?)", (root, encode(value), time.time()))
            con.execute("DELETE FROM trees WHERE root NOT IN (SELECT root FROM trees ORDER BY used DESC LIMIT ?)", (MAX_TREES,))
            con.execute("COMMIT")
    except sqlite3.Error as exc:
        _rollback(con, exc)


def _rollback(con: sqlite3.Connection, exc: Exception) -> None:
    """After a failed statement: roll back; a damaged file (not merely busy) is closed, so that
    the next call moves it aside and starts a new one."""
    log.warning("the code index cache failed (%s); going on without it for this call", exc)
    try:
        if con.in_transaction:
            con.execute("ROLLBACK")
    except sqlite3.Error:
        pass
    if not isinstance(exc, sqlite3.OperationalError):  # "database disk image is malformed", "file is not a database"
        with _lock:
            for key, open_con in list(_connections.items()):
                if open_con is con:
                    con.close()
                    del _connections[key]
                    _set_aside(Path(key))


def _set_aside(path: Path) -> None:
    aside = path.with_name(f"index.sqlite.bad-{os.getpid()}-{time.time_ns()}")
    for suffix in ("", "-wal", "-shm"):
        try:
            os.replace(f"{path}{suffix}", f"{aside}{suffix}")
        except OSError:
            pass
    for old in sorted(path.parent.glob("index.sqlite.bad-*"))[:-3]:  # keep the last few for a post-mortem
        old.unlink(missing_ok=True)
