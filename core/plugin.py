"""The plugin protocol and its discovery through the ``horizon.plugins`` entry-point group.

A plugin is one class; a third-party package registers it in its own ``pyproject.toml``::

    [project.entry-points."horizon.plugins"]
    mydomain = "my_package.plugin:MyPlugin"

and ``agent run mydomain "..."`` finds it. The built-in plugins load through the same path.
``HORIZON_PLUGINS=coding,threed`` restricts which plugins load (names, comma-separated).

A plugin whose entry point names a package (``my_package:MyPlugin``, or ``my_package.sub:X``
with ``sub`` a package) may add ``manifest.py`` beside it, with no heavy import, for
``agent plugins`` (``describe_plugin``) to list it without loading it::

    DESCRIPTION = "what it does"            # the plugin's description (the class can import it)
    TOOLS = ("search", "edit", "finish")    # its tools' names, in order
    REQUIRES = ("numpy",)                   # top-level modules loading it imports (optional)

The package's ``__init__.py`` must not import the plugin itself then (a PEP 562 ``__getattr__``
does it on first use, as Horizon's own plugins do). Without a manifest the plugin is loaded.

A plugin imports core only through ``core.api`` (this protocol, ``Task``, tools, rewards, errors,
the sandbox, safe file access, ...); ``tests/core/test_api.py`` pins those names and checks that
``plugins/`` imports nothing else of core. ``tests/notes_plugin/horizon_notes.py`` is a minimal
complete plugin.
"""

from __future__ import annotations

from collections.abc import Awaitable
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel

from core.entry_points import COMMANDS_GROUP, ENTRY_POINT_GROUP
from core.errors import PluginContractError, PluginNotFound
from core.plugin_index import PluginInfo, _provider, describe_plugin, discover, install_hint
from core.reward import RewardComponent, RewardResult, Trajectory
from core.tools import Tool, ToolContext

__all__ = ["COMMANDS_GROUP", "ENTRY_POINT_GROUP", "Plugin", "PluginInfo", "RewardComponent", "Task", "check_plugin", "describe_plugin", "discover",
           "heavy_episodes", "install_hint", "load_plugin"]



class Task(BaseModel):
    """What the user asked for.

    Attributes:
        plugin: the plugin's name.
        instruction: the request in the user's words ("fix NPE in user module").
        repo: the folder the episode works on (copied into the workspace), if the domain has one.
        metadata: plugin-specific facts about the task, kept with the run (JSON values), e.g. the
            coding plugin's ``fail_to_pass`` and ``pass_to_pass`` test ids from a task suite.
    """

    plugin: str
    instruction: str
    repo: Path | None = None
    metadata: dict[str, Any] = {}


@runtime_checkable
class Plugin(Protocol):
    """A domain: its prompt, its tools, how an episode starts and how it is rewarded.

    Write it with ``from core.api import ...`` only (``core/api.py`` lists what is public: tools
    with ``@tool``, ``ToolContext``, ``RewardResult``, ``UserError``/``ToolError``, the sandbox,
    ``read_regular``/``write_new``, ...); other core modules are internals that may change.

    Optional hooks:

    - ``validate(task: Task) -> None``: called before a run is created; raises ``UserError``
      naming the user's file when the task cannot work (a task file that does not parse, inputs
      that do not exist), so nothing is started for a task that would only fail.
    - ``teardown(ctx: ToolContext) -> None``: called when a run is closed (after it ends, stops
      or crashes), to release what the plugin started for the episode (a worker process). It
      must be safe to call when nothing was started.
    - ``is_checker_input(path: str) -> bool``: whether a patch's file (relative, ``/``-separated)
      is one the plugin's reward checks against (a test, the test runner's configuration); the
      export's reward-hacking gate flags a final patch that changes one. Without it, none is.
    - ``mcp_extension(options: list[str]) -> McpExtension | None``: the plugin's own options of
      ``agent mcp PLUGIN`` (those the command does not know, e.g. the 3D plugin's ``--blender
      PORT``); the returned ``core.mcp.McpExtension`` makes each run's task and adds a note to
      each call's answer. Raises ``UserError`` for an option it does not take; None: no extension.

    Optional attribute:

    - ``heavy_episodes: bool``: an episode holds a heavy process of its own (the 3D plugin's
      Blender worker); ``agent eval --backend ray`` runs such episodes in a Ray actor each,
      reused for the next one, instead of a Ray task. Default False.
    - ``small_model_tools: tuple[str, ...]``: the names of the tools a small embedded model is
      offered (the zero-setup default, ``core.policy.embedded``, whose 135M model reads a long
      tool list slowly and picks from it at random); a model server's policy gets every tool.
      Default: every tool for every policy.

    CLI commands: a package adds ``agent NAME ...`` by registering a typer app in the
    ``horizon.commands`` entry-point group (``COMMANDS_GROUP``), e.g. the 3D plugin's
    ``threed = "plugins.threed.cli:app"`` for ``agent threed build-addon``.
    """

    name: str
    description: str

    def system_prompt(self, task: Task) -> str:
        """Return the system prompt; it must not change within a run (prefix caching)."""
        ...

    def tools(self) -> list[Tool]:
        """Return the tools, in a fixed order."""
        ...

    def setup(self, task: Task, ctx: ToolContext) -> str:
        """Prepare the episode (e.g. record which tests fail) and return extra text for the task message."""
        ...

    def reward(self, task: Task, trajectory: Trajectory) -> RewardResult | Awaitable[RewardResult]:
        """Judge the finished episode (``core.reward``): a ``RewardResult`` with the plugin's reward
        version, or ``RewardResult.not_applicable`` when there is nothing to judge. Sync or async.
        At the end of an episode ``trajectory.context`` is the live ``ToolContext``."""
        ...



def load_plugin(name: str) -> Plugin:
    """Import and instantiate the plugin registered as ``name``.

    Raises:
        PluginNotFound: nothing is registered under that name (the installed names are listed),
            its packages are not installed (the message names the missing module and the
            install command, ``install_hint``), or its code raised while loading or starting
            (the message says so and who provides it).
        PluginContractError: the registered object breaks the contract (``check_plugin``: the
            message names the plugin, the hook and what is wrong).
    """
    found = discover()
    if name not in found:
        names = ", ".join(found) or "none"
        raise PluginNotFound(f"no plugin named {name!r} (installed: {names}); a plugin registers in the {ENTRY_POINT_GROUP!r} entry-point group")
    entry = found[name]
    try:
        obj = entry.load()
    except ImportError as exc:  # a package of the plugin's extra is not installed
        raise PluginNotFound(f"the {name} plugin cannot load: {type(exc).__name__}: {exc}; {install_hint(entry, exc)}") from None
    except Exception as exc:  # noqa: BLE001 - the plugin's own code is broken (a syntax error, a name that is not there)
        raise PluginNotFound(f"the {name} plugin ({entry.value}) cannot load: {type(exc).__name__}: {exc}; it is the plugin's "
                             f"code, not Horizon's: {_provider(entry)}") from None  # fmt: skip
    try:
        plugin = obj() if isinstance(obj, type) else obj
    except Exception as exc:  # noqa: BLE001 - its constructor raised
        raise PluginNotFound(f"the {name} plugin ({entry.value}) raised while starting: {type(exc).__name__}: {exc}; {_provider(entry)}") from None
    check_plugin(plugin, f"plugin {name!r} ({entry.value})")
    return plugin




#: Each hook Horizon calls: its arguments (after ``self``) and whether a plugin must have it.
HOOKS: dict[str, tuple[tuple[str, ...], bool]] = {
    "system_prompt": (("task",), True),
    "tools": ((), True),
    "setup": (("task", "ctx"), True),
    "reward": (("task", "trajectory"), True),
    "validate": (("task",), False),
    "teardown": (("ctx",), False),
    # which files of a patch its reward checks against (tests, runner configuration): the export's reward-hacking gate
    "is_checker_input": (("path",), False),
}


def check_plugin(plugin: Any, label: str) -> None:
    """Check ``plugin`` against the contract when it loads, so a mistake shows now, not mid-run.

    Checked: ``name`` and ``description`` are text; each hook of ``HOOKS`` (required ones must be
    there; optional ones may be absent) can be called with the arguments Horizon passes;
    ``heavy_episodes``, when present, is a bool; ``tools()`` returns ``core.tools.Tool``
    objects with distinct names.

    Args:
        label: how the error names the plugin (``plugin 'echo' (echo_plugin:EchoPlugin)``).

    Raises:
        PluginContractError: ``"<label>: <hook>: <what is wrong>"`` (a ``TypeError`` and a ``UserError``).
    """
    import inspect

    def wrong(hook: str, what: str) -> PluginContractError:
        return PluginContractError(f"{label}: {hook}: {what}")

    for attribute in ("name", "description"):
        if not isinstance(getattr(plugin, attribute, None), str):
            raise wrong(attribute, "missing, or not a str")
    for hook, (arguments, required) in HOOKS.items():
        fn = getattr(plugin, hook, None)
        if fn is None:
            if required:
                raise wrong(hook, f"missing: Horizon calls {hook}({', '.join(arguments)})")
            continue
        if not callable(fn):
            raise wrong(hook, f"is a {type(fn).__name__}, not a method")
        try:
            inspect.signature(fn).bind(*arguments)
        except TypeError as exc:
            raise wrong(hook, f"cannot be called as {hook}({', '.join(arguments)}): {exc}") from None
        except ValueError:  # a builtin without a signature: cannot be checked
            pass
    if not isinstance(getattr(plugin, "heavy_episodes", False), bool):
        raise wrong("heavy_episodes", "not a bool")
    from core.tools import Tool

    try:
        tools = plugin.tools()
    except Exception as exc:  # noqa: BLE001 - the plugin's bug, named as such
        raise wrong("tools", f"raised {type(exc).__name__}: {exc}") from None
    if not isinstance(tools, list) or not all(isinstance(t, Tool) for t in tools):
        raise wrong("tools", "must return a list of core.api.Tool (made with @core.api.tool)")
    names = [t.name for t in tools]
    if len(set(names)) != len(names):
        raise wrong("tools", f"two tools share a name: {sorted({n for n in names if names.count(n) > 1})}")
    short = getattr(plugin, "small_model_tools", None)
    if short is not None:
        if not isinstance(short, tuple) or not short or not all(isinstance(n, str) for n in short):
            raise wrong("small_model_tools", "must be a non-empty tuple of tool names")
        if unknown := [n for n in short if n not in names]:
            raise wrong("small_model_tools", f"names no tool of the plugin: {unknown}")


def heavy_episodes(names: set[str] | list[str]) -> frozenset[str]:
    """The plugins among ``names`` whose episodes hold a heavy process (their ``heavy_episodes``
    attribute); a name that does not load is left out (the episode's own start reports it)."""

    def heavy(name: str) -> bool:
        try:
            return getattr(load_plugin(name), "heavy_episodes", False) is True
        except Exception:  # noqa: BLE001 - a plugin that cannot load fails its episodes, with their own message
            return False

    return frozenset(name for name in names if heavy(name))
