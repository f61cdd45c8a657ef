"""Finding definitions and references of a name in source files with tree-sitter.

Languages and their queries are in ``plugins.coding.languages`` (Python, Java, JavaScript,
TypeScript, Go). Each file is indexed once per content: the index is kept in the process (by
path and (mtime, size), and by content) and in the code index cache on disk
(``plugins.coding.code_cache``, keyed by a hash of the content), so another call, run, process
or repository holding the same file reads it instead of parsing it again (``index_file``,
``repository_indexes``). The repository's file list is kept the same way and refreshed by
``stat`` (``repository_files``). The repository map (``plugins.coding.repomap``) reads the same
indexes.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from core.api import ToolError
from plugins.coding import code_cache
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
_lock = threading.Lock()
#: ``{absolute path: ((mtime_ns, size) or None when racy, content key, FileIndex or None)}``, least recently used first.
_cache: OrderedDict[str, tuple[tuple[int, int] | None, str, FileIndex | None]] = OrderedDict()  # str keys: Path hashing is slow
#: ``{content key: FileIndex}``: one object for the same content anywhere (another repository, a copy).
_by_key: OrderedDict[str, FileIndex] = OrderedDict()
#: Per repository root: its file list and the stamps that tell whether it is still right.
_trees: dict[str, _Tree] = {}
#: A file modified this recently (nanoseconds) may change again within its mtime's granularity
#: without a new stamp (git's "racy" entries): its stamp is not trusted, its content is hashed.
RACY_NS = 2_000_000_000


@dataclass
class _Tree:
    """One repository's file list (``(absolute, relative)`` pairs, walk order), the stamps of its
    folders and existing ``.gitignore`` files, and each file's last known ``(stamp, content key)``."""

    stamps: dict[str, tuple[int, int]]
    files: list[tuple[Path, str]]
    known: dict[str, tuple[tuple[int, int] | None, str]] = field(default_factory=dict)
    dirty: bool = False


def _stamp(path: str) -> tuple[int, int]:
    try:
        stat = os.stat(path)
    except OSError:
        return (-1, -1)
    return (stat.st_mtime_ns, stat.st_size)


def _walk_order(rel: str) -> tuple[tuple[str, ...], str]:
    """The order of ``search.iter_files``: a folder's files (by name) before its sub-folders (by name)."""
    *folders, name = rel.split("/")
    return (tuple(folders), name)


def _walk(root: Path, start: Path, stamps: dict[str, tuple[int, int]]) -> list[tuple[Path, str]]:
    """The source files under ``start`` (inside ``root``), stamping each folder entered and its ``.gitignore``."""
    visited: list[Path] = []
    files = [(path, path.relative_to(root).as_posix()) for path in iter_files(root, start, suffixes=SOURCE_SUFFIXES, visited=visited)]
    for folder in visited:  # stamped after the walk: a change during it shows up next time
        name = str(folder)
        stamps[name] = _stamp(name)
        ignore = os.path.join(name, ".gitignore")
        stamp = _stamp(ignore)
        if stamp[0] != -1:  # a .gitignore made or removed later changes the folder's stamp
            stamps[ignore] = stamp
    return files


def _load_tree(root: Path) -> _Tree | None:
    """The tree record a previous process stored for ``root`` (``code_cache.get_tree``), or None when absent or malformed."""
    record = code_cache.get_tree(str(root))
    try:
        assert isinstance(record, dict) and record.get("v") == 1
        stamps = {str(p): (int(m), int(s)) for p, m, s in record["stamps"]}
        files: list[tuple[Path, str]] = []
        known: dict[str, tuple[tuple[int, int] | None, str]] = {}
        base = str(root)
        for rel, mtime, size, key in record["files"]:
            if not isinstance(rel, str) or not isinstance(key, str) or rel.startswith("/") or ".." in rel.split("/"):
                return None
            absolute = os.path.join(base, rel)
            files.append((Path(absolute), rel))
            if key:
                known[absolute] = ((int(mtime), int(size)) if mtime is not None else None, key)
    except (AssertionError, KeyError, TypeError, ValueError):
        return None
    return _Tree(stamps, files, known)


def _save_tree(root: Path, tree: _Tree) -> None:
    files = []
    for path, rel in tree.files:  # every file, indexed or not (a vendored one is listed, never read)
        stamp, key = tree.known.get(str(path), (None, ""))
        files.append([rel, *(stamp or (None, None)), key])
    code_cache.put_tree(str(root), {"v": 1, "stamps": [[p, *s] for p, s in tree.stamps.items()], "files": files})
    tree.dirty = False


def _walked_tree(root: Path) -> _Tree:
    """A new tree state from a walk of the whole of ``root``."""
    stamps: dict[str, tuple[int, int]] = {}
    files = _walk(root, root, stamps)
    exclude = str(root / ".git" / "info" / "exclude")
    stamps[exclude] = _stamp(exclude)
    files.sort(key=lambda pair: _walk_order(pair[1]))
    return _Tree(stamps, files, dirty=True)


def _tree(root: Path) -> _Tree:
    """``root``'s tree state, its file list brought up to date: only the folders whose stamp
    changed (a file added, removed or renamed in them; their ``.gitignore`` edited) are walked
    again, the whole tree only when the root's ignore rules changed or nothing is known."""
    key = str(root)
    tree = _trees.get(key) or _load_tree(root)
    if tree is None:
        tree = _trees[key] = _walked_tree(root)
        return tree
    _trees[key] = tree
    changed = [path for path, stamp in tree.stamps.items() if _stamp(path) != stamp]
    if not changed:
        return tree
    tops = {os.path.dirname(p) if p.endswith("/.gitignore") else p for p in changed}
    if key in tops or any(p.endswith("/.git/info/exclude") for p in changed):  # the root's own rules: walk it all
        fresh = _trees[key] = _walked_tree(root)
        fresh.known = tree.known
        return fresh
    tops = {t for t in tops if not any(t.startswith(other + "/") for other in tops if other != t)}
    files = tree.files
    for top in sorted(tops):
        prefix = top + "/"
        tree.stamps = {p: s for p, s in tree.stamps.items() if p != top and not p.startswith(prefix)}
        files = [pair for pair in files if not str(pair[0]).startswith(prefix)]
        if os.path.isdir(top):
            files += _walk(root, Path(top), tree.stamps)
    files.sort(key=lambda pair: _walk_order(pair[1]))
    tree.files = files
    tree.dirty = True
    return tree


def forget_in_memory() -> None:
    """Drop what this process holds (file indexes, file lists, the cache's open database): the
    state of a new process, which reads the code index cache again (tests, benches)."""
    with _lock:
        _cache.clear()
        _by_key.clear()
        _trees.clear()
    code_cache.forget_connections()


def repository_files(root: Path) -> list[tuple[Path, str]]:
    """The repository's source files (``SOURCE_SUFFIXES``, ``.gitignore`` honoured) as ``(absolute, relative POSIX)`` pairs.

    The list is kept per root, in this process and in the code index cache
    (``plugins.coding.code_cache``) for the next one, and only the folders whose modification
    time (a file added, removed or renamed) or ``.gitignore`` changed are walked again, so a
    look-up in a large repository costs a ``stat`` per folder instead of a walk.
    """
    root = root.resolve()
    with _lock:
        return _tree(root).files


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
    # tree-sitter's captures come in no fixed order across patterns: sorted, the same source
    # always gives the same index (and the same map).
    index.uses = {name: sorted(entries) for name, entries in sorted(index.uses.items())}
    return index


def _to_json(index: FileIndex) -> dict:
    """``index`` as JSON: uses as line numbers, negative for a call (compact, and fast to read back)."""
    uses = {name: [-line if kind == "call" else line for line, kind in entries] for name, entries in index.uses.items()}
    return {"language": index.language, "definitions": index.definitions, "uses": uses, "lines": index.lines}


def _from_json(value: object) -> FileIndex | None:
    """The ``FileIndex`` stored as ``value`` (``_to_json``), or None when it has another shape.

    The shape is checked (the containers, each entry's length, the lines' type); damaged bytes
    are caught before, by zlib's checksum (``code_cache.decode``).
    """
    try:
        assert isinstance(value, dict)
        language, lines = value["language"], value["lines"]
        assert isinstance(language, str) and isinstance(lines, list) and all(type(line) is str for line in lines)
        definitions = {name: [(line, kind, owner) for line, kind, owner in entries] for name, entries in value["definitions"].items()}
        uses = {name: [(-line, "call") if line < 0 else (line, "reference") for line in entries] for name, entries in value["uses"].items()}
    except (AssertionError, AttributeError, KeyError, TypeError, ValueError):
        return None
    return FileIndex(language, definitions, uses, lines)


def _remember(name: str, stamp: tuple[int, int] | None, key: str, index: FileIndex | None) -> None:
    _cache[name] = (stamp, key, index)
    _cache.move_to_end(name)
    while len(_cache) > MAX_CACHED_FILES:
        _cache.popitem(last=False)
    if index is not None:
        _by_key[key] = index
        _by_key.move_to_end(key)
        while len(_by_key) > MAX_CACHED_FILES:
            _by_key.popitem(last=False)


def _index_many(paths: list[str], known: dict[str, tuple[tuple[int, int] | None, str]] | None = None) -> tuple[list[FileIndex | None], bool]:
    """The indexes of ``paths`` (absolute), each from the first place that has it: this process
    (same path and stamp, or same content), the code index cache (same content), or a parse; new
    parses are stored in the cache. ``known`` (a tree's ``{path: (stamp, key)}``) is read and
    updated, so that an unchanged file need not be read to know its key.

    Returns:
        ``(indexes, changed)``: None for a file of no known language (or whose grammar is not
        installed), larger than ``MAX_PARSE_BYTES``, or unreadable; ``changed`` when ``known`` was updated.
    """
    known = {} if known is None else known
    out: list[FileIndex | None] = [None] * len(paths)
    wanted: dict[int, tuple[str, str, tuple[int, int] | None, str, bytes | None]] = {}  # i -> (path, language, stamp, key, source)
    changed = False
    now = time.time_ns()
    for i, name in enumerate(paths):
        dot = name.rfind(".")
        language = SUFFIX_LANGUAGE.get(name[dot:].lower()) if dot > name.rfind("/") else None
        if language is None or grammar(language) is None:
            continue
        try:
            stat = os.stat(name)
        except OSError:
            continue
        if stat.st_size > MAX_PARSE_BYTES:
            continue
        stamp = (stat.st_mtime_ns, stat.st_size)
        trusted = stamp if now - stat.st_mtime_ns > RACY_NS else None
        cached = _cache.get(name)
        if cached is not None and cached[0] == stamp and cached[2] is not None:
            _cache.move_to_end(name)
            out[i] = cached[2]
            if known.get(name) != (trusted, cached[1]):
                known[name], changed = (trusted, cached[1]), True
            continue
        before = known.get(name)
        source = None
        if before is not None and before[0] == stamp:
            key = before[1]
        else:
            try:
                source = Path(name).read_bytes()
            except OSError:
                continue
            key = code_cache.content_key(language, source)
        if known.get(name) != (trusted, key):
            known[name], changed = (trusted, key), True
        index = _by_key.get(key)
        if index is not None:
            _remember(name, trusted, key, index)
            out[i] = index
            continue
        wanted[i] = (name, language, trusted, key, source)
    if not wanted:
        return out, changed
    stored = code_cache.get_many(entry[3] for entry in wanted.values())
    parsed: dict[str, object] = {}
    for i, (name, language, trusted, key, source) in wanted.items():
        index = _from_json(stored[key]) if key in stored else None
        if index is None and key in stored:
            code_cache.drop(key)  # another shape: made again below
        if index is None:
            if source is None:
                try:
                    source = Path(name).read_bytes()
                except OSError:
                    continue
                fresh_key = code_cache.content_key(language, source)
                if fresh_key != key:  # changed since it was stamped
                    key = fresh_key
                    known[name], changed = (None, key), True
            index = _by_key.get(key) or _index_source(source, language)
            parsed[key] = _to_json(index)
        _remember(name, trusted, key, index)
        out[i] = index
    code_cache.put_many(parsed)
    return out, changed


def index_file(path: Path) -> FileIndex | None:
    """The index of one source file: from this process's cache when its (path, mtime, size) is
    unchanged, else from the code index cache when its content was indexed before (in any
    repository, by any process), else parsed (and stored there).

    Args:
        path: absolute path of a file.

    Returns:
        The ``FileIndex``, or ``None`` for a file of no known language (or whose grammar is not
        installed), larger than ``MAX_PARSE_BYTES``, or unreadable.
    """
    with _lock:
        return _index_many([str(path)])[0][0]


def repository_indexes(root: Path, skip: Callable[[str], bool] | None = None) -> list[tuple[Path, str, FileIndex]]:
    """Every indexable source file of the repository with its index: ``(absolute, relative POSIX, FileIndex)``, in walk order.

    ``skip(relative path)`` true leaves a file out unread (a vendored tree is never parsed).

    Costs a ``stat`` per folder and per file when nothing changed; a changed file is read and
    hashed, and parsed only when its content was never indexed (``index_file``). The tree's file
    list and each file's content key are stored in the code index cache for the next process.
    """
    root = root.resolve()
    with _lock:
        tree = _tree(root)
        files = tree.files if skip is None else [pair for pair in tree.files if not skip(pair[1])]
        indexes, changed = _index_many([str(path) for path, _rel in files], tree.known)
        if changed or tree.dirty:
            _save_tree(root, tree)
        return [(path, rel, index) for (path, rel), index in zip(files, indexes, strict=True) if index is not None]


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
    for _path, rel, index in repository_indexes(root):

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
