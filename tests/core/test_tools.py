"""Typed tools: schemas from pydantic models, argument validation, workspace-confined paths."""

from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from core.errors import ToolError
from core.tools import Tool, ToolContext, ToolResult, tool


class GreetArgs(BaseModel):
    name: str = Field(description="who to greet")
    times: int = Field(1, ge=1, le=3, description="how often")


@tool
def greet(args: GreetArgs, ctx: ToolContext) -> str:
    """Greet someone.

    Longer text that is not part of the description.
    """
    return " ".join([f"hello {args.name}"] * args.times)


def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(workspace=tmp_path, sandbox=None, scratch=tmp_path / "scratch")  # type: ignore[arg-type]


def test_schema_is_an_openai_function_from_the_model():
    schema = greet.schema()
    assert schema["type"] == "function"
    fn = schema["function"]
    assert fn["name"] == "greet"
    assert fn["description"] == "Greet someone."
    assert fn["parameters"]["required"] == ["name"]
    assert fn["parameters"]["properties"]["times"]["maximum"] == 3


def test_call_validates_and_runs(tmp_path):
    assert greet({"name": "ada", "times": 2}, ctx(tmp_path)).output == "hello ada hello ada"
    assert greet('{"name": "bob"}', ctx(tmp_path)).output == "hello bob"


@pytest.mark.parametrize(
    "arguments, expected",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ({"times": 2}, "name: Field required"),
        ({"name": "x", "times": 9}, "times: Input should be less than or equal to 3"),
    ],
)
def test_bad_arguments_become_error_results(tmp_path, arguments, expected):
    result = greet(arguments, ctx(tmp_path))
    assert result.is_error
    assert expected in result.output


def test_tool_without_model_or_docstring_is_rejected():
    with pytest.raises(TypeError, match="pydantic model"):
        tool(lambda args, ctx: "x")

    def undocumented(args: GreetArgs, ctx: ToolContext) -> str:
        return ""

    with pytest.raises(TypeError, match="docstring"):
        tool(undocumented)


def test_resolve_keeps_paths_inside_the_workspace(tmp_path):
    (tmp_path / "inside").mkdir()
    (tmp_path / "link").symlink_to("/etc")
    c = ctx(tmp_path)
    assert c.resolve("inside") == tmp_path.resolve() / "inside"
    assert c.resolve("") == tmp_path.resolve()
    for bad in ["../x", "/etc/passwd", "link/passwd", "inside/../../x"]:
        with pytest.raises(ToolError, match="outside the repository"):
            c.resolve(bad)


def test_tool_errors_from_the_function_become_observations(tmp_path):
    class Empty(BaseModel):
        pass

    def boom(args: Empty, ctx: ToolContext) -> ToolResult:
        raise ToolError("the file is gone")

    t = Tool(name="boom", description="fails", args_model=Empty, fn=boom)
    result = t({}, ctx(tmp_path))
    assert result.is_error and result.output == "the file is gone"
