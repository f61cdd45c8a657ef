"""Calling one 3D tool in a test: it must succeed (``call``) or fail (``fails``)."""

from __future__ import annotations


def call(tool, ctx, **arguments):
    """Call ``tool`` with ``arguments``; assert it succeeded and return its ``ToolResult``."""
    result = tool(arguments, ctx)
    assert not result.is_error, result.output
    return result


def fails(tool, ctx, **arguments) -> str:
    """Call ``tool`` with ``arguments``; assert it failed and return its observation text."""
    result = tool(arguments, ctx)
    assert result.is_error, result.output
    return result.output
