"""Core knows no domain: it never imports ``plugins``, and names no built-in plugin or benchmark
in its code (docstrings may give examples)."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "core"
DOMAINS = {"coding", "threed", "finance"}


def _modules() -> list[tuple[str, ast.Module]]:
    return [(path.relative_to(CORE.parent).as_posix(), ast.parse(path.read_text(encoding="utf-8"))) for path in sorted(CORE.rglob("*.py"))]


def _docstrings(tree: ast.Module) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                found.add(id(first.value))
    return found


def test_core_never_imports_the_plugins_package():
    imports = []
    for rel, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            imports += [f"{rel}:{node.lineno} imports {n}" for n in names if n == "plugins" or n.startswith("plugins.")]
    assert imports == [], "core must reach plugins only through the entry points (core.plugin):\n" + "\n".join(imports)


def test_core_names_no_domain():
    named = set()
    for rel, tree in _modules():
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                text = node.value
                if text in DOMAINS or "terminal-bench" in text or "terminal_bench" in text:
                    named.add((rel, text))
    assert named == set(), "a domain is named in core; let the plugin declare it instead (core.plugin)"


#: Core test modules that name a built-in plugin on purpose, and why.
NAMES_A_PLUGIN = {
    "tests/core/test_architecture.py": "lists the domains this file keeps out of core",
    "tests/core/test_plugin.py": "discovers the installed built-in plugins through their entry points",
    "tests/core/test_packaging.py": "installs each plugin's extra and checks what it pulls in",
    "tests/core/eval/test_sources.py": "fetches a coding-suite task's PyPI release (real data); never loads the plugin",
}


def test_core_tests_need_no_domain_plugin():
    """Core's tests run on the test plugin (``tests/notes_plugin``); a test of a domain plugin's
    behaviour lives under ``tests/plugins/<name>/``, one that spans plugins under ``tests/integration/``."""
    tests = CORE.parent / "tests" / "core"
    named = set()
    for path in sorted(tests.rglob("*.py")):
        rel = path.relative_to(CORE.parent).as_posix()
        if rel in NAMES_A_PLUGIN:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "plugins":
                named.add((rel, f"imports {node.module}"))
            elif isinstance(node, ast.Import):
                named |= {(rel, f"imports {a.name}") for a in node.names if a.name.split(".")[0] == "plugins"}
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs and node.value in DOMAINS:
                named.add((rel, repr(node.value)))
    assert sorted(named) == [], "a core test needs a domain plugin (use the notes plugin, or move the test to tests/plugins/):\n" + "\n".join(map(str, sorted(named)))
