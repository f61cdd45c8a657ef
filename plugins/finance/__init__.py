"""The finance plugin: filings parsed into DuckDB with provenance, checked, queried and reported.

The plugin class is imported when it is asked for (the ``horizon.plugins`` entry point loads it),
not with the package: ``agent plugins`` reads ``plugins.finance.manifest`` without the plugin's imports.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from plugins.finance.plugin import FinancePlugin

__all__ = ["FinancePlugin"]


def __getattr__(name: str) -> Any:
    """The plugin class, imported on first use (PEP 562)."""
    if name == "FinancePlugin":
        from plugins.finance.plugin import FinancePlugin

        return FinancePlugin
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
