"""Installed plugins found and described without importing any: ``agent plugins`` and discovery.

Kept apart from ``core.plugin`` (the protocol, ``Task``, loading and the contract check, which
need pydantic and core's reward and tool types) so that listing plugins starts as fast as
``agent --help`` (issue 31). ``core.plugin`` re-exports these names.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from core.entry_points import ENTRY_POINT_GROUP
from core.errors import PluginContractError, PluginNotFound


def discover() -> dict[str, Any]:
    """Return ``{name: entry point}`` for the installed plugins (not yet imported)."""
    allowed = {n.strip() for n in os.environ.get("HORIZON_PLUGINS", "").split(",") if n.strip()}
    found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    return {n: ep for n, ep in sorted(found.items()) if not allowed or n in allowed}


def _provider(entry: Any) -> str:
    """Who to ask about a plugin's code: the distribution that registered it."""
    dist = getattr(getattr(entry, "dist", None), "name", "") or ""
    return f"report it to the {dist} package" if dist and dist != "horizon-agents" else "report it to the plugin's authors"


def install_hint(entry: Any, error: ImportError | None = None) -> str:
    """What to run when the plugin of entry point ``entry`` cannot import a module: the extra of
    the same name for Horizon's own plugins (``pip install 'horizon-agents[threed]'``); for
    another package, that it imports a module that is not installed (``error.name``), which its
    own requirements should bring."""
    dist = getattr(getattr(entry, "dist", None), "name", "") or ""
    if dist == "horizon-agents":
        return f"install its extra: pip install 'horizon-agents[{entry.name}]' (or ./setup.sh, which installs all)"
    missing = getattr(error, "name", None) or "a module"
    return f"{dist or 'the package that provides it'} imports {missing}, which is not installed: install it, or {_provider(entry)}"



@dataclass(frozen=True)
class PluginInfo:
    """What ``agent plugins`` lists of an installed plugin.

    Attributes:
        name: its entry point's name.
        entry: the entry point's value (``plugins.coding:CodingPlugin``).
        version: the version of the distribution that registered it ("" when unknown).
        description: what it does ("" when it cannot load).
        tools: its tools' names in order (empty when it cannot load).
        problem: why it cannot load, with what to install (None when it can, as far as known).
        from_manifest: read from its ``manifest`` module, not from the loaded plugin.
    """

    name: str
    entry: str
    version: str
    description: str
    tools: tuple[str, ...]
    problem: str | None = None
    from_manifest: bool = False


def _manifest(entry: Any) -> Any:
    """The plugin's ``manifest`` module beside its entry point's module (see the module's
    docstring), imported; None when there is none or it does not import."""
    import importlib
    import importlib.util

    try:
        spec = importlib.util.find_spec(entry.module)
        if spec is None or spec.submodule_search_locations is None:  # a plain module: no package to hold a manifest
            return None
        if importlib.util.find_spec(f"{entry.module}.manifest") is None:
            return None
        return importlib.import_module(f"{entry.module}.manifest")
    except Exception:  # noqa: BLE001 - a manifest that does not import: the plugin is loaded instead
        return None


def _missing(modules: tuple[str, ...]) -> list[str]:
    """The top-level modules among ``modules`` that cannot be imported here (found, not imported)."""
    import importlib.util

    missing = []
    for module in modules:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            missing.append(module)
    return missing


def describe_plugin(name: str, entry: Any) -> PluginInfo:
    """What ``agent plugins`` lists of the plugin of entry point ``entry``: from its
    ``manifest`` when it has one (nothing of the plugin is imported; a module of ``REQUIRES``
    that is not installed is its ``problem``, with ``install_hint``), else by loading it
    (``load_plugin``; its error is the ``problem``)."""
    dist = getattr(entry, "dist", None)
    version = str(getattr(dist, "version", "") or "")
    manifest = _manifest(entry)
    description, tools = getattr(manifest, "DESCRIPTION", None), getattr(manifest, "TOOLS", None)
    if isinstance(description, str) and isinstance(tools, tuple | list) and all(isinstance(t, str) for t in tools):
        requires = getattr(manifest, "REQUIRES", ())
        missing = _missing(tuple(requires)) if isinstance(requires, tuple | list) else []
        problem = None
        if missing:
            error = ModuleNotFoundError(f"No module named {missing[0]!r}", name=missing[0])  # what loading it would raise first
            problem = f"the {name} plugin cannot load: {type(error).__name__}: {error}; {install_hint(entry, error)}"
        return PluginInfo(name, entry.value, version, description, tuple(tools), problem, from_manifest=True)
    try:
        from core.plugin import load_plugin  # no manifest: the plugin itself is loaded

        plugin = load_plugin(name)
    except (PluginNotFound, PluginContractError) as exc:
        return PluginInfo(name, entry.value, version, "", (), str(exc))
    return PluginInfo(name, entry.value, version, plugin.description, tuple(t.name for t in plugin.tools()))
