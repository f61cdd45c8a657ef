"""A repository map: the most important definitions of a repository, ranked and cut to a token budget.

The idea is Aider's repository map (https://aider.chat/docs/repomap.html): tree-sitter finds
each file's definitions and the identifiers it uses (``plugins.coding.symbols``); a file that
uses a name defined in another file gets a weighted edge to it; PageRank over that graph
(``networkx.pagerank``) ranks the files; each file's rank flows along its out-edges to the
definitions it references; the top definitions are shown, grouped by file, until the budget
is spent.

Edge weight, for file ``r`` using name ``n`` (``k`` times: calls, or any use when ``n`` names a
class or other type) defined in another file ``d``::

    w(r -> d, n) = sqrt(k) * m(n)
    m(n) = b(n)  when the task names n as code (``plugins.coding.focus``)
         * 0.1   when n is private (starts with ``_``) or defined in more than 5 files (``get``, ``run``)
    b(n) = 10 when n is defined in at most 3 files, else 2

PageRank's personalization (its restart distribution) puts extra weight on the *focus files*:
those the task names (path, file name, module path or stem, e.g. ``tableutils``) and those that
define a name it names in at most 3 files; so what they use ranks higher. A definition's rank is
then multiplied by b(n) when the task names it, by 2 when a sub-word of its name is a task word
(``attr`` for ``do_attr``), by 0.1 in a test file that is no focus file, and by 0.3 for a special
method other than a constructor (``__repr__``). The map lists the
named definitions of the focus files first, then up to ``FOCUS_FILE_LINES`` more of each focus
file, then the rest by rank.

Files that are not the project's own code (``focus.excluded_reason``: vendored, test data,
generated) are left out of the graph and the map.

Tokens are estimated as ``ceil(characters / 4)``, the usual rule of thumb for English text and
code with BPE tokenizers (OpenAI: "one token is roughly 4 characters"); no tokenizer is loaded.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import networkx as nx

from plugins.coding.focus import TaskFocus, excluded_reason, is_test_file, subwords, task_focus
from plugins.coding.symbols import FileIndex, _walk_order, repository_indexes

#: Default budget of the map given at the start of an episode, in (estimated) tokens.
DEFAULT_MAP_TOKENS = 1024
#: Longest source line shown in the map, in characters.
MAX_MAP_LINE_CHARS = 100
#: A name defined in more files than this is generic; its edges count a tenth.
GENERIC_NAME_FILES = 5
#: Extra weight of a name or file the task mentions.
MENTION_BOOST = 10.0
#: Extra weight of a named definition that more than ``FOCUS_DEFINERS`` files define (``format``).
GENERIC_MENTION_BOOST = 2.0
#: A named definition defined in at most this many files makes them focus files.
FOCUS_DEFINERS = 3
#: Extra weight of a definition whose name has a sub-word the task uses.
WORD_BOOST = 2.0
#: Weight of a definition in a test file that is not a focus file.
TEST_FILE_WEIGHT = 0.1
#: Weight of special methods other than constructors (``__repr__``, ``__len__``): they say little about an API.
DUNDER_WEIGHT = 0.3
_CONSTRUCTORS = frozenset({"__init__", "__new__", "__call__"})
#: Definitions of each focus file listed ahead of the general ranking (after its named ones).
FOCUS_FILE_LINES = 12
#: Definition kinds the map shows: the API of a file. Attributes set in ``__init__``, fields and
#: enum constants are left out: short common names (``name``, ``red``) would crowd the map.
TYPE_KINDS = frozenset({"class", "interface", "enum", "record", "annotation", "type"})
MAP_KINDS = frozenset(
    {"class", "interface", "enum", "record", "annotation", "type", "function", "method", "constructor", "variable", "constant"}
)


def estimate_tokens(text: str) -> int:
    """Estimated token count of ``text``: ``ceil(len(text) / 4)`` (characters per BPE token, rule of thumb)."""
    return -(-len(text) // 4)


@dataclass(frozen=True)
class RankedDefinition:
    """One definition in the ranking.

    Attributes:
        path: file path relative to the repository root (POSIX).
        name: the defined identifier.
        line: 1-based line of the definition.
        kind: ``class``, ``function``, ``method`` ... (see ``symbols.SymbolHit``).
        rank: its share of PageRank (sums to about 1 over all definitions that are referenced).
    """

    path: str
    name: str
    line: int
    kind: str
    rank: float


@dataclass
class RepoMap:
    """A rendered repository map.

    Attributes:
        text: the map: ``path:`` lines, each followed by its chosen definitions' source lines
            as ``  <line>│<source>``; empty when the repository has no parsable source.
        tokens: ``estimate_tokens(text)``; at most the budget asked for.
        files_indexed: source files parsed (or found in the cache).
        definitions_total: definitions found in them.
        shown: the definitions in the map, best first.
        ranking: every definition, best first (for tests and tools that want more).
        mentioned_files: the focus files: those the focus text names and those defining a
            name it names (in at most ``FOCUS_DEFINERS`` files).
        mentioned_names: defined identifiers the focus text names as code.
        excluded: ``{path: reason}`` of source files left out (``focus.excluded_reason``).
    """

    text: str
    tokens: int
    files_indexed: int
    definitions_total: int
    shown: list[RankedDefinition] = field(default_factory=list)
    ranking: list[RankedDefinition] = field(default_factory=list)
    mentioned_files: list[str] = field(default_factory=list)
    mentioned_names: list[str] = field(default_factory=list)
    excluded: dict[str, str] = field(default_factory=dict)


def _base_weight(name: str, definers: int) -> float:
    return 0.1 if name.startswith("_") or definers > GENERIC_NAME_FILES else 1.0


#: The last repository's reference edges, reused while none of its file indexes changed (the
#: indexes are cached per file, so an unchanged file keeps the same ``FileIndex`` object).
_last_edges: tuple[tuple[tuple[str, FileIndex], ...], dict[tuple[str, str], dict[str, float]]] | None = None


def _reference_edges(indexes: dict[str, FileIndex]) -> dict[tuple[str, str], dict[str, float]]:
    """``{(using file, defining file): {name: weight before mentions}}`` for a repository."""
    global _last_edges
    identity = tuple(indexes.items())
    cached = _last_edges
    if cached is not None and len(cached[0]) == len(identity) and all(
        a[0] == b[0] and a[1] is b[1] for a, b in zip(cached[0], identity, strict=True)
    ):
        return cached[1]
    definers: dict[str, set[str]] = defaultdict(set)
    type_names: set[str] = set()
    for rel, index in indexes.items():
        for name, entries in index.definitions.items():
            kinds = {kind for _line, kind, _owner in entries}
            if kinds & MAP_KINDS:
                definers[name].add(rel)
            if kinds & TYPE_KINDS:
                type_names.add(name)
    edges: dict[tuple[str, str], dict[str, float]] = defaultdict(dict)
    for rel, index in indexes.items():
        for name, uses in index.uses.items():
            targets = definers.get(name)
            if not targets:
                continue
            # Calls, and any use of a type's name, count; a bare ``console`` is most often a
            # local variable that merely shares a method's name.
            count = len(uses) if name in type_names else sum(1 for _line, kind in uses if kind == "call")
            if not count:
                continue
            weight = math.sqrt(count) * _base_weight(name, len(targets))
            for target in targets:
                if target != rel:  # a file using its own names says nothing about their importance
                    edges[(rel, target)][name] = weight
    _last_edges = (identity, dict(edges))
    return _last_edges[1]


def _definers(indexes: dict[str, FileIndex]) -> dict[str, set[str]]:
    """``{name: files defining it as a kind in MAP_KINDS}``."""
    out: dict[str, set[str]] = defaultdict(set)
    for rel, index in indexes.items():
        for name, entries in index.definitions.items():
            if any(kind in MAP_KINDS for _line, kind, _owner in entries):
                out[name].add(rel)
    return out


def focus_files(focus: TaskFocus, definers: dict[str, set[str]], indexes: dict[str, FileIndex]) -> set[str]:
    """The files named by ``focus`` and those defining a name it names in at most ``FOCUS_DEFINERS`` files.

    A name given as a member (``Table.from_dict``) counts only where that class defines it, when
    some file does.
    """
    files = set(focus.files)
    for name in focus.names:
        where = definers.get(name, set())
        owners = {owner for owner, member in focus.members if member == name}
        inside = {rel for rel in where if any(container in owners for _l, _k, container in indexes[rel].definitions.get(name, ()))}
        where = inside or where
        if len(where) <= FOCUS_DEFINERS:
            files |= where
    return files


def rank_definitions(indexes: dict[str, FileIndex], focus: TaskFocus | None = None) -> list[RankedDefinition]:
    """Rank every definition of a repository by PageRank over its file reference graph, toward ``focus``.

    Args:
        indexes: ``{relative path: FileIndex}`` of the repository's source files.
        focus: what the task points at (``focus.task_focus``); None for the repository as a whole.

    Returns:
        Every definition of a kind in ``MAP_KINDS``, in the order the map lists them: the named
        definitions of the focus files (``focus_files``), then up to ``FOCUS_FILE_LINES`` more of
        each focus file, then the rest; each part highest rank first (ties: path, then line).
        Definitions nobody references get a small rank from their own file's PageRank, so that a
        file's API still appears when nothing calls it. The weights are in the module docstring.
    """
    focus = focus or TaskFocus()
    definers = _definers(indexes)
    boost = {n: MENTION_BOOST if len(definers.get(n, ())) <= FOCUS_DEFINERS else GENERIC_MENTION_BOOST for n in focus.names}
    in_focus = focus_files(focus, definers, indexes) & set(indexes)
    edge_names: dict[tuple[str, str], dict[str, float]] = {}
    for edge, names in _reference_edges(indexes).items():
        if boost and not boost.keys().isdisjoint(names):
            names = {n: w * boost.get(n, 1.0) for n, w in names.items()}
        edge_names[edge] = names
    graph = nx.DiGraph()
    graph.add_nodes_from(indexes)
    graph.add_weighted_edges_from((source, target, sum(names.values())) for (source, target), names in edge_names.items())
    personalization = None
    if in_focus:
        base = 1.0 / max(1, len(indexes))
        personalization = {rel: base + (MENTION_BOOST * base * len(indexes) / len(in_focus) if rel in in_focus else 0.0) for rel in indexes}
    try:
        file_rank = nx.pagerank(graph, weight="weight", personalization=personalization)
    except nx.PowerIterationFailedConvergence:
        file_rank = {rel: 1.0 / len(indexes) for rel in indexes}
    definition_rank: dict[tuple[str, str], float] = defaultdict(float)
    for source in graph.nodes:
        out = graph.out_edges(source, data="weight")
        total = sum(weight for _s, _t, weight in out)
        for _s, target, _weight in out:  # the file's rank flows out in proportion to each name's weight
            for name, share in edge_names[(source, target)].items():
                definition_rank[(target, name)] += file_rank[source] * share / total
    ranked: list[RankedDefinition] = []
    for rel, index in indexes.items():
        count = sum(len(entries) for entries in index.definitions.values()) or 1
        weight = TEST_FILE_WEIGHT if rel not in in_focus and is_test_file(rel) else 1.0
        for name, entries in index.definitions.items():
            rank = definition_rank.get((rel, name), 0.0)
            rank += 0.01 * file_rank.get(rel, 0.0) / count  # keeps unreferenced definitions in order of their file
            rank *= weight * boost.get(name, 1.0)
            if name.startswith("__") and name.endswith("__") and name not in _CONSTRUCTORS:
                rank *= DUNDER_WEIGHT
            if focus.words and not focus.words.isdisjoint(subwords(name)):
                rank *= WORD_BOOST
            entries = [e for e in entries if e[1] in MAP_KINDS]
            for line, kind, _container in entries:
                ranked.append(RankedDefinition(rel, name, line, kind, rank / len(entries)))
    ranked.sort(key=lambda d: (-d.rank, d.path, d.line))
    # The focus files come first: the model is about to read them anyway; a few lines each, so
    # that one large file cannot fill the map.
    tier: dict[RankedDefinition, int] = {}
    listed: dict[str, int] = defaultdict(int)
    for d in ranked:
        if d.path not in in_focus:
            continue
        if d.name in boost:
            tier[d] = 0
        elif listed[d.path] < FOCUS_FILE_LINES:
            tier[d] = 1
            listed[d.path] += 1
    ranked.sort(key=lambda d: tier.get(d, 2))  # stable: rank order within each tier
    return ranked


def _source_line(index: FileIndex, line: int) -> str:
    text = index.lines[line - 1].rstrip().replace("\t", "    ") if 0 < line <= len(index.lines) else ""
    return text if len(text) <= MAX_MAP_LINE_CHARS else text[:MAX_MAP_LINE_CHARS] + "…"


def render(ranking: list[RankedDefinition], indexes: dict[str, FileIndex], max_tokens: int) -> tuple[str, list[RankedDefinition]]:
    """Render the best definitions that fit in ``max_tokens`` (estimated), grouped by file.

    Definitions are taken in rank order; one that does not fit is skipped and smaller ones
    after it may still fit. Files appear in the order of their best definition, definitions
    within a file in line order.

    Returns:
        ``(text, shown)``: the map and the definitions in it, best first.
    """
    budget_chars = max_tokens * 4
    chosen: dict[str, list[RankedDefinition]] = {}
    used = 0  # characters of the text so far, newlines included
    shown: list[RankedDefinition] = []
    seen_lines: set[tuple[str, int]] = set()
    for definition in ranking:
        if (definition.path, definition.line) in seen_lines:
            continue  # two names on one line (a, b = ...) are one entry
        index = indexes[definition.path]
        cost = len(f"{definition.line:>5}│{_source_line(index, definition.line)}") + 1
        if definition.path not in chosen:
            cost += len(definition.path) + 2  # "path:" and its newline
        if used + cost - 1 > budget_chars:  # the last line has no newline
            if budget_chars - used < 24:
                break
            continue
        used += cost
        chosen.setdefault(definition.path, []).append(definition)
        seen_lines.add((definition.path, definition.line))
        shown.append(definition)
    lines: list[str] = []
    for path, definitions in chosen.items():
        lines.append(f"{path}:")
        lines += [f"{d.line:>5}│{_source_line(indexes[path], d.line)}" for d in sorted(definitions, key=lambda d: d.line)]
    return "\n".join(lines), shown


def index_repository(root: Path) -> tuple[dict[str, FileIndex], dict[str, str]]:
    """Index the project's own source files (``.gitignore`` honoured), from the per-file cache when unchanged.

    Returns:
        ``({relative POSIX path: FileIndex}`` in path order, ``{path: reason}`` of the source
        files left out as not the project's own code: ``focus.excluded_reason``).
    """
    indexes: dict[str, FileIndex] = {}
    excluded: dict[str, str] = {}
    by_path: dict[str, str] = {}

    def vendored(rel: str) -> bool:  # by path first: a vendored tree is never parsed
        reason = excluded_reason(rel, [])
        if reason is not None:
            by_path[rel] = reason
        return reason is not None

    for _path, rel, index in repository_indexes(root, skip=vendored):
        reason = excluded_reason(rel, index.lines)
        if reason is None:
            indexes[rel] = index
        else:
            excluded[rel] = reason
    excluded.update(by_path)
    return indexes, dict(sorted(excluded.items(), key=lambda item: _walk_order(item[0])))


def build_repo_map(root: Path, focus: str = "", max_tokens: int = DEFAULT_MAP_TOKENS) -> RepoMap:
    """Build the map of a repository, biased toward what ``focus`` mentions.

    Args:
        root: repository root (absolute).
        focus: free text (the task, or names the model asks about): the files and defined
            identifiers it mentions rank higher.
        max_tokens: budget of the rendered map, in estimated tokens (``estimate_tokens``); at
            least 1.

    Returns:
        ``RepoMap`` whose ``tokens`` is at most ``max_tokens``.

    Raises:
        ValueError: ``max_tokens`` is below 1.
    """
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
    indexes, excluded = index_repository(root)
    defined = {name for index in indexes.values() for name in index.definitions}
    wanted = task_focus(focus, indexes, defined)
    ranking = rank_definitions(indexes, wanted)
    text, shown = render(ranking, indexes, max_tokens)
    return RepoMap(
        text=text,
        tokens=estimate_tokens(text),
        files_indexed=len(indexes),
        definitions_total=len(ranking),
        shown=shown,
        ranking=ranking,
        mentioned_files=sorted(focus_files(wanted, _definers(indexes), indexes) & set(indexes)),
        mentioned_names=sorted(wanted.names),
        excluded=excluded,
    )
