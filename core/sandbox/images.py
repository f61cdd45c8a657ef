"""Container images for tasks: local stand-ins for base images that cannot be pulled, and a task's
image built from its own Dockerfile, cached by the content of its build context.

Base images. A machine without a reachable registry cannot pull ``FROM ubuntu:24.04`` or
``python:3.13-slim-bookworm``. A ``FROM`` image the engine already holds is used as it is; any other
is replaced by one of Horizon's stand-ins (``STAND_INS``), built once from the Debian mirror
(``mmdebstrap --variant=minbase bookworm``, imported into the engine) and kept in the engine's own
store under the tag ``horizon-base/NAME:VERSION``:

* ``debian``: Debian bookworm minbase with ca-certificates, curl, tmux, procps, Python 3.11 with
  pip and venv, and ``uv`` (from PyPI: the tasks' ``test.sh`` installs uv from astral.sh, which
  a machine reaching only PyPI and Debian's mirror cannot; with it on PATH their ``uvx pytest`` runs;
  it is also where astral.sh's installer puts it, ``/root/.local/bin/uv`` and ``uvx``, for the
  Dockerfiles that name that path);
  stands in for ubuntu, debian and every other image (Terminal-Bench's own ``t-bench/...`` images
  also get their ``WORKDIR /app``);
* ``uv``: ``debian`` with ``/uv`` and ``/uvx`` at its root, for ``COPY --from=ghcr.io/astral-sh/uv``;
* ``python``: ``debian`` plus ``python`` on PATH and no
  ``EXTERNALLY-MANAGED`` marker, so that a Dockerfile's ``pip install`` works as on ``python:3.x``;
  stands in for any image whose name says python.

Every stand-in carries this machine's CA bundle (``/etc/ssl/certs/ca-certificates.crt``, and
``SSL_CERT_FILE``/``PIP_CERT``/``REQUESTS_CA_BUNDLE`` pointing at it), its apt sources and a
``pip.conf`` with its index settings, so package downloads inside a build work as on the host.

A task's image: the Dockerfile with only its ``FROM`` lines changed (written to a temporary file;
the task's files stay unchanged) built from the task's build context, tagged
``horizon-task/NAME:DIGEST`` where DIGEST covers the derived Dockerfile, every file of the context
and the base images' ids, so a second run finds it and starts in seconds.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from core.errors import UserError
from core.sandbox.engine import Engine

#: Bumped when a stand-in's recipe changes (it is part of the tag).
BASE_VERSION = "3"
#: Bumped when the imported root file system's recipe (``_rootfs``) changes.
ROOTFS_VERSION = "2"
HOST_CA = Path("/etc/ssl/certs/ca-certificates.crt")
#: The stand-ins: name → (the stand-in it builds on, or None for the imported root file system; its build steps).
STAND_INS: dict[str, tuple[str | None, str]] = {
    "debian": (None, "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
                     "ca-certificates curl tmux procps python3 python3-pip python3-venv && rm -rf /var/lib/apt/lists/* "
                     "&& pip3 install --no-cache-dir --break-system-packages uv && mkdir -p /root/.local/bin "
                     "&& ln -s /usr/local/bin/uv /usr/local/bin/uvx /root/.local/bin/ "
                     "&& printf 'export PATH=\"$HOME/.local/bin:$PATH\"\\n' > /root/.local/bin/env\n"),
    "python": ("debian", "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "
                         "python-is-python3 && rm -rf /var/lib/apt/lists/* "
                         "&& rm -f /usr/lib/python3*/EXTERNALLY-MANAGED && ln -sf /usr/bin/pip3 /usr/local/bin/pip\n"),
    # ghcr.io/astral-sh/uv holds the two programs at its root (``COPY --from=ghcr.io/astral-sh/uv /uv /uvx /usr/local/bin/``).
    "uv": ("debian", "RUN cp /usr/local/bin/uv /uv && cp /usr/local/bin/uvx /uvx\n"),
}
_ENV_CA = ("ENV SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt PIP_CERT=/etc/ssl/certs/ca-certificates.crt "
           "REQUESTS_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt CURL_CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt "
           "UV_NATIVE_TLS=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_ROOT_USER_ACTION=ignore\n")  # fmt: skip
_FROM = re.compile(r"^(\s*FROM\s+)((?:--\S+\s+)*)(\S+)(.*)$", re.IGNORECASE)
_COPY_FROM = re.compile(r"^(\s*COPY\s+(?:--\S+\s+)*--from=)(\S+)(.*)$", re.IGNORECASE)


def base_tag(name: str) -> str:
    """The engine's tag of the stand-in ``name``."""
    return f"horizon-base/{name}:bookworm-{BASE_VERSION}"


def stand_in_for(image: str) -> str:
    """The stand-in (a ``STAND_INS`` name) that replaces the image ``image``."""
    name = image.lower()
    if "astral-sh/uv" in name and "python" not in name.split(":")[-1]:
        return "uv"
    return "python" if "python" in name else "debian"


def _host_settings(folder: Path) -> None:
    """Copy this machine's CA bundle, apt sources and pip settings into the build context ``folder``."""
    (folder / "ca.crt").write_bytes(HOST_CA.read_bytes() if HOST_CA.is_file() else b"")
    sources = folder / "sources.list.d"
    sources.mkdir()
    for path in Path("/etc/apt/sources.list.d").glob("*.sources"):
        shutil.copy(path, sources / path.name)
    index = os.environ.get("PIP_INDEX_URL", "")
    (folder / "pip.conf").write_text("[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n" + (f"index-url = {index}\n" if index else ""))


def _rootfs(engine: Engine, tag: str) -> None:
    """Build Debian bookworm minbase with mmdebstrap and import it as ``tag``.

    Raises:
        UserError: mmdebstrap is missing or fails, or the import fails.
    """
    if shutil.which("mmdebstrap") is None:
        raise UserError(f"the base image {tag} is built with mmdebstrap, which is not installed: sudo apt-get install mmdebstrap "
                        "(./setup.sh does), or load an image of that name into the engine yourself")  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="horizon-rootfs-", dir=os.environ.get("HORIZON_IMAGE_TMP")) as tmp:
        tar = Path(tmp) / "rootfs.tar"
        done = subprocess.run(["mmdebstrap", "--variant=minbase", "--include=ca-certificates", "bookworm", str(tar)],
                              capture_output=True, timeout=1800, check=False)  # fmt: skip
        if done.returncode != 0:
            raise UserError(f"mmdebstrap could not build the base image {tag}: {done.stderr.decode(errors='replace')[-2000:]}")
        engine.call(["import", "--change", "CMD [\"bash\"]", str(tar), tag], timeout_s=900)


def ensure_base(engine: Engine, name: str, *, log: list[str] | None = None) -> str:
    """The stand-in ``name``'s tag, built first when the engine lacks it (its parent too).

    Raises:
        UserError: it cannot be built (mmdebstrap missing, no Debian mirror, a failing step).
    """
    tag = base_tag(name)
    if engine.has_image(tag):
        return tag
    parent, steps = STAND_INS[name]
    if parent is None:
        root = f"horizon-base/rootfs:bookworm-{ROOTFS_VERSION}"
        if not engine.has_image(root):
            _rootfs(engine, root)
        head = f"FROM {root}\nCOPY ca.crt /etc/ssl/certs/ca-certificates.crt\nCOPY sources.list.d/ /etc/apt/sources.list.d/\nCOPY pip.conf /etc/pip.conf\n{_ENV_CA}"
    else:
        head = f"FROM {ensure_base(engine, parent, log=log)}\n"
    with tempfile.TemporaryDirectory(prefix="horizon-base-") as tmp:
        _host_settings(Path(tmp))
        (Path(tmp) / "Dockerfile").write_text(head + steps)
        engine.call(["build", "--force-rm", "-t", tag, tmp], timeout_s=1800)
    if log is not None:
        log.append(f"built the base image {tag}")
    return tag


@dataclass
class BuiltImage:
    """A task's image.

    Attributes:
        tag: the engine's tag (``horizon-task/NAME:DIGEST``).
        stand_ins: ``{FROM image: the local image used instead}``.
        built: True when this call built it (False: found in the engine's store).
        notes: what was done, for the episode's set-up text.
        evicted: the task images removed after this build to keep the cache within its bound
            (``evict_images``).
    """

    tag: str
    stand_ins: dict[str, str] = field(default_factory=dict)
    built: bool = False
    notes: list[str] = field(default_factory=list)
    evicted: list[str] = field(default_factory=list)


def derived_dockerfile(engine: Engine, text: str, *, log: list[str] | None = None) -> tuple[str, dict[str, str]]:
    """``text`` with each ``FROM`` (and ``COPY --from``) image the engine lacks replaced by a local
    stand-in (built when missing); a build stage's name, or an image the engine has, is kept.

    Returns:
        The derived Dockerfile and ``{image: stand-in tag}``.
    """
    stages: set[str] = set()
    swapped: dict[str, str] = {}
    lines = []
    for line in text.splitlines():
        match = _FROM.match(line)
        if match:
            image = match.group(3)
            alias = re.search(r"\bAS\s+(\S+)", match.group(4), re.IGNORECASE)
            if image.lower() not in stages and "$" not in image and not engine.has_image(image):
                swapped[image] = ensure_base(engine, stand_in_for(image), log=log)
                line = f"{match.group(1)}{match.group(2)}{swapped[image]}{match.group(4)}"
                if "t-bench" in image:  # Terminal-Bench's own base images work in /app
                    line += "\nWORKDIR /app"
            if alias:
                stages.add(alias.group(1).lower())
        copy = _COPY_FROM.match(line)
        if copy and not copy.group(2).isdigit() and copy.group(2).lower() not in stages and "$" not in copy.group(2):
            image = copy.group(2)
            if image in swapped or not engine.has_image(image):
                swapped[image] = swapped.get(image) or ensure_base(engine, stand_in_for(image), log=log)
                line = f"{copy.group(1)}{swapped[image]}{copy.group(3)}"
        lines.append(line)
    return "\n".join(lines) + "\n", swapped


def _distribution_note(image: str) -> str:
    """What an Ubuntu image's stand-in lacks, for the set-up text ('' for any other image)."""
    if "ubuntu" not in image.lower():
        return ""
    return (" (Debian 12 bookworm, not Ubuntu: apt has Debian's package versions, so an Ubuntu version pin such as "
            "gfortran=4:13.2.0-7ubuntu1 is not found, and there are no PPAs or add-apt-repository)")


def context_digest(context: Path, dockerfile_text: str, salt: str = "") -> str:
    """A digest of a build: the (derived) Dockerfile, every file of the context (path, mode, bytes) and ``salt``."""
    digest = hashlib.sha256(dockerfile_text.encode() + b"\0" + salt.encode())
    for path in sorted(p for p in context.rglob("*") if p.is_file() or p.is_symlink()):
        rel = path.relative_to(context).as_posix()
        digest.update(f"\0{rel}\0{path.lstat().st_mode:o}\0".encode())
        digest.update(os.readlink(path).encode() if path.is_symlink() else path.read_bytes())
    return digest.hexdigest()[:16]


def build_task_image(engine: Engine, name: str, dockerfile: Path, context: Path, *, timeout_s: float = 1800.0) -> BuiltImage:
    """The image of a task's Dockerfile, built (with the network: builds download packages) unless
    the engine holds it already; the task's files are not changed. Its use is recorded
    (``mark_used``), and after a build the least recently used task images beyond the cache's
    bound are removed (``image_cache_limit``, ``evict_images``).

    Args:
        name: the task's name (part of the tag).
        dockerfile: its Dockerfile; context: its build context.

    Raises:
        UserError: a stand-in cannot be built, the build fails (the engine's output's tail), or
            ``HORIZON_IMAGE_CACHE_MB`` is neither a size nor ``unlimited``.
    """
    log: list[str] = []
    text, swapped = derived_dockerfile(engine, dockerfile.read_text(encoding="utf-8-sig"), log=log)
    salt = " ".join(f"{image}={engine.text(['image', 'inspect', '--format', '{{.Id}}', tag])}" for image, tag in sorted(swapped.items()))
    safe = re.sub(r"[^a-z0-9_.-]+", "-", name.lower()).strip("-.") or "task"
    tag = f"horizon-task/{safe[:100]}:{context_digest(context, text, salt)}"
    notes = [f"base image {image} is not available here; the local {local} stood in for it{_distribution_note(image)}"
             for image, local in swapped.items()]  # fmt: skip
    if engine.has_image(tag):
        mark_used(tag)
        return BuiltImage(tag, swapped, False, notes)
    with tempfile.TemporaryDirectory(prefix="horizon-build-") as tmp:
        derived = Path(tmp) / "Dockerfile"
        derived.write_text(text)
        done = engine.call(["build", "--force-rm", "-t", tag, "-f", str(derived), str(context)], timeout_s=timeout_s, check=False)
    if done.returncode != 0:
        said = (done.stderr + done.stdout).decode(errors="replace").strip()[-3000:]
        raise UserError(f"{dockerfile}: the image could not be built ({engine.name} build, exit code {done.returncode}): {said}")
    mark_used(tag)
    limit = image_cache_limit()
    evicted = evict_images(engine, limit, keep=(tag,)) if limit is not None else []
    return BuiltImage(tag, swapped, True, [*log, *notes], evicted)


def image_config(engine: Engine, tag: str) -> dict:
    """The image's ``Config`` (``WorkingDir``, ``Env``, ``User``, ...)."""
    import json

    return json.loads(engine.text(["image", "inspect", "--format", "{{json .Config}}", tag])) or {}


def export_workdir(engine: Engine, tag: str, workdir: str, dest: Path) -> None:
    """Copy the image's folder ``workdir`` (its contents) into ``dest`` (made; must not exist).

    Raises:
        UserError: the engine cannot create the container or copy.
    """
    cid = engine.text(["create", tag, "true"])
    try:
        dest.mkdir(parents=True)
        done = engine.call(["cp", f"{cid}:{workdir.rstrip('/')}/.", str(dest)], check=False, timeout_s=900)
        if done.returncode != 0 and b"Could not find" not in done.stderr and b"no such file" not in done.stderr.lower():
            raise UserError(f"{engine.name} cp of {workdir} out of {tag} failed: {done.stderr.decode(errors='replace')[-1000:]}")
    finally:
        engine.call(["rm", "-f", cid], check=False)


# -- the cache of task images: bounded, least recently used first out -----------------------------

#: The environment variable that bounds the task images' cache, in MiB (``unlimited``: no bound).
IMAGE_CACHE_VARIABLE = "HORIZON_IMAGE_CACHE_MB"
#: The bound when the variable is not set (MiB).
DEFAULT_IMAGE_CACHE_MB = 20480
#: The repository prefix of the task images (the only images ever evicted; ``horizon-base/`` never is).
TASK_PREFIX = "horizon-task/"
#: An image used (loaded or started) this recently is not evicted: an evaluation's own images
#: survive while its other tasks load.
RECENT_S = 3600.0
_DOCKER_UNITS = {"B": 1, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}


@dataclass
class CachedImage:
    """One task image in the engine's store.

    Attributes:
        tag: ``horizon-task/NAME:DIGEST``.
        bytes: what removing it frees (its layers no other image shares; Podman: its whole size).
        last_used: when Horizon last loaded a task or started a container from it (seconds since
            the epoch; its creation time where this ``$HORIZON_HOME`` never used it).
        containers: containers made from it (it is not removed while there are any).
    """

    tag: str
    bytes: int
    last_used: float
    containers: int = 0


def image_cache_limit() -> int | None:
    """The task images' cache bound in bytes (``HORIZON_IMAGE_CACHE_MB``, default
    ``DEFAULT_IMAGE_CACHE_MB``), or None for ``unlimited``.

    Raises:
        UserError: the variable is neither a positive number nor ``unlimited``.
    """
    text = os.environ.get(IMAGE_CACHE_VARIABLE, "").strip()
    if not text:
        return DEFAULT_IMAGE_CACHE_MB << 20
    if text.lower() == "unlimited":
        return None
    try:
        mb = float(text)
    except ValueError:
        mb = -1.0
    if mb <= 0:
        raise UserError(f"{IMAGE_CACHE_VARIABLE}={text}: it must be a positive number of MiB (the task images' cache bound) or unlimited")
    return int(mb * 2**20)


def _uses(home: Path | None) -> Path:
    from core.paths import horizon_home

    return (home or horizon_home()) / "cache" / "image-use"


def mark_used(tag: str, home: Path | None = None) -> None:
    """Record that ``tag`` was used now (the file ``$HORIZON_HOME/cache/image-use/TAG``'s time)."""
    folder = _uses(home)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / tag.replace("/", "%2F")
        path.touch()
        os.utime(path)
    except OSError:
        pass  # the record only orders evictions: a read-only home costs nothing else


def _docker_bytes(text: str) -> int:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKMGT]?B)\s*", text)
    return int(float(match.group(1)) * _DOCKER_UNITS[match.group(2).upper()]) if match else 0


def _created(text: str) -> float:
    """Seconds since the epoch of the engine's ``2026-12-07 18:16:04 +0000 UTC`` (0 when unreadable)."""
    from datetime import datetime

    try:
        return datetime.strptime(" ".join(text.split()[:3]), "%Y-%m-%d %H:%M:%S %z").timestamp()
    except ValueError:
        return 0.0


def cached_images(engine: Engine, *, prefix: str = TASK_PREFIX, home: Path | None = None) -> list[CachedImage]:
    """The task images whose tag starts with ``prefix`` in the engine's store, least recently used first.

    Docker's sizes are ``system df -v``'s unique sizes; Podman's are each image's whole size (an
    over-count: layers shared with the base images are counted in each).
    """
    import json

    rows = []
    if engine.name == "docker":
        done = engine.call(["system", "df", "-v", "--format", "{{json .Images}}"], check=False, timeout_s=300)
        if done.returncode == 0:
            for row in json.loads(done.stdout.decode(errors="replace") or "[]") or []:
                rows.append((f"{row.get('Repository')}:{row.get('Tag')}", _docker_bytes(str(row.get("UniqueSize", ""))),
                             _created(str(row.get("CreatedAt", ""))), int(str(row.get("Containers") or 0).strip() or 0)))  # fmt: skip
    if not rows:
        done = engine.call(["images", "--format", "{{.Repository}}:{{.Tag}}\t{{.Size}}\t{{.CreatedAt}}"], check=False, timeout_s=300)
        for line in done.stdout.decode(errors="replace").splitlines():
            parts = line.split("\t")
            if len(parts) == 3:
                rows.append((parts[0].removeprefix("localhost/"), _docker_bytes(parts[1].replace(" ", "")), _created(parts[2]), 0))
    uses = _uses(home)
    out = []
    for tag, size, created, containers in rows:
        if not tag.startswith(prefix) or tag.endswith(":<none>"):
            continue
        try:
            used = (uses / tag.replace("/", "%2F")).stat().st_mtime
        except OSError:
            used = created
        out.append(CachedImage(tag, size, used, containers))
    return sorted(out, key=lambda image: image.last_used)


def evict_images(engine: Engine, limit_bytes: int, *, keep: tuple[str, ...] = (), prefix: str = TASK_PREFIX,
                 home: Path | None = None, now: float | None = None) -> list[str]:  # fmt: skip
    """Remove task images, least recently used first, until those left hold at most ``limit_bytes``.

    Never removed: an image outside ``horizon-task/`` (the stand-in bases ``horizon-base/*`` and
    everything else), one in ``keep``, one a container was made from, one used in the last
    ``RECENT_S`` seconds; so the cache can stay over the bound while those are all that is left.

    Args:
        prefix: only tags starting with it are considered (under ``horizon-task/``: a test's own).

    Returns:
        The tags removed.

    Raises:
        ValueError: ``prefix`` is not under ``horizon-task/``.
    """
    import time

    if not prefix.startswith(TASK_PREFIX):
        raise ValueError(f"only task images ({TASK_PREFIX}...) are evicted, not {prefix!r}")
    images = cached_images(engine, prefix=prefix, home=home)
    total = sum(image.bytes for image in images)
    now = time.time() if now is None else now
    removed = []
    for image in images:
        if total <= limit_bytes:
            break
        if image.tag in keep or image.containers or now - image.last_used < RECENT_S:
            continue
        if engine.call(["rmi", image.tag], check=False, timeout_s=300).returncode == 0:
            total -= image.bytes
            removed.append(image.tag)
            (_uses(home) / image.tag.replace("/", "%2F")).unlink(missing_ok=True)
    return removed
