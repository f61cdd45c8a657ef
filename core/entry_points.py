"""The entry-point groups a package registers Horizon extensions under (``pyproject.toml``'s
``[project.entry-points."..."]``), in a module that imports nothing, so that the command line can
list a plugin's commands without loading pydantic or the plugin contract (``core.plugin``).

- ``horizon.plugins`` (``ENTRY_POINT_GROUP``): a ``core.plugin.Plugin`` class per name;
- ``horizon.commands`` (``COMMANDS_GROUP``): a typer app per name, added as ``agent NAME ...``;
- ``horizon.task_formats`` (``core.eval.formats.TASK_FORMATS_GROUP``): task-folder layouts for ``agent eval``.
"""

from __future__ import annotations

__all__ = ["COMMANDS_GROUP", "ENTRY_POINT_GROUP"]

#: Entry-point group of plugin classes (``core.plugin.discover``, ``load_plugin``).
ENTRY_POINT_GROUP = "horizon.plugins"
#: Entry-point group of typer apps that add ``agent <name> ...`` commands (see ``core.plugin.Plugin``).
COMMANDS_GROUP = "horizon.commands"
