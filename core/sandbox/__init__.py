"""The process sandbox: every command a tool starts runs through one of these.

``open_sandbox`` gives the default, ``BwrapSandbox`` (bubblewrap isolation), after ``self_check``
proved that bwrap works here; ``UnconfinedSandbox`` only on the user's explicit ``--no-sandbox``;
``open_container`` a ``ContainerSandbox`` of a task's own image (Docker or Podman, ``core.sandbox.container``).
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path

from core.errors import SandboxUnavailable, UserError
from core.sandbox.base import SCRATCH_WRITABLE, ProcessResult, Sandbox, SandboxLimits
from core.sandbox.bwrap import INSTALL_HINT, BwrapSandbox, find_bwrap, hidden_dirs, python_prefixes
from core.sandbox.process import SYSTEM_PATH
from core.sandbox.unconfined import UnconfinedSandbox

__all__ = [
    "SCRATCH_WRITABLE",
    "SYSTEM_PATH",
    "BwrapSandbox",
    "ProcessResult",
    "Sandbox",
    "SandboxLimits",
    "UnconfinedSandbox",
    "can_bind",
    "hidden_dirs",
    "open_container",
    "open_sandbox",
    "python_prefixes",
    "sandbox_like",
    "self_check",
    "with_binds",
]

OPT_OUT_HINT = "Or pass --no-sandbox to run without isolation, at your own risk."

_checked = False
_failure: SandboxUnavailable | None = None
_check_lock = threading.Lock()


def self_check() -> None:
    """Prove that bwrap can start a sandbox here: run ``true`` under the same options.

    The result (success or the error) is cached for the life of the process.

    Raises:
        SandboxUnavailable: with the cause (bwrap missing, user namespaces disabled or restricted,
            a container that forbids namespaces), bwrap's own message, the fix, and how to opt out.
    """
    global _checked, _failure
    with _check_lock:
        if not _checked:
            _failure = _run_check()
            _checked = True
    if _failure is not None:
        raise _failure


def _run_check() -> SandboxUnavailable | None:
    try:
        find_bwrap()
    except SandboxUnavailable as exc:
        return exc
    with tempfile.TemporaryDirectory(prefix="horizon-sandbox-check-") as tmp:
        workspace, scratch = Path(tmp, "workspace"), Path(tmp, "scratch")
        workspace.mkdir()
        try:
            result = BwrapSandbox(workspace, scratch).run(["true"], limits=SandboxLimits(timeout_s=30))
        except (SandboxUnavailable, OSError) as exc:
            return SandboxUnavailable(_diagnose(str(exc)))
    if not result.ok:
        said = result.stderr.strip() or f"exit code {result.exit_code}"
        return SandboxUnavailable(_diagnose(f"running `true` in the sandbox failed: {said}"))
    return None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return None


def _diagnose(bwrap_said: str) -> str:
    """The message for a bwrap that cannot start: the likely cause and its fix, bwrap's own words,
    and how to opt out."""
    root = os.geteuid() == 0
    if _read("/proc/sys/user/max_user_namespaces") == "0":
        cause = (
            "user namespaces are disabled (/proc/sys/user/max_user_namespaces is 0); "
            "enable them: sudo sysctl -w user.max_user_namespaces=15000"
        )
    elif not root and _read("/proc/sys/kernel/apparmor_restrict_unprivileged_userns") == "1":
        cause = (
            "AppArmor forbids unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns=1, "
            "Ubuntu 24.04 and later); allow them for bwrap with a profile: put "
            "'abi <abi/4.0>, include <tunables/global> profile bwrap /usr/bin/bwrap flags=(unconfined) { userns, }' "
            "in /etc/apparmor.d/bwrap and run sudo systemctl reload apparmor "
            "(or allow them for everyone: sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0)"
        )
    elif not root and _read("/proc/sys/kernel/unprivileged_userns_clone") == "0":
        cause = (
            "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone=0); "
            "enable them: sudo sysctl -w kernel.unprivileged_userns_clone=1"
        )
    elif _in_container():
        cause = (
            "this looks like a container that forbids creating namespaces (Docker's and Podman's "
            "default seccomp and AppArmor profiles do); run Horizon on the host, or start the container "
            "with --security-opt seccomp=unconfined --security-opt apparmor=unconfined"
        )
    else:
        cause = f"bwrap cannot start a sandbox on this machine; if bwrap is very old, {INSTALL_HINT} (0.5 or later)"
    return f"The process sandbox is unavailable: {cause}. bwrap said: {bwrap_said.strip()}. {OPT_OUT_HINT}"


def _in_container() -> bool:
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv") or os.environ.get("container"):
        return True
    cgroup = _read("/proc/1/cgroup") or ""
    return any(word in cgroup for word in ("docker", "kubepods", "containerd", "lxc", "libpod"))


def open_sandbox(
    workspace: Path,
    scratch: Path,
    *,
    isolated: bool = True,
    limits: SandboxLimits | None = None,
    allow_network: bool = False,
    readonly: list[Path] | None = None,
    alias: Path | str | None = None,
    binds: dict[Path, Path] | None = None,
    hide: list[Path] | None = None,
) -> Sandbox:
    """The sandbox for one episode: bubblewrap isolation unless the user opted out.

    Args:
        workspace: the episode's repository copy.
        scratch: a run-private folder outside the workspace.
        isolated: False only on the user's explicit ``--no-sandbox``.
        limits: default limits of each command.
        allow_network: let commands reach the network (ignored without isolation: they can).
        readonly: extra host paths visible read-only inside (isolated only).
        alias: a second path where commands see the workspace (``/app`` for a Terminal-Bench
            task); isolated only.
        binds: ``{host path: path inside}`` shown read-only where the host has nothing (a
            Terminal-Bench task's tests at ``/tests``); isolated only.
        hide: host folders the commands must not see (an evaluation's suite, with its reference
            fixes and hidden tests); isolated only (without isolation commands read everything).

    Raises:
        SandboxUnavailable: ``isolated`` and bwrap cannot work here (see ``self_check``).
        UserError: an ``alias`` or ``binds`` without isolation (only the sandbox can show them there).
    """
    if not isolated:
        if alias is not None or binds:
            where = alias if alias is not None else ", ".join(map(str, (binds or {}).values()))
            raise UserError(f"this task expects its files at {where}, which only the sandbox can provide; run it without --no-sandbox")
        return UnconfinedSandbox(workspace, scratch, limits=limits)
    self_check()
    return BwrapSandbox(workspace, scratch, limits=limits, allow_network=allow_network, readonly=readonly, alias=alias, binds=binds,
                        hide=hide)


def open_container(spec: dict, workspace: Path, scratch: Path, *, limits: SandboxLimits | None = None) -> Sandbox:
    """A started ``ContainerSandbox`` (``core.sandbox.container``) for a task whose metadata's
    ``container`` is ``spec``: ``image``, ``workdir``, and optionally ``cpus``, ``memory_bytes``,
    ``allow_internet`` (default False), ``task_env`` (variables of every command), ``storage_mb``
    (what the commands may write: the engine's quota where it has one, else measured;
    ``core.sandbox.storage``).

    Raises:
        UserError: no container engine answers (what to install or start).
        SandboxUnavailable: the container cannot start.
    """
    from core.sandbox.container import ContainerSandbox
    from core.sandbox.engine import find_engine
    from core.sandbox.images import mark_used

    sandbox = ContainerSandbox(find_engine(), spec["image"], workspace, scratch, workdir=spec["workdir"], limits=limits,
                               allow_network=bool(spec.get("allow_internet", False)), cpus=spec.get("cpus"),
                               memory_bytes=spec.get("memory_bytes"), env=spec.get("task_env") or None,
                               storage_bytes=int(spec["storage_mb"] * 2**20) if spec.get("storage_mb") else None)  # fmt: skip
    sandbox.spec = dict(spec)  # what else the task's plugin reads (a separate verifier's image)
    mark_used(spec["image"])  # the image cache's order (core.sandbox.images.evict_images)
    return sandbox.start()


def sandbox_like(
    sandbox: Sandbox,
    workspace: Path,
    scratch: Path,
    *,
    limits: SandboxLimits | None = None,
    allow_network: bool | None = None,
    readonly: list[Path] | None = None,
) -> Sandbox:
    """A sandbox of the same kind as ``sandbox`` (isolated or, on the user's ``--no-sandbox``,
    not) on other folders: a plugin's second tree (a grading copy, an environment build).

    It keeps ``sandbox``'s cgroup choice and hidden folders; ``limits``, ``allow_network`` and
    ``readonly`` replace its own when given (None keeps them). The alias and binds of a
    Terminal-Bench task are not kept: they belong to the episode's workspace.

    Raises:
        UserError: ``sandbox`` is of another kind, which cannot be copied onto other folders.
        ValueError: ``workspace`` is not a folder.
    """
    if isinstance(sandbox, BwrapSandbox):
        return BwrapSandbox(
            workspace, scratch, limits=limits or sandbox.limits,
            allow_network=sandbox.allow_network if allow_network is None else allow_network,
            readonly=sandbox.readonly if readonly is None else readonly, use_cgroups=sandbox.use_cgroups, hide=sandbox.hide,
        )  # fmt: skip
    if isinstance(sandbox, UnconfinedSandbox):  # the user opted out of isolation for this run
        return UnconfinedSandbox(workspace, scratch, limits=limits or sandbox.limits, use_cgroups=sandbox.use_cgroups)
    raise UserError(f"a {type(sandbox).__name__} cannot be copied onto another folder (only the bwrap sandbox or --no-sandbox's can)")


def can_bind(sandbox: Sandbox) -> bool:
    """Whether ``sandbox`` can show more host folders to its commands (``with_binds``): only
    bwrap's; an unconfined one sees the whole machine and cannot put a folder into the workspace."""
    return isinstance(sandbox, BwrapSandbox)


def with_binds(sandbox: Sandbox, *, readonly: list[Path] | None = None, mounts: dict[str, Path] | None = None) -> Sandbox:
    """A copy of ``sandbox`` that also shows ``readonly`` host paths read-only where they are, and
    ``mounts`` (``{path relative to the workspace: host folder}``) read-only inside the workspace
    (``BwrapSandbox.with_readonly`` / ``with_mounts``); ``sandbox`` is unchanged.

    Raises:
        UserError: ``sandbox`` cannot bind (``can_bind`` is False): check first.
    """
    if not isinstance(sandbox, BwrapSandbox):
        raise UserError(f"a {type(sandbox).__name__} cannot show more folders (only the bwrap sandbox can); check can_bind() first")
    if readonly:
        sandbox = sandbox.with_readonly(readonly)
    if mounts:
        sandbox = sandbox.with_mounts(mounts)
    return sandbox
