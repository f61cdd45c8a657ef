"""The plugin as Horizon loads it: entry point, protocol, tool schemas, a stable prompt."""

from __future__ import annotations

from core.plugin import Plugin, Task, load_plugin
from plugins.threed import ThreeDPlugin
from plugins.threed.tools import PYTHON_ENV


def test_entry_point_loads_a_plugin(monkeypatch):
    monkeypatch.delenv("HORIZON_PLUGINS", raising=False)
    plugin = load_plugin("threed")
    assert isinstance(plugin, ThreeDPlugin) and isinstance(plugin, Plugin)


def test_tools_have_unique_names_and_function_schemas(monkeypatch):
    monkeypatch.delenv(PYTHON_ENV, raising=False)
    tools = ThreeDPlugin().tools()
    names = [t.name for t in tools]
    assert len(names) == len(set(names)) and names[-1] == "finish" and "run_blender_python" not in names
    for t in tools:
        schema = t.schema()["function"]
        assert schema["description"] and schema["parameters"]["type"] == "object", t.name
        assert schema["parameters"].get("additionalProperties") is False, t.name  # typos are errors, not ignored
    read_only = {t.name for t in tools if t.read_only}
    assert read_only == {"inspect_scene", "finish"}  # every other call is snapshotted before it runs


def test_system_prompt_is_the_same_for_every_task():
    plugin = ThreeDPlugin()
    a = plugin.system_prompt(Task(plugin="threed", instruction="a table"))
    b = plugin.system_prompt(Task(plugin="threed", instruction="a chair"))
    assert a == b and "metres" in a
