"""Build the installable Blender extension zip of the Horizon Agent add-on.

The zip holds, at its root, ``blender_manifest.toml`` and ``__init__.py`` from
``plugins/threed/addon/`` and ``scene_ops.py``, a copy of ``plugins/threed/ops.py`` (the add-on
applies the agent's steps with the same code the worker runs). Install it in Blender with
Edit > Preferences > Get Extensions > Install from Disk (Blender 4.2+).
"""

from __future__ import annotations

import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ADDON = HERE / "addon"


def manifest() -> dict:
    """The parsed ``blender_manifest.toml``."""
    return tomllib.loads((ADDON / "blender_manifest.toml").read_text())


def build_addon(output: Path | None = None) -> Path:
    """Write the extension zip and return its path.

    Args:
        output: the zip's path, or a folder to put ``<id>-<version>.zip`` in; default the
            current folder.

    Raises:
        OSError: the zip cannot be written there.
    """
    info = manifest()
    name = f"{info['id']}-{info['version']}.zip"
    target = Path(output or ".")
    if target.suffix != ".zip":
        target = target / name
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.write(ADDON / "blender_manifest.toml", "blender_manifest.toml")
        zf.write(ADDON / "__init__.py", "__init__.py")
        zf.write(HERE / "ops.py", "scene_ops.py")
    return target
