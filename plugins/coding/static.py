"""Static checks run in the sandbox: ruff for Python, ``javac -Xlint:all`` for Java.

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

from core.errors import ToolError
from core.safe_io import remove_tree
from core.sandbox.base import Sandbox, SandboxLimits
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
    """

    checker: str
    findings: list[str] = field(default_factory=list)
    exit_code: int = 0
    problem: str = ""


def _has_files(root: Path, target: Path, suffix: str) -> bool:
    return next(iter(iter_files(root, target, suffixes=(suffix,))), None) is not None


def run_ruff(
    sandbox: Sandbox, root: Path, target: str, run_dir: Path, *, python: str | None = None, limits: SandboxLimits | None = None
) -> CheckReport:
    """Run ``python -m ruff check --output-format concise --no-cache <target>`` in the sandbox.

    Args:
        target: a path relative to ``root`` ("." for everything).

    Returns:
        ``CheckReport`` whose findings are ``path:line:col: CODE message`` lines.
    """
    python = python or default_python()
    argv = [python, "-m", "ruff", "check", "--output-format", "concise", "--no-cache", "--no-fix", "--quiet", "--", target]
    result = sandbox.run(argv, cwd=root, env=sandbox_env(run_dir), limits=limits)
    report = CheckReport("ruff", exit_code=result.exit_code)
    for line in result.stdout.splitlines():
        match = _RUFF_LINE.match(line.strip())
        if match:
            report.findings.append(f"{match['path']}:{match['line']}:{match['col']}: {match['message'].replace('[*] ', '', 1)}")
    if result.exit_code not in (0, 1) or result.timed_out:
        report.problem = ((result.stderr or result.stdout).strip() or f"ruff exited with {result.exit_code}")[:2000]
    return report


def run_javac_lint(
    sandbox: Sandbox, root: Path, target: str, run_dir: Path, *, limits: SandboxLimits | None = None
) -> CheckReport:
    """Compile all Java sources with ``javac -Xlint:all`` into scratch and keep diagnostics under ``target``.

    Everything is compiled (so that types resolve); only findings in files under ``target``
    (relative to ``root``; "." for all) are kept. The test sources compile against the JUnit
    console launcher jar when it is installed.

    Returns:
        ``CheckReport`` whose findings are ``path:line: warning|error: message`` lines (the
        message's extra lines, such as ``symbol:``, joined with " | ").
    """
    javac = java_tool("javac")
    if javac is None:
        return CheckReport("javac", exit_code=-1, problem="javac is not installed, so Java files cannot be checked")
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
        path = match["path"]
        if prefix and path != prefix and not path.startswith(prefix + "/"):
            continue
        message = " | ".join([match["message"], *[e for e in extra if e]])
        report.findings.append(f"{path}:{match['line']}: {match['level']}: {message}")
    if result.timed_out:
        report.problem = "javac timed out"
    elif result.exit_code != 0 and not report.findings:
        report.problem = (result.stderr or result.stdout).strip()[:2000] or f"javac exited with {result.exit_code}"
    return report


def static_check(
    sandbox: Sandbox, workspace: Path, scratch: Path, target: Path | None = None, *, limits: SandboxLimits | None = None
) -> list[CheckReport]:
    """Run the checkers that apply to ``target`` (a file or folder; default the whole repository).

    Args:
        sandbox: runs the checkers.
        workspace: repository root.
        scratch: folder for javac's classes (a fresh ``runs/NNN-static`` folder).
        target: absolute path inside the workspace.

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
    reports = []
    if has_python:
        reports.append(run_ruff(sandbox, root, rel, run_dir, limits=limits))
    if has_java:
        reports.append(run_javac_lint(sandbox, root, rel, run_dir, limits=limits))
    return reports


def format_reports(reports: list[CheckReport], where: str, limit: int = 100) -> str:
    """Render check reports: per checker a count line then its findings (at most ``limit`` in all)."""
    lines: list[str] = []
    shown = 0
    for report in reports:
        name = "ruff" if report.checker == "ruff" else "javac -Xlint:all"
        if report.problem and not report.findings:
            lines.append(f"{name}: could not check {where}: {report.problem}")
            continue
        if not report.findings:
            lines.append(f"{name}: no findings in {where}")
            continue
        lines.append(f"{name}: {len(report.findings)} finding{'s' if len(report.findings) != 1 else ''} in {where}")
        for finding in report.findings:
            if shown >= limit:
                lines.append(f"… ({len(report.findings) - report.findings.index(finding)} more; check a narrower path)")
                break
            lines.append(finding)
            shown += 1
        if report.problem:
            lines.append(f"({name} also reported: {report.problem[:300]})")
    return "\n".join(lines)
