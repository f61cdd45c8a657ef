"""A Harbor environment (a subclass of Harbor's own ``BaseEnvironment``) over a local folder, for
running ``harbor run`` itself on this machine, which has no container engine: Harbor loads it with
``--environment-import-path folder_environment:FolderHarborEnvironment``.

``start`` lays out the task's container as ``tests/plugins/coding/harbor_env.py``'s
``build_task_container`` does (``WORKDIR`` and ``COPY`` of the fixture's Dockerfile) and every
method is that ``FolderEnvironment``'s: commands run with bash under bubblewrap, the folder as their
root. Only importable where Harbor is installed (Python 3.12+).
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from harbor.environments.base import BaseEnvironment, ExecResult

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # harbor_env.py, beside this folder
from harbor_env import build_task_container


class FolderHarborEnvironment(BaseEnvironment):
    """Harbor's environment interface over a folder standing for the container (module docstring)."""

    @staticmethod
    def type() -> str:
        """The environment's type name in Harbor's results."""
        return "horizon-folder"

    def _validate_definition(self) -> None:
        if not (self.environment_dir / "Dockerfile").is_file():
            raise FileNotFoundError(f"{self.environment_dir / 'Dockerfile'} not found")

    async def start(self, force_build: bool) -> None:
        """Lay out the container's folder from the task's Dockerfile."""
        self._root = Path(tempfile.mkdtemp(prefix="horizon-harbor-container-", dir=self.trial_paths.trial_dir))
        self._folder = build_task_container(self.environment_dir.parent, self._root / "root")
        for name in ("agent", "verifier", "artifacts"):  # what a container engine's mounts would make
            (self._folder.path("/logs") / name).mkdir(parents=True, exist_ok=True)

    async def stop(self, delete: bool) -> None:
        """Remove the container's folder when asked to."""
        if delete:
            shutil.rmtree(self._root, ignore_errors=True)

    async def exec(self, command: str, cwd: str | None = None, env: dict[str, str] | None = None, timeout_sec: int | None = None,
                   user: str | int | None = None) -> ExecResult:  # fmt: skip
        """Run ``command`` with bash in the container's folder (Harbor's merged environment applied)."""
        done = await self._folder.exec(command, cwd=cwd, env=self._merge_env(env), timeout_sec=timeout_sec, user=user)
        return ExecResult(stdout=done.stdout, stderr=done.stderr, return_code=done.return_code)

    async def upload_file(self, source_path: Path | str, target_path: str) -> None:
        """Copy a local file into the container."""
        await self._folder.upload_file(source_path, target_path)

    async def upload_dir(self, source_dir: Path | str, target_dir: str) -> None:
        """Copy a local folder into the container."""
        await self._folder.upload_dir(source_dir, target_dir)

    async def download_file(self, source_path: str, target_path: Path | str) -> None:
        """Copy a file of the container to this machine."""
        await self._folder.download_file(source_path, target_path)

    async def download_dir(self, source_dir: str, target_dir: Path | str) -> None:
        """Copy a folder of the container to this machine."""
        await self._folder.download_dir(source_dir, target_dir)
