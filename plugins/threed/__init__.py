"""The 3D plugin: Blender scenes through typed tools, a worker process, and geometry-check rewards.

The plugin class is imported when it is asked for (the ``horizon.plugins`` entry point loads it),
not with the package: ``agent plugins`` reads ``plugins.threed.manifest`` without the plugin's imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugins.threed.plugin import ThreeDPlugin

__all__ = ["ThreeDPlugin"]


def __getattr__(name: str) -> Any:
    """The plugin class, imported on first use (PEP 562)."""
    if name == "ThreeDPlugin":
        from plugins.threed.plugin import ThreeDPlugin

        return ThreeDPlugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
