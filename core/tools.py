"""Typed tools: a function whose pydantic argument model is the JSON schema the model sees.

A tool is written as::

    class ViewArgs(BaseModel):
        path: str = Field(description="file path relative to the repository root")

    @tool
    def view_file(args: ViewArgs, ctx: ToolContext) -> ToolResult:
        \"\"\"Show a file with line numbers.\"\"\"
        ...

The docstring's first paragraph is the description the model reads; the argument model's
``model_json_schema()`` is the ``parameters`` of an OpenAI function schema
(https://platform.openai.com/docs/guides/function-calling).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from core.errors import ToolError

if TYPE_CHECKING:
    from core.sandbox import Sandbox


class ToolResult(BaseModel):
    """What one tool call returns.

    Attributes:
        output: text observation shown to the model.
        is_error: True when the call failed; the output says why and what to try.
        data: structured details kept in the trajectory (e.g. per-test outcomes), not shown.
        done: True when this call ends the episode (the ``finish`` tool).
        images: image files (PNG or JPEG, absolute paths inside the workspace or scratch) the
            call produced for the model to look at, e.g. a render. ``output`` must still say in
            words what they show: a text-only model sees only that, and a vision model sees the
            pixels of the latest few only (``core.policy.images``). The environment keeps a copy
            of each (``Environment.step``), so a later call that overwrites the file does not
            change what this observation showed.
    """

    output: str
    is_error: bool = False
    data: dict[str, Any] = {}
    done: bool = False
    images: list[Path] = []


@dataclass
class ToolContext:
    """What a tool may touch during one episode.

    Attributes:
        workspace: the episode's writable copy of the user's repository (absolute path).
        sandbox: runs processes confined to the workspace; every tool that starts a process
            must use it.
        scratch: run-private folder outside the workspace (test reports, full outputs).
        plugin_state: plugin-private data for this episode, e.g. the baseline test outcomes;
            plugins persist what must survive a resume under ``scratch`` themselves.
        baseline: the run's git database of its starting files (``core.workspace.snapshot``),
            outside the workspace, when the episode has one: a reward grades the patch against
            it (``core.workspace.diff`` and ``materialize``).
        output_limit: the most characters of ONE call's output the model is shown (the loop's
            ``max_observation_chars``; every call of a reply has the whole of it), or None when
            unknown. The loop cuts a longer output itself; a tool that can cut on meaningful
            boundaries fits its output to this (``view_file``: whole lines, naming the rest).
        progress: shows the user one line about a long step in progress (the set-up's copy,
            environment build and baseline tests: ``agent run`` prints it as a ``setup`` line), or
            None when nobody is watching; it may be called from another thread.
    """

    workspace: Path
    sandbox: Sandbox
    scratch: Path
    plugin_state: dict[str, Any] = field(default_factory=dict)
    baseline: Path | None = None
    output_limit: int | None = None
    progress: Callable[[str], None] | None = None

    def resolve(self, relative: str) -> Path:
        """Resolve a model-given path inside the workspace.

        Args:
            relative: a path relative to the workspace root ("" or "." for the root).

        Returns:
            The absolute path, guaranteed to lie inside the workspace.

        Raises:
            ToolError: the path escapes the workspace (``..``, absolute, or a symlink out), or it
                is no valid file name (NUL byte, over-long component, lone surrogate).
        """
        root = self.workspace.resolve()
        try:
            candidate = (root / relative).resolve()
            if any(len(part.encode()) > 255 for part in candidate.parts):  # encode: a lone surrogate names no file
                raise OSError("File name too long")
        except (ValueError, OSError) as exc:  # NUL bytes, names too long, undecodable text
            raise ToolError(f"{relative!r} is not a usable path ({exc}); use a plain path relative to the repository root") from None
        if candidate != root and root not in candidate.parents:
            raise ToolError(f"path {relative!r} is outside the repository; use a path relative to its root")
        return candidate


ToolFunction = Callable[[Any, ToolContext], "ToolResult | str"]


@dataclass(frozen=True)
class Tool:
    """A typed tool the model can call.

    Attributes:
        name: the function name the model uses.
        description: what the tool does, shown to the model.
        args_model: pydantic model validating the call's arguments.
        fn: ``fn(args, ctx) -> ToolResult | str``; may raise ``ToolError``.
        read_only: True when the tool never changes the workspace; the loop snapshots the
            workspace before every other tool call, so a call cut short by a crash is rolled
            back and re-run on resume instead of leaving half its effects behind.
        reads_lines: True when the tool shows lines of a workspace file given ``path``,
            ``start_line`` and ``end_line`` (1-based, inclusive): when the loop cuts a long
            output, it saves the whole text in the workspace and names this tool to read the
            lines left out.
    """

    name: str
    description: str
    args_model: type[BaseModel]
    fn: ToolFunction
    read_only: bool = False
    reads_lines: bool = False

    def schema(self) -> dict[str, Any]:
        """Return the OpenAI function-calling schema: ``{"type": "function", "function": {...}}``."""
        params = self.args_model.model_json_schema()
        params.pop("title", None)
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }

    def parse(self, arguments: dict[str, Any] | str) -> BaseModel:
        """Validate raw arguments (a dict, or the JSON text a server returned).

        Raises:
            ToolError: the text is not a JSON object, or the values fail validation; the message
                lists each problem so the model can correct the call.
        """
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as exc:
                raise ToolError(f"arguments of {self.name} are not valid JSON ({exc.msg} at position {exc.pos})") from None
            except (ValueError, RecursionError) as exc:  # integers past Python's digit limit, deep nesting
                raise ToolError(f"arguments of {self.name} could not be read: {type(exc).__name__}: {str(exc)[:200]}") from None
        if not isinstance(arguments, dict):
            raise ToolError(f"arguments of {self.name} must be a JSON object, got {type(arguments).__name__}")
        try:
            return self.args_model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'arguments'}: {err['msg']}" for err in exc.errors()
            )
            raise ToolError(f"invalid arguments for {self.name}: {problems}") from None

    def __call__(self, arguments: dict[str, Any] | str, ctx: ToolContext) -> ToolResult:
        """Validate ``arguments`` and run the tool; a ``ToolError`` becomes an error result."""
        try:
            result = self.fn(self.parse(arguments), ctx)
        except ToolError as exc:
            return ToolResult(output=str(exc), is_error=True)
        return result if isinstance(result, ToolResult) else ToolResult(output=str(result))


def tool(fn: ToolFunction | None = None, *, name: str | None = None, read_only: bool = False, reads_lines: bool = False) -> Any:
    """Make a ``Tool`` from ``fn(args: SomeModel, ctx: ToolContext)``.

    The argument model is read from the first parameter's annotation and the description from
    the docstring's first paragraph. Usable bare (``@tool``) or with options
    (``@tool(name=..., read_only=True, reads_lines=True)``; see ``Tool``).

    Raises:
        TypeError: the first parameter is not annotated with a pydantic model, or no docstring.
    """

    def build(f: ToolFunction) -> Tool:
        hints = inspect.get_annotations(f, eval_str=True)
        first = next(iter(inspect.signature(f).parameters))
        model = hints.get(first)
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise TypeError(f"tool {f.__name__}: first parameter must be annotated with a pydantic model")
        doc = inspect.getdoc(f)
        if not doc:
            raise TypeError(f"tool {f.__name__}: a docstring is required; it is the model's description")
        description = doc.split("\n\n")[0].replace("\n", " ")
        return Tool(name=name or f.__name__, description=description, args_model=model, fn=f, read_only=read_only,
                    reads_lines=reads_lines)  # fmt: skip

    return build(fn) if fn is not None else build
