"""The coding plugin: search, read, edit, test and statically check Python and Java repositories."""

from plugins.coding.plugin import CodingPlugin

__all__ = ["CodingPlugin"]
