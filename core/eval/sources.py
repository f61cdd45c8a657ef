"""A task's starting tree made from published source archives, checked, and cached.

A task folder may name the archives its starting tree comes from instead of carrying the tree:
``start`` in ``task.json`` (``StartRecipe``) lists archives by URL and SHA-256, what to take from
each (gitignore-style ``exclude`` patterns, or an ``include`` list of exact paths), files to add,
and the SHA-256 of the finished tree (``tree_digest``). ``materialise`` builds the tree once
into Horizon's cache and checks it against that digest, so a changed archive or a changed
builder is an error, never a silently different task::

    $HORIZON_SOURCES_CACHE (default $HORIZON_HOME/cache/sources)/
        archives/<sha256>          downloaded archives, named by their SHA-256, checked on every use
        trees/<task>-<key>         finished trees; <key> hashes the archives' SHA-256s and the
                                   recipe's rules (``StartRecipe.key``), checked on every use

Archives are unpacked with tarfile's ``data`` filter (PEP 706: no absolute paths, no ``..``, no
links out of the tree, no device files); zip archives get the same checks here. Sizes are
capped (``MAX_*``). Nothing in an archive is run.

Nothing here knows what the archives hold: ``suites/build_task.py`` writes coding tasks'
recipes from two PyPI releases (``suites/README.md``, "Adding a task").
"""

from __future__ import annotations

import hashlib
import http.client
import json
import os
import re
import stat
import tarfile
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pathspec
from pydantic import BaseModel, Field, field_validator

from core.config import horizon_home, make_data_folder
from core.errors import UserError
from core.safe_io import remove_tree

#: Bump when the way a tree is made from a recipe changes: every cached tree is then rebuilt.
FORMAT = 1
#: Largest archive downloaded, in bytes.
MAX_ARCHIVE_BYTES = 200 * 2**20
#: Largest total size of an archive's files once unpacked, in bytes, and most members.
MAX_UNPACKED_BYTES = 1024 * 2**20
MAX_MEMBERS = 100_000
#: Seconds to wait for a download to answer (and between its packets).
DOWNLOAD_TIMEOUT_S = 60.0
_SHA256 = r"^[0-9a-f]{64}$"


def _relative(path: str, what: str) -> str:
    """``path`` if it is a plain relative POSIX path inside the tree (no ``..``, not absolute)."""
    parts = PurePosixPath(path).parts
    if not path or path.startswith("/") or "\\" in path or any(p in ("..", ".") for p in parts) or path != "/".join(parts):
        raise ValueError(f"{what} {path!r} is not a plain relative path (a/b/c, no '..')")
    return path


class ArchiveLayer(BaseModel):
    """One archive of a starting tree and what is taken from it.

    Attributes:
        url: where to download it (``https://`` or ``http://``: the SHA-256 is what is trusted).
        sha256: its SHA-256 (hex, lower case).
        exclude: gitignore-style patterns (``/docs``: the top-level folder only; ``*.pyc``: at
            any depth; ``a/b/*``: everything under ``a/b``) of files left out, relative to the
            archive's single top folder.
        include: exact paths (relative to the top folder) of the only files taken; None: every
            file not excluded. A listed path that the archive lacks is an error.
        into: the folder of the tree the files go to (empty: the tree's root).
    """

    url: str = Field(pattern=r"^https?://")
    sha256: str = Field(pattern=_SHA256)
    exclude: list[str] = []
    include: list[str] | None = None
    into: str = ""

    @field_validator("include")
    @classmethod
    def _plain_paths(cls, value: list[str] | None) -> list[str] | None:
        return None if value is None else [_relative(p, "include path") for p in value]

    @field_validator("into")
    @classmethod
    def _plain_folder(cls, value: str) -> str:
        return value and _relative(value.rstrip("/"), "into")


class StartRecipe(BaseModel):
    """How a task's starting tree is made (``start`` in ``task.json``).

    Attributes:
        archives: the layers, in order; a later layer's file replaces an earlier one's.
        files: ``{relative path: UTF-8 text}`` written last (e.g. a shim the recipe adds).
        tree_sha256: ``tree_digest`` of the finished tree, as its builder recorded it.
    """

    archives: list[ArchiveLayer] = Field(min_length=1)
    files: dict[str, str] = {}
    tree_sha256: str = Field(pattern=_SHA256)

    @field_validator("files")
    @classmethod
    def _plain_file_paths(cls, value: dict[str, str]) -> dict[str, str]:
        for path in value:
            _relative(path, "added file")
        return value

    def key(self) -> str:
        """SHA-256 (hex) of what the tree is made from: ``FORMAT``, each archive's SHA-256 and
        rules, the added files. URLs are left out: where an archive comes from does not change it."""
        made_of = {"format": FORMAT, "archives": [a.model_dump(exclude={"url"}) for a in self.archives], "files": self.files}
        return hashlib.sha256(json.dumps(made_of, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class StartTree:
    """A materialised starting tree.

    Attributes:
        path: its folder in the cache (read it or copy it; do not change it).
        downloaded_bytes: bytes downloaded to make it (0 when every archive was cached).
        built: whether it was built now (False: the cached tree was reused).
    """

    path: Path
    downloaded_bytes: int
    built: bool


def sources_cache() -> Path:
    """The cache folder: ``$HORIZON_SOURCES_CACHE``, else ``$HORIZON_HOME/cache/sources``."""
    return Path(os.environ.get("HORIZON_SOURCES_CACHE") or horizon_home() / "cache" / "sources").expanduser()


def _cache_folder(path: Path) -> Path:
    """``make_data_folder`` for the sources cache, whose error also names its own variable."""
    try:
        return make_data_folder(path)
    except UserError as exc:
        raise UserError(f"{exc} (the sources cache alone can be moved with HORIZON_SOURCES_CACHE)") from None


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(2**20), b""):
            digest.update(block)
    return digest.hexdigest()


def _offline_help(layer: ArchiveLayer, cache: Path) -> str:
    return (
        f"the sources cache {cache} has no copy either; with network, run `agent eval PLUGIN SUITE --fetch-only` "
        f"once to fill it (HORIZON_SOURCES_CACHE may point at a shared copy), or save the file as "
        f"{cache / 'archives' / layer.sha256}"
    )


def fetch_archive(layer: ArchiveLayer, cache: Path | None = None) -> tuple[Path, int]:
    """The archive of ``layer`` in the cache, downloaded first when it is not there.

    Args:
        layer: the archive's URL and SHA-256.
        cache: the cache folder (default ``sources_cache()``).

    Returns:
        ``(path, bytes downloaded)``; 0 bytes when the cached copy was used.

    Raises:
        UserError: the download fails (the message names the URL and how to fill the cache
            offline), is larger than ``MAX_ARCHIVE_BYTES``, or its SHA-256 is not the recipe's
            (nothing is kept); the cache cannot be written.
    """
    cache = cache or sources_cache()
    path = cache / "archives" / layer.sha256
    if path.is_file():
        if _file_sha256(path) == layer.sha256:
            return path, 0
        path.unlink()  # damaged: fetched again
    folder = _cache_folder(cache / "archives")
    request = urllib.request.Request(layer.url, headers={"User-Agent": "horizon-sources"})
    digest, size = hashlib.sha256(), 0
    with tempfile.NamedTemporaryFile(dir=folder, prefix=".download-", delete=False) as out:
        partial = Path(out.name)
        try:
            with urllib.request.urlopen(request, timeout=DOWNLOAD_TIMEOUT_S) as reply:
                while block := reply.read(2**20):
                    size += len(block)
                    if size > MAX_ARCHIVE_BYTES:
                        raise UserError(f"{layer.url} is larger than {MAX_ARCHIVE_BYTES // 2**20} MiB; refused")
                    digest.update(block)
                    out.write(block)
        except (urllib.error.URLError, http.client.HTTPException, OSError) as exc:
            partial.unlink(missing_ok=True)
            reason = getattr(exc, "reason", None) or exc
            raise UserError(f"cannot download {layer.url} ({reason}); {_offline_help(layer, cache)}") from None
        except BaseException:
            partial.unlink(missing_ok=True)
            raise
    if digest.hexdigest() != layer.sha256:
        partial.unlink()
        raise UserError(
            f"{layer.url} has SHA-256 {digest.hexdigest()}, not the {layer.sha256} the task records: the file "
            "changed on the server or the recipe is wrong; nothing was kept (rebuild the task's recipe to take the new file)"
        )
    os.replace(partial, path)
    return path, size


def _check_zip_member(info: zipfile.ZipInfo) -> str:
    """Why a zip member may not be unpacked, or empty (the ``data`` filter's rules for tar)."""
    name = info.filename
    if name.startswith("/") or "\\" in name or re.match(r"^[A-Za-z]:", name) or ".." in PurePosixPath(name).parts:
        return "its path leaves the destination"
    if stat.S_ISLNK(info.external_attr >> 16):
        return "it is a symbolic link (links are not taken from zip archives)"
    return ""


def unpack(archive: Path, dest: Path, label: str) -> Path:
    """Unpack a tar (any compression) or zip archive into ``dest`` and return its single top folder.

    Args:
        archive: the archive (its type is read from its content, not its name).
        dest: an empty folder.
        label: how errors name the archive (its URL).

    Raises:
        UserError: an unsafe member (tarfile's ``data`` filter: absolute path, ``..``, a link out
            of the tree, a device file), more than ``MAX_MEMBERS`` members or ``MAX_UNPACKED_BYTES``
            bytes, not a tar or zip archive, or not exactly one folder at its top.
    """
    if tarfile.is_tarfile(archive):
        try:
            with tarfile.open(archive) as tar:
                members = tar.getmembers()
                _check_size(label, len(members), sum(m.size for m in members if m.isfile()))
                tar.extractall(dest, filter="data")
        except tarfile.FilterError as exc:
            raise UserError(f"{label}: refused, the archive's member {exc.tarinfo.name!r} is unsafe ({exc})") from None
        except tarfile.TarError as exc:
            raise UserError(f"{label}: not a readable tar archive ({exc})") from None
    elif zipfile.is_zipfile(archive):
        with zipfile.ZipFile(archive) as z:
            infos = z.infolist()
            _check_size(label, len(infos), sum(i.file_size for i in infos))
            for info in infos:
                if why := _check_zip_member(info):
                    raise UserError(f"{label}: refused, the archive's member {info.filename!r} is unsafe ({why})")
            z.extractall(dest)
            for info in infos:  # zipfile drops permission bits; keep the executable bit
                if not info.is_dir() and (info.external_attr >> 16) & 0o100:
                    (dest / info.filename).chmod(0o755)
    else:
        raise UserError(f"{label}: neither a tar nor a zip archive")
    top = list(dest.iterdir())
    if len(top) != 1 or not top[0].is_dir() or top[0].is_symlink():
        raise UserError(
            f"{label}: expected one folder at the archive's top (as a source distribution has), found "
            f"{', '.join(sorted(p.name for p in top)) or 'nothing'}"
        )
    return top[0]


def _check_size(label: str, members: int, size: int) -> None:
    if members > MAX_MEMBERS:
        raise UserError(f"{label}: {members} members, more than the {MAX_MEMBERS} allowed; refused")
    if size > MAX_UNPACKED_BYTES:
        raise UserError(f"{label}: {size} bytes unpacked, more than the {MAX_UNPACKED_BYTES // 2**20} MiB allowed; refused")


def select_files(root: Path, exclude: list[str], include: list[str] | None = None, label: str = "") -> dict[str, Path]:
    """The files taken from an unpacked archive: ``{relative POSIX path: file}``, sorted.

    Regular files only; a link to a file inside ``root`` is taken as that file, any other link
    is left out.

    Args:
        root: the archive's top folder.
        exclude: gitignore-style patterns (``ArchiveLayer.exclude``).
        include: the only paths taken (``ArchiveLayer.include``), or None for all.
        label: how errors name the archive.

    Raises:
        UserError: a path of ``include`` is missing (or excluded).
    """
    ignored = pathspec.GitIgnoreSpec.from_lines(exclude)
    inside = root.resolve()
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink() and not path.resolve().is_relative_to(inside):
            continue
        if path.is_file() and not ignored.match_file(rel):
            found[rel] = path
    if include is None:
        return found
    missing = [p for p in include if p not in found]
    if missing:
        raise UserError(f"{label}: has no file {', '.join(missing[:5])} (listed in include, or excluded)")
    return {p: found[p] for p in sorted(include)}


def build_tree(archives: list[ArchiveLayer], files: dict[str, str], dest: Path, cache: Path | None = None) -> int:
    """Make a starting tree in ``dest`` (which must not exist) from archives and added files.

    Args:
        archives: the layers, in order (``StartRecipe.archives``).
        files: files written last (``StartRecipe.files``).
        dest: the tree's folder.
        cache: the sources cache (default ``sources_cache()``).

    Returns:
        Bytes downloaded.

    Raises:
        UserError: see ``fetch_archive``, ``unpack`` and ``select_files``; a layer puts a file
            where an earlier one has a folder, or the reverse.
    """
    dest.mkdir(parents=True)
    downloaded = 0
    for layer in archives:
        archive, size = fetch_archive(layer, cache)
        downloaded += size
        with tempfile.TemporaryDirectory(prefix=".unpack-", dir=dest.parent) as tmp:  # beside the tree, not in /tmp
            root = unpack(archive, Path(tmp), layer.url)
            for rel, src in select_files(root, layer.exclude, layer.include, layer.url).items():
                _place(dest, f"{layer.into}/{rel}" if layer.into else rel, src.read_bytes(), os.stat(src).st_mode & 0o100)
    for rel, text in files.items():
        _place(dest, rel, text.encode("utf-8"), 0)
    return downloaded


def _place(dest: Path, rel: str, data: bytes, executable: int) -> None:
    out = dest / rel
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if out.is_dir():
            raise NotADirectoryError
        out.write_bytes(data)
    except (NotADirectoryError, FileExistsError, IsADirectoryError):
        raise UserError(f"the recipe puts {rel} where another layer has a file or folder of that name") from None
    out.chmod(0o755 if executable else 0o644)


def tree_digest(root: Path) -> str:
    """SHA-256 (hex) of a tree's manifest: one line ``MODE SHA256 PATH\\n`` per entry that is not a
    folder, sorted by POSIX path; MODE as git writes it (``100644``, ``100755``, ``120000`` for a
    link, whose SHA-256 is of its target; ``000000`` anything else). Empty folders do not count.
    The same files with the same executable bits give the same digest on any machine."""
    lines = []
    for folder, folders, names in os.walk(root):
        folders.sort()
        for name in names + [d for d in folders if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            rel = Path(path).relative_to(root).as_posix()
            info = os.lstat(path)
            if stat.S_ISLNK(info.st_mode):
                mode, sha = "120000", hashlib.sha256(os.readlink(path).encode()).hexdigest()
            elif stat.S_ISREG(info.st_mode):
                mode, sha = ("100755" if info.st_mode & 0o100 else "100644"), _file_sha256(Path(path))
            else:
                mode, sha = "000000", "0" * 64
            lines.append(f"{mode} {sha} {rel}\n")
    return hashlib.sha256("".join(sorted(lines, key=lambda line: line.split(" ", 2)[2])).encode()).hexdigest()


def materialise(recipe: StartRecipe, name: str = "", cache: Path | None = None) -> StartTree:
    """The starting tree of ``recipe``, from the cache or built into it, checked against ``tree_sha256``.

    Args:
        recipe: the task's ``start``.
        name: the task's name, for the cache folder's name (readability only).
        cache: the sources cache (default ``sources_cache()``).

    Returns:
        The tree; a cached one whose files no longer match the digest is rebuilt.

    Raises:
        UserError: see ``build_tree``; the built tree's digest is not ``tree_sha256`` (the
            message gives both: an archive or the builder changed since the recipe was written).
    """
    cache = cache or sources_cache()
    label = re.sub(r"[^A-Za-z0-9._-]+", "_", name.replace("/", "-"))[:80]
    folder = cache / "trees" / (f"{label}-{recipe.key()[:16]}" if label else recipe.key()[:16])
    if folder.is_dir():
        if tree_digest(folder) == recipe.tree_sha256:
            return StartTree(folder, 0, built=False)
        remove_tree(folder)  # changed by hand or half-removed: built again
    _cache_folder(folder.parent)
    partial = folder.parent / f".{folder.name}.{os.getpid()}.partial"
    remove_tree(partial)
    try:
        downloaded = build_tree(recipe.archives, recipe.files, partial, cache)
        digest = tree_digest(partial)
        if digest != recipe.tree_sha256:
            raise UserError(
                f"the starting tree built from {', '.join(a.url for a in recipe.archives)} has digest {digest}, "
                f"not the recorded tree_sha256 {recipe.tree_sha256}: an archive or the way trees are built changed "
                "since the recipe was written; rebuild the task (suites/README.md, 'Adding a task')"
            )
        try:
            os.replace(partial, folder)
        except OSError:
            if not folder.is_dir():  # not another process's finished build
                raise
    finally:
        remove_tree(partial)
    return StartTree(folder, downloaded, built=True)


__all__ = [
    "ArchiveLayer", "StartRecipe", "StartTree", "build_tree", "fetch_archive", "materialise", "select_files",
    "sources_cache", "tree_digest", "unpack",
]  # fmt: skip
