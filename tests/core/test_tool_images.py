"""A tool result's images (``ToolResult.images``): the environment keeps a copy of each usable one and
says why it refused the others."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

from core.environment import Environment
from core.plugin import Task
from core.sandbox import open_sandbox
from core.state import ToolCall
from core.tools import ToolContext, ToolResult, tool
from tests.core.policy.test_images import png


class PathArgs(BaseModel):
    paths: list[str]


@tool
def show(args: PathArgs, ctx: ToolContext) -> ToolResult:
    """Return the given files as the result's images."""
    return ToolResult(output="shown", images=[Path(p) if Path(p).is_absolute() else ctx.workspace / p for p in args.paths])


class ImagePlugin:
    name = "images-test"
    description = "returns images"

    def system_prompt(self, task):
        return "sys"

    def tools(self):
        return [show]

    def setup(self, task, ctx):
        return ""

    def reward(self, task, trajectory):
        return 0.0


def test_images_are_copied_and_unusable_ones_are_named(tmp_path):
    workspace, scratch = tmp_path / "ws", tmp_path / "scratch"
    workspace.mkdir()
    scratch.mkdir()
    env = Environment(Task(plugin="images-test", instruction="x"), ImagePlugin(),
                      ToolContext(workspace=workspace, sandbox=open_sandbox(workspace, scratch), scratch=scratch))
    png(workspace / "render.png", 40)
    (workspace / "fake.png").write_text("not a png")
    outside = png(tmp_path / "outside.png", 90)
    (workspace / "notes.txt").write_text("text")
    seen = env.step(ToolCall(id="c1", name="show", arguments=f'{{"paths": ["render.png", "fake.png", "{outside}", "notes.txt"]}}'))
    (copy,) = seen.images
    assert copy == scratch / "images" / "call-1-0.png" and copy.read_bytes() == (workspace / "render.png").read_bytes()
    png(workspace / "render.png", 200)  # a later render overwrites the file: the observation's copy stays
    assert copy.read_bytes() != (workspace / "render.png").read_bytes()
    assert "[image fake.png not attached: its contents are not PNG]" in seen.content
    assert "[image outside.png not attached: it is outside the workspace and scratch]" in seen.content
    assert "[image notes.txt not attached: only .png, .jpg and .jpeg files are shown to the model]" in seen.content
    assert env.step(ToolCall(id="c2", name="show", arguments='{"paths": []}')).images == ()
