"""Whether a reproduction test file reaches into pytest's reporting, decided from its syntax tree.

The grader runs the test files a patch adds or extends on the starting code and on the patch
(``plugins.coding.grading.reproduction_run``); a file that could make its own outcome (fail on
the start, pass after) is not run. The verdict stream and the second run (docs/security.md)
catch reports rewritten during a run and passes that do not hold without pytest, but not a
failure forged on the starting code, so a file that reaches for the runner is still refused.
A Python file reaches into the runner when it:

- defines or binds a ``pytest_*`` name (a hook function, method or assignment, ``pytest_plugins``,
  ``from m import pytest_runtest_makereport``), or reads such an attribute (``config.hook.pytest_x``);
- imports ``_pytest`` or ``pluggy`` (any submodule), or names ``_pytest``, ``pluggy``,
  ``TestReport``, ``CollectReport`` or ``pluginmanager``;
- holds a string that is exactly one of those names (``__import__("_pytest")``,
  ``getattr(x, "pytest_runtest_makereport")``).

A name that only appears in prose (a comment, a docstring, a message) or an import of a plugin
package (``from pytest_lazy_fixtures import lf``) is not a reach. A file that does not parse is
judged by its words (the ``WORDS`` pattern), as before.
"""

from __future__ import annotations

import ast
import re

#: The words that marked a file before (kept for files that do not parse).
WORDS = re.compile(rb"\b(_pytest|pluggy|pytest_\w+|TestReport|pytest_plugins)\b")
_HOOK = re.compile(r"^pytest_\w+$")
_RUNNER_NAMES = frozenset({"_pytest", "pluggy", "TestReport", "CollectReport", "pluginmanager", "pytest_plugins"})
_RUNNER_MODULE = re.compile(r"^(_pytest|pluggy)(\.|$)")


def _bound(node: ast.AST) -> list[str]:
    """Names a statement binds (targets of assignments, ``global``/``nonlocal``, ``from`` imports)."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.ImportFrom):
        return [a.asname or a.name for a in node.names]
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target] \
        if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.NamedExpr)) else []  # fmt: skip
    return [n.id if isinstance(n, ast.Name) else n.attr for t in targets for n in ast.walk(t) if isinstance(n, (ast.Name, ast.Attribute))]


def runner_reach(data: bytes) -> str:
    """Why a test file reaches into pytest's reporting (see the module docstring), or "" when it does not.

    Args:
        data: the file's content.

    Returns:
        ``"line N: what"`` for the first reach found; "" for none.
    """
    try:
        tree = ast.parse(data.decode("utf-8", "replace"))
    except (SyntaxError, ValueError):
        found = WORDS.search(data)
        return f"names `{found.group(1).decode()}` (the file does not parse)" if found else ""
    for node in ast.walk(tree):
        line = getattr(node, "lineno", 0)
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _RUNNER_MODULE.match(alias.name):
                    return f"line {line}: imports {alias.name}"
        if isinstance(node, ast.ImportFrom) and _RUNNER_MODULE.match(node.module or ""):
            return f"line {line}: imports from {node.module}"
        for name in _bound(node):
            if _HOOK.match(name) or name in _RUNNER_NAMES:
                return f"line {line}: defines or binds {name}"
        if isinstance(node, ast.Name) and node.id in _RUNNER_NAMES:
            return f"line {line}: names {node.id}"
        if isinstance(node, ast.Attribute) and (node.attr in _RUNNER_NAMES or _HOOK.match(node.attr)):
            return f"line {line}: reads .{node.attr}"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value.strip()
            if _HOOK.match(text) or text in _RUNNER_NAMES or _RUNNER_MODULE.match(text) and " " not in text:
                return f"line {line}: the string {text!r}"
    return ""
