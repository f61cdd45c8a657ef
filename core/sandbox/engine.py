"""The container engine's command line (Docker Engine or Podman), found once and called for one job at a time.

Horizon adds no Python dependency for containers: it calls the engine's own CLI (``docker`` or
``podman``), whichever is on ``PATH`` and answers (``HORIZON_CONTAINER_ENGINE`` picks one when
both are). Docker Engine needs its daemon (``dockerd``) running; Podman runs without one.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from functools import lru_cache

from core.errors import UserError

#: The engines tried, in order.
ENGINES = ("docker", "podman")
#: What to do when none answers.
INSTALL_HINT = (
    "install one (Debian/Ubuntu: sudo apt-get install docker.io, or podman) and start Docker's daemon "
    "(sudo dockerd, or systemctl start docker); ./setup.sh installs docker.io where none is present"
)


@dataclass(frozen=True)
class Engine:
    """A container engine's CLI.

    Attributes:
        name: ``docker`` or ``podman``.
        path: the program.
    """

    name: str
    path: str

    def call(self, args: list[str], *, timeout_s: float = 600.0, input: bytes | None = None, check: bool = True) -> subprocess.CompletedProcess[bytes]:
        """Run ``ENGINE ARGS`` to completion, its output captured.

        Raises:
            UserError: ``check`` and it failed (its stderr's tail in the message), or it ran
                past ``timeout_s``.
        """
        try:
            done = subprocess.run([self.path, *args], input=input, capture_output=True, timeout=timeout_s, check=False,
                                  stdin=None if input is not None else subprocess.DEVNULL)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise UserError(f"{self.name} {' '.join(args[:3])} ran past {timeout_s:g} s") from None
        if check and done.returncode != 0:
            said = (done.stderr or done.stdout).decode(errors="replace").strip()[-2000:]
            raise UserError(f"{self.name} {' '.join(args[:3])} failed (exit code {done.returncode}): {said}")
        return done

    def text(self, args: list[str], *, timeout_s: float = 600.0) -> str:
        """``call``'s stdout as text, stripped."""
        return self.call(args, timeout_s=timeout_s).stdout.decode(errors="replace").strip()

    def has_image(self, ref: str) -> bool:
        """Whether the engine's store holds the image ``ref`` (no pull)."""
        return self.call(["image", "inspect", ref], check=False, timeout_s=60).returncode == 0

    def run_options(self) -> list[str]:
        """Options every ``run`` of this engine needs here: Podman's default limits are higher than
        this machine lets a container raise them, so lower ones are given."""
        return ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096"] if self.name == "podman" else []


def _answers(path: str) -> bool:
    try:
        return subprocess.run([path, "info"], capture_output=True, timeout=30, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@lru_cache(maxsize=1)
def _find() -> Engine | str:
    wanted = os.environ.get("HORIZON_CONTAINER_ENGINE", "").strip()
    names = (wanted,) if wanted else ENGINES
    found = []
    for name in names:
        path = shutil.which(name)
        if path is None:
            continue
        found.append(name)
        if _answers(path):
            return Engine(name, path)
    if found:
        return (f"{' and '.join(found)} is installed but does not answer (`{found[0]} info` fails): start its daemon "
                "(sudo dockerd &, or systemctl start docker)")  # fmt: skip
    return f"no container engine ({' or '.join(names)}) is installed: {INSTALL_HINT}"


def find_engine() -> Engine:
    """The container engine to use (found once per process).

    Raises:
        UserError: none is installed, or the one installed does not answer: what to install or start.
    """
    found = _find()
    if isinstance(found, str):
        raise UserError(found)
    return found


def engine_or_none() -> Engine | None:
    """``find_engine``, or None where no engine answers."""
    found = _find()
    return None if isinstance(found, str) else found


def reset_engine_cache() -> None:
    """Look for the engine again on the next ``find_engine`` (after starting a daemon)."""
    _find.cache_clear()
