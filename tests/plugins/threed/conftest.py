"""Fixtures for the 3D plugin: a tool context on a private workspace with the real sandbox, and
the worker it starts, stopped after each test."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.sandbox import open_sandbox
from core.tools import ToolContext
from plugins.threed.tools import close_worker, worker

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "threed"
MESHES = ROOT / ".." / "shared" / "data" / "meshes"


@pytest.fixture
def ctx(tmp_path):
    """A ToolContext on an empty workspace (no task.json: a free-form scene in scene.blend)."""
    workspace, scratch = tmp_path / "ws", tmp_path / "scratch"
    workspace.mkdir()
    scratch.mkdir()
    context = ToolContext(workspace=workspace, sandbox=open_sandbox(workspace, scratch), scratch=scratch)
    yield context
    close_worker(context)


@pytest.fixture(scope="module")
def shared_ctx(tmp_path_factory):
    """One workspace and one Blender worker for a whole test module (starting Blender costs
    seconds); ``scene_ctx`` gives it to each test on a fresh scene."""
    root = tmp_path_factory.mktemp("threed-shared")
    (root / "ws").mkdir()
    (root / "scratch").mkdir()
    context = ToolContext(workspace=root / "ws", sandbox=open_sandbox(root / "ws", root / "scratch"), scratch=root / "scratch")
    yield context
    close_worker(context)


@pytest.fixture
def scene_ctx(shared_ctx):
    """The module's shared context (``shared_ctx``) on a fresh, empty scene."""
    worker(shared_ctx).call("new_scene", {})
    return shared_ctx


@pytest.fixture
def meshes() -> Path:
    """The shared real meshes (skips when ../shared/data is not there)."""
    if not MESHES.is_dir():
        pytest.skip(f"real test meshes not found at {MESHES} (see ../shared/data/README)")
    return MESHES
