"""The coding plugin's tools: search, symbols, view, edit, tests, static checks, finish.

Paths the model gives are relative to the repository root and pass through
``ToolContext.resolve``. Tools that start processes (``run_tests``, ``static_check``) use
``ctx.sandbox``; the others only read or write workspace files in-process.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.api import Tool, ToolContext, ToolError, ToolResult, file_listing, record_test_outputs, tool
from plugins.coding import files, patch, repomap, search, static, symbols, testing
from plugins.coding.environment import shell_environment
from plugins.coding.grading import failing_at_start


def _rel(ctx: ToolContext, path) -> str:
    root = ctx.workspace.resolve()
    return path.relative_to(root).as_posix() if path != root else "."


class SearchCodeArgs(BaseModel):
    pattern: str = Field(
        description="Python regular expression matched against each line, e.g. 'def display_name' or 'getNickname\\(\\)'; prefix (?i) to ignore case"
    )
    path: str = Field("", description="folder or file to search, relative to the repository root; empty for the whole repository")
    max_results: int = Field(50, ge=1, le=500, description="most matching lines to return (1-500)")


@tool(read_only=True)
def search_code(args: SearchCodeArgs, ctx: ToolContext) -> ToolResult:
    """Search the repository's text files for a regular expression, line by line, skipping files ignored by .gitignore, binary and very large files. The first line repeats the pattern as it ran; then 'path:line: text' lines.

    Args: ``SearchCodeArgs``. Returns a result whose ``data`` is ``{"matches": n, "truncated": bool}``.
    """
    start = ctx.resolve(args.path)
    if not start.exists():
        raise ToolError(
            f"path {args.path!r} does not exist; give a folder or file relative to the repository root, or '' for all"
        )
    result = search.search_code(ctx.workspace, args.pattern, start, args.max_results)
    where = "the repository" if not args.path.strip(" ./") else repr(_rel(ctx, start))
    return ToolResult(
        output=search.format_search(result, args.pattern, where, args.max_results),
        data={"matches": len(result.matches), "truncated": result.truncated},
    )


class FindSymbolArgs(BaseModel):
    name: str = Field(
        description="identifier to look up, e.g. 'getDisplayName', or 'Class.member' to keep only definitions inside that class"
    )
    kind: Literal["definition", "reference", "any"] = Field(
        "any", description="'definition' (classes, functions, methods, fields...), 'reference' (calls and other uses) or 'any'"
    )


@tool(read_only=True)
def find_symbol(args: FindSymbolArgs, ctx: ToolContext) -> ToolResult:
    """Find where a name is defined and/or used in the repository's Python, Java, JavaScript, TypeScript and Go files (parsed with tree-sitter, not text search). Returns 'path:line: kind  source-line' lines, definitions first.

    Args: ``FindSymbolArgs``. Returns a result whose ``data`` is ``{"definitions": n, "references": n}``.
    """
    hits = symbols.find_symbol(ctx.workspace, args.name, args.kind)
    definitions = sum(h.is_definition for h in hits)
    return ToolResult(
        output=symbols.format_hits(hits, args.name, args.kind),
        data={"definitions": definitions, "references": len(hits) - definitions},
    )


class RepoMapArgs(BaseModel):
    focus: str = Field(
        "", description="file paths and identifiers to rank first, e.g. 'users/service.py display_name'; empty for the repository as a whole"
    )
    max_tokens: int = Field(
        repomap.DEFAULT_MAP_TOKENS, ge=64, le=8192, description="size of the map in tokens (about 4 characters each), 64-8192"
    )


@tool(read_only=True)
def repo_map(args: RepoMapArgs, ctx: ToolContext) -> ToolResult:
    """Show a map of the repository: the most referenced classes, functions and methods (ranked by PageRank over who uses what, parsed with tree-sitter), grouped by file as 'line│source' lines, biased toward the files, names and words in focus; vendored, generated and test-data files are left out.

    Args: ``RepoMapArgs``. Returns a result whose ``data`` is ``{"files": n, "definitions": n,
    "shown": n, "tokens": n}`` (tokens estimated as characters / 4).
    """
    built = repomap.build_repo_map(ctx.workspace, args.focus, args.max_tokens)
    data = {"files": built.files_indexed, "definitions": built.definitions_total, "shown": len(built.shown), "tokens": built.tokens}
    if not built.text:
        return ToolResult(output="no Python, Java, JavaScript, TypeScript or Go source files found in the repository", data=data)
    left_out = f" ({len(built.excluded)} vendored, generated or test-data files left out)" if built.excluded else ""
    head = (
        f"[repository map: {len(built.shown)} of {built.definitions_total} definitions from {built.files_indexed} files{left_out}, "
        f"~{built.tokens} tokens; find_symbol shows every use of a name, view_file the code]"
    )
    return ToolResult(output=f"{head}\n{built.text}", data=data)


class ViewFileArgs(BaseModel):
    path: str = Field(description="file path relative to the repository root")
    start_line: int = Field(1, description="first line to show, counting from 1")
    end_line: int | None = Field(
        None,
        description=f"last line to show (inclusive); omit to show as much as allowed ({files.MAX_VIEW_LINES} lines per call)",
    )


@tool(read_only=True, reads_lines=True)
def view_file(args: ViewFileArgs, ctx: ToolContext) -> ToolResult:
    """Show a file's lines with their line numbers (number, tab, text), at most 200 lines (and one output's worth of characters) per call; when lines are left out, the last line names them and the call that shows them.

    Args: ``ViewFileArgs``. Returns the numbered text, cut on whole lines to ``ctx.output_limit``.
    """
    path = ctx.resolve(args.path)
    return ToolResult(output=files.view_file(ctx.workspace, path, args.start_line, args.end_line, ctx.output_limit))


class EditFileArgs(BaseModel):
    path: str = Field(description="file path relative to the repository root")
    old_text: str = Field(
        description="exact text to replace, copied from the file without line numbers, including indentation; it must occur exactly once (add surrounding lines if needed). Empty to create a new file"
    )
    new_text: str = Field(description="text that replaces old_text (the whole content when creating a file)")


@tool
def edit_file(args: EditFileArgs, ctx: ToolContext) -> ToolResult:
    """Replace one exact occurrence of old_text with new_text in a file (or create a new file when old_text is empty). Returns a unified diff of the change; when old_text is not found the error shows the most similar lines.

    Args: ``EditFileArgs``. Returns a result whose ``data`` is ``{"path": str, "line": n, "created": bool}``.
    """
    path = ctx.resolve(args.path)
    rel = _rel(ctx, path)
    if rel == "." or rel == ".git" or rel.startswith(".git/"):
        raise ToolError(f"{args.path!r} cannot be edited; give a file of the repository")
    outcome = files.edit_file(ctx.workspace, path, args.old_text, args.new_text)
    head = f"created {outcome.path}" if outcome.created else f"edited {outcome.path} at line {outcome.line}"
    return ToolResult(
        output=f"{head}\n{outcome.diff}", data={"path": outcome.path, "line": outcome.line, "created": outcome.created}
    )


class ApplyPatchArgs(BaseModel):
    patch: str = Field(
        min_length=1,
        description="a unified diff (as from 'git diff'): for each file a '--- a/path' and a '+++ b/path' line ('/dev/null' to create or delete), then '@@ -l,n +l,n @@' hunks of ' ' context, '-' removed and '+' added lines",
    )


@tool
def apply_patch(args: ApplyPatchArgs, ctx: ToolContext) -> ToolResult:
    """Apply a unified diff that may change several files at once, atomically: every hunk applies or nothing changes. A hunk is placed where its context lines match (the line numbers may be off); a result that breaks a file's syntax is rejected. Use edit_file for a single change.

    Args: ``ApplyPatchArgs``. Returns a result whose ``data`` is ``{"files": [{"path", "action",
    "added", "removed"}, ...]}``.
    """
    if "\0" in args.patch:
        raise ToolError("the patch contains a NUL byte; send the diff as plain text")
    changed = patch.apply_patch(args.patch, ctx.resolve, ctx.workspace)
    lines = [f"applied the patch to {len(changed)} file{'s' if len(changed) != 1 else ''}:"]
    lines += [f"  {c.action} {c.path} (+{c.added} -{c.removed})" for c in changed]
    return ToolResult(output="\n".join(lines), data={"files": [c.__dict__ for c in changed]})


class RunTestsArgs(BaseModel):
    tests: list[str] = Field(
        default_factory=list,
        description="tests to run; empty for the whole suite. pytest: node ids or paths such as 'tests/test_service.py::test_x'; JUnit: 'com.example.FooTest' or 'com.example.FooTest#method'; node/Jest: test file paths; Go: 'example.com/pkg::TestName' or package patterns such as './pkg'",
    )
    on_start: bool = Field(
        False,
        description="true to also run these tests on the starting code (the files before your changes, with the test files as they are now) and show both results side by side: a reproduction test must fail there and pass now. Needs test ids or paths",
    )


@tool
def run_tests(args: RunTestsArgs, ctx: ToolContext) -> ToolResult:
    """Run the repository's tests (pytest/unittest, JUnit 5, node --test or Jest, go test; detected automatically) and report counts, each failing test with the first lines of its error, and the exit code. A compile error is reported as a failed build. Tests that were already failing at the start are named apart, as such. With on_start the named tests also run on the starting code (with your test files), to check in one call that a new test reproduces the problem. Files the run writes (reports, artefacts) are left out of the patch.

    Args: ``RunTestsArgs``. Returns a result whose ``data`` has ``tests`` (``{test_id: "passed" |
    "failed" | "error" | "skipped"}``), ``framework``, ``exit_code``, ``build_failed``,
    ``timed_out``, ``duration_s`` and ``run_dir``; with ``on_start`` also ``start_tests`` (the
    outcomes on the starting code), ``start_exit_code`` and ``start_timed_out``.
    """
    if any("\0" in t for t in args.tests):
        raise ToolError("a test selector contains a NUL byte; give node ids or class names as plain text")
    start = None
    if args.on_start:
        from plugins.coding.start_run import run_on_start

        start, copied = run_on_start(ctx.sandbox, ctx.workspace, ctx.baseline, ctx.scratch, args.tests)
    listed = file_listing(ctx.workspace)
    run = testing.run_test_suite(ctx.sandbox, ctx.workspace, ctx.scratch, args.tests)
    if ctx.baseline is not None:  # what the run wrote (reports, artefacts) stays out of the patch
        record_test_outputs(ctx.workspace, ctx.baseline, listed)
    if run.framework is None:
        raise ToolError(testing.NO_TESTS_MESSAGE)
    output = testing.format_test_run(run, failing_at_start=failing_at_start(ctx.scratch))
    extra = {}
    if start is not None:
        output = _side_by_side(start, run, copied, output)
        extra = {"start_tests": dict(start.outcomes), "start_exit_code": start.exit_code, "start_timed_out": start.timed_out}
    return ToolResult(
        output=output,
        data={**extra, 
            "tests": dict(run.outcomes),
            "framework": run.framework,
            "exit_code": run.exit_code,
            "build_failed": run.build_failed,
            "timed_out": run.timed_out,
            "duration_s": run.duration_s,
            "run_dir": run.run_dir,
        },
    )


def _side_by_side(start: testing.TestRun, now: testing.TestRun, copied: list[str], now_text: str, most: int = 40) -> str:
    """``run_tests`` with ``on_start``: each test's outcome at the start and now, then both runs' reports."""
    ids = sorted(set(start.outcomes) | set(now.outcomes))
    lines = [f"{len(ids)} test{'' if len(ids) == 1 else 's'}: on the starting code -> now"]
    for test_id in ids[:most]:
        before, after = start.outcomes.get(test_id, "not run"), now.outcomes.get(test_id, "not run")
        mark = "  (reproduces: fails at the start, passes now)" if before in ("failed", "error") and after == "passed" else ""
        lines.append(f"  {test_id}: {before} -> {after}{mark}")
    if len(ids) > most:
        lines.append(f"  … and {len(ids) - most} more")
    shown = ", ".join(copied[:10]) + (f" and {len(copied) - 10} more" if len(copied) > 10 else "") if copied else "none changed"
    lines += ["", f"On the starting code (test files as they are now: {shown}):", testing.format_test_run(start), "", "Now:", now_text]
    return "\n".join(lines)


class StaticCheckArgs(BaseModel):
    path: str = Field("", description="file or folder to check, relative to the repository root; empty for the whole repository")
    all: bool = Field(False, description="true to also list the findings that were already there before this run (by default they are only counted)")


@tool
def static_check(args: StaticCheckArgs, ctx: ToolContext) -> ToolResult:
    """Run static checks: ruff on Python files, javac -Xlint:all on Java files. Lists the findings this run's changes introduced as 'path:line: message' (compared with the files at the start, so an edit that shifts lines changes nothing) and counts the ones that were already there.

    Args: ``StaticCheckArgs``. Returns a result whose ``data`` is ``{"findings": {checker: [line, ...]},
    "preexisting": {checker: [line, ...]}, "compared": bool}``: the new findings (all of them when
    no starting files are known: ``compared`` false) and those already there.
    """
    target = ctx.resolve(args.path)
    reports = static.static_check(ctx.sandbox, ctx.workspace, ctx.scratch, target, baseline=ctx.baseline)
    where = "the repository" if target == ctx.workspace.resolve() else _rel(ctx, target)
    data = {
        "findings": {r.checker: list(r.findings) for r in reports},
        "preexisting": {r.checker: list(r.preexisting) for r in reports},
        "compared": all(r.compared for r in reports),
    }
    return ToolResult(output=static.format_reports(reports, where, show_all=args.all), data=data)


class ShellArgs(BaseModel):
    command: str = Field(min_length=1, description="a bash command line, run from the repository root, e.g. 'git log --oneline -5' or 'python -c \"import users\"'")
    timeout_s: float = Field(60.0, gt=0, le=600, description="seconds before the command is killed (at most 600)")


@tool
def shell(args: ShellArgs, ctx: ToolContext) -> ToolResult:
    """Run a bash command in the sandbox: a fresh process each time (no state carries over between calls), no network, only the repository writable, .git read-only; python, pip and pytest are those of the project's test environment. Returns the exit code, stdout and stderr.

    Args: ``ShellArgs``. Returns a result whose ``data`` is ``{"exit_code": n, "timed_out": bool,
    "stdout_bytes": n, "stderr_bytes": n, "duration_s": seconds}``.
    """
    if "\0" in args.command:
        raise ToolError("the command contains a NUL byte, which no program can receive; remove it")
    limits = ctx.sandbox.limits.model_copy(update={"timeout_s": args.timeout_s})
    sandbox, variables = shell_environment(ctx.sandbox, ctx.workspace, ctx.scratch)
    proc = sandbox.run(["bash", "-c", args.command], env=variables or None, limits=limits)
    status = f"timed out after {args.timeout_s:g} s (killed)" if proc.timed_out else f"exit code {proc.exit_code}"
    parts = [status]
    for name, text, total in (("stdout", proc.stdout, proc.stdout_bytes), ("stderr", proc.stderr, proc.stderr_bytes)):
        if total:
            dropped = total - len(text.encode())
            parts.append(f"--- {name} ---\n{text}" + (f"\n[... {dropped} more bytes not kept]" if dropped > 0 else ""))
    return ToolResult(
        output="\n".join(parts),
        is_error=not proc.ok,
        data={"exit_code": proc.exit_code, "timed_out": proc.timed_out, "stdout_bytes": proc.stdout_bytes,
              "stderr_bytes": proc.stderr_bytes, "duration_s": proc.duration_s},
    )


class FinishArgs(BaseModel):
    summary: str = Field(min_length=1, description="what was wrong, what you changed and how you checked it")


@tool(read_only=True)
def finish(args: FinishArgs, ctx: ToolContext) -> ToolResult:
    """Finish the task: call this once the fix is made and the tests pass, with a short summary of the change.

    Args: ``FinishArgs``. Returns a result with ``done=True`` and ``data["summary"]``.
    """
    summary = args.summary.strip()
    if not summary:
        raise ToolError("summary is empty; say what was wrong and what you changed")
    return ToolResult(output=f"Finished: {summary}", done=True, data={"summary": summary})


#: The coding plugin's tools, in the order they are offered to the model.
CODING_TOOLS: list[Tool] = [
    search_code, find_symbol, repo_map, view_file, edit_file, apply_patch, run_tests, static_check, shell, finish,
]
