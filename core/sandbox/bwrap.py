"""``BwrapSandbox``: every command in a fresh bubblewrap sandbox (https://github.com/containers/bubblewrap).

What a command sees:

* the host's ``/`` read-only, so compilers, JDKs and system libraries work unchanged;
* a fresh ``/dev`` and ``/proc`` (its own pid namespace: it sees only its own processes);
* an empty, private ``/tmp`` (also its ``HOME``), and empty tmpfs over ``/run`` (where the host's
  daemons keep unix sockets: docker, dbus, databases; a unix socket is still connectable on a
  read-only mount, and a network namespace does not stop it), over the user's home, over
  ``/root`` (``~/.ssh``, cloud credentials, shell history) and over ``$HORIZON_HOME`` when it is
  set (other runs' workspaces, the run store);
* the password hashes (``/etc/shadow``, ``/etc/gshadow`` and their backups) and the SSH host
  keys replaced by an empty file: root-owned, so uid 0 in the sandbox (Horizon run as root) could
  read them even without capabilities (``secret_paths``);
* the Python installation read-only again on top (it may live under the home folder, e.g. pyenv),
  so ``python -m pytest`` runs the interpreter Horizon runs;
* the workspace read-write and the scratch folder read-only at their real absolute paths, with
  ``scratch/runs`` (``SCRATCH_WRITABLE``, the per-command output folders: test reports, build
  outputs) read-write, so a command cannot rewrite what Horizon and the plugins keep in scratch
  (the reward's baseline); then the workspace's ``.git`` and any ``readonly`` paths read-only on top;
* no network but its own loopback (unless ``allow_network``), no capabilities, a new session (no
  terminal to inject keystrokes into), a fixed environment (the host's holds API keys);
* with ``alias`` (e.g. ``/app``, where a Terminal-Bench task's tests expect the files), the workspace
  a second time at that path, its ``.git`` read-only there too, and ``binds`` (e.g. a Terminal-Bench
  task's tests at ``/tests``) read-only at theirs. A new folder cannot be made in the host's
  read-only ``/``, so then ``/`` is built from the host's top-level entries, each bound read-only
  (symbolic links recreated), in bwrap's own root, which is made read-only once every mount point
  exists; where the new folder's parent exists on the host (``/srv`` for ``/srv/app``), the host
  folders above it are rebuilt the same way, one level deeper each (``alias_parents``).

When the command's first process exits, the pid namespace's init exits and the kernel kills
everything left in the namespace: detached processes (``setsid``, double fork, ``nohup &``) die
with the command. Limits are in ``core.sandbox.limits``.
"""

from __future__ import annotations

import copy
import functools
import glob
import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from core.errors import SandboxUnavailable
from core.sandbox.base import SCRATCH_WRITABLE, ProcessResult, SandboxLimits
from core.sandbox.limits import Confinement
from core.sandbox.process import (
    Finished,
    command_env,
    decode_head,
    kill_group,
    run_captured,
    sandbox_path,
    shell_status_to_exit_code,
    wait_readable,
)

INSTALL_HINT = "install the Debian package bubblewrap: sudo apt-get install bubblewrap"
#: Set in every sandbox to the pid of the Horizon process that started it; it is in bwrap's own
#: command line too (``--setenv``), which is how ``sweep_orphans`` recognises Horizon's sandboxes.
OWNER_VAR = "HORIZON_SANDBOX_OWNER"


def find_bwrap() -> str:
    """The path of the bwrap program.

    Raises:
        SandboxUnavailable: bwrap is not installed.
    """
    found = shutil.which("bwrap") or next((p for p in ("/usr/bin/bwrap", "/usr/local/bin/bwrap") if os.access(p, os.X_OK)), None)
    if found is None:
        raise SandboxUnavailable(
            f"bwrap (bubblewrap) is not installed; {INSTALL_HINT}. "
            "Or pass --no-sandbox to run without isolation, at your own risk."
        )
    return found


@functools.cache
def bwrap_features(bwrap: str) -> frozenset[str]:
    """Options this bwrap knows, from its --help (``--size`` is 0.8+, ``--json-status-fd`` 0.5+)."""
    try:
        text = subprocess.run([bwrap, "--help"], check=False, capture_output=True, text=True, env={}, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return frozenset()
    return frozenset(word for word in text.split() if word.startswith("--"))


def python_prefixes() -> list[Path]:
    """The running Python's installation folders (a venv's and the interpreter's it was made from)."""
    found = [sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix]
    return [p for p in dict.fromkeys(Path(f).resolve() for f in found) if p.is_dir()]


def hidden_dirs() -> list[Path]:
    """Folders replaced by empty tmpfs: the user's home ($HOME and the password database's), /root,
    and Horizon's data folder when ``HORIZON_HOME`` moves it out of the home (other runs' workspaces
    and scratch folders, the run store; the current run's folders are bound again on top)."""
    candidates = [os.environ.get("HOME", ""), "/root", os.environ.get("HORIZON_HOME", "")]
    try:
        candidates.append(pwd.getpwuid(os.getuid()).pw_dir)
    except KeyError:
        pass  # a uid without a passwd entry (some containers)
    found: list[Path] = []
    for candidate in candidates:
        if not candidate:
            continue
        path = Path(candidate).resolve()
        # Never hide "/" or a system tree (service accounts have homes like / or /var/lib/x).
        if path.is_dir() and len(path.parts) > 1 and path not in found and not _is_system_dir(path):
            found.append(path)
    return found


def _is_system_dir(path: Path) -> bool:
    return path in {Path(p) for p in ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc", "/var", "/opt", "/tmp", "/run")}


#: Root-owned secrets outside the hidden folders: uid 0 in the sandbox owns them, so it can read
#: them without any capability when Horizon runs as root. Files are covered with an empty file,
#: folders with an empty tmpfs.
SECRET_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/var/backups/shadow.bak", "/var/backups/gshadow.bak")
SECRET_GLOBS = ("/etc/ssh/ssh_host_*_key",)
SECRET_DIRS = ("/etc/ssl/private",)


def secret_paths() -> tuple[list[Path], list[Path]]:
    """(files, folders) of ``SECRET_FILES``, ``SECRET_GLOBS`` and ``SECRET_DIRS`` that exist here."""
    files = [Path(p) for p in SECRET_FILES if os.path.isfile(p) and not os.path.islink(p)]
    for pattern in SECRET_GLOBS:
        files += [Path(p) for p in sorted(glob.glob(pattern)) if os.path.isfile(p) and not os.path.islink(p)]
    dirs = [Path(p) for p in SECRET_DIRS if os.path.isdir(p) and not os.path.islink(p)]
    return files, dirs


def root_entries(expand: Sequence[Path] = ()) -> list[tuple[Path, str | None]]:
    """The host's top-level entries but ``/proc`` and ``/dev``: ``(path, link target or None)``,
    sorted; a folder in ``expand`` (``alias_parents``) is replaced by its own entries, likewise."""
    found: list[tuple[Path, str | None]] = []

    def walk(folder: Path) -> None:
        for entry in sorted(folder.iterdir()):
            if folder == Path("/") and entry.name in ("proc", "dev"):
                continue
            if entry in expand and not entry.is_symlink():
                walk(entry)
                continue
            found.append((entry, os.readlink(entry) if entry.is_symlink() else None))

    walk(Path("/"))
    return found


def build_bwrap_argv(
    argv: Sequence[str],
    *,
    bwrap: str,
    workspace: Path,
    scratch: Path,
    cwd: Path,
    env: dict[str, str],
    alias: Path | None = None,
    root: Sequence[tuple[Path, str | None]] = (),
    binds: Sequence[tuple[Path, Path]] = (),
    allow_network: bool = False,
    readonly: Sequence[Path] = (),
    mounts: Sequence[tuple[Path, Path]] = (),
    hidden: Sequence[Path] = (),
    masked: Sequence[Path] = (),
    python: Sequence[Path] = (),
    tmpfs_size: int | None = None,
    status_fd: int | None = None,
    json_status: bool = True,
    block_fd: int | None = None,
) -> list[str]:
    """The bwrap command line that runs ``argv`` in the sandbox. Pure: touches no file.

    Mount order matters: a later mount covers an earlier one at the same or a parent path, so the
    tmpfs that hide things come first, the writable workspace after them, the read-only paths last.

    Args:
        argv: the command to run inside.
        bwrap: path of the bwrap program.
        workspace, scratch: bound at the same absolute paths (must be resolved paths); the
            workspace read-write, scratch read-only but for ``scratch/runs`` (``SCRATCH_WRITABLE``,
            which must exist).
        cwd: working directory inside the sandbox.
        env: the complete environment of the command (nothing else is inherited).
        alias: an absolute path where the workspace is bound a second time, read-write (its
            ``readonly`` paths read-only there too); None: none.
        root: with ``alias`` (or ``binds``), the host's entries (``root_entries``) that make up
            ``/`` instead of the host's ``/`` itself, so that bwrap can make the mount points; it
            must not be empty then.
        binds: ``(host path, path inside)`` pairs bound read-only after the workspace and scratch
            (with ``root`` only).
        allow_network: share the host's network namespace instead of a loopback-only one.
        readonly: paths bound read-only last, on top of everything (e.g. ``workspace/.git``);
            each must exist.
        mounts: ``(host folder, folder in the workspace)`` pairs bound read-only over the
            workspace's folder, after ``readonly`` (e.g. a cached ``node_modules``); each
            folder in the workspace must exist and not be a link.
        hidden: folders to replace with an empty tmpfs (the user's home, /root).
        masked: files to cover with an empty file (``/dev/null``), e.g. ``/etc/shadow``.
        python: Python installation folders, bound read-only again after the tmpfs.
        tmpfs_size: size limit in bytes of each tmpfs (bwrap 0.8+ ``--size``); None: no limit.
        status_fd: descriptor for ``--json-status-fd`` (the sandbox's pid, then the exit code),
            or ``--info-fd`` (the pid only; bwrap < 0.5) when not ``json_status``.
        block_fd: descriptor for ``--block-fd``: the sandbox waits for a byte on it before it
            starts the command.
    """

    def tmpfs(path: Path | str) -> list[str]:
        sized = ["--size", str(tmpfs_size)] if tmpfs_size is not None else []
        return [*sized, "--tmpfs", str(path)]

    args = [bwrap, "--unshare-all"]  # new user, pid, network, ipc, uts and cgroup namespaces
    if allow_network:
        args.append("--share-net")
    args.append("--die-with-parent")  # Horizon dies: the sandbox dies
    args.append("--new-session")  # no controlling terminal: no TIOCSTI keystroke injection
    # Run as root, bwrap would leave the command every capability in its namespaces, enough to
    # remount the read-only / read-write. Nothing to drop for an ordinary user.
    args += ["--cap-drop", "ALL"]
    if not root:
        args += ["--ro-bind", "/", "/"]
    else:  # bwrap's own root (a tmpfs) holds the host's entries and the alias; read-only at the end
        for path, target in root:
            args += ["--symlink", target, str(path)] if target is not None else ["--ro-bind", str(path), str(path)]
    args += ["--dev", "/dev", "--proc", "/proc"]
    # bwrap covers /proc/sys only when the folder itself is writable, and it never is; but the
    # sysctl files in it are writable by uid 0 without any capability, and most are not
    # namespaced: run as root, a command could set kernel.core_pattern, a program the host
    # kernel runs as root. The host's /proc/sys read-only (sysctls show the reader's namespaces).
    args += ["--ro-bind", "/proc/sys", "/proc/sys"]
    args += tmpfs("/dev/shm")  # its own, so that --size bounds it too (multiprocessing uses it)
    args += tmpfs("/tmp")
    args += tmpfs("/run")
    for path in hidden:
        args += tmpfs(path)
    for path in masked:
        args += ["--ro-bind", "/dev/null", str(path)]
    for path in python:
        args += ["--ro-bind", str(path), str(path)]
    args += ["--bind", str(workspace), str(workspace)]
    if alias is not None:
        args += ["--bind", str(workspace), str(alias)]
    if scratch != workspace:
        # Read-only: scratch holds what Horizon and the plugins keep for themselves (the reward's
        # baseline). Commands write their reports and build outputs under scratch/runs only.
        writable = scratch / SCRATCH_WRITABLE
        args += ["--bind", str(scratch), str(scratch), "--remount-ro", str(scratch)]
        args += ["--bind", str(writable), str(writable)]
    if root:
        for host, inside in binds:
            args += ["--ro-bind", str(host), str(inside)]
    for path in readonly:
        args += ["--ro-bind", str(path), str(path)]
        if alias is not None and path.is_relative_to(workspace):  # a bind does not carry read-only submounts
            args += ["--ro-bind", str(path), str(alias / path.relative_to(workspace))]
    for host, inside in mounts:
        args += ["--ro-bind", str(host), str(inside)]
        if alias is not None:
            args += ["--ro-bind", str(host), str(alias / inside.relative_to(workspace))]
    if root:
        args += ["--remount-ro", "/"]
    args += ["--chdir", str(cwd), "--clearenv"]
    for key, value in env.items():
        args += ["--setenv", key, value]
    if status_fd is not None:
        args += ["--json-status-fd" if json_status else "--info-fd", str(status_fd)]
    if block_fd is not None:
        args += ["--block-fd", str(block_fd)]
    return [*args, "--", *argv]


class BwrapSandbox:
    """Runs each command in a fresh bubblewrap sandbox confined to ``workspace`` and ``scratch``.

    Args:
        workspace: the episode's repository copy; writable inside (its ``.git`` is read-only).
        scratch: a run-private folder, read-only inside except ``scratch/runs`` (made if
            missing), where tools put each command's reports and build outputs; also holds the
            output files while a command runs. Made if missing.
        limits: default limits of each command.
        allow_network: give commands the host's network (default: loopback only).
        readonly: extra host paths made visible read-only (e.g. a Maven repository under the
            hidden home); paths that do not exist are skipped.
        use_cgroups: limit memory and processes with a cgroup where one can be made (False:
            rlimits only).
        alias: an absolute path (e.g. ``/app``) where commands also see the workspace,
            read-write; commands still start in the workspace's real path.
        binds: ``{host path: absolute path inside}``: more folders or files shown read-only
            where the host has none (e.g. a Terminal-Bench task's tests at ``/tests``); each path
            inside is checked as ``alias`` is, and may not lie in the workspace, scratch or alias.
        hide: more host folders replaced by an empty tmpfs inside, as the home is (e.g. the
            suite of an evaluation, whose reference fixes and hidden tests the agent must not
            read); folders that do not exist are skipped.

    Raises:
        SandboxUnavailable: bwrap is not installed.
        ValueError: ``workspace`` is not a folder, or ``alias`` (or a path of ``binds``) cannot
            be a mount point here (see ``check_alias``).
    """

    isolated = True

    def __init__(
        self,
        workspace: Path,
        scratch: Path,
        *,
        limits: SandboxLimits | None = None,
        allow_network: bool = False,
        readonly: list[Path] | None = None,
        use_cgroups: bool = True,
        alias: Path | str | None = None,
        binds: dict[Path, Path] | dict[str, str] | None = None,
        hide: list[Path] | None = None,
    ):
        self.workspace = Path(workspace).resolve()
        if not self.workspace.is_dir():
            raise ValueError(f"sandbox workspace is not a folder: {workspace}")
        self.scratch = Path(scratch).resolve()
        self.alias = check_alias(Path(alias), [self.workspace, self.scratch]) if alias is not None else None
        self.binds: list[tuple[Path, Path]] = []
        for host, inside in (binds or {}).items():
            target = check_alias(Path(inside), [self.workspace, self.scratch])
            if any(target.is_relative_to(p) for p in (self.workspace, self.scratch, self.alias) if p is not None):
                raise ValueError(f"the bind {target} would lie in the workspace, scratch or alias folder")
            self.binds.append((Path(host).resolve(), target))
        # Host folders rebuilt from their entries so that the mount points can be made in them.
        self._rebuilt = sorted({p for t in [self.alias, *(b for _, b in self.binds)] if t is not None for p in alias_parents(t)})
        self.scratch.mkdir(parents=True, exist_ok=True)
        (self.scratch / SCRATCH_WRITABLE).mkdir(exist_ok=True)
        self.limits = limits or SandboxLimits()
        self.allow_network = allow_network
        self.readonly = [Path(p).resolve() for p in readonly or []]
        self.mounts: list[tuple[Path, Path]] = []  # (workspace-relative folder, host folder): with_mounts
        self.use_cgroups = use_cgroups
        self.bwrap = find_bwrap()
        # bwrap outlives a Horizon killed with SIGKILL (--die-with-parent ties only the sandbox to
        # bwrap), and so does the command: a sleep or a loop would run on, unconfined by a deadline.
        # util-linux's setpriv gives bwrap a parent-death signal first; it is in every Debian.
        setpriv = shutil.which("setpriv")
        self._die_with_us = [setpriv, "--pdeathsig", "KILL", "--"] if setpriv else []
        # Computed once: they do not change while Horizon runs.
        self._masked, secret_dirs = secret_paths()
        self._hidden = hidden_dirs()
        self._hidden += [d for d in secret_dirs if d not in self._hidden]
        self.hide = [Path(d).resolve() for d in hide or [] if Path(d).is_dir()]
        self._hidden += [d for d in self.hide if d not in self._hidden]
        # A Python prefix above a rebuilt folder (/usr for /usr/src/app) would cover it again;
        # outside the hidden folders (or the alias would be in a tmpfs), so the root shows it anyway.
        self._python = [p for p in python_prefixes() if not any(d.is_relative_to(p) for d in self._rebuilt)]
        self._root = root_entries(self._rebuilt) if self.alias is not None or self.binds else []
        sweep_orphans_once()
        resolv = Path("/etc/resolv.conf").resolve()
        if allow_network and resolv.is_relative_to("/run"):
            # systemd-resolved links /etc/resolv.conf into /run, which is hidden: put it back.
            self.readonly.append(resolv)

    def with_readonly(self, paths: list[Path]) -> BwrapSandbox:
        """A copy of this sandbox that also shows ``paths`` read-only (e.g. a test environment
        in Horizon's cache, which lies under the hidden ``$HORIZON_HOME``); this one is unchanged."""
        other = copy.copy(self)
        other.readonly = [*self.readonly, *(Path(p).resolve() for p in paths if Path(p).resolve() not in self.readonly)]
        return other

    def with_mounts(self, mounts: dict[str, Path]) -> BwrapSandbox:
        """A copy of this sandbox that shows host folders read-only at folders of the workspace.

        Args:
            mounts: ``{path relative to the workspace: host folder}`` (``{"node_modules":
                cache/<key>/node_modules}``). Each run makes the workspace's folder when it is
                missing (an empty folder: what a tree without its installed packages has), and
                skips a mount whose place in the workspace is a link or a file (the code under
                test chose it; the command then runs without that folder).
        """
        other = copy.copy(self)
        other.mounts = [*self.mounts, *((Path(rel), Path(host).resolve()) for rel, host in mounts.items())]
        return other

    def _mount_points(self) -> list[tuple[Path, Path]]:
        """``mounts`` as ``(host, absolute folder in the workspace)``, the folders made when missing."""
        found = []
        for rel, host in self.mounts:
            inside = self.workspace / rel
            # Never made or bound through a link: the workspace's content chose those.
            if rel.is_absolute() or ".." in rel.parts or not host.is_dir() or inside.parent.resolve() != inside.parent:
                continue
            try:
                if not os.path.lexists(inside):
                    inside.mkdir()
            except OSError:
                continue
            if inside.is_dir() and not inside.is_symlink():
                found.append((host, inside))
        return found

    def run(
        self,
        argv: list[str],
        *,
        cwd: Path | None = None,
        env: dict[str, str] | None = None,
        limits: SandboxLimits | None = None,
        stdin: str | None = None,
        pass_fds: tuple[int, ...] = (),
    ) -> ProcessResult:
        """Run ``argv`` in a fresh sandbox; see ``Sandbox.run``.

        bwrap sets the sandbox up, then waits (``--block-fd``) while we move its process into the
        cgroup and set its rlimits; only then does it start the command, which inherits both.
        ``pass_fds`` reach the command at their numbers (bwrap closes none it inherited).

        Raises:
            SandboxUnavailable: bwrap could not set the sandbox up (its message is included), or
                the limits could not be applied.
            ValueError: empty ``argv``, ``cwd`` not a folder in the workspace or scratch, or an
                invalid environment variable.
        """
        if not argv:
            raise ValueError("empty command")
        limits = limits or self.limits
        workdir = self._workdir(cwd)
        features = bwrap_features(self.bwrap)
        with Confinement(limits, use_cgroups=self.use_cgroups) as confinement:
            extra = dict(env or {})
            if not confinement.memory_by_cgroup:
                # Under RLIMIT_AS every glibc malloc arena reserves 64 MiB of address space, up to
                # 8 per CPU: a JVM's many threads would use up the limit without using memory.
                extra = {"MALLOC_ARENA_MAX": "2", **extra}
            full_env = {**command_env(extra, home="/tmp", tmpdir="/tmp"), OWNER_VAR: str(os.getpid())}
            git = self.workspace / ".git"  # a folder, or a file in a git worktree
            readonly = [git] if git.exists() and not git.is_symlink() else []
            readonly += [p for p in self.readonly if p.exists() and not any(d.is_relative_to(p) for d in self._rebuilt)]
            status_r, status_w = os.pipe()
            block_r, block_w = os.pipe()
            status = _StatusReader(status_r)
            bwrap_argv = build_bwrap_argv(
                argv,
                bwrap=self.bwrap,
                workspace=self.workspace,
                scratch=self.scratch,
                cwd=workdir,
                env=full_env,
                alias=self.alias,
                root=self._root,
                binds=self.binds,
                allow_network=self.allow_network,
                readonly=readonly,
                mounts=self._mount_points(),
                hidden=self._hidden,
                masked=self._masked,
                python=self._python,
                tmpfs_size=limits.memory_bytes if "--size" in features else None,
                status_fd=status_w,
                json_status="--json-status-fd" in features,
                block_fd=block_r,
            )

            # Our copies of the descriptors bwrap inherits, closed once it has them.
            theirs = [status_w, block_r]

            def close_theirs() -> None:
                while theirs:
                    os.close(theirs.pop())

            def start(proc: subprocess.Popen[bytes], deadline: float) -> bool:
                close_theirs()  # so that bwrap's exit reads as end of file
                child_pid = status.wait_child_pid(deadline)
                if child_pid is None:
                    return status.exited  # bwrap failed before the sandbox existed, or time is up
                try:
                    confinement.apply_to(child_pid)
                except ProcessLookupError:
                    return True  # setup failed and the sandbox is gone; bwrap says why
                except OSError as exc:
                    raise SandboxUnavailable(f"could not apply the sandbox limits: {exc}") from exc
                try:
                    os.write(block_w, b"go")
                except BrokenPipeError:
                    pass  # setup failed meanwhile
                return True

            def stop(proc: subprocess.Popen[bytes]) -> None:
                status.kill_sandbox(proc)
                confinement.kill()

            try:
                finished = run_captured(
                    # The signal comes when the *thread* that started bwrap ends; it waits here.
                    self._die_with_us + bwrap_argv,
                    env={},  # nothing for bwrap itself; --clearenv and --setenv make the command's
                    cwd=None,
                    stdin=stdin,
                    timeout_s=limits.timeout_s,
                    output_bytes=limits.output_bytes,
                    output_dir=self.scratch,
                    pass_fds=(status_w, block_r, *pass_fds),  # bwrap leaves inherited descriptors open for the command
                    after_start=start,
                    on_timeout=stop,
                    after_exit=status.wait_sandbox_gone,
                )
            except OSError as exc:  # bwrap itself could not be started
                raise SandboxUnavailable(f"cannot start {self.bwrap}: {exc}") from exc
            finally:
                close_theirs()
                os.close(block_w)
                status.read()
                status.close()
            oom = confinement.oom_killed()
        return self._result(argv, finished, status, oom, limits, full_env)

    def command_line(self, argv: list[str], *, env: dict[str, str] | None = None) -> tuple[list[str], dict[str, str]]:
        """The command line that starts ``argv`` in this sandbox as a long-lived process whose
        pipes the caller holds (an MCP server over stdio), instead of ``run``'s run-to-completion.

        Isolation is ``run``'s (the same mounts, namespaces, environment and network rule); the
        limits are the caller's to add, around this command line (``Confinement.launcher``: a
        cgroup and the rlimits for the process's whole life, as ``core.mcp.client`` does); there
        is no deadline, the process lives as long as the episode. It dies with Horizon
        (``--die-with-parent`` and a parent-death signal).

        Returns:
            ``(bwrap's argv, bwrap's own environment)``; the command's environment (the fixed
            one plus ``env``, nothing from the host) is set inside by bwrap.

        Raises:
            ValueError: empty ``argv`` or an invalid environment variable.
        """
        if not argv:
            raise ValueError("empty command")
        full_env = {**command_env(dict(env or {}), home="/tmp", tmpdir="/tmp"), OWNER_VAR: str(os.getpid())}
        git = self.workspace / ".git"
        readonly = [git] if git.exists() and not git.is_symlink() else []
        readonly += [p for p in self.readonly if p.exists() and not any(d.is_relative_to(p) for d in self._rebuilt)]
        return [*self._die_with_us, *build_bwrap_argv(
            argv, bwrap=self.bwrap, workspace=self.workspace, scratch=self.scratch, cwd=self.workspace, env=full_env,
            alias=self.alias, root=self._root, binds=self.binds, allow_network=self.allow_network, readonly=readonly,
            mounts=self._mount_points(), hidden=self._hidden, masked=self._masked, python=self._python)], {"PATH": sandbox_path()}  # fmt: skip

    def _result(
        self,
        argv: list[str],
        finished: Finished,
        status: _StatusReader,
        oom: bool,
        limits: SandboxLimits,
        env: dict[str, str],
    ) -> ProcessResult:
        """Tell the command's own outcome from bwrap's, and build the result."""
        stdout = decode_head(finished.stdout, finished.stdout_bytes)
        stderr = decode_head(finished.stderr, finished.stderr_bytes)
        stderr_bytes = finished.stderr_bytes
        if finished.timed_out:
            exit_code = -signal.SIGKILL
        elif status.exit_code is not None:  # the command ran; bwrap reports its status
            exit_code = shell_status_to_exit_code(status.exit_code)
        elif finished.returncode < 0:  # bwrap itself was killed (e.g. by the OOM killer)
            exit_code = finished.returncode
        elif finished.stderr.startswith(b"bwrap: execvp "):
            # The sandbox started but the program could not: report it as a shell would.
            reason = stderr.rstrip().rpartition(": ")[2]
            exit_code = 127 if "No such file" in reason else 126
            stderr = f"sandbox: cannot run {argv[0]!r}: {reason} (PATH={env['PATH']})\n"
            stderr_bytes = len(stderr.encode())
        elif finished.returncode == 1 and finished.stderr.startswith(b"bwrap: "):
            # With --json-status-fd we know the command never ran; without (bwrap < 0.5) this is
            # a guess, right unless the command itself prints "bwrap: " first and exits 1.
            raise SandboxUnavailable(f"bwrap could not set up the sandbox: {stderr.strip()}")
        else:
            exit_code = shell_status_to_exit_code(finished.returncode)
        if oom:
            note = f"\nsandbox: killed by the memory limit ({limits.memory_bytes} bytes)\n"
            stderr += note
            stderr_bytes += len(note.encode())
        return ProcessResult(
            argv=list(argv),
            exit_code=exit_code,
            stdout=stdout,
            stderr=stderr,
            stdout_bytes=finished.stdout_bytes,
            stderr_bytes=stderr_bytes,
            timed_out=finished.timed_out,
            duration_s=finished.duration_s,
        )

    def _workdir(self, cwd: Path | None) -> Path:
        if cwd is None:
            return self.workspace
        path = (self.workspace / cwd).resolve()  # an absolute cwd replaces the workspace part
        if not (path.is_relative_to(self.workspace) or path.is_relative_to(self.scratch)):
            raise ValueError(f"cwd must be inside the workspace or scratch folder: {cwd}")
        if not path.is_dir():
            raise ValueError(f"cwd is not a folder: {cwd}")
        return path


_orphans_swept = False


def sweep_orphans_once() -> None:
    """``sweep_orphans``, the first time a sandbox is made in this process."""
    global _orphans_swept
    if not _orphans_swept:
        _orphans_swept = True
        sweep_orphans()


def sweep_orphans(proc: Path = Path("/proc")) -> list[int]:
    """Kill the sandboxes whose Horizon process is gone.

    Rarely, after Horizon is killed with SIGKILL, a sandbox's own pid-1 bwrap (the init of its
    PID namespace) survives the outer bwrap: reparented to init, childless, asleep in ``wait``,
    about 2 MB each (``docs/security.md``). A bwrap process is Horizon's when its command line
    holds ``OWNER_VAR`` and the owner's pid; it is killed when no process has that pid. A
    reused pid leaves the sandbox alone (the safe side).

    Args:
        proc: the proc file system (a folder of ``<pid>/comm`` and ``<pid>/cmdline``).

    Returns:
        The pids sent SIGKILL (processes of other users, or gone meanwhile, are skipped).
    """
    killed = []
    marker = OWNER_VAR.encode()
    try:
        entries = [e.name for e in os.scandir(proc) if e.name.isdigit()]
    except OSError:
        return []
    for pid in entries:
        try:
            if (proc / pid / "comm").read_bytes().strip() != b"bwrap":
                continue
            argv = (proc / pid / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        owner = argv[argv.index(marker) + 1] if marker in argv[:-1] else b""
        if not owner.isdigit() or (proc / owner.decode()).exists():
            continue
        try:
            os.kill(int(pid), signal.SIGKILL)
        except OSError:
            continue
        killed.append(int(pid))
    return killed


def check_alias(alias: Path, keep: list[Path]) -> Path:
    """``alias`` normalised, if the workspace (or a bind) can be mounted there (see ``BwrapSandbox``).

    Args:
        alias: the absolute path inside the sandbox.
        keep: folders the mount may not cover (the workspace and scratch).

    Returns:
        The path, normalised.

    Raises:
        ValueError: it cannot, and why: relative, a system folder (or ``/proc``, ``/dev``,
            ``/sys``, ``/boot`` and below), covering a ``keep`` folder, or under a file, a
            symbolic link or a folder that cannot be listed (``alias_parents``).
    """
    if not alias.is_absolute():
        raise ValueError(f"the workspace alias must be an absolute path, not {alias}")
    alias = Path(os.path.normpath(alias))
    top = Path("/", *alias.parts[1:2])
    if alias == Path("/") or _is_system_dir(alias) or top in (Path("/proc"), Path("/dev"), Path("/sys"), Path("/boot")):
        raise ValueError(f"the workspace alias {alias} would cover a system folder")
    if any(path.is_relative_to(alias) for path in keep):
        raise ValueError(f"the workspace alias {alias} would cover the workspace or scratch folder itself")
    alias_parents(alias)
    return alias


def alias_parents(alias: Path) -> list[Path]:
    """The host folders above a mount point (normalised, absolute) that the sandbox's root rebuilds
    from their entries, top first, so that bwrap can make the mount point in them: none when it
    exists as a folder, lies in a tmpfs (``/tmp``, a hidden folder), or its top folder is new.

    Raises:
        ValueError: it exists but is not a folder, or a folder above it is a symbolic link, not
            a folder, or cannot be listed.
    """
    if alias.is_dir() or alias.parts[1:2] == ("tmp",) or any(alias.is_relative_to(h) for h in hidden_dirs()):
        return []
    if os.path.lexists(alias):
        raise ValueError(f"the workspace alias {alias} cannot be made: it exists on this machine and is not a folder")
    parents: list[Path] = []
    for parent in reversed(alias.parents[:-1]):  # /srv, then /srv/www, ...
        if not os.path.lexists(parent):
            break
        if parent.is_symlink() or not parent.is_dir():
            raise ValueError(f"the workspace alias {alias} cannot be made: {parent} is a symbolic link or not a folder on this machine")
        try:
            os.listdir(parent)
        except OSError as exc:
            raise ValueError(f"the workspace alias {alias} cannot be made: {parent} cannot be listed ({exc.strerror})") from None
        parents.append(parent)
    return parents


class _StatusReader:
    """Reads what bwrap writes to ``--json-status-fd`` (or the older ``--info-fd``): the pid of
    the sandbox's first process, then (json only) the command's exit status.

    ``exit-code`` is written only when the command itself ran, which tells a failing command from
    a sandbox (or exec) that never started.
    """

    _CHILD_PID = re.compile(rb'"child-pid"\s*:\s*(\d+)')
    _EXIT_CODE = re.compile(rb'"exit-code"\s*:\s*(\d+)')

    def __init__(self, fd: int):
        self.fd = fd
        self.exited = False  # bwrap closed its end
        self.pidfd = -1  # the sandbox's pid 1, once known
        self._buffer = b""
        os.set_blocking(fd, False)

    @property
    def child_pid(self) -> int | None:
        found = self._CHILD_PID.search(self._buffer)
        return int(found.group(1)) if found else None

    @property
    def exit_code(self) -> int | None:
        found = self._EXIT_CODE.search(self._buffer)
        return int(found.group(1)) if found else None

    def read(self) -> None:
        """Read what is there, without blocking."""
        while self.fd >= 0 and not self.exited:
            try:
                chunk = os.read(self.fd, 65536)
            except BlockingIOError:
                return
            if not chunk:
                self.exited = True
                return
            self._buffer += chunk

    def wait_child_pid(self, deadline: float) -> int | None:
        """The sandbox's pid once bwrap reports it; None when bwrap exits first or time is up.

        Also opens a pidfd on it (the sandbox's pid 1 is not our child, so we cannot wait(2) for
        it, and its pid could be reused once it is gone).
        """
        while True:
            self.read()
            if self.child_pid is not None or self.exited:
                break
            if not wait_readable(self.fd, deadline):
                return None
        if self.child_pid is not None and self.pidfd < 0:
            try:
                self.pidfd = os.pidfd_open(self.child_pid)
            except (AttributeError, OSError):
                pass  # gone already, or Linux < 5.3
        return self.child_pid

    def wait_sandbox_gone(self, proc: subprocess.Popen[bytes]) -> None:
        """Wait until the sandbox's pid 1 has exited, which the kernel lets happen only after every
        other process in the pid namespace is gone.

        bwrap itself exits as soon as the command's first process does, a moment before the rest
        of the namespace is killed: without this wait, a detached child would still show up just
        after ``run`` returned.
        """
        if self.pidfd >= 0:
            if not wait_readable(self.pidfd, time.monotonic() + 5):
                signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                wait_readable(self.pidfd, time.monotonic() + 5)
            return
        if self.child_pid is not None:  # no pidfd: watch /proc (a zombie has no threads left)
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline:
                try:
                    state = Path(f"/proc/{self.child_pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
                except (OSError, IndexError):
                    return
                if state in (b"Z", b"X"):
                    return
                time.sleep(0.002)

    def kill_sandbox(self, proc: subprocess.Popen[bytes]) -> None:
        """Time is up: SIGKILL the sandbox's pid 1, which takes the whole pid namespace with it.

        bwrap then exits once the namespace is empty, so "done" means the whole tree is gone.
        The process group kill is the fallback (bwrap's --die-with-parent does the rest).
        """
        self.read()
        if self.child_pid is not None:
            try:
                if self.pidfd >= 0:
                    signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
                else:
                    os.kill(self.child_pid, signal.SIGKILL)
                proc.wait(timeout=5)
                self.wait_sandbox_gone(proc)
                return
            except (OSError, subprocess.TimeoutExpired):
                pass
        kill_group(proc)

    def close(self) -> None:
        for fd in (self.fd, self.pidfd):
            if fd >= 0:
                os.close(fd)
        self.fd = self.pidfd = -1
