"""Finding definitions and references of a name in Python and Java sources with tree-sitter.

Uses the py-tree-sitter 0.25+ API: ``Language(tree_sitter_python.language())``, ``Parser(lang)``,
``Query(lang, source)`` and ``QueryCursor(query).captures(node) -> {capture: [Node, ...]}``.
Each file is indexed once per (path, mtime, size) and the index is cached in the process.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal

from core.errors import ToolError
from plugins.coding.search import iter_files, shorten

SymbolKind = Literal["definition", "reference", "any"]

#: Files larger than this are not parsed.
MAX_PARSE_BYTES = 2 << 20

_PY_DEFINITIONS = """
(class_definition name: (identifier) @name) @class
(function_definition name: (identifier) @name) @function
(module (expression_statement (assignment left: (identifier) @name)) @variable)
(module (expression_statement (assignment left: (pattern_list (identifier) @name))) @variable)
(class_definition body: (block (expression_statement (assignment left: (identifier) @name)) @field))
(function_definition
  name: (identifier) @_init
  body: (block (expression_statement
    (assignment left: (attribute object: (identifier) @_self attribute: (identifier) @name))) @attribute)
  (#eq? @_init "__init__")
  (#eq? @_self "self"))
"""

_JAVA_DEFINITIONS = """
(class_declaration name: (identifier) @name) @class
(interface_declaration name: (identifier) @name) @interface
(enum_declaration name: (identifier) @name) @enum
(record_declaration name: (identifier) @name) @record
(annotation_type_declaration name: (identifier) @name) @annotation
(method_declaration name: (identifier) @name) @method
(constructor_declaration name: (identifier) @name) @constructor
(field_declaration declarator: (variable_declarator name: (identifier) @name)) @field
(constant_declaration declarator: (variable_declarator name: (identifier) @name)) @field
(enum_constant name: (identifier) @name) @enum_constant
"""

_PY_IDENTIFIERS = "(identifier) @id"
_JAVA_IDENTIFIERS = "[(identifier) (type_identifier)] @id"

_CONTAINERS = {
    "python": ("class_definition",),
    "java": ("class_declaration", "interface_declaration", "enum_declaration", "record_declaration"),
}


@dataclass(frozen=True)
class SymbolHit:
    """One occurrence of a name.

    Attributes:
        path: file path relative to the repository root (POSIX).
        line: 1-based line of the name.
        kind: ``class``, ``function``, ``method``, ``variable``, ``field``, ``attribute``,
            ``interface``, ``enum``, ``record``, ``annotation``, ``constructor``, ``enum_constant``
            for definitions; ``call`` or ``reference`` for uses.
        text: the source line holding the name.
        container: the enclosing class's name ("" at module level).
    """

    path: str
    line: int
    kind: str
    text: str
    container: str = ""

    @property
    def is_definition(self) -> bool:
        """True for a definition, False for a call or reference."""
        return self.kind not in ("call", "reference")


@dataclass
class _FileIndex:
    definitions: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)  # name -> (line, kind, container)
    uses: dict[str, list[tuple[int, str]]] = field(default_factory=dict)  # name -> (line, call|reference)
    lines: list[str] = field(default_factory=list)


class _Language:
    def __init__(self, name: str) -> None:
        from tree_sitter import Language, Parser, Query

        if name == "python":
            import tree_sitter_python as grammar

            definitions, identifiers = _PY_DEFINITIONS, _PY_IDENTIFIERS
        else:
            import tree_sitter_java as grammar

            definitions, identifiers = _JAVA_DEFINITIONS, _JAVA_IDENTIFIERS
        self.name = name
        self.language = Language(grammar.language())
        self.parser = Parser(self.language)
        self.definitions = Query(self.language, definitions)
        self.identifiers = Query(self.language, identifiers)
        self.lock = threading.Lock()  # a Parser is not safe to share between threads


@cache
def _language(name: str) -> _Language:
    return _Language(name)


_SUFFIX_LANGUAGE = {".py": "python", ".java": "java"}
#: Most files whose index is kept (least recently used ones are dropped first).
MAX_CACHED_FILES = 4096
_cache: OrderedDict[Path, tuple[tuple[int, int], _FileIndex]] = OrderedDict()
_lock = threading.Lock()


def _enclosing_class(node, language: str) -> str:
    containers = _CONTAINERS[language]
    parent = node.parent
    while parent is not None:
        if parent.type in containers:
            name = parent.child_by_field_name("name")
            return name.text.decode("utf-8", "replace") if name is not None else ""
        parent = parent.parent
    return ""


def _python_function_kind(node) -> str:
    parent = node.parent
    if parent is not None and parent.type == "decorated_definition":
        parent = parent.parent
    if parent is not None and parent.type == "block" and parent.parent is not None and parent.parent.type == "class_definition":
        return "method"
    return "function"


def _is_call(node, language: str) -> bool:
    parent = node.parent
    if parent is None:
        return False
    if language == "java":
        return parent.type == "method_invocation" and parent.child_by_field_name("name") == node
    if parent.type == "call":
        return parent.child_by_field_name("function") == node
    if parent.type == "attribute" and parent.child_by_field_name("attribute") == node:
        grand = parent.parent
        return grand is not None and grand.type == "call" and grand.child_by_field_name("function") == parent
    return False


def _index_source(source: bytes, language: str) -> _FileIndex:
    from tree_sitter import QueryCursor

    lang = _language(language)
    with lang.lock:
        tree = lang.parser.parse(source)
    index = _FileIndex(lines=source.decode("utf-8", errors="replace").splitlines())
    definition_names: set[int] = set()
    for _pattern, captures in QueryCursor(lang.definitions).matches(tree.root_node):
        names = captures.get("name")
        kinds = [k for k in captures if k != "name" and not k.startswith("_")]
        if not names or not kinds:
            continue
        kind, node = kinds[0], captures[kinds[0]][0]
        for name_node in names:
            if kind == "function" and language == "python":
                kind = _python_function_kind(node)
            text = name_node.text.decode("utf-8", "replace")
            entry = (name_node.start_point[0] + 1, kind, _enclosing_class(node, language))
            if entry not in index.definitions.setdefault(text, []):
                index.definitions[text].append(entry)
            definition_names.add(name_node.start_byte)
    for node in QueryCursor(lang.identifiers).captures(tree.root_node).get("id", []):
        if node.start_byte in definition_names:
            continue
        text = node.text.decode("utf-8", "replace")
        kind = "call" if _is_call(node, language) else "reference"
        index.uses.setdefault(text, []).append((node.start_point[0] + 1, kind))
    return index


def _index_file(path: Path) -> _FileIndex | None:
    language = _SUFFIX_LANGUAGE.get(path.suffix)
    if language is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    if stat.st_size > MAX_PARSE_BYTES:
        return None
    key = (stat.st_mtime_ns, stat.st_size)
    with _lock:
        cached = _cache.get(path)
        if cached is not None and cached[0] == key:
            _cache.move_to_end(path)
            return cached[1]
    try:
        source = path.read_bytes()
    except OSError:
        return None
    index = _index_source(source, language)
    with _lock:
        _cache[path] = (key, index)
        _cache.move_to_end(path)
        while len(_cache) > MAX_CACHED_FILES:
            _cache.popitem(last=False)
    return index


_NAME = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")


def find_symbol(root: Path, name: str, kind: SymbolKind = "any") -> list[SymbolHit]:
    """Find definitions and/or references of ``name`` in the ``.py`` and ``.java`` files of a repository.

    Args:
        root: repository root (absolute).
        name: an identifier (``getDisplayName``), or ``Container.member`` to keep only
            definitions inside that class (references are matched on the last part).
        kind: ``definition``, ``reference`` (calls and other uses) or ``any``.

    Returns:
        Hits sorted with definitions first, then by path and line; at most one hit per
        (path, line, kind).

    Raises:
        ToolError: ``name`` is not an identifier or dotted identifier.
    """
    name = name.strip()
    if not _NAME.match(name):
        raise ToolError(
            f"name {name!r} is not an identifier; give a plain name such as 'getDisplayName' or "
            "'UserService.getDisplayName' (use search_code for regular expressions)"
        )
    if kind not in ("definition", "reference", "any"):
        raise ToolError(f"kind must be 'definition', 'reference' or 'any', not {kind!r}")
    *qualifier, leaf = name.split(".")
    container = qualifier[-1] if qualifier else None
    root = root.resolve()
    hits: list[SymbolHit] = []
    for path in iter_files(root, suffixes=(".py", ".java")):
        index = _index_file(path)
        if index is None:
            continue
        rel = path.relative_to(root).as_posix()

        def line_text(number: int, index: _FileIndex = index) -> str:
            return index.lines[number - 1].strip() if 0 < number <= len(index.lines) else ""

        if kind in ("definition", "any"):
            for line, def_kind, owner in index.definitions.get(leaf, []):
                if container is not None and owner != container:
                    continue
                hits.append(SymbolHit(rel, line, def_kind, line_text(line), owner))
        if kind in ("reference", "any"):
            seen: set[tuple[int, str]] = set()
            for line, use_kind in index.uses.get(leaf, []):
                if (line, use_kind) in seen:
                    continue
                seen.add((line, use_kind))
                hits.append(SymbolHit(rel, line, use_kind, line_text(line)))
    hits.sort(key=lambda h: (not h.is_definition, h.path, h.line))
    return hits


def format_hits(hits: list[SymbolHit], name: str, kind: SymbolKind, limit: int = 100) -> str:
    """Render hits as ``path:line: kind  source-line`` lines, at most ``limit`` of them."""
    if not hits:
        what = {"definition": "no definition", "reference": "no reference", "any": "no definition or reference"}[kind]
        return f"{what} of {name!r} in .py or .java files; check the spelling, or try search_code with a pattern"
    width = max(len(h.kind) for h in hits[:limit])
    lines = [f"{h.path}:{h.line}: {h.kind:<{width}}  {shorten(h.text, 160)}" for h in hits[:limit]]
    definitions = sum(h.is_definition for h in hits)
    summary = f"[{definitions} definitions, {len(hits) - definitions} references]"
    if len(hits) > limit:
        summary = f"[showing {limit} of {len(hits)} hits: {definitions} definitions, {len(hits) - definitions} references; use kind='definition' or a qualified name such as Class.member to narrow]"
    return "\n".join([*lines, summary])
