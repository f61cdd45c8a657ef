"""A repository map: the most important definitions of a repository, ranked and cut to a token budget.

The idea is Aider's repository map (https://aider.chat/docs/repomap.html): tree-sitter finds
each file's definitions and the identifiers it uses (``plugins.coding.symbols``); a file that
uses a name defined in another file gets a weighted edge to it; PageRank over that graph
(``pagerank``, networkx's power iteration on NumPy arrays) ranks the files; each file's rank flows along its out-edges to the
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


@dataclass
class _RankingInputs:
    """What ranking needs of one repository state, whatever the focus: made once per set of file
    indexes (``_inputs``) and reused by every map of that state.

    Attributes:
        files: relative paths, the graph's nodes in order.
        definers: ``{name: files defining it as a kind in MAP_KINDS}``.
        source, target, name_id, definition_id, weight: one entry per (using file, defining
            file, name): its weight before mentions (the module docstring's ``w``); arrays.
        names: the names of ``name_id``; definitions: the ``(file, name)`` of ``definition_id``.
        rows: every definition of a kind in ``MAP_KINDS``, in the order of the indexes:
            ``(file, name, line, kind)``; ``row_*`` arrays hold, for each, its definition id (or
            -1), file index, the file's definition count, the name's entries in the file, whether
            the file is a test, whether it is a special method, its line, its name's position in
            ``row_names`` and its file's position in path order.
        row_names: the names of ``rows``; row_subwords: each one's ``focus.subwords``.
    """

    files: list[str]
    definers: dict[str, set[str]]
    source: object
    target: object
    name_id: object
    definition_id: object
    weight: object
    names: list[str]
    definitions: list[tuple[str, str]]
    rows: list[tuple[str, str, int, str]]
    row_definition: object
    row_file: object
    row_count: object
    row_entries: object
    row_test: object
    row_dunder: object
    row_line: object
    row_name: object
    row_path_order: object
    row_names: list[str]
    row_subwords: list[frozenset[str]]


#: The last repository state's ranking inputs, reused while none of its file indexes changed (the
#: indexes are cached per file and per content, so an unchanged file keeps the same ``FileIndex`` object).
_last_inputs: tuple[tuple[tuple[str, FileIndex], ...], _RankingInputs] | None = None


def _inputs(indexes: dict[str, FileIndex]) -> _RankingInputs:
    """The ranking inputs of ``indexes`` (``_RankingInputs``), from the last call when they are the same objects."""
    global _last_inputs
    import numpy as np

    identity = tuple(indexes.items())
    cached = _last_inputs
    if cached is not None and len(cached[0]) == len(identity) and all(
        a[0] == b[0] and a[1] is b[1] for a, b in zip(cached[0], identity, strict=True)
    ):
        return cached[1]
    files = list(indexes)
    position = {rel: i for i, rel in enumerate(files)}
    definers: dict[str, set[str]] = defaultdict(set)
    type_names: set[str] = set()
    for rel, index in indexes.items():
        for name, entries in index.definitions.items():
            kinds = {kind for _line, kind, _owner in entries}
            if kinds & MAP_KINDS:
                definers[name].add(rel)
            if kinds & TYPE_KINDS:
                type_names.add(name)
    name_ids: dict[str, int] = {}
    definition_ids: dict[tuple[str, str], int] = {}
    source, target, name_id, definition_id, weight = [], [], [], [], []
    for rel, index in indexes.items():
        here = position[rel]
        for name, uses in index.uses.items():
            targets = definers.get(name)
            if not targets:
                continue
            # Calls, and any use of a type's name, count; a bare ``console`` is most often a
            # local variable that merely shares a method's name.
            count = len(uses) if name in type_names else sum(1 for _line, kind in uses if kind == "call")
            if not count:
                continue
            w = math.sqrt(count) * _base_weight(name, len(targets))
            nid = name_ids.setdefault(name, len(name_ids))
            for defining in sorted(targets, key=position.__getitem__):
                if defining != rel:  # a file using its own names says nothing about their importance
                    source.append(here)
                    target.append(position[defining])
                    name_id.append(nid)
                    definition_id.append(definition_ids.setdefault((defining, name), len(definition_ids)))
                    weight.append(w)
    rows: list[tuple[str, str, int, str]] = []
    columns: list[tuple[int, int, int, int, bool, bool, int, int]] = []
    row_names: dict[str, int] = {}
    for rel, index in indexes.items():
        count = sum(len(entries) for entries in index.definitions.values()) or 1
        test = is_test_file(rel)
        here = position[rel]
        for name, entries in index.definitions.items():
            shown = [e for e in entries if e[1] in MAP_KINDS]
            if not shown:
                continue
            dunder = name.startswith("__") and name.endswith("__") and name not in _CONSTRUCTORS
            did = definition_ids.get((rel, name), -1)
            nid = row_names.setdefault(name, len(row_names))
            for line, kind, _container in shown:
                rows.append((rel, name, line, kind))
                columns.append((did, here, count, len(shown), test, dunder, line, nid))
    path_order = np.empty(len(files), dtype=np.int64)
    path_order[np.argsort(np.array(files, dtype=object), kind="stable")] = np.arange(len(files))
    table = np.array(columns, dtype=np.int64).reshape(-1, 8)
    made = _RankingInputs(
        files=files,
        definers=dict(definers),
        source=np.array(source, dtype=np.int64),
        target=np.array(target, dtype=np.int64),
        name_id=np.array(name_id, dtype=np.int64),
        definition_id=np.array(definition_id, dtype=np.int64),
        weight=np.array(weight, dtype=float),
        names=list(name_ids),
        definitions=list(definition_ids),
        rows=rows,
        row_definition=table[:, 0],
        row_file=table[:, 1],
        row_count=table[:, 2].astype(float),
        row_entries=table[:, 3].astype(float),
        row_test=table[:, 4].astype(bool),
        row_dunder=table[:, 5].astype(bool),
        row_line=table[:, 6],
        row_name=table[:, 7],
        row_path_order=path_order[table[:, 1]],
        row_names=list(row_names),
        row_subwords=[frozenset(subwords(name)) for name in row_names],
    )
    _last_inputs = (identity, made)
    return made


def _definers(indexes: dict[str, FileIndex]) -> dict[str, set[str]]:
    """``{name: files defining it as a kind in MAP_KINDS}``."""
    return _inputs(indexes).definers


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


def pagerank(size: int, source, target, weight, personalization=None, alpha: float = 0.85, max_iter: int = 100, tol: float = 1.0e-6):
    """PageRank of a weighted directed graph of ``size`` nodes given as edge arrays, as ``networkx.pagerank`` computes it
    (its SciPy power iteration: rows normalised, dangling nodes restart by the personalization).

    Args:
        size: number of nodes (0 .. size - 1).
        source, target, weight: the edges as NumPy arrays (parallel edges add up).
        personalization: the restart distribution (an array of ``size``, any positive scale), or None for uniform.

    Returns:
        A NumPy array of ``size`` ranks summing to 1, or None when the iteration did not converge in ``max_iter``.
    """
    import numpy as np
    from scipy import sparse

    if size == 0:
        return np.zeros(0)
    matrix = sparse.csr_array((weight, (source, target)), shape=(size, size))
    out = np.asarray(matrix.sum(axis=1)).ravel()
    scale = np.zeros(size)
    scale[out != 0] = 1.0 / out[out != 0]
    matrix = (sparse.dia_array((scale[np.newaxis, :], 0), shape=(size, size)).tocsr() @ matrix).tocsr()
    x = np.repeat(1.0 / size, size)
    p = np.repeat(1.0 / size, size) if personalization is None else np.asarray(personalization, dtype=float) / np.sum(personalization)
    dangling = np.where(out == 0)[0]
    for _ in range(max_iter):
        last = x
        x = alpha * (x @ matrix + sum(x[dangling]) * p) + (1 - alpha) * p
        if np.absolute(x - last).sum() < size * tol:
            return x
    return None


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
        The focus-independent part (the graph's edges, ``_RankingInputs``) is made once per
        repository state.
    """
    import numpy as np

    focus = focus or TaskFocus()
    inputs = _inputs(indexes)
    definers = inputs.definers
    boost = {n: MENTION_BOOST if len(definers.get(n, ())) <= FOCUS_DEFINERS else GENERIC_MENTION_BOOST for n in focus.names}
    in_focus = focus_files(focus, definers, indexes) & set(indexes)
    weight = inputs.weight
    boosted = [(i, boost[n]) for i, n in enumerate(inputs.names) if n in boost] if boost else []
    if boosted:
        weight = weight.copy()
        for nid, factor in boosted:
            weight[inputs.name_id == nid] *= factor
    size = len(inputs.files)
    personalization = None
    if in_focus:
        base = 1.0 / max(1, size)
        personalization = np.array([base + (MENTION_BOOST * base * size / len(in_focus) if rel in in_focus else 0.0) for rel in inputs.files])
    file_rank = pagerank(size, inputs.source, inputs.target, weight, personalization)
    if file_rank is None:
        file_rank = np.repeat(1.0 / max(1, size), size)
    # The file's rank flows out along its edges in proportion to each name's weight.
    total = np.bincount(inputs.source, weights=weight, minlength=size)
    share = file_rank[inputs.source] * weight / np.where(total[inputs.source] > 0, total[inputs.source], 1.0)
    definition_rank = np.bincount(inputs.definition_id, weights=share, minlength=len(inputs.definitions) + 1)
    definition_rank[-1] = 0.0  # row_definition -1: nobody references it
    focus_file = np.zeros(size + 1, dtype=bool)
    focus_file[[i for i, rel in enumerate(inputs.files) if rel in in_focus]] = True
    name_boost = np.ones(len(inputs.row_names))
    word_boost = np.ones(len(inputs.row_names))
    for i, name in enumerate(inputs.row_names):
        if name in boost:
            name_boost[i] = boost[name]
        if focus.words and not focus.words.isdisjoint(inputs.row_subwords[i]):
            word_boost[i] = WORD_BOOST
    rank = definition_rank[inputs.row_definition]
    rank = rank + 0.01 * file_rank[inputs.row_file] / inputs.row_count  # keeps unreferenced definitions in order of their file
    rank = rank * (np.where(inputs.row_test & ~focus_file[inputs.row_file], TEST_FILE_WEIGHT, 1.0) * name_boost[inputs.row_name])
    rank = np.where(inputs.row_dunder, rank * DUNDER_WEIGHT, rank)
    rank = (rank * word_boost[inputs.row_name]) / inputs.row_entries
    order = np.lexsort((inputs.row_line, inputs.row_path_order, -rank))
    rows, ranks = inputs.rows, rank.tolist()
    ranked = [RankedDefinition(*rows[i], ranks[i]) for i in order.tolist()]
    # The focus files come first: the model is about to read them anyway; a few lines each, so
    # that one large file cannot fill the map.
    tier: dict[int, int] = {}
    listed: dict[str, int] = defaultdict(int)
    if in_focus:
        for position, d in enumerate(ranked):
            if d.path not in in_focus:
                continue
            if d.name in boost:
                tier[position] = 0
            elif listed[d.path] < FOCUS_FILE_LINES:
                tier[position] = 1
                listed[d.path] += 1
        order = sorted(range(len(ranked)), key=lambda i: tier.get(i, 2))  # stable: rank order within each tier
        ranked = [ranked[i] for i in order]
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


#: ``{relative path: (its FileIndex, excluded_reason)}`` of the last indexes seen (the same object: the same lines).
_reasons: dict[str, tuple[FileIndex, str | None]] = {}


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
        known = _reasons.get(rel)
        if known is not None and known[0] is index:
            reason = known[1]
        else:
            reason = excluded_reason(rel, index.lines)
            _reasons[rel] = (index, reason)
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
