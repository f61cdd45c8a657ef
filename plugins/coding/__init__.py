"""The coding plugin: search, map, read, edit, test and statically check Python, Java, JavaScript/TypeScript and Go repositories."""

from plugins.coding.plugin import CodingPlugin

__all__ = ["CodingPlugin"]
