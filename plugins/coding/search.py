"""Walking a repository's files (honouring ``.gitignore``) and regex search over them.

Everything here only reads the workspace. ``search_code`` uses ripgrep (``rg``, Debian package
``ripgrep``) when it is installed: rg walks and searches a large tree several times faster
than Python can. It is told to follow the same rules as ``iter_files`` (``.gitignore`` files
of the repository only, hidden files included, ``SKIPPED_DIRS`` left out, files over
``MAX_SEARCH_FILE_BYTES`` and binary files skipped, symbolic links not followed). rg runs in
Horizon's own process, not in the sandbox, on files the agent wrote, so it runs inert: no
configuration file (``--no-config``: ``RIPGREP_CONFIG_PATH`` could name a ``.ripgreprc`` in the
workspace), no preprocessor (``--no-pre``) or decompressor (``--no-search-zip``) programs, no
links followed, an empty environment, a time limit. A pattern
that Python accepts but ripgrep's regex engine does not (look-around, back-references) is
searched in Python instead, as is everything when rg is missing or
``HORIZON_SEARCH_BACKEND=python`` is set. Ordering can differ between the two only in which
files come first among equals: rg sorts whole paths, Python lists a folder's files before its
sub-folders.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pathspec

from core.api import ToolError

#: Directories never entered, whether or not a ``.gitignore`` names them.
SKIPPED_DIRS = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".pytest_cache", ".mypy_cache", ".ruff_cache", ".tox", ".venv", "node_modules"}
)
#: Files larger than this many bytes are not searched.
MAX_SEARCH_FILE_BYTES = 1 << 20
#: A file whose first this-many bytes contain a NUL byte is treated as binary.
BINARY_SNIFF_BYTES = 8192
#: Longest matched line shown, in characters.
MAX_LINE_CHARS = 200


def is_binary_bytes(head: bytes) -> bool:
    """Return True when ``head`` (the first bytes of a file) looks binary (contains a NUL byte)."""
    return b"\0" in head[:BINARY_SNIFF_BYTES]


def _load_spec(directory: Path, *, include_info_exclude: bool = False) -> pathspec.PathSpec | None:
    lines: list[str] = []
    sources = [directory / ".gitignore"]
    if include_info_exclude:
        sources.append(directory / ".git" / "info" / "exclude")
    for source in sources:
        try:
            lines += source.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
    return pathspec.GitIgnoreSpec.from_lines(lines) if lines else None


@dataclass
class _Ignores:
    """The ``.gitignore`` specs of a directory and its ancestors up to the repository root."""

    root: Path
    specs: list[tuple[Path, pathspec.PathSpec]] = field(default_factory=list)

    def ignored(self, path: Path, is_dir: bool) -> bool:
        for base, spec in self.specs:
            rel = path.relative_to(base).as_posix()
            if spec.match_file(rel + "/" if is_dir else rel):
                return True
        return False

    def child(self, directory: Path) -> _Ignores:
        spec = _load_spec(directory)
        if spec is None:
            return self
        return _Ignores(self.root, [*self.specs, (directory, spec)])


class _NoIgnores(_Ignores):
    """Ignores nothing (for listing every file of a kind, ignored or not)."""

    def ignored(self, path: Path, is_dir: bool) -> bool:
        return False

    def child(self, directory: Path) -> _Ignores:
        return self


def _ignores_for(root: Path, directory: Path) -> _Ignores:
    ignores = _Ignores(root)
    spec = _load_spec(root, include_info_exclude=True)
    if spec is not None:
        ignores.specs.append((root, spec))
    current = root
    for part in directory.relative_to(root).parts:
        current = current / part
        ignores = ignores.child(current)
    return ignores


def iter_files(
    root: Path,
    start: Path | None = None,
    *,
    suffixes: tuple[str, ...] | None = None,
    gitignore: bool = True,
    visited: list[Path] | None = None,
) -> Iterator[Path]:
    """Yield the files of a repository, in a stable (sorted) order.

    Skips ``.git`` and other tool folders (``SKIPPED_DIRS``), anything matched by the
    ``.gitignore`` files of the root and of each folder on the way (plus ``.git/info/exclude``),
    and symbolic links that leave the repository.

    Args:
        root: the repository root (absolute).
        start: a folder or file inside ``root`` to walk instead of the whole repository; a
            file given here is yielded even if ignored (it was asked for by name).
        suffixes: when given, only files whose name ends with one of these (e.g. ``(".py",)``).
        gitignore: False to include files the ``.gitignore`` files ignore (tool folders are
            still skipped).
        visited: when given, every folder entered is appended to it (so a caller can tell,
            from the folders' modification times, whether a later walk would list the same files).

    Returns:
        An iterator of absolute paths.
    """
    root = root.resolve()
    start = (start or root).resolve()
    if start.is_file():
        if suffixes is None or start.name.endswith(suffixes):
            yield start
        return
    if not start.is_dir():
        return
    yield from _walk(root, start, _ignores_for(root, start) if gitignore else _NoIgnores(root), suffixes, visited)


def _walk(
    root: Path, top: Path, ignores: _Ignores, suffixes: tuple[str, ...] | None, visited: list[Path] | None = None
) -> Iterator[Path]:
    """Depth first, a folder's files before its sub-folders; a stack, not recursion (any depth)."""
    stack: list[tuple[Path, _Ignores]] = [(top, ignores)]
    while stack:
        directory, ignores = stack.pop()
        if visited is not None:
            visited.append(directory)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:  # gone, unreadable, or a path over the system's length limit
            continue
        subdirs: list[Path] = []
        for entry in entries:
            path = Path(entry.path)
            try:
                is_dir = entry.is_dir()
                if entry.is_symlink():
                    target = path.resolve()
                    if target != root and root not in target.parents:
                        continue
                    if is_dir:
                        continue  # never follow directory links: no cycles
            except (OSError, RuntimeError):  # RuntimeError: a link loop (Python 3.11's resolve)
                continue
            if is_dir:
                if entry.name in SKIPPED_DIRS or ignores.ignored(path, True):
                    continue
                subdirs.append(path)
            elif (suffixes is None or entry.name.endswith(suffixes)) and entry.is_file() and not ignores.ignored(path, False):
                yield path
        stack.extend((sub, ignores.child(sub)) for sub in reversed(subdirs))


@dataclass
class SearchMatch:
    """One matching line: ``path`` relative to the root (POSIX), 1-based ``line``, the line's ``text``."""

    path: str
    line: int
    text: str


@dataclass
class SearchResult:
    """Matches of one search; ``truncated`` when more matches exist than were kept."""

    matches: list[SearchMatch]
    truncated: bool
    files_searched: int
    files_skipped: int


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile a Python regular expression, turning ``re.error`` into a ``ToolError``."""
    if not pattern:
        raise ToolError("pattern is empty; give a regular expression such as 'def display_name' or 'getNickname\\(\\)'")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ToolError(
            f"invalid regular expression {pattern!r}: {exc}; escape special characters such as ( ) [ ] . * + ? with a backslash"
        ) from None


def search_code(root: Path, pattern: str, start: Path | None = None, max_results: int = 50) -> SearchResult:
    """Search text files under ``start`` (default: the whole repository) for a regex, line by line.

    Args:
        root: repository root (absolute).
        pattern: a Python regular expression, matched against each line separately.
        start: folder or file to search (absolute, inside ``root``).
        max_results: how many matching lines to keep.

    Returns:
        ``SearchResult`` with matches in path then line order.

    Raises:
        ToolError: the pattern is not a valid regular expression, or ``start`` is neither a
            folder nor a regular file (a FIFO would block the reader forever).
    """
    regex = compile_pattern(pattern)
    root = root.resolve()
    if start is not None:
        try:
            mode = os.stat(start).st_mode
        except OSError as exc:
            raise ToolError(f"{start.name!r} cannot be searched ({exc.strerror})") from None
        if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
            raise ToolError(f"{start.name!r} is not a regular file or a folder (a FIFO, socket or device) and cannot be searched")
    rg = ripgrep()
    if rg is not None:
        found = _search_with_ripgrep(rg, root, pattern, start, max_results)
        if found is not None:
            return found
    matches: list[SearchMatch] = []
    searched = skipped = 0
    # Pre-filter: with MULTILINE anchors, a pattern that matches some line matches the whole
    # text too; \A, \Z and look-behind can tell a line from the text, so they get no pre-filter.
    exact = any(token in pattern for token in ("\\A", "\\Z", "(?<"))
    whole_text = re.compile(".*" if exact else regex.pattern, regex.flags | re.MULTILINE)
    for path in iter_files(root, start):
        try:
            if path.stat().st_size > MAX_SEARCH_FILE_BYTES:
                skipped += 1
                continue
            data = path.read_bytes()
        except OSError:
            skipped += 1
            continue
        if is_binary_bytes(data):
            skipped += 1
            continue
        searched += 1
        text = data.decode("utf-8", errors="replace")
        if not whole_text.search(text):
            continue  # a line that matches is a match in the whole text too (MULTILINE anchors)
        rel = path.relative_to(root).as_posix()
        for number, line in enumerate(text.splitlines(), start=1):
            if regex.search(line):
                if len(matches) >= max_results:
                    return SearchResult(matches, True, searched, skipped)
                matches.append(SearchMatch(rel, number, line))
    return SearchResult(matches, False, searched, skipped)


SEARCH_BACKEND_ENV = "HORIZON_SEARCH_BACKEND"
#: Seconds a ripgrep search may take before it is stopped (and Python searches instead).
RIPGREP_TIMEOUT_S = 60.0
_STATS_FILES = re.compile(rb"^(\d+) files searched$")


#: Characters ripgrep's regex engine (Rust ``regex-syntax``) accepts after a backslash as a
#: literal; Python also takes a backslash before any other punctuation (``\"``, ``\'``, ``\/``).
_RUST_ESCAPABLE = set("\\.+*?()|[]{}^$#&-~")


def _for_ripgrep(pattern: str) -> str:
    """``pattern`` with backslashes dropped before punctuation that needs none (``\"`` -> ``"``), which rg 13 refuses."""
    out, index = [], 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            following = pattern[index + 1]
            if following.isascii() and not following.isalnum() and not following.isspace() and following not in _RUST_ESCAPABLE:
                out.append(following)
            else:
                out.append(pattern[index : index + 2])
            index += 2
            continue
        out.append(char)
        index += 1
    return "".join(out)


def ripgrep() -> str | None:
    """The ``rg`` program to search with, or None (not installed, or ``HORIZON_SEARCH_BACKEND=python``)."""
    if os.environ.get(SEARCH_BACKEND_ENV, "").strip().lower() == "python":
        return None
    return shutil.which("rg")


def _search_with_ripgrep(rg: str, root: Path, pattern: str, start: Path | None, max_results: int) -> SearchResult | None:
    """Search with ripgrep under the rules of ``iter_files``; None when rg refuses the pattern or fails."""
    argv = [
        rg, "--no-config", "--no-pre", "--no-search-zip", "--no-follow",  # inert: see the module docstring
        "--line-number", "--no-heading", "--with-filename", "--null", "--color", "never", "--stats",
        "--hidden", "--no-require-git", "--no-ignore-global", "--no-ignore-parent", "--no-ignore-dot",
        "--max-filesize", str(MAX_SEARCH_FILE_BYTES), "--sort", "path",
        *(f"--glob=!{name}" for name in sorted(SKIPPED_DIRS)),
        "--regexp", _for_ripgrep(pattern),
    ]  # fmt: skip
    target = (start or root).resolve()
    if target != root:
        argv += ["--", target.relative_to(root).as_posix()]
    try:
        # stderr is not read: a pipe would fill up (one line per unreadable file) and stop rg
        proc = subprocess.Popen(argv, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                                env={})
    except OSError:
        return None
    matches: list[SearchMatch] = []
    truncated = False
    searched = 0
    watchdog = threading.Timer(RIPGREP_TIMEOUT_S, proc.kill)  # the read below has no deadline of its own
    watchdog.daemon = True
    watchdog.start()
    try:
        assert proc.stdout is not None
        for raw in proc.stdout:
            path, sep, rest = raw.partition(b"\0")
            if not sep:
                stats = _STATS_FILES.match(raw.strip())
                searched = int(stats.group(1)) if stats else searched
                continue
            if len(matches) >= max_results:
                truncated = True
                break
            number, _colon, text = rest.partition(b":")
            rel = path.decode("utf-8", "surrogateescape").removeprefix("./")
            matches.append(SearchMatch(rel, int(number), text.rstrip(b"\r\n").decode("utf-8", "replace")))
        if truncated:
            proc.kill()
        proc.wait(timeout=RIPGREP_TIMEOUT_S)
    except (subprocess.TimeoutExpired, ValueError):
        proc.kill()
        proc.wait()
        return None
    finally:
        watchdog.cancel()
        if proc.stdout is not None:
            proc.stdout.close()
    if not truncated and proc.returncode not in (0, 1):  # 2: rg's regex engine refused the pattern, or an error
        return None
    return SearchResult(matches, truncated, searched, 0)


def shorten(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """Strip trailing whitespace and cut ``text`` to ``limit`` characters, marking the cut."""
    text = text.rstrip()
    return text if len(text) <= limit else text[:limit] + f" … (+{len(text) - limit} chars)"


#: What a backslash may be meant to escape in a pattern: regex punctuation and the class letters.
_ESCAPABLE_AFTER = set("()[]{}.*+?|^$") | set("dDwWsSbB")
_BACKSLASH_RUN = re.compile(r"(\\{2,})(.)", re.DOTALL)


def double_escape_hint(pattern: str) -> str:
    """A warning when ``pattern`` escapes a backslash before regex punctuation or a class letter, else "".

    ``\\\\(`` (two backslashes, then ``(``) matches a literal backslash and opens a group; a model
    that escaped its JSON string twice meant ``\\(``. An even run of backslashes before such a
    character is taken as that slip; the hint gives the pattern with each such run halved.
    """
    found = [m for m in _BACKSLASH_RUN.finditer(pattern) if len(m[1]) % 2 == 0 and m[2] in _ESCAPABLE_AFTER]
    if not found:
        return ""
    meant = _BACKSLASH_RUN.sub(
        lambda m: m[1][: len(m[1]) // 2] + m[2] if len(m[1]) % 2 == 0 and m[2] in _ESCAPABLE_AFTER else m[0], pattern
    )
    first = found[0]
    return (
        f"[note: the pattern has {first[0]}: {len(first[1])} backslashes match a literal backslash, so the {first[2]!r} "
        f"after them is not escaped; the pattern looks escaped twice. If you meant /{meant}/, send that pattern "
        f"(in JSON arguments each backslash is written twice: {json.dumps(meant)})]"
    )


def search_header(pattern: str, where: str, max_results: int) -> str:
    """The first line of a search's output: the pattern as it was run, where, and the cap."""
    shown = pattern if len(pattern) <= MAX_LINE_CHARS and "\n" not in pattern else repr(pattern[:MAX_LINE_CHARS])
    return f"search_code /{shown}/ in {where} (max_results {max_results}):"


def format_search(result: SearchResult, pattern: str, where: str, max_results: int | None = None) -> str:
    """Render a ``SearchResult``: ``search_header``, a ``double_escape_hint`` when there is one,
    then ``path:line: text`` lines and a one-line summary.

    Args:
        max_results: the cap the search ran with (shown in the header; default: the number of
            matches kept when truncated, else 50).
    """
    cap = max_results if max_results is not None else (len(result.matches) if result.truncated else 50)
    lines = [search_header(pattern, where, cap)]
    hint = double_escape_hint(pattern)
    if hint:
        lines.append(hint)
    if not result.matches:
        lines.append(f"no matches for /{pattern}/ in {where} ({result.files_searched} files searched)")
        return "\n".join(lines)
    lines += [f"{m.path}:{m.line}: {shorten(m.text)}" for m in result.matches]
    files = len({m.path for m in result.matches})
    if result.truncated:
        lines.append(
            f"[showing the first {len(result.matches)} matching lines; there are more: narrow the pattern or the path, or raise max_results]"
        )
    else:
        lines.append(f"[{len(result.matches)} matching lines in {files} files]")
    return "\n".join(lines)
