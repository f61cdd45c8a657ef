"""The coding plugin: search, map, read, edit, test and statically check Python, Java, JavaScript/TypeScript and Go repositories.

The plugin class is imported when it is asked for (the ``horizon.plugins`` entry point loads it),
not with the package: ``agent plugins`` reads ``plugins.coding.manifest`` without the plugin's imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugins.coding.plugin import CodingPlugin

__all__ = ["CodingPlugin"]


def __getattr__(name: str) -> Any:
    """The plugin class, imported on first use (PEP 562)."""
    if name == "CodingPlugin":
        from plugins.coding.plugin import CodingPlugin

        return CodingPlugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
