"""Benchmark task folders: reading them and turning a reference fix into edits.

A suite is a folder with one subfolder per task (format in ``suites/README.md``)::

    SUITE/TASK/
        task.json | task.toml   instruction, plugin, language, source, fail_to_pass, pass_to_pass, test command,
                                and ``start``: how the starting tree is made from published archives
                                (``core.eval.sources``: built into Horizon's cache when the task is read)
        repo/                   the starting state, when there is no ``start``: a repository (coding) or the
                                plugin's task folder (a scene's or a filing set's task.json)
        fix.diff                coding: the reference fix (git unified diff, paths ``a/…`` and ``b/…``)
        reference.jsonl         any plugin: the reference trajectory as a scripted policy
                                (``core.policy.scripted``); used when there is no fix.diff

A suite of suites is a folder of suites (``suites/``: ``coding/``, ``threed/``, ``finance/``);
its tasks are named ``SUITE/TASK`` and a task's plugin defaults to its suite's folder name.

A folder in another benchmark's layout (a Terminal-Bench task: ``instruction.md``, ``task.toml``,
``environment/``, ``tests/``) is read by the plugin that registers that format
(``core.eval.formats``; the coding plugin reads Terminal-Bench's).

Unified-diff format: https://www.gnu.org/software/diffutils/manual/html_node/Detailed-Unified.html
"""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from core.errors import UserError
from core.eval.formats import format_of, task_formats
from core.eval.sources import StartRecipe, materialise
from core.trust import trusted_part

TASK_FILES = ("task.json", "task.toml")
#: What a task file may set only once the user trusts it (``agent trust PATH``, ``core.trust``):
#: the programs its episodes start.
UNTRUSTED_TASK_KEYS = frozenset({"mcp_servers"})
#: The reference trajectory of a task that has no fix.diff (a scripted policy's JSON Lines turns).
REFERENCE_SCRIPT = "reference.jsonl"


class TaskSource(BaseModel):
    """Where a task's bug comes from: two releases of a package on PyPI.

    Attributes:
        package: the PyPI project name.
        buggy_version, fixed_version: the release with the bug and the one with its fix.
        buggy_sdist_url, fixed_sdist_url: the source distributions' download URLs.
        buggy_sdist_sha256, fixed_sdist_sha256: their SHA-256 digests (hex).
        changelog: the fixed release's changelog lines about the fix, quoted.
    """

    package: str
    buggy_version: str
    fixed_version: str
    buggy_sdist_url: str = ""
    buggy_sdist_sha256: str = ""
    fixed_sdist_url: str = ""
    fixed_sdist_sha256: str = ""
    changelog: str = ""


class TaskSpec(BaseModel):
    """The contents of ``task.json`` / ``task.toml``.

    Attributes:
        instruction: what the agent is asked to do, in the words of a bug report.
        plugin: the plugin that runs the task; empty: the one named on the command line (or, in
            a suite of suites, the suite's folder name).
        language: ``python`` (or ``java``).
        source: the package and releases the bug comes from (required with a ``fix.diff``).
        fail_to_pass: test ids that fail in ``repo/`` and pass once ``fix.diff`` is applied
            (at least one with a ``fix.diff``; tasks with a reference trajectory are graded by their verification).
        pass_to_pass: test ids that pass both before and after the fix.
        test_command: the command that runs the tests, from the repository root (for people;
            Horizon's coding plugin detects and runs them itself).
        test_files: the test files taken from the fixed release (relative to ``repo/``).
        start: how the starting tree is made from archives (``core.eval.sources.StartRecipe``),
            or None when the task folder carries it as ``repo/``.
        hidden_tests: how the task's hidden tests are made (the same recipe format): test files,
            at their paths in the repository, that the agent never sees; the coding grader
            writes them into its copy of the final workspace before running ``fail_to_pass``
            and ``pass_to_pass`` (``plugins.coding.grading.put_hidden_tests``). None: the tests
            that grade the run are in the starting tree.
        dependencies_as_of: an ISO date; the project's test environment is built from
            distributions uploaded before it (the fixed release's upload time), so an old
            release is tested with the dependencies of its time. Empty: the newest.
        mcp_servers: external MCP servers whose tools the episode adds to the plugin's
            (``core.mcp.client.McpServerSpec``'s fields: name, command or url, env, timeout_s, start_timeout_s, tools);
            ignored, with a line on stderr, until the user trusts the task file (``agent trust PATH``).
    """

    instruction: str = Field(min_length=1)
    plugin: str = ""
    language: str = "python"
    source: TaskSource | None = None
    fail_to_pass: list[str] = []
    pass_to_pass: list[str] = []
    test_command: str = "python -m pytest -p no:cacheprovider"
    test_files: list[str] = []
    start: StartRecipe | None = None
    hidden_tests: StartRecipe | None = None
    dependencies_as_of: str = ""
    mcp_servers: list[dict[str, Any]] = []


@dataclass(frozen=True)
class EvalTask:
    """One task folder, read and checked.

    Attributes:
        name: the task id: the folder's name (``SUITE/TASK`` in a suite of suites).
        folder: the task folder (absolute).
        spec: its ``task.json``/``task.toml``.
        suite_plugin: the plugin the suite of suites implies (its folder name), or empty.
        start: the starting tree when it is not ``folder/repo``: built from the task's ``start``
            recipe or, for a Terminal-Bench task, from its Dockerfile, into Horizon's cache; or None.
        metadata: facts the episode's ``Task.metadata`` carries (a Terminal-Bench task's working
            folder, tests and time limits: ``plugins.coding.terminal_bench.task_metadata``; a task with
            hidden tests: ``hidden_tests``, the folder they were built into, hidden from the
            episode's sandbox like the suite; ``dependencies_as_of``).
        task_format: the name of the ``core.eval.formats.TaskFormat`` that read the folder, or
            empty for Horizon's own layout.
    """

    name: str
    folder: Path
    spec: TaskSpec
    suite_plugin: str = ""
    start: Path | None = None
    metadata: dict[str, Any] = field(default_factory=dict, compare=False)
    task_format: str = ""

    def plugin(self, default: str) -> str:
        """The plugin that runs this task: its own ``plugin`` field, else the suite's, else ``default``."""
        return self.spec.plugin or self.suite_plugin or default

    @property
    def repo(self) -> Path:
        """The repository state the episode starts from."""
        return self.start or self.folder / "repo"

    @property
    def fix_diff(self) -> Path:
        """The reference fix (coding tasks)."""
        return self.folder / "fix.diff"

    @property
    def reference_script(self) -> Path:
        """The reference trajectory, for tasks without a fix.diff."""
        return self.folder / REFERENCE_SCRIPT


def load_task(folder: Path) -> EvalTask:
    """Read one task folder.

    A task whose file has a ``start`` recipe gets its starting tree from the sources cache, built
    there first when missing (``core.eval.sources.materialise``: downloads, checks SHA-256s and
    the tree's digest); its folder's ``repo/``, if any, is not used.

    Raises:
        UserError: no task file, an unreadable or invalid one, neither ``start`` nor ``repo/``,
            or neither a ``fix.diff`` nor a ``reference.jsonl``; the starting tree cannot be made
            (offline with an empty cache, a changed archive: the message names the task, the URL
            and what to do); a folder of another format its plugin cannot run here (a
            Terminal-Bench task whose environment needs Docker); the message names the file and
            the problem.
    """
    folder = folder.resolve()
    other = format_of(folder)
    if other is not None:
        return replace(other.load(folder), task_format=other.name)
    found = [folder / n for n in TASK_FILES if (folder / n).is_file()]
    if not found:
        raise UserError(f"{folder} is not a task folder: it has neither task.json nor task.toml (see suites/README.md)")
    path = found[0]
    try:
        content = path.read_bytes()
        text = content.decode("utf-8")
        raw: Any = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
        if isinstance(raw, dict):  # a task file ships with a suite or a repository: it starts no program untrusted
            raw = trusted_part(path, content, raw, UNTRUSTED_TASK_KEYS)
        spec = TaskSpec.model_validate(raw)
    except (OSError, ValueError) as exc:  # JSONDecodeError, TOMLDecodeError and ValidationError are ValueErrors
        detail = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors()) if isinstance(exc, ValidationError) else str(exc)
        raise UserError(f"{path} is not a valid task file: {detail}") from None
    if spec.start is None and not (folder / "repo").is_dir():
        raise UserError(f"task {folder.name}: the repository folder {folder / 'repo'} is missing (and {path.name} has no start recipe)")
    if not (folder / "fix.diff").is_file() and not (folder / REFERENCE_SCRIPT).is_file():
        raise UserError(f"task {folder.name}: the reference fix {folder / 'fix.diff'} is missing "
                        f"(a task not graded by tests gives {REFERENCE_SCRIPT}, a scripted trajectory, instead)")
    if (folder / "fix.diff").is_file():  # graded by tests against a reference fix: which tests, and where the bug is from
        if not spec.fail_to_pass:
            raise UserError(f"{path} is not a valid task file: fail_to_pass: a task with a fix.diff needs at least one test that fails before the fix")
        if spec.source is None:
            raise UserError(f"{path} is not a valid task file: source: a task with a fix.diff names the package and releases its bug comes from")
    made_from = f" ({spec.source.package} {spec.source.buggy_version})" if spec.source else ""
    start, metadata = None, {}
    try:
        if spec.start is not None:
            start = materialise(spec.start, name=folder.name).path
        if spec.hidden_tests is not None:
            hidden = materialise(spec.hidden_tests, name=f"{folder.name}-hidden-tests").path
            metadata = {"hidden_tests": str(hidden), "sandbox_hidden": [str(hidden)]}
    except UserError as exc:
        raise UserError(f"task {folder.name}{made_from}: {exc}") from None
    if spec.dependencies_as_of:
        metadata["dependencies_as_of"] = spec.dependencies_as_of
    if spec.mcp_servers:
        metadata["mcp_servers"] = spec.mcp_servers
    return EvalTask(name=folder.name, folder=folder, spec=spec, start=start, metadata=metadata)


def _is_task(folder: Path) -> bool:
    return folder.is_dir() and not folder.name.startswith(".") and (any((folder / n).is_file() for n in TASK_FILES) or format_of(folder) is not None)


def _subfolders(folder: Path) -> list[Path]:
    return [d for d in sorted(folder.iterdir()) if d.is_dir() and not d.name.startswith((".", "_"))]


def load_suite(suite: Path, only: list[str] | None = None) -> list[EvalTask]:
    """Read the task folders of a suite, sorted by name.

    A folder that holds no task folder but suites (``suites/``) is a suite of suites: its tasks
    are named ``SUITE/TASK`` and take their suite's folder name as their default plugin. A task
    folder itself (e.g. ``suites/terminal-bench/fix-calc``) is a suite of one.

    Tasks are chosen by name (their folder's) before they are read, so an invalid task that
    ``only`` leaves out does not stop the others.

    Args:
        suite: the suite folder; subfolders without a task file (or hidden ones) are ignored.
        only: task names or shell-style patterns to keep (``fnmatch``: ``coding/sqlparse-*``,
            ``threed/*``); all when None or empty.

    Raises:
        UserError: the suite folder is missing, holds no task, ``only`` has a name or pattern
            that matches no task, or chosen tasks are invalid (every refusal, one line each).
    """
    if not suite.is_dir():
        raise UserError(f"no suite folder at {suite}; give a folder of task folders, e.g. suites/coding")
    if _is_task(suite):
        found = [(suite.resolve().name, suite, "")]
    else:
        found = [(d.name, d, "") for d in _subfolders(suite) if _is_task(d)]
        if not found:  # a suite of suites?
            for sub in _subfolders(suite):
                found += [(f"{sub.name}/{d.name}", d, sub.name) for d in _subfolders(sub) if _is_task(d)]
    if not found:
        others = "".join(f"; or {f.description}" for f in task_formats())
        raise UserError(f"{suite} holds no task folders (each needs task.json or task.toml, a start recipe or repo/, and fix.diff or {REFERENCE_SCRIPT}"
                        f"{others}), and is not one itself; give the suite's folder (--task NAME picks tasks in it) or one task's folder")
    if only:
        names = [name for name, _, _ in found]
        unknown = [p for p in only if not fnmatch.filter(names, p)]
        if unknown:
            raise UserError(f"the suite {suite} has no task named {', '.join(unknown)}; it has {', '.join(sorted(names))}")
        found = [f for f in found if any(fnmatch.fnmatchcase(f[0], p) for p in only)]
    tasks: list[EvalTask] = []
    refusals: list[str] = []
    for name, folder, plugin in found:
        try:
            task = load_task(folder)
        except UserError as exc:
            refusals.append(" ".join(str(exc).split("\n")))
            continue
        tasks.append(replace(task, name=name, suite_plugin=plugin))
    if len(refusals) == 1:
        raise UserError(refusals[0])
    if refusals:
        raise UserError(f"{len(refusals)} tasks of {suite} are invalid (--task NAME runs only the others):\n" + "\n".join(refusals))
    return tasks


# --------------------------------------------------------------------------- diffs


@dataclass
class Hunk:
    """One hunk of a unified diff: the old and new text of the lines it covers (context included).

    Attributes:
        old_start: 1-based line of the hunk's first line in the original file (0 for a new file).
        old_lines, new_lines: the lines (each ending in a newline unless at a file's end).
    """

    old_start: int
    old_lines: list[str] = field(default_factory=list)
    new_lines: list[str] = field(default_factory=list)


@dataclass
class FilePatch:
    """The hunks of one file in a unified diff; ``created`` when the old side is ``/dev/null``."""

    path: str
    created: bool = False
    hunks: list[Hunk] = field(default_factory=list)


_HUNK_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,(\d+))? @@")


def _lines(text: str) -> list[str]:
    """Split at ``\n`` only, keeping it: a form feed or ``\r`` inside a line stays in the line
    (``str.splitlines`` would split there too)."""
    parts = text.split("\n")
    return [p + "\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def parse_unified_diff(text: str) -> list[FilePatch]:
    """Parse a git-style unified diff into files and hunks.

    Raises:
        UserError: a hunk line outside any file, or a file deleted or renamed (not supported
            as a reference fix).
    """
    files: list[FilePatch] = []
    current: FilePatch | None = None
    hunk: Hunk | None = None
    old_path = ""
    last_kind = " "
    old_left = new_left = 0  # lines of the current hunk still to read, per side
    for line in _lines(text):
        if hunk is not None and (old_left > 0 or new_left > 0):
            kind, body = line[:1], line[1:]
            if kind == "\\":  # "\ No newline at end of file": the line before has no newline
                _drop_newline(hunk, last_kind)
                continue
            if kind in (" ", "\n"):
                body = body or "\n"
                hunk.old_lines.append(body)
                hunk.new_lines.append(body)
                old_left, new_left = old_left - 1, new_left - 1
            elif kind == "-":
                hunk.old_lines.append(body)
                old_left -= 1
            elif kind == "+":
                hunk.new_lines.append(body)
                new_left -= 1
            else:
                raise UserError(f"malformed diff line in a hunk: {line[:80]!r}")
            last_kind = " " if kind == "\n" else kind
            continue
        if line.startswith("\\") and hunk is not None:
            _drop_newline(hunk, last_kind)
            continue
        if line.startswith(("diff --git ", "index ", "new file mode", "similarity")):
            continue
        if line.startswith(("deleted file mode", "rename ")):
            raise UserError("a reference fix may not delete or rename files")
        if line.startswith("--- "):
            old_path = line[4:].strip()
            continue
        if line.startswith("+++ "):
            new_path = line[4:].strip()
            if new_path == "/dev/null":
                raise UserError(f"a reference fix may not delete files ({old_path})")
            current = FilePatch(path=new_path.removeprefix("b/"), created=old_path == "/dev/null")
            files.append(current)
            hunk = None
            continue
        match = _HUNK_HEADER.match(line)
        if match:
            if current is None:
                raise UserError("the diff has a hunk before any file header")
            hunk = Hunk(old_start=int(match.group(1)))
            old_left = int(match.group(2)) if match.group(2) is not None else 1
            new_left = int(match.group(3)) if match.group(3) is not None else 1
            current.hunks.append(hunk)
    return files


def _drop_newline(hunk: Hunk, last_kind: str) -> None:
    sides = {" ": (hunk.old_lines, hunk.new_lines), "-": (hunk.old_lines,), "+": (hunk.new_lines,)}.get(last_kind, ())
    for side in sides:
        if side and side[-1].endswith("\n"):
            side[-1] = side[-1][:-1]


def diff_edits(diff_text: str, repo: Path) -> list[dict[str, str]]:
    """Turn a unified diff into ``edit_file`` arguments, one per hunk, in order.

    Each edit replaces the hunk's old lines (context included) with its new lines. Where that old
    text occurs more than once in the file as the earlier edits left it, lines around the hunk are
    added until it is unique, so every edit applies exactly where the diff says.

    Args:
        diff_text: the diff (``fix.diff``).
        repo: the repository the diff applies to (read, not changed).

    Returns:
        ``[{"path": ..., "old_text": ..., "new_text": ...}, ...]``; a created file is one edit
        with an empty ``old_text``.

    Raises:
        UserError: a file is missing or a hunk does not match the file.
    """
    edits: list[dict[str, str]] = []
    for patch in parse_unified_diff(diff_text):
        if patch.created:
            edits.append({"path": patch.path, "old_text": "", "new_text": "".join(patch.hunks[0].new_lines if patch.hunks else [])})
            continue
        target = repo / patch.path
        if not target.is_file():
            raise UserError(f"the diff changes {patch.path}, which {repo} does not have")
        lines = _lines(target.read_bytes().decode("utf-8", errors="surrogateescape"))  # no newline translation
        offset = 0
        for hunk in patch.hunks:
            start = hunk.old_start - 1 + offset
            if lines[start : start + len(hunk.old_lines)] != hunk.old_lines:
                raise UserError(f"hunk at line {hunk.old_start} of {patch.path} does not match the file")
            before, after = start, start + len(hunk.old_lines)
            text = "".join(lines)
            while True:
                old = "".join(lines[before:after])
                if old and text.count(old) == 1:
                    break
                if before == 0 and after == len(lines):
                    break  # the whole file: unique by definition
                before, after = max(0, before - 1), min(len(lines), after + 1)
            new_lines = lines[before:start] + hunk.new_lines + lines[start + len(hunk.old_lines) : after]
            edits.append({"path": patch.path, "old_text": old, "new_text": "".join(new_lines)})
            lines[before:after] = new_lines
            offset += len(hunk.new_lines) - len(hunk.old_lines)
    return edits
