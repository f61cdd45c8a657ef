"""The plugin as Horizon loads it: entry point, protocol, tool schemas, a stable prompt."""

from __future__ import annotations

import json

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


def test_every_tool_schema_compiles_to_a_llama_cpp_grammar(monkeypatch):
    # the embedded policy constrains replies with a grammar built from these schemas; one schema
    # the converter rejects leaves the small model unconstrained (it then rarely emits a tool call)
    from llama_cpp.llama_grammar import LlamaGrammar, json_schema_to_gbnf

    from core.policy.embedded import tool_call_schema

    monkeypatch.setenv(PYTHON_ENV, "1")
    for tool in ThreeDPlugin().tools():
        grammar = json_schema_to_gbnf(json.dumps(tool_call_schema([tool.schema()])))
        assert len(grammar) < 20_000, (tool.name, len(grammar))  # a huge grammar makes every sampled token slow
        LlamaGrammar.from_string(grammar, verbose=False)
