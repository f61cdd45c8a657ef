"""Resource limits for one sandboxed command: rlimits set in the child, and a cgroup where one can be made.

What limits what, and why:

* CPU time, file size, core dumps, open files: rlimits (``RLIMIT_CPU``, ``RLIMIT_FSIZE``,
  ``RLIMIT_CORE``, ``RLIMIT_NOFILE``), set in the child between fork and exec and inherited by
  everything it starts. They work everywhere.
* Processes: for an ordinary user, ``RLIMIT_NPROC``. The kernel counts every task (thread) of the
  *user*, not of the command, so the limit is what the user already runs plus ``max_processes``.
  For uid 0 the kernel ignores ``RLIMIT_NPROC`` (even inside a user namespace, because the
  sandboxed root is still uid 0 outside), so for root a ``pids`` cgroup is the only limit.
* Memory: a cgroup limit where a cgroup can be made (it counts what is really used, page cache
  and tmpfs included); otherwise ``RLIMIT_AS``, which limits address space, not memory. A JVM
  sizes its heap to half of ``RLIMIT_AS`` and runs fine under the 4 GiB default; tools that
  reserve huge address ranges up front (AddressSanitizer, some Go and Rust binaries) cannot run
  under ``RLIMIT_AS`` at all.

A cgroup is made per command under the cgroup this process is in, so any limit the caller itself
is under still applies: cgroup v1 ``/sys/fs/cgroup/<controller>/<own path>/horizon/<id>``, one
directory per hierarchy; cgroup v2 ``<own cgroup>/horizon/<id>``, or, for root, under the v2 root
(a v2 cgroup that holds processes, like our own, cannot hand controllers to children). An ordinary
user on cgroup v2 usually cannot make one (systemd does not delegate the session's cgroup), and
then the rlimits above are all there is: that is the clean degradation, not an error.

The command joins its cgroup in the child before exec (by writing "0" to a ``cgroup.procs`` opened
by the parent), so nothing it forks can escape the accounting. The parent kills whatever is left in
the cgroup and removes it after the command.

A long-lived process that another library spawns (an external MCP server, started by the ``mcp``
SDK) gets the same confinement through ``Confinement.launcher``: a small launcher
(``core.sandbox.launch``) joins the cgroup and sets the rlimits in a child before it execs the
command, and records how the command ended; ``Confinement.exceeded`` tells which cgroup limit it
ran into (an OOM kill, a fork refused by ``pids.max``).
"""

from __future__ import annotations

import atexit
import logging
import os
import resource
import signal
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from core.sandbox.base import SandboxLimits

log = logging.getLogger(__name__)

# Open files per command: plenty for build tools (Gradle, Maven, pytest-xdist) without letting one
# command use up the system's file table.
NOFILE_LIMIT = 8192
# Seconds between the soft CPU limit (SIGXCPU, catchable) and the hard one (SIGKILL).
CPU_GRACE_S = 5

_CONTROLLERS = ("pids", "memory")


# --------------------------------------------------------------------------------------------
# rlimits


def count_user_tasks(uid: int, proc: Path = Path("/proc")) -> int:
    """Tasks (threads, which is what ``RLIMIT_NPROC`` counts) that ``uid`` runs now, from /proc.

    A process's /proc directory is owned by its effective uid; non-dumpable processes show as
    root and are missed, which only makes the resulting limit a little tighter.
    """
    total = 0
    try:
        entries = os.scandir(proc)
    except OSError:
        return 0
    with entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat().st_uid != uid:
                    continue
                with open(os.path.join(entry.path, "stat"), "rb") as f:
                    stat = f.read()
                # Fields after the ")" that ends the command name start at field 3; num_threads is 20.
                total += int(stat.rsplit(b")", 1)[1].split()[17])
            except (OSError, ValueError, IndexError):
                continue  # the process ended while we looked
    return total


def _clamp(wanted: int, resource_id: int, *, root: bool) -> tuple[int, int]:
    """(soft, hard) for ``wanted``; an ordinary user cannot raise a hard limit, so stay under it."""
    if root:
        return wanted, wanted
    _, hard = resource.getrlimit(resource_id)
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    return wanted, wanted


def plan_rlimits(limits: SandboxLimits, *, memory_by_cgroup: bool, pids_by_cgroup: bool) -> list[tuple[int, tuple[int, int]]]:
    """The rlimits the child sets before exec, as (resource, (soft, hard)) pairs.

    Args:
        limits: the command's limits.
        memory_by_cgroup: a cgroup limits memory, so ``RLIMIT_AS`` is not needed.
        pids_by_cgroup: a cgroup limits processes (root's only process limit).
    """
    uid = os.getuid()
    root = uid == 0
    cpu_soft, cpu_hard = _clamp(limits.cpu_s + CPU_GRACE_S, resource.RLIMIT_CPU, root=root)
    plan = [
        (resource.RLIMIT_CPU, (min(limits.cpu_s, cpu_soft), cpu_hard)),
        (resource.RLIMIT_FSIZE, _clamp(limits.file_size_bytes, resource.RLIMIT_FSIZE, root=root)),
        (resource.RLIMIT_CORE, (0, 0)),
        (resource.RLIMIT_NOFILE, _clamp(NOFILE_LIMIT, resource.RLIMIT_NOFILE, root=root)),
    ]
    if not memory_by_cgroup:
        plan.append((resource.RLIMIT_AS, _clamp(limits.memory_bytes, resource.RLIMIT_AS, root=root)))
    if not root:
        # RLIMIT_NPROC is per user: leave room for what the user already runs.
        nproc = count_user_tasks(uid) + limits.max_processes
        plan.append((resource.RLIMIT_NPROC, _clamp(nproc, resource.RLIMIT_NPROC, root=False)))
    elif not pids_by_cgroup:
        _warn_once(
            "root-no-pids",
            "running as root without a pids cgroup: the number of processes a "
            "command may start is not limited (RLIMIT_NPROC does not apply to root)",
        )
    return plan


# --------------------------------------------------------------------------------------------
# cgroups


@dataclass(frozen=True)
class CgroupMounts:
    """Where each controller can be reached: cgroup v1 hierarchy or v2, and our own cgroup there.

    Attributes:
        v1: controller name -> our own cgroup directory in that controller's v1 hierarchy.
        v2_own: our own cgroup directory in the v2 hierarchy (None without a v2 mount).
        v2_root: the v2 mount point.
    """

    v1: dict[str, Path] = field(default_factory=dict)
    v2_own: Path | None = None
    v2_root: Path | None = None


def parse_cgroup_mounts(mountinfo: str, self_cgroup: str) -> CgroupMounts:
    """Find our cgroup directories from the text of /proc/self/mountinfo and /proc/self/cgroup.

    A cgroup mount may show only a subtree (its ``root`` field, e.g. inside a container without a
    cgroup namespace); our path is then made relative to that root.
    """
    v1_mounts: dict[str, tuple[str, Path]] = {}  # controller -> (mount root, mount point)
    v2_mount: tuple[str, Path] | None = None
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        if not sep:
            continue
        fields, rfields = left.split(), right.split()
        if len(fields) < 5 or len(rfields) < 3:
            continue
        root, point = fields[3], Path(_unescape(fields[4]))
        fstype, options = rfields[0], rfields[2].split(",")
        if fstype == "cgroup2" and v2_mount is None:
            v2_mount = (root, point)
        elif fstype == "cgroup":
            for controller in _CONTROLLERS:
                if controller in options and controller not in v1_mounts:
                    v1_mounts[controller] = (root, point)

    mounts = CgroupMounts()
    for line in self_cgroup.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        hierarchy, controllers, path = parts
        if hierarchy == "0" and controllers == "":
            if v2_mount is not None:
                mounts = CgroupMounts(mounts.v1, _join(v2_mount, path), v2_mount[1])
            continue
        for controller in controllers.split(","):
            if controller in v1_mounts:
                mounts.v1[controller] = _join(v1_mounts[controller], path)
    return mounts


def _unescape(path: str) -> str:
    """mountinfo writes space, tab, newline and backslash as octal escapes."""
    return path.replace("\\040", " ").replace("\\011", "\t").replace("\\012", "\n").replace("\\134", "\\")


def _join(mount: tuple[str, Path], path: str) -> Path:
    root, point = mount
    if root != "/" and (path == root or path.startswith(root + "/")):
        path = path[len(root) :]
    return point / path.lstrip("/")


_mounts_cache: CgroupMounts | None = None
_broken: set[str] = set()  # parent directories where making a cgroup failed; not retried
_lock = threading.Lock()
_warned: set[str] = set()


def _warn_once(key: str, message: str) -> None:
    with _lock:
        if key in _warned:
            return
        _warned.add(key)
    log.warning("sandbox: %s", message)


def _cgroup_mounts() -> CgroupMounts:
    global _mounts_cache
    if _mounts_cache is None:
        try:
            mountinfo = Path("/proc/self/mountinfo").read_text()
            self_cgroup = Path("/proc/self/cgroup").read_text()
        except OSError:
            mountinfo = self_cgroup = ""
        _mounts_cache = parse_cgroup_mounts(mountinfo, self_cgroup)
    return _mounts_cache


def _write(path: Path, text: str) -> None:
    with open(path, "w") as f:
        f.write(text)


def _enable_controllers(directory: Path, controllers: list[str]) -> bool:
    """Make sure ``directory``'s children get ``controllers`` (cgroup v2 ``cgroup.subtree_control``)."""
    try:
        enabled = (directory / "cgroup.subtree_control").read_text().split()
        missing = [c for c in controllers if c not in enabled]
        if missing:
            _write(directory / "cgroup.subtree_control", " ".join("+" + c for c in missing))
        return True
    except OSError:
        return False  # EBUSY: the cgroup holds processes; EACCES/EROFS: not ours to change


class Cgroup:
    """The cgroup directories (one per v1 hierarchy, or one v2 directory) of one command."""

    def __init__(self, dirs: dict[str, Path]):
        self.dirs = dirs  # controller -> directory; several controllers may share one (v2)

    @property
    def limits_memory(self) -> bool:
        return "memory" in self.dirs

    @property
    def limits_pids(self) -> bool:
        return "pids" in self.dirs

    @classmethod
    def create(cls, limits: SandboxLimits) -> Cgroup | None:
        """Make a cgroup with ``pids.max`` and the memory limit set; None where none can be made."""
        mounts = _cgroup_mounts()
        name = f"{os.getpid()}-{uuid.uuid4().hex[:12]}"
        dirs: dict[str, Path] = {}
        try:
            for controller in _CONTROLLERS:
                if controller in mounts.v1:
                    made = _make_v1(mounts.v1[controller], name)
                    if made is not None:
                        dirs[controller] = made
            wanted_v2 = [c for c in _CONTROLLERS if c not in mounts.v1]
            if wanted_v2 and mounts.v2_own is not None:
                made = _make_v2(mounts, wanted_v2, name)
                if made is not None:
                    directory, controllers = made
                    for controller in controllers:
                        dirs[controller] = directory
            if not dirs:
                return None
            cgroup = cls(dirs)
            cgroup._set_limits(limits)
            return cgroup
        except OSError as exc:
            # Made but not configurable: give up on cgroups for this command, keep the rlimits.
            _warn_once("cgroup-config", f"cannot configure a cgroup ({exc}); using rlimits only")
            cls(dirs).remove()
            return None

    def _set_limits(self, limits: SandboxLimits) -> None:
        pids = self.dirs.get("pids")
        if pids is not None:
            _write(pids / "pids.max", str(limits.max_processes))
        memory = self.dirs.get("memory")
        if memory is not None:
            if (memory / "memory.max").exists():  # v2
                _write(memory / "memory.max", str(limits.memory_bytes))
                _try_write(memory / "memory.swap.max", "0")  # the limit means RAM, not RAM + swap
            else:  # v1
                _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes))
                _try_write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))

    def open_procs(self) -> list[int]:
        """Open each directory's ``cgroup.procs``: writing a pid there moves that process in
        ("0" moves the writer). The descriptors are close-on-exec, so a command never holds them."""
        fds: list[int] = []
        try:
            for directory in set(self.dirs.values()):
                fds.append(os.open(directory / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC))
        except OSError:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def pids(self) -> set[int]:
        found: set[int] = set()
        for directory in set(self.dirs.values()):
            try:
                found.update(int(p) for p in (directory / "cgroup.procs").read_text().split())
            except (OSError, ValueError):
                pass
        return found

    def kill(self) -> None:
        """SIGKILL everything in the cgroup, including processes that left the session or group."""
        for directory in set(self.dirs.values()):
            if _try_write(directory / "cgroup.kill", "1"):  # v2, Linux 5.14+: atomic
                continue
        # v1, or older v2: kill what is listed until nothing is (pids.max bounds the rounds).
        for _ in range(100):
            pids = self.pids()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
            time.sleep(0.001)

    def oom_killed(self) -> bool:
        """True when the memory limit made the kernel kill a process of this command."""
        memory = self.dirs.get("memory")
        if memory is None:
            return False
        for name in ("memory.events", "memory.oom_control"):  # v2, v1
            try:
                for line in (memory / name).read_text().splitlines():
                    key, _, value = line.partition(" ")
                    if key == "oom_kill" and int(value) > 0:
                        return True
            except (OSError, ValueError):
                continue
        return False

    def pids_limit_hit(self) -> bool:
        """True when a process of this command could not be started because of ``pids.max``
        (``pids.events``' ``max`` counter, cgroup v1 and v2)."""
        pids = self.dirs.get("pids")
        if pids is None:
            return False
        try:
            for line in (pids / "pids.events").read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "max" and int(value) > 0:
                    return True
        except (OSError, ValueError):
            pass
        return False

    def remove(self) -> None:
        """Kill what is left and remove the directories.

        A cgroup can be removed once empty, but the kernel may report it busy for a moment after
        its last process died; such directories are retried at the next removal and at exit
        instead of making the command wait.
        """
        self.kill()
        with _lock:
            _pending_removal.update(set(self.dirs.values()))
            pending = list(_pending_removal)
        for directory in pending:
            if _rmdir(directory):
                with _lock:
                    _pending_removal.discard(directory)


_pending_removal: set[Path] = set()


def _rmdir(directory: Path) -> bool:
    """Remove an empty cgroup directory; True when it is gone."""
    try:
        directory.rmdir()
    except FileNotFoundError:
        pass
    except OSError:
        return False  # EBUSY: processes still being torn down
    return True


@atexit.register
def _remove_pending() -> None:
    for _ in range(100):
        with _lock:
            pending = list(_pending_removal)
        if not pending:
            return
        for directory in pending:
            if _rmdir(directory):
                with _lock:
                    _pending_removal.discard(directory)
        time.sleep(0.01)
    for directory in _pending_removal:
        log.warning("sandbox: could not remove cgroup %s", directory)


def _try_write(path: Path, text: str) -> bool:
    try:
        _write(path, text)
        return True
    except OSError:
        return False


_swept: set[Path] = set()


def _sweep(group: Path) -> None:
    """Remove the cgroups that dead Horizon processes left in ``group`` (once per process).

    A process killed outright never removes its cgroups. Names start with the owner's pid; only
    those whose owner is gone are tried, and rmdir fails on a cgroup that still holds processes.
    """
    with _lock:
        if group in _swept:
            return
        _swept.add(group)
    try:
        entries = list(os.scandir(group))
    except OSError:
        return
    for entry in entries:
        owner = entry.name.partition("-")[0]
        if entry.is_dir(follow_symlinks=False) and owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
            _rmdir(Path(entry.path))


def _make_v1(own: Path, name: str) -> Path | None:
    """Make ``<own>/horizon/<name>`` in one v1 hierarchy; None where we may not."""
    parent = own / "horizon"
    if str(parent) in _broken:
        return None
    try:
        parent.mkdir(exist_ok=True)
        _sweep(parent)
        directory = parent / name
        directory.mkdir()
        return directory
    except OSError as exc:
        _broken.add(str(parent))
        log.info("sandbox: no cgroup under %s (%s)", own, exc)
        return None


def _make_v2(mounts: CgroupMounts, controllers: list[str], name: str) -> tuple[Path, list[str]] | None:
    """Make ``<parent>/horizon/<name>`` in the v2 hierarchy with as many of ``controllers`` as we can.

    Parent candidates: our own cgroup (works when it was delegated to us and holds no processes),
    then the v2 root (root only; the root cgroup is exempt from the no-internal-processes rule).
    """
    candidates = [mounts.v2_own]
    if os.getuid() == 0 and mounts.v2_root is not None and mounts.v2_root != mounts.v2_own:
        candidates.append(mounts.v2_root)
    for parent in candidates:
        if parent is None or str(parent) in _broken:
            continue
        try:
            available = (parent / "cgroup.controllers").read_text().split()
        except OSError:
            continue
        usable = [c for c in controllers if c in available]
        if not usable or not _enable_controllers(parent, usable):
            _broken.add(str(parent))
            continue
        try:
            group = parent / "horizon"
            group.mkdir(exist_ok=True)
            _sweep(group)
            if not _enable_controllers(group, usable):
                _broken.add(str(parent))
                continue
            directory = group / name
            directory.mkdir()
            return directory, usable
        except OSError as exc:
            _broken.add(str(parent))
            log.info("sandbox: no cgroup under %s (%s)", parent, exc)
    return None


# --------------------------------------------------------------------------------------------
# the whole confinement of one command


class Confinement:
    """Limits for one command: the rlimits and the cgroup.

    They are applied either in the child before exec (``preexec``, for a plain subprocess) or by
    the parent to a process that is waiting to start the command (``apply_to``, for bwrap, whose
    sandbox blocks until told to go on: no Python code then runs between fork and exec). Use as a
    context manager around the command; on exit it kills whatever is still in the cgroup and
    removes it.

    Args:
        limits: the command's limits.
        use_cgroups: try to make a cgroup (False: rlimits only, e.g. to test that mode).
    """

    def __init__(self, limits: SandboxLimits, *, use_cgroups: bool = True):
        self.cgroup = Cgroup.create(limits) if use_cgroups else None
        self._procs_fds: list[int] = []
        if self.cgroup is not None:
            try:
                self._procs_fds = self.cgroup.open_procs()
            except OSError as exc:
                _warn_once("cgroup-open", f"cannot use a cgroup ({exc}); using rlimits only")
                self.cgroup.remove()
                self.cgroup = None
        self.memory_by_cgroup = self.cgroup is not None and self.cgroup.limits_memory
        self.rlimits = plan_rlimits(
            limits,
            memory_by_cgroup=self.memory_by_cgroup,
            pids_by_cgroup=self.cgroup is not None and self.cgroup.limits_pids,
        )

    def preexec(self) -> None:
        """Runs in the child between fork and exec: no imports, no locks, only system calls.

        (``preexec_fn`` is unsafe in general in a threaded parent because the child may need a lock
        another thread held at fork; these calls take none.)
        """
        for fd in self._procs_fds:
            os.write(fd, b"0")
        for resource_id, values in self.rlimits:
            resource.setrlimit(resource_id, values)

    def apply_to(self, pid: int) -> None:
        """Move process ``pid`` into the cgroup and set its rlimits; what it forks afterwards
        inherits both. ``pid`` must not have started the command yet.

        Raises:
            OSError: a limit could not be applied (the caller must not let the command start).
        """
        for fd in self._procs_fds:
            os.write(fd, str(pid).encode())
        for resource_id, values in self.rlimits:
            resource.prlimit(pid, resource_id, values)

    def kill(self) -> None:
        """Kill everything in the command's cgroup (nothing without one)."""
        if self.cgroup is not None:
            self.cgroup.kill()

    def oom_killed(self) -> bool:
        return self.cgroup is not None and self.cgroup.oom_killed()

    def exceeded(self) -> str | None:
        """Which cgroup limit the command ran into, as a phrase for messages (``"its memory
        limit"``, ``"its process limit"``), or None (none, or no cgroup to tell)."""
        if self.cgroup is None:
            return None
        if self.cgroup.oom_killed():
            return "its memory limit"
        if self.cgroup.pids_limit_hit():
            return "its process limit"
        return None

    def launcher(self, argv: list[str], status_file: Path) -> list[str]:
        """The command line that starts ``argv`` as a long-lived process under these limits
        (``core.sandbox.launch``): the process joins the cgroup and sets the rlimits before it
        execs ``argv``, and its exit status (negative: the signal) is written to ``status_file``
        as ``{"exit_code": N}`` when it ends. For a process someone else spawns (an MCP server
        started by the ``mcp`` SDK); ``run``'s commands use ``preexec`` or ``apply_to`` instead.
        """
        import json
        import sys

        cgroup_dirs = sorted({str(d / "cgroup.procs") for d in self.cgroup.dirs.values()}) if self.cgroup is not None else []
        spec = {"cgroup_procs": cgroup_dirs, "rlimits": [[r, soft, hard] for r, (soft, hard) in self.rlimits],
                "status": str(status_file), "parent": os.getpid()}  # fmt: skip
        script = Path(__file__).with_name("launch.py")
        return [sys.executable, "-I", "-S", str(script), json.dumps(spec), "--", *argv]

    def close(self) -> None:
        for fd in self._procs_fds:
            os.close(fd)
        self._procs_fds = []
        if self.cgroup is not None:
            self.cgroup.remove()
            self.cgroup = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
