"""The local mirror of the container's working folder, kept in step with the container.

Horizon's file tools (``view_file``, ``edit_file``, ``apply_patch``, ``search_code``, the
repository map) read and write files on this machine; under Harbor the files live in the task's
container. The run's workspace is therefore a mirror of the container's working folder (the
task's ``WORKDIR``), synchronised at fixed points so that each side sees the other's changes
before it acts:

* **start** (``HorizonAgent.run``): the working folder is downloaded (``download_dir``) and
  becomes the run's starting tree, then ``snapshot`` records both sides' listings;
* **before each command** (``push``): the mirror is listed again and every file that differs from
  its last listing (size or modification time) is uploaded (``upload_file``, parents made first
  with one ``mkdir -p``), new empty folders are made, and what the tools deleted is removed from the
  container (one ``rm -rf``);
* **after each command** (``pull``): the container's working folder is listed with one ``find``
  (type, size, modification time, path); the files whose entry changed since the last listing
  are downloaded (one at a time, or as one ``tar`` archive when there are more than
  ``ARCHIVE_OVER``) and written into the mirror where their bytes differ, and what disappeared in
  the container is deleted from the mirror;
* **end**: one last ``push``, so edits made after the last command reach the container before
  Harbor's verifier runs there.

So the container is the truth for whatever a command did, and the mirror for whatever a file
tool did; neither side changes while the other is being acted on, since Horizon runs one tool call
at a time. What is not mirrored: links (left as they are on both sides), files larger than
``MAX_FILE_BYTES``, Horizon's own and build caches (``core.workspace.ALWAYS_EXCLUDED``: the
mirror's ``.horizon/`` observations never reach the container), and everything outside the
working folder, which only commands see (a task whose tests read ``/tmp/out`` is served by a
command that writes it). Without GNU ``find -printf`` in the container (busybox), the listing
falls back to downloading the whole working folder and comparing contents.
"""

from __future__ import annotations

import fnmatch
import os
import shlex
import shutil
import tarfile
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from core.api import ALWAYS_EXCLUDED, SandboxUnavailable
from plugins.coding.harbor.bridge import LoopBridge

#: Files larger than this are left out of the mirror (commands still see them in the container).
MAX_FILE_BYTES = 64 << 20
#: More changed files than this are downloaded as one tar archive instead of one by one.
ARCHIVE_OVER = 16
#: Seconds each synchronisation command may take in the container.
SYNC_TIMEOUT_S = 300
_EXCLUDED = [p.rstrip("/") for p in ALWAYS_EXCLUDED]

#: One entry of a listing: (kind "f" file or "d" folder, size in bytes, modification time as text).
Entry = tuple[str, int, str]


def excluded(rel: str) -> bool:
    """Whether a working-folder path is left out of the mirror (a component matches ``ALWAYS_EXCLUDED``)."""
    return any(fnmatch.fnmatch(part, pattern) for part in rel.split("/") for pattern in _EXCLUDED)


def local_listing(root: Path) -> dict[str, Entry]:
    """The mirror's files and folders (links, excluded paths and large files left out), by relative path."""
    found: dict[str, Entry] = {}
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        for name in list(dirs):
            path = base / name
            rel = path.relative_to(root).as_posix()
            if path.is_symlink() or excluded(rel):
                dirs.remove(name)  # os.walk does not descend into it
                continue
            found[rel] = ("d", 0, "")
        for name in files:
            path = base / name
            rel = path.relative_to(root).as_posix()
            if excluded(rel):
                continue
            info = path.lstat()
            if not path.is_file() or path.is_symlink() or info.st_size > MAX_FILE_BYTES:
                continue
            found[rel] = ("f", info.st_size, str(info.st_mtime_ns))
    return found


@dataclass
class SyncReport:
    """What one synchronisation moved (for the run's events and the tests)."""

    uploaded: list[str] = field(default_factory=list)
    removed_remote: list[str] = field(default_factory=list)
    downloaded: list[str] = field(default_factory=list)
    removed_local: list[str] = field(default_factory=list)


class ContainerMirror:
    """Keeps ``root`` (the run's workspace) and ``workdir`` in the container in step (module docstring).

    Args:
        environment: Harbor's environment (``exec``, ``upload_file``, ``download_file``, ``download_dir``).
        bridge: runs the environment's coroutines on Harbor's loop.
        workdir: the container's working folder (absolute).
        root: the local mirror (the run's workspace), once the run has made it (``attach``).
    """

    def __init__(self, environment: Any, bridge: LoopBridge, workdir: str) -> None:
        self.environment = environment
        self.bridge = bridge
        self.workdir = str(PurePosixPath(workdir))
        self.root: Path | None = None
        self._local: dict[str, Entry] = {}
        self._remote: dict[str, Entry] = {}
        self._find_works = True

    # -- commands in the container --------------------------------------------------------------

    def exec(self, command: str, *, timeout_s: int = SYNC_TIMEOUT_S) -> Any:
        """Run one synchronisation command in the container (from the working folder).

        Raises:
            SandboxUnavailable: the environment failed to run it.
        """
        try:
            return self.bridge.call(self.environment.exec, command, cwd=self.workdir, timeout_sec=timeout_s)
        except SandboxUnavailable:
            raise
        except Exception as exc:  # noqa: BLE001 - whatever the environment raised: the container is unusable for syncing
            raise SandboxUnavailable(f"synchronising {self.workdir} with the container failed: {type(exc).__name__}: {exc}") from None

    def _checked(self, command: str, what: str) -> Any:
        result = self.exec(command)
        if result.return_code != 0:
            said = (result.stderr or result.stdout or "no output").strip()[-500:]
            raise SandboxUnavailable(f"{what} in the container failed (exit code {result.return_code}): {said}")
        return result

    def remote(self, rel: str) -> str:
        """The container path of a working-folder path."""
        return str(PurePosixPath(self.workdir) / rel) if rel else self.workdir

    # -- the start ------------------------------------------------------------------------------

    def download_start(self, target: Path) -> Path:
        """Download the working folder into ``target`` (the run's starting tree); returns ``target``."""
        target.mkdir(parents=True, exist_ok=True)
        self._checked(f"mkdir -p {shlex.quote(self.workdir)}", f"making {self.workdir}")
        self.bridge.call(self.environment.download_dir, self.workdir, target)
        return target

    def attach(self, root: Path) -> None:
        """Start keeping ``root`` (the run's workspace, a copy of the starting tree) in step: both listings are taken now."""
        self.root = root
        self._local = local_listing(root)
        self._remote = self.remote_listing()

    # -- listings -------------------------------------------------------------------------------

    def remote_listing(self) -> dict[str, Entry]:
        """The container's working folder: ``find -printf`` of type, size and modification time.

        Without GNU find (busybox), the folder is downloaded and listed by content instead (a
        digest stands for the time, so only changed files count as changed).
        """
        if self._find_works:
            command = (f"cd {shlex.quote(self.workdir)} && find . -xdev -mindepth 1 \\( -type f -o -type d \\) "
                       "-printf '%y %s %T@ %P\\0'")  # fmt: skip
            result = self.exec(command)
            if result.return_code == 0:
                return self._parse_find(result.stdout or "")
            self._find_works = False
        return self._listing_by_download()

    @staticmethod
    def _parse_find(text: str) -> dict[str, Entry]:
        found: dict[str, Entry] = {}
        for record in text.split("\0"):
            parts = record.lstrip("\n").split(" ", 3)
            if len(parts) != 4 or not parts[3]:
                continue
            kind, size, mtime, rel = parts
            if excluded(rel) or (kind == "f" and int(size) > MAX_FILE_BYTES):
                continue
            found[rel] = (kind, int(size) if kind == "f" else 0, mtime if kind == "f" else "")
        return found

    def _listing_by_download(self) -> dict[str, Entry]:
        import hashlib

        with tempfile.TemporaryDirectory(prefix="horizon-harbor-list-") as tmp:
            self.bridge.call(self.environment.download_dir, self.workdir, Path(tmp))
            listed = local_listing(Path(tmp))
            return {rel: (k, s, hashlib.sha256((Path(tmp) / rel).read_bytes()).hexdigest() if k == "f" else "")
                    for rel, (k, s, _) in listed.items()}  # fmt: skip

    # -- the two directions ---------------------------------------------------------------------

    def push(self) -> SyncReport:
        """Send what the file tools changed in the mirror since the last sync to the container."""
        report = SyncReport()
        if self.root is None:
            return report
        now = local_listing(self.root)
        gone = sorted(rel for rel in self._local if rel not in now)
        changed = sorted(rel for rel, entry in now.items() if self._local.get(rel) != entry)
        if gone:
            top = [rel for rel in gone if not any(rel.startswith(other + "/") for other in gone)]
            self._checked("rm -rf -- " + " ".join(shlex.quote(self.remote(r)) for r in top), "removing deleted files")
            report.removed_remote = top
            for rel in list(self._remote):
                if any(rel == t or rel.startswith(t + "/") for t in top):
                    del self._remote[rel]
        folders = {r for r in changed if now[r][0] == "d"} | {str(PurePosixPath(r).parent) for r in changed if now[r][0] == "f"}
        folders.discard(".")
        if folders:
            self._checked("mkdir -p -- " + " ".join(shlex.quote(self.remote(r)) for r in sorted(folders)), "making folders")
        for rel in changed:
            if now[rel][0] == "f":
                self.bridge.call(self.environment.upload_file, self.root / rel, self.remote(rel))
                report.uploaded.append(rel)
        # What was sent is now known to be in the container: a command that removes it is seen
        # by the next pull (an entry no listing matches, so a file still there is compared again).
        for rel in folders:
            parts = PurePosixPath(rel).parts
            for i in range(1, len(parts) + 1):
                self._remote.setdefault("/".join(parts[:i]), ("d", 0, ""))
        for rel in report.uploaded:
            self._remote[rel] = ("f", -1, "pushed")
        self._local = now
        return report

    def pull(self) -> SyncReport:
        """Bring what the last command changed in the container's working folder into the mirror."""
        report = SyncReport()
        if self.root is None:
            return report
        listing = self.remote_listing()
        for rel in sorted((r for r in self._remote if r not in listing), key=len):
            path = self.root / rel
            if path.is_symlink() or path.is_file():
                path.unlink()
                report.removed_local.append(rel)
            elif path.is_dir():
                shutil.rmtree(path)
                report.removed_local.append(rel)
        changed = sorted(rel for rel, entry in listing.items() if self._remote.get(rel) != entry)
        for rel in changed:
            if listing[rel][0] == "d":
                path = self.root / rel
                if path.is_file() or path.is_symlink():
                    path.unlink()
                path.mkdir(parents=True, exist_ok=True)
        files = [rel for rel in changed if listing[rel][0] == "f"]
        if files:
            with tempfile.TemporaryDirectory(prefix="horizon-harbor-pull-") as tmp:
                staged = self._download(files, Path(tmp))
                for rel in files:
                    if self._place(staged / rel, self.root / rel):
                        report.downloaded.append(rel)
        self._remote = listing
        self._local = local_listing(self.root)
        return report

    def _download(self, files: list[str], staging: Path) -> Path:
        """Download ``files`` (working-folder paths) under ``staging``; returns ``staging``."""
        if len(files) <= ARCHIVE_OVER:
            for rel in files:
                (staging / rel).parent.mkdir(parents=True, exist_ok=True)
                self.bridge.call(self.environment.download_file, self.remote(rel), staging / rel)
            return staging
        name = f"/tmp/.horizon-pull-{uuid.uuid4().hex}"
        listed = staging / ".list"
        listed.write_bytes(b"\0".join(rel.encode("utf-8", "surrogateescape") for rel in files) + b"\0")
        try:
            self.bridge.call(self.environment.upload_file, listed, f"{name}.list")
            self._checked(f"tar -cf {name}.tar --null -T {name}.list", "packing the changed files")
            archive = staging / ".archive.tar"
            self.bridge.call(self.environment.download_file, f"{name}.tar", archive)
            with tarfile.open(archive) as tar:
                tar.extractall(staging, filter="data")
        finally:
            self.exec(f"rm -f {name}.list {name}.tar")
        return staging

    @staticmethod
    def _place(source: Path, target: Path) -> bool:
        """Put a downloaded file into the mirror where its bytes (or mode) differ; whether it did."""
        if not source.is_file():
            return False  # gone between the listing and the download: the next pull says so
        same_mode = target.is_file() and (target.stat().st_mode & 0o777) == (source.stat().st_mode & 0o777)
        if same_mode and not target.is_symlink() and target.read_bytes() == source.read_bytes():
            return False
        if target.is_dir() and not target.is_symlink():
            shutil.rmtree(target)
        elif target.is_symlink():
            target.unlink()
        target.parent.mkdir(parents=True, exist_ok=True)
        temporary = target.with_name(f".{target.name}.horizon-{uuid.uuid4().hex[:8]}")
        shutil.copy2(source, temporary)
        os.replace(temporary, target)
        return True
