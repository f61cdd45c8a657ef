"""Finding definitions and references of a name in source files with tree-sitter.

Languages and their queries are in ``plugins.coding.languages`` (Python, Java, JavaScript,
TypeScript, Go). Each file is indexed once per (path, mtime, size) and the index is cached in
the process (``index_file``); the repository map (``plugins.coding.repomap``) reads the same
index.
"""

from __future__ import annotations

import os
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from core.api import ToolError
from plugins.coding.languages import SOURCE_SUFFIXES, SUFFIX_LANGUAGE, grammar
from plugins.coding.search import iter_files, shorten

SymbolKind = Literal["definition", "reference", "any"]

#: Files larger than this are not parsed.
MAX_PARSE_BYTES = 2 << 20
#: Most files whose index is kept (least recently used ones are dropped first).
MAX_CACHED_FILES = 8192


@dataclass(frozen=True)
class SymbolHit:
    """One occurrence of a name.

    Attributes:
        path: file path relative to the repository root (POSIX).
        line: 1-based line of the name.
        kind: ``class``, ``function``, ``method``, ``variable``, ``field``, ``attribute``,
            ``interface``, ``enum``, ``record``, ``annotation``, ``constructor``, ``enum_constant``,
            ``type``, ``constant`` for definitions; ``call`` or ``reference`` for uses.
        text: the source line holding the name.
        container: the enclosing class's name ("" at module level; the receiver type of a Go method).
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
class FileIndex:
    """The names one source file defines and uses.

    Attributes:
        language: the language name (``python``, ``java``, ``javascript``, ``typescript``, ``tsx``, ``go``).
        definitions: ``{name: [(line, kind, container), ...]}``, lines 1-based.
        uses: ``{name: [(line, "call" | "reference"), ...]}``, every identifier that is not a
            definition's own name.
        lines: the file's text lines (for showing a hit's source line).
    """

    language: str = ""
    definitions: dict[str, list[tuple[int, str, str]]] = field(default_factory=dict)
    uses: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)


_FileIndex = FileIndex  # the earlier private name
_cache: OrderedDict[str, tuple[tuple[int, int], FileIndex]] = OrderedDict()  # keyed by str: Path hashing is slow
_lock = threading.Lock()
#: Per repository root: the stamps that tell whether its file list is still right, and the list.
_file_lists: dict[str, tuple[dict[str, tuple[int, int]], list[tuple[Path, str]]]] = {}


def _stamp(path: str) -> tuple[int, int]:
    try:
        stat = os.stat(path)
    except OSError:
        return (-1, -1)
    return (stat.st_mtime_ns, stat.st_size)


def repository_files(root: Path) -> list[tuple[Path, str]]:
    """The repository's source files (``SOURCE_SUFFIXES``, ``.gitignore`` honoured) as ``(absolute, relative POSIX)`` pairs.

    The list is kept per root and walked again only when a folder's modification time (a file
    added, removed or renamed) or a ``.gitignore`` file changed, so a look-up in a large
    repository costs a few ``stat`` calls instead of a walk.
    """
    root = root.resolve()
    key = str(root)
    cached = _file_lists.get(key)
    if cached is not None and all(_stamp(path) == stamp for path, stamp in cached[0].items()):
        return cached[1]
    visited: list[Path] = []
    files = [(path, path.relative_to(root).as_posix()) for path in iter_files(root, suffixes=SOURCE_SUFFIXES, visited=visited)]
    stamps: dict[str, tuple[int, int]] = {}
    for folder in visited:  # stamped after the walk: a change during it shows up next time
        stamps[str(folder)] = _stamp(str(folder))
        stamps[str(folder / ".gitignore")] = _stamp(str(folder / ".gitignore"))
    stamps[str(root / ".git" / "info" / "exclude")] = _stamp(str(root / ".git" / "info" / "exclude"))
    _file_lists[key] = (stamps, files)
    return files


def _node_name(node) -> str:
    name = node.child_by_field_name("name") if node is not None else None
    return name.text.decode("utf-8", "replace") if name is not None else ""


def _enclosing_class(node, grammar_) -> str:
    if grammar_.name == "go" and node.type == "method_declaration":
        receiver = node.child_by_field_name("receiver")  # (s *Server) -> Server
        types = [] if receiver is None else [n for n in _descendants(receiver) if n.type == "type_identifier"]
        return types[0].text.decode("utf-8", "replace") if types else ""
    parent = node.parent
    while parent is not None:
        if parent.type in grammar_.spec.containers:
            return _node_name(parent)
        parent = parent.parent
    return ""


def _descendants(node):
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def _python_function_kind(node) -> str:
    parent = node.parent
    if parent is not None and parent.type == "decorated_definition":
        parent = parent.parent
    if parent is not None and parent.type == "block" and parent.parent is not None and parent.parent.type == "class_definition":
        return "method"
    return "function"


def _index_source(source: bytes, language: str) -> FileIndex:
    """Index ``source`` (bytes) written in ``language``; an unparsable region is skipped, not fatal.

    Raises:
        ValueError: no grammar for ``language`` is installed.
    """
    from tree_sitter import QueryCursor

    grammar_ = grammar(language)
    if grammar_ is None:
        raise ValueError(f"no tree-sitter grammar installed for {language!r}")
    tree = grammar_.parse(source)
    index = FileIndex(language=language, lines=source.decode("utf-8", errors="replace").splitlines())
    definition_names: set[int] = set()
    for _pattern, captures in QueryCursor(grammar_.definitions).matches(tree.root_node):
        names = captures.get("name")
        kinds = [k for k in captures if k != "name" and not k.startswith("_")]
        if not names or not kinds:
            continue
        kind, node = kinds[0], captures[kinds[0]][0]
        for name_node in names:
            if name_node.start_byte in definition_names:
                continue  # an earlier pattern already named it (``const f = () => 1``: a function)
            if kind == "function" and language == "python":
                kind = _python_function_kind(node)
            text = name_node.text.decode("utf-8", "replace")
            entry = (name_node.start_point[0] + 1, kind, _enclosing_class(node, grammar_))
            if entry not in index.definitions.setdefault(text, []):
                index.definitions[text].append(entry)
            definition_names.add(name_node.start_byte)
    # Two queries run in C are much faster than asking each identifier's parent what it is.
    calls = {node.start_byte for node in QueryCursor(grammar_.calls).captures(tree.root_node).get("call", [])}
    for node in QueryCursor(grammar_.identifiers).captures(tree.root_node).get("id", []):
        start = node.start_byte
        if start in definition_names:
            continue
        kind = "call" if start in calls else "reference"
        index.uses.setdefault(node.text.decode("utf-8", "replace"), []).append((node.start_point[0] + 1, kind))
    return index


def index_file(path: Path) -> FileIndex | None:
    """The index of one source file, from the cache when its (path, mtime, size) is unchanged.

    Args:
        path: absolute path of a file.

    Returns:
        The ``FileIndex``, or ``None`` for a file of no known language (or whose grammar is not
        installed), larger than ``MAX_PARSE_BYTES``, or unreadable.
    """
    language = SUFFIX_LANGUAGE.get(path.suffix.lower())
    if language is None or grammar(language) is None:
        return None
    try:
        stat = path.stat()
    except OSError:
        return None
    if stat.st_size > MAX_PARSE_BYTES:
        return None
    key = (stat.st_mtime_ns, stat.st_size)
    name = str(path)
    with _lock:
        cached = _cache.get(name)
        if cached is not None and cached[0] == key:
            _cache.move_to_end(name)
            return cached[1]
    try:
        source = path.read_bytes()
    except OSError:
        return None
    index = _index_source(source, language)
    with _lock:
        _cache[name] = (key, index)
        _cache.move_to_end(name)
        while len(_cache) > MAX_CACHED_FILES:
            _cache.popitem(last=False)
    return index


_index_file = index_file  # the earlier private name


_NAME = re.compile(r"^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$")


def find_symbol(root: Path, name: str, kind: SymbolKind = "any") -> list[SymbolHit]:
    """Find definitions and/or references of ``name`` in the source files of a repository (see ``plugins.coding.languages``).

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
    for path, rel in repository_files(root):
        index = index_file(path)
        if index is None:
            continue

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
        return f"{what} of {name!r} in the source files (Python, Java, JavaScript, TypeScript, Go); check the spelling, or try search_code with a pattern"
    width = max(len(h.kind) for h in hits[:limit])
    lines = [f"{h.path}:{h.line}: {h.kind:<{width}}  {shorten(h.text, 160)}" for h in hits[:limit]]
    definitions = sum(h.is_definition for h in hits)
    summary = f"[{definitions} definitions, {len(hits) - definitions} references]"
    if len(hits) > limit:
        summary = f"[showing {limit} of {len(hits)} hits: {definitions} definitions, {len(hits) - definitions} references; use kind='definition' or a qualified name such as Class.member to narrow]"
    return "\n".join([*lines, summary])
