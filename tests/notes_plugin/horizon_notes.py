"""``notes``: the smallest real plugin, so that core's tests need no domain plugin.

It is installed for the tests the way a third-party plugin is: this folder holds the module and a
``horizon_notes-1.0.dist-info`` whose ``entry_points.txt`` registers ``notes`` in the
``horizon.plugins`` group; the ``notes_plugin`` fixture (``tests/conftest.py``) puts the folder
on ``sys.path`` and ``PYTHONPATH``, and ``core.plugin.discover`` finds it as it finds any other.
It imports only ``core.api``, as every plugin must.

The episode: a folder of text files (``Task.repo``). Tools: ``view_file`` (lines of a file, fit
to the output budget), ``write_file`` (a whole file), ``edit_file`` (one exact replacement),
``shell`` (a command in the sandbox), ``finish``. Reward: the file named by
``task.metadata["file"]`` (default ``ANSWER.txt``) holds ``task.metadata["expect"]``
(default: the first line of the folder's ``CHECK.txt`` at the episode's end when there is one,
else the text ``done``); 1.0 when it does, else 0.0 (version ``notes/1``). ``CHECK.txt`` is thus
what the reward checks against (``is_checker_input``): an episode that edits it hacks the reward,
as editing a test does in the coding plugin, and the export's gates flag it. ``validate``
refuses an answer file outside the folder before a run is made.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from pydantic import BaseModel, Field

from core.api import (
    RewardComponent,
    RewardResult,
    SandboxLimits,
    Task,
    Tool,
    ToolContext,
    ToolError,
    ToolResult,
    Trajectory,
    UserError,
    read_regular,
    tool,
    write_new,
)


class ViewArgs(BaseModel):
    path: str = Field(description="file path relative to the folder")
    start_line: int = Field(1, ge=1, description="first line shown (1-based)")
    end_line: int | None = Field(None, ge=1, description="last line shown; default: the end")


class WriteArgs(BaseModel):
    path: str = Field(description="file path relative to the folder")
    text: str = Field(description="the file's new content")


class EditArgs(BaseModel):
    path: str = Field(description="file path relative to the folder")
    old_text: str = Field(description="text that occurs exactly once in the file")
    new_text: str = Field(description="its replacement")


class ShellArgs(BaseModel):
    command: str = Field(description="a bash command, run in the folder")


class FinishArgs(BaseModel):
    summary: str = Field(description="what was done")


def _text(ctx: ToolContext, path: str) -> str:
    target = ctx.resolve(path)
    if not target.is_file():
        raise ToolError(f"{path} does not exist or is not a file; list the files with shell 'ls'")
    try:
        return read_regular(target).decode("utf-8", errors="replace")
    except OSError as exc:
        raise ToolError(f"cannot read {path!r}: {exc.strerror or exc}; list the files with shell 'ls'") from None


@tool(read_only=True, reads_lines=True)
def view_file(args: ViewArgs, ctx: ToolContext) -> str:
    """Show lines of a file, numbered."""
    lines = _text(ctx, args.path).splitlines()
    end = min(args.end_line or len(lines), len(lines))
    return "\n".join(f"{n}: {lines[n - 1]}" for n in range(args.start_line, end + 1)) or "(no lines)"


@tool
def write_file(args: WriteArgs, ctx: ToolContext) -> str:
    """Write a whole file (made, or replaced)."""
    target = ctx.resolve(args.path)
    target.parent.mkdir(parents=True, exist_ok=True)
    write_new(target, args.text)
    return f"wrote {args.path} ({len(args.text)} characters)"


@tool
def edit_file(args: EditArgs, ctx: ToolContext) -> str:
    """Replace text that occurs exactly once in a file."""
    text = _text(ctx, args.path)
    if text.count(args.old_text) != 1:
        raise ToolError(f"old_text occurs {text.count(args.old_text)} times in {args.path}; give text that occurs once")
    write_new(ctx.resolve(args.path), text.replace(args.old_text, args.new_text))
    return f"edited {args.path}"


@tool
def shell(args: ShellArgs, ctx: ToolContext) -> ToolResult:
    """Run a bash command in the sandbox (no network), in the folder."""
    result = ctx.sandbox.run(["bash", "-c", args.command], limits=SandboxLimits(timeout_s=30))
    output = (result.stdout + result.stderr).rstrip() or "(no output)"
    return ToolResult(output=f"{output}\n[exit {result.exit_code}]", is_error=not result.ok)


@tool(read_only=True)
def finish(args: FinishArgs, ctx: ToolContext) -> ToolResult:
    """End the episode."""
    if not args.summary.strip():
        raise ToolError("summary is empty; say what was done")
    return ToolResult(output=f"Finished: {args.summary.strip()}", done=True, data={"summary": args.summary.strip()})


def _check_text(ctx: ToolContext) -> str:
    """The first line of the workspace's CHECK.txt, stripped; "" when there is none."""
    try:
        return read_regular(ctx.workspace / "CHECK.txt").decode("utf-8", errors="replace").partition("\n")[0].strip()
    except OSError:
        return ""


class NotesPlugin:
    """Text files in a folder, and a reward that reads one of them."""

    name = "notes"
    description = "edit text files in a folder (Horizon's test plugin)"

    def system_prompt(self, task: Task) -> str:
        return "You edit text files in a folder. Call finish when the task is done."

    def tools(self) -> list[Tool]:
        return [view_file, write_file, edit_file, shell, finish]

    def validate(self, task: Task) -> None:
        """Refuse, before a run is made, an answer file outside the folder (the reward reads it).

        Raises:
            UserError: ``task.metadata["file"]`` is not a relative path inside the folder.
        """
        name = task.metadata.get("file", "ANSWER.txt")
        if not isinstance(name, str) or not name or PurePosixPath(name).is_absolute() or ".." in PurePosixPath(name).parts:
            raise UserError(f"metadata file {name!r}: the answer file must be a path inside the task's folder, e.g. ANSWER.txt")

    def setup(self, task: Task, ctx: ToolContext) -> str:
        files = sorted(p.relative_to(ctx.workspace).as_posix() for p in ctx.workspace.rglob("*") if p.is_file() and ".git" not in p.parts)
        return "Files: " + (", ".join(files) or "none")

    def reward(self, task: Task, trajectory: Trajectory) -> RewardResult:
        name = str(task.metadata.get("file", "ANSWER.txt"))
        if trajectory.context is None:
            return RewardResult.not_applicable("notes/1", "no workspace to read")
        expect = str(task.metadata.get("expect", "") or _check_text(trajectory.context) or "done")
        try:
            found = read_regular(trajectory.context.workspace / name).decode("utf-8", errors="replace")
        except OSError:
            found = ""
        ok = expect in found
        component = RewardComponent(value=1.0 if ok else 0.0, detail={"file": name, "found": ok})
        return RewardResult(reward=component.value, correct=ok, version="notes/1", components={"answer": component},
                            summary=f"{name} {'holds' if ok else 'does not hold'} {expect!r}")

    def is_checker_input(self, path: str) -> bool:
        """Whether a patch's file (relative, ``/``-separated) is one the reward checks against: CHECK.txt."""
        return path == "CHECK.txt"
