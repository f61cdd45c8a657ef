"""Static checks run in the sandbox: ruff for Python, ``javac -Xlint:all`` for Java.

Given the run's baseline database, ``static_check`` also runs them on the starting version of
each changed file and splits the findings into those the run introduced and those that were
there before (``plugins.coding.static_compare``), so that the agent sees what its change did.

Neither writes into the workspace: ruff runs with ``--no-cache`` and javac writes its classes
into a scratch folder that is deleted afterwards. Both run in the sandbox; Horizon's own process
only lists the source files and reads the checkers' output. The classes folder is written by
the sandboxed javac (and any annotation processor a repository's jar brings), so it is removed
without following links and without recursion (``remove_tree``: a 1,500-deep package is fine).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from core.api import Sandbox, SandboxLimits, ToolError, make_dirs, remove_tree, write_new
from plugins.coding import static_compare
from plugins.coding.search import iter_files
from plugins.coding.testing import (
    default_python,
    find_junit_launcher,
    java_classpath_extras,
    java_sources,
    java_tool,
    new_run_dir,
    sandbox_env,
)

_RUFF_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+):(?P<col>\d+): (?P<message>.+)$")
_JAVAC_LINE = re.compile(r"^(?P<path>.+?\.java):(?P<line>\d+): (?P<level>warning|error): (?P<message>.*)$")
_CARET = re.compile(r"^\s*\^\s*$")
_JAVAC_TRAILER = re.compile(r"^(\d+ (errors?|warnings?)|Note: .*|warning: \[options\].*)$")


@dataclass
class CheckReport:
    """Findings of one checker.

    Attributes:
        checker: ``ruff`` or ``javac``.
        findings: one line per finding, ``path:line[:col]: message``, paths relative to the root.
        exit_code: the checker's exit status.
        problem: set when the checker itself could not run properly (its output, shortened).
        preexisting: once compared with the run's starting files (``compared``), the findings
            that were already there; ``findings`` then holds only the new ones.
        compared: whether the findings were compared with the starting files.
    """

    checker: str
    findings: list[str] = field(default_factory=list)
    exit_code: int = 0
    problem: str = ""
    preexisting: list[str] = field(default_factory=list)
    compared: bool = False


def _has_files(root: Path, target: Path, suffix: str) -> bool:
    return next(iter(iter_files(root, target, suffixes=(suffix,))), None) is not None


def run_ruff(
    sandbox: Sandbox,
    root: Path,
    target: str,
    run_dir: Path,
    *,
    python: str | None = None,
    limits: SandboxLimits | None = None,
    stdin: str | None = None,
) -> CheckReport:
    """Run ``python -m ruff check --output-format concise --no-cache <target>`` in the sandbox.

    Args:
        target: a path relative to ``root`` ("." for everything).
        stdin: the text to check instead of the file ``target`` (ruff's ``--stdin-filename``:
            the repository's configuration applies as if the text were at ``target``).

    Returns:
        ``CheckReport`` whose findings are ``path:line:col: CODE message`` lines.
    """
    python = python or default_python()
    argv = [python, "-m", "ruff", "check", "--output-format", "concise", "--no-cache", "--no-fix", "--quiet"]
    argv += ["--", target] if stdin is None else ["--stdin-filename", target, "-"]
    result = sandbox.run(argv, cwd=root, env=sandbox_env(run_dir), limits=limits, stdin=stdin)
    report = CheckReport("ruff", exit_code=result.exit_code)
    for line in result.stdout.splitlines():
        match = _RUFF_LINE.match(line.strip())
        if match:
            report.findings.append(f"{match['path']}:{match['line']}:{match['col']}: {match['message'].replace('[*] ', '', 1)}")
    if result.exit_code not in (0, 1) or result.timed_out:
        report.problem = ((result.stderr or result.stdout).strip() or f"ruff exited with {result.exit_code}")[:2000]
    return report


def run_javac_lint(
    sandbox: Sandbox,
    root: Path,
    target: str,
    run_dir: Path,
    *,
    limits: SandboxLimits | None = None,
    sources: list[str] | None = None,
    shown_as: dict[str, str] | None = None,
) -> CheckReport:
    """Compile all Java sources with ``javac -Xlint:all`` into scratch and keep diagnostics under ``target``.

    Everything is compiled (so that types resolve); only findings in files under ``target``
    (relative to ``root``; "." for all) are kept. The test sources compile against the JUnit
    console launcher jar when it is installed.

    Args:
        sources: the files to compile (relative to ``root``, or absolute); default
            ``java_sources(root)``.
        shown_as: ``{path as javac prints it: path to report}``, for sources compiled from
            elsewhere (the starting version of a file, written to scratch).

    Returns:
        ``CheckReport`` whose findings are ``path:line: warning|error: message`` lines (the
        message's extra lines, such as ``symbol:``, joined with " | ").
    """
    javac = java_tool("javac")
    if javac is None:
        return CheckReport("javac", exit_code=-1, problem="javac is not installed, so Java files cannot be checked")
    if sources is None:
        main, test = java_sources(root)
        sources = main + test
    if not sources:
        return CheckReport("javac")
    classes = run_dir / "classes"
    classes.mkdir(parents=True, exist_ok=True)
    launcher = find_junit_launcher()
    classpath = os.pathsep.join([*([str(launcher)] if launcher else []), *java_classpath_extras(root)]) or "."
    argfile = run_dir / "sources.txt"
    argfile.write_text("\n".join(f'"{p}"' for p in sources) + "\n", encoding="utf-8")
    argv = [javac, "-Xlint:all", "-Xmaxwarns", "500", "-Xmaxerrs", "500", "-encoding", "UTF-8", "-implicit:none",
            "-d", str(classes), "-cp", classpath, f"@{argfile}"]  # fmt: skip
    result = sandbox.run(argv, cwd=root, env=sandbox_env(run_dir), limits=limits)
    remove_tree(classes)
    report = CheckReport("javac", exit_code=result.exit_code)
    prefix = "" if target in ("", ".") else target.rstrip("/")
    lines = (result.stderr + "\n" + result.stdout).splitlines()
    index = 0
    while index < len(lines):
        match = _JAVAC_LINE.match(lines[index])
        index += 1
        if not match:
            continue
        # After the header: maybe more message lines, the source line, a caret line, then maybe
        # details such as "symbol: ..." and "location: ...".
        extra: list[str] = []
        while index < len(lines) and not _JAVAC_LINE.match(lines[index]):
            line = lines[index]
            index += 1
            if _CARET.match(line):
                extra = extra[:-1]  # the line before the caret echoes the source line
            elif not _JAVAC_TRAILER.match(line):
                extra.append(line.strip())
        path = (shown_as or {}).get(match["path"], match["path"])
        if prefix and path != prefix and not path.startswith(prefix + "/"):
            continue
        message = " | ".join([match["message"], *[e for e in extra if e]])
        report.findings.append(f"{path}:{match['line']}: {match['level']}: {message}")
    if result.timed_out:
        report.problem = "javac timed out"
    elif result.exit_code != 0 and not report.findings:
        report.problem = (result.stderr or result.stdout).strip()[:2000] or f"javac exited with {result.exit_code}"
    return report


def _read_inside(root: Path, rel: str) -> bytes:
    """The bytes of ``root/rel`` when it is a file inside ``root`` (links followed only within it), else b""."""
    path = (root / rel).resolve()
    if root not in path.parents or not path.is_file():
        return b""
    try:
        return path.read_bytes()
    except OSError:
        return b""


def _compare_ruff(
    report: CheckReport, sandbox: Sandbox, root: Path, baseline: Path, run_dir: Path, limits: SandboxLimits | None
) -> None:
    """Split ``report``'s findings into new and already there: ruff on the starting version of each changed file (stdin)."""
    paths = sorted({static_compare.parse_finding(f)[0] for f in report.findings})
    start = static_compare.start_versions(baseline, paths)
    now = {rel: _read_inside(root, rel) for rel in paths}
    before: list[str] = []
    for rel in paths:
        if rel in start and start[rel] != now[rel]:
            old = run_ruff(sandbox, root, rel, run_dir, limits=limits, stdin=start[rel].decode("utf-8", "replace"))
            if old.problem:  # the starting version could not be checked: nothing can be called old
                continue
            before += old.findings
        elif rel in start:
            before += [f for f in report.findings if static_compare.parse_finding(f)[0] == rel]  # unchanged: all old
    report.findings, report.preexisting = static_compare.split_findings(
        report.findings, before, lambda rel: static_compare.text_lines(now.get(rel, b"")),
        lambda rel: static_compare.text_lines(start.get(rel, b"")),
    )  # fmt: skip
    report.compared = True


def _compare_javac(
    report: CheckReport, sandbox: Sandbox, root: Path, target: str, baseline: Path, run_dir: Path, limits: SandboxLimits | None
) -> None:
    """Split ``report``'s findings into new and already there: javac on the starting versions of the changed Java files.

    The starting version of each changed or deleted source is written under ``run_dir/start``
    (links planted there are replaced, not followed) and compiled with the unchanged sources
    (added ones left out), as javac compiled the starting tree; its diagnostics are reported
    under the files' own paths.
    """
    main, test = java_sources(root)
    current = main + test
    changed, added, deleted = static_compare.changed_files(root, baseline, ".java", current)
    paths = {static_compare.parse_finding(f)[0] for f in report.findings}
    if changed or added or deleted:
        start = static_compare.start_versions(baseline, changed + deleted)
        folder = run_dir / "start"
        shown_as: dict[str, str] = {}
        for rel, data in start.items():
            copy = folder / rel
            make_dirs(copy.parent, run_dir)  # the sandboxed javac that just ran could have planted links here
            write_new(copy, data)
            shown_as[str(copy)] = rel
        sources = [rel for rel in current if rel not in start and rel not in added] + list(shown_as)
        old = run_javac_lint(sandbox, root, target, run_dir, limits=limits, sources=sources, shown_as=shown_as)
        remove_tree(folder)
        if old.problem and not old.findings:
            return  # the starting files could not be compiled: leave the findings uncompared
        before = old.findings
        start_lines = {rel: static_compare.text_lines(start.get(rel) or _read_inside(root, rel)) for rel in paths}
    else:  # no Java source changed: every finding was there before
        before = list(report.findings)
        start_lines = {rel: static_compare.text_lines(_read_inside(root, rel)) for rel in paths}
    now_lines = {rel: static_compare.text_lines(_read_inside(root, rel)) for rel in paths}
    report.findings, report.preexisting = static_compare.split_findings(
        report.findings, before, lambda rel: now_lines.get(rel, []), lambda rel: start_lines.get(rel, [])
    )
    report.compared = True


def static_check(
    sandbox: Sandbox,
    workspace: Path,
    scratch: Path,
    target: Path | None = None,
    *,
    limits: SandboxLimits | None = None,
    baseline: Path | None = None,
) -> list[CheckReport]:
    """Run the checkers that apply to ``target`` (a file or folder; default the whole repository).

    Args:
        sandbox: runs the checkers.
        workspace: repository root.
        scratch: folder for javac's classes (a fresh ``runs/NNN-static`` folder).
        target: absolute path inside the workspace.
        baseline: the run's baseline database (``ToolContext.baseline``); when given, each
            report is compared with the starting files (``CheckReport.compared``): its
            ``findings`` are the new ones, ``preexisting`` the others.

    Returns:
        One ``CheckReport`` per checker run (ruff when there are ``.py`` files under the target,
        javac when there are ``.java`` files).

    Raises:
        ToolError: the target does not exist, or holds no Python or Java files.
    """
    root = workspace.resolve()
    target = (target or root).resolve()
    rel = target.relative_to(root).as_posix() if target != root else "."
    if not target.exists():
        raise ToolError(f"{rel!r} does not exist; give a file or folder of the repository ('' for all of it)")
    has_python = _has_files(root, target, ".py")
    has_java = _has_files(root, target, ".java")
    if not (has_python or has_java):
        raise ToolError(f"{rel!r} holds no Python (.py) or Java (.java) files to check")
    run_dir = new_run_dir(scratch, "static")
    comparable = baseline is not None and (baseline / "HEAD").is_file()
    reports = []
    if has_python:
        report = run_ruff(sandbox, root, rel, run_dir, limits=limits)
        if comparable and not report.problem:
            _compare_ruff(report, sandbox, root, baseline, run_dir, limits)
        reports.append(report)
    if has_java:
        report = run_javac_lint(sandbox, root, rel, run_dir, limits=limits)
        if comparable and not report.problem:
            _compare_javac(report, sandbox, root, rel, baseline, run_dir, limits)
        reports.append(report)
    return reports


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def format_reports(reports: list[CheckReport], where: str, limit: int = 100, show_all: bool = False) -> str:
    """Render check reports: per checker a count line then its findings (at most ``limit`` in all).

    A compared report (``CheckReport.compared``) lists only the findings the run introduced and
    counts the others in one line, unless ``show_all``: then they follow under their own line.
    """
    lines: list[str] = []
    shown = 0

    def listing(findings: list[str]) -> None:
        nonlocal shown
        for index, finding in enumerate(findings):
            if shown >= limit:
                lines.append(f"… ({len(findings) - index} more; check a narrower path)")
                break
            lines.append(finding)
            shown += 1

    for report in reports:
        name = "ruff" if report.checker == "ruff" else "javac -Xlint:all"
        old = report.preexisting
        if report.problem and not report.findings and not old:
            lines.append(f"{name}: could not check {where}: {report.problem}")
            continue
        if not report.findings and not old:
            lines.append(f"{name}: no findings in {where}")
        elif not report.compared:
            lines.append(f"{name}: {_plural(len(report.findings), 'finding')} in {where}")
            listing(report.findings)
        else:
            count = _plural(len(report.findings), "new finding") if report.findings else "no new findings"
            lines.append(
                f"{name}: {count} in {where} (compared with the files at the start of this run){':' * bool(report.findings)}"
            )
            listing(report.findings)
            before = f"{name}: {_plural(len(old), 'finding')} {'was' if len(old) == 1 else 'were'} already there before this run"
            if old and show_all:
                lines.append(before + ":")
                listing(old)
            elif old:
                lines.append(before + " (static_check with all=true lists them)")
        if report.problem:
            lines.append(f"({name} also reported: {report.problem[:300]})")
    return "\n".join(lines)
