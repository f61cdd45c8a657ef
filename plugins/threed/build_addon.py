"""Build the installable Blender extension zip of the Horizon Agent add-on.

The zip holds, at its root, ``blender_manifest.toml`` and ``__init__.py`` from
``plugins/threed/addon/`` and ``scene_ops.py``, a copy of ``plugins/threed/ops.py`` (the add-on
applies the agent's steps with the same code the worker runs). Install it in Blender with
Edit > Preferences > Get Extensions > Install from Disk (Blender 4.2+).

``validate_with_blender`` runs Blender's own extension validator on the add-on folder or the
zip: the code behind ``blender --command extension validate PATH`` (``bl_pkg``, bundled with
Blender and with the ``bpy`` module under ``scripts/addons_core/``), so the manifest is held to
Blender's rules, not a copy of them.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ADDON = HERE / "addon"

#: Run in a child Python: Blender's ``extension validate`` command, as ``blender --command`` runs it.
_VALIDATE = """
import sys
try:
    import bpy  # noqa: F401 - puts Blender's scripts (addons_core) on the path
    from bl_pkg import bl_extension_cli
except ImportError as exc:
    print(f"bpy with Blender's extension tools cannot be imported: {exc}")
    sys.exit(3)
sys.exit(bl_extension_cli.cli_extension_handler(["validate", sys.argv[1]]))
"""


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


def validate_with_blender(path: Path, python: str = sys.executable, timeout_s: float = 120) -> tuple[bool, str]:
    """Check an extension folder or zip with Blender's validator (``extension validate``).

    It runs in a child process of ``python`` (bpy changes process-wide state and signal handlers).

    Args:
        path: a folder holding ``blender_manifest.toml`` (and ``__init__.py`` for an add-on) or a zip.
        python: an interpreter that can import ``bpy``.
        timeout_s: seconds before the child is killed.

    Returns:
        ``(valid, Blender's report)``; the report names each broken key of the manifest.

    Raises:
        RuntimeError: ``python`` cannot import bpy and Blender's ``bl_pkg``.
        subprocess.TimeoutExpired: the validator ran past ``timeout_s``.
    """
    proc = subprocess.run([python, "-c", _VALIDATE, str(path)], capture_output=True, text=True, timeout=timeout_s, check=False)
    report = (proc.stdout + proc.stderr).strip()
    if proc.returncode == 3:
        raise RuntimeError(report)
    return proc.returncode == 0, report
