"""``core.api`` is the one core module plugins import, and its names change only on purpose."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import core.api

ROOT = Path(__file__).resolve().parents[2]

#: The public face. Adding or removing a name is a change to the plugin contract: update this
#: list, docs/architecture.md ("The plugin contract") and core/api.py's docstring together.
PUBLIC = {
    # the contract
    "COMMANDS_GROUP", "Plugin", "Task",
    # tools
    "Tool", "ToolContext", "ToolResult", "tool",
    # rewards
    "RewardComponent", "RewardResult", "Trajectory",
    # errors
    "HorizonError", "NoReference", "SandboxUnavailable", "ToolError", "UserError",
    # the sandbox
    "SCRATCH_WRITABLE", "SYSTEM_PATH", "ProcessResult", "Sandbox", "SandboxLimits", "can_bind", "hidden_dirs",
    "open_sandbox", "python_prefixes", "sandbox_like", "with_binds",
    # containers
    "ContainerSandbox", "build_task_image", "engine_or_none", "export_workdir", "find_engine", "image_config",
    # files
    "make_dirs", "read_regular", "remove_tree", "write_new",
    # the episode's files
    "changed_paths", "content_only", "diff_trees", "make_parents", "materialize", "save_tree", "snapshot",
    "start_files", "start_tree", "file_listing", "record_test_outputs", "ALWAYS_EXCLUDED",
    # settings and data folders
    "horizon_home", "load_settings", "make_data_folder",
    # a plugin's own front end starting a run
    "Limits", "Pricing", "Run", "make_policy", "policy_spec",
    # task formats
    "EvalTask", "TaskFormat", "TaskSpec",
}  # fmt: skip


def test_the_public_names_are_pinned():
    assert set(core.api.__all__) == PUBLIC
    assert len(core.api.__all__) == len(PUBLIC), "a name is listed twice in core.api.__all__"


def test_every_public_name_resolves():
    missing = [name for name in core.api.__all__ if getattr(core.api, name, None) is None]
    assert missing == []
    with pytest.raises(AttributeError, match="core.api.__all__"):
        core.api.NotAName  # noqa: B018 - the error names where the public names are


def test_importing_the_api_leaves_the_loop_unloaded():
    """A plugin's tools import core.api; the loop, LangGraph and the evaluation load only when a
    plugin asks for ``Run`` or a task format."""
    code = "import sys, core.api; print(sorted(m for m in ('core.runner', 'langgraph', 'core.eval.tasks') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def _core_imports(path: Path) -> list[tuple[int, str]]:
    """``(line, module)`` of each import of a core module in ``path``, wherever it is (top level,
    inside a function, ``import core.x`` or ``from core import x``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name == "core" or a.name.startswith("core.")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "core":
                found += [(node.lineno, f"core.{a.name}") for a in node.names]
            elif node.module.startswith("core."):
                found.append((node.lineno, node.module))
    return found


def test_plugins_import_only_core_api():
    wrong = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in sorted((ROOT / "plugins").rglob("*.py"))
        for line, module in _core_imports(path)
        if module != "core.api"
    ]
    assert wrong == [], "a plugin imports core only through core.api (add the name there if a plugin needs it):\n" + "\n".join(wrong)


def test_the_test_plugin_imports_only_core_api():
    plugin = ROOT / "tests" / "notes_plugin" / "horizon_notes.py"
    assert {module for _, module in _core_imports(plugin)} == {"core.api"}


def test_the_check_sees_every_form_of_import(tmp_path):
    """The AST check above would catch each way of reaching a core module."""
    sample = tmp_path / "sample.py"
    sample.write_text("import core.runner\nfrom core import workspace\nfrom core.api import tool\n"
                      "def f():\n    from core.sandbox.bwrap import BwrapSandbox\n")
    assert _core_imports(sample) == [(1, "core.runner"), (2, "core.workspace"), (3, "core.api"), (5, "core.sandbox.bwrap")]
