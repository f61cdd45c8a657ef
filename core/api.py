"""Horizon's public face for plugins: everything a plugin imports from core comes from here.

A plugin writes ``from core.api import Plugin, Task, tool, ToolContext, ...`` and nothing else of
``core``; ``tests/core/test_api.py`` pins ``__all__`` (a change to this face is deliberate) and
checks that no module under ``plugins/`` imports another core module. Core's other modules may
change between versions; these names keep their meaning.

What is here, by concern:

- the contract (``core/plugin.py``): ``Plugin``, ``Task``, ``COMMANDS_GROUP``;
- tools (``core/tools.py``): ``tool`` (the decorator), ``Tool``, ``ToolContext``, ``ToolResult``;
- rewards (``core/reward.py``): ``RewardComponent``, ``RewardResult``, ``Trajectory``;
- errors (``core/errors.py``): ``HorizonError``, ``UserError`` (the user's input is wrong: say
  what and how to fix it), ``ToolError`` (a tool call failed: the model sees the message),
  ``NoReference`` (a task format's task has no reference solution: ``--policy reference`` skips it),
  ``SandboxUnavailable`` (a sandbox of the plugin's own cannot run commands);
- the sandbox (``core/sandbox/``): ``Sandbox``, ``SandboxLimits``, ``ProcessResult``,
  ``open_sandbox``, ``sandbox_like`` (the same kind on another folder), ``can_bind`` /
  ``with_binds`` (show more host folders), ``hidden_dirs`` / ``python_prefixes`` (what it hides
  and shows again), ``SCRATCH_WRITABLE``, ``SYSTEM_PATH``;
- containers (``core/sandbox/engine.py``, ``images.py``, ``container.py``): ``find_engine`` /
  ``engine_or_none`` (Docker Engine or Podman, whichever answers), ``build_task_image`` (a task's
  Dockerfile built on a local base, cached by its context), ``image_config``, ``export_workdir``,
  ``ContainerSandbox`` (commands in a running container of that image);
- files without following links (``core/safe_io.py``): ``read_regular``, ``write_new``,
  ``make_dirs``, ``remove_tree``;
- the episode's files (``core/workspace.py``): ``ALWAYS_EXCLUDED`` (never copied nor in a patch), ``snapshot``, ``save_tree``, ``diff_trees``,
  ``changed_paths``, ``start_tree``, ``start_files``, ``materialize``, ``make_parents``,
  ``content_only``, ``file_listing`` / ``record_test_outputs`` (files a test run wrote stay out of the patch);
- settings and data folders (``core/config.py``): ``horizon_home``, ``make_data_folder``,
  ``load_settings``;
- a plugin's own front end starting a run (``core/runner.py``, ``core/state.py``): ``Run``,
  ``make_policy``, ``policy_spec``, ``Limits``, ``Pricing``;
- task formats for ``agent eval`` (``core/eval/``): ``TaskFormat``, ``EvalTask``, ``TaskSpec``.

The last two groups load on first use (PEP 562 ``__getattr__``): they pull in the loop,
LangGraph and the evaluation, which a plugin's tools do not need.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from core.config import horizon_home, load_settings, make_data_folder
from core.errors import HorizonError, NoReference, SandboxUnavailable, ToolError, UserError
from core.plugin import COMMANDS_GROUP, Plugin, Task
from core.reward import RewardComponent, RewardResult, Trajectory
from core.safe_io import make_dirs, read_regular, remove_tree, write_new
from core.sandbox import (
    SCRATCH_WRITABLE,
    SYSTEM_PATH,
    ProcessResult,
    Sandbox,
    SandboxLimits,
    can_bind,
    hidden_dirs,
    open_sandbox,
    python_prefixes,
    sandbox_like,
    with_binds,
)
from core.sandbox.container import ContainerSandbox
from core.sandbox.engine import engine_or_none, find_engine
from core.sandbox.images import build_task_image, export_workdir, image_config
from core.state import Limits, Pricing
from core.tools import Tool, ToolContext, ToolResult, tool
from core.workspace import (
    ALWAYS_EXCLUDED,
    changed_paths,
    content_only,
    diff_trees,
    file_listing,
    make_parents,
    materialize,
    record_test_outputs,
    save_tree,
    snapshot,
    start_files,
    start_tree,
)

if TYPE_CHECKING:
    from core.eval.formats import TaskFormat
    from core.eval.tasks import EvalTask, TaskSpec
    from core.runner import Run, make_policy, policy_spec

__all__ = [
    "ALWAYS_EXCLUDED",
    "COMMANDS_GROUP",
    "SCRATCH_WRITABLE",
    "SYSTEM_PATH",
    "ContainerSandbox",
    "EvalTask",
    "HorizonError",
    "Limits",
    "NoReference",
    "Plugin",
    "Pricing",
    "ProcessResult",
    "RewardComponent",
    "RewardResult",
    "Run",
    "Sandbox",
    "SandboxLimits",
    "SandboxUnavailable",
    "Task",
    "TaskFormat",
    "TaskSpec",
    "Tool",
    "ToolContext",
    "ToolError",
    "ToolResult",
    "Trajectory",
    "UserError",
    "build_task_image",
    "can_bind",
    "changed_paths",
    "content_only",
    "diff_trees",
    "engine_or_none",
    "export_workdir",
    "file_listing",
    "find_engine",
    "hidden_dirs",
    "horizon_home",
    "image_config",
    "load_settings",
    "make_data_folder",
    "make_dirs",
    "make_parents",
    "make_policy",
    "materialize",
    "open_sandbox",
    "policy_spec",
    "python_prefixes",
    "read_regular",
    "record_test_outputs",
    "remove_tree",
    "sandbox_like",
    "save_tree",
    "snapshot",
    "start_files",
    "start_tree",
    "tool",
    "with_binds",
    "write_new",
]

#: Names loaded on first use: ``{name: module}``.
_LAZY = {
    "Run": "core.runner",
    "make_policy": "core.runner",
    "policy_spec": "core.runner",
    "TaskFormat": "core.eval.formats",
    "EvalTask": "core.eval.tasks",
    "TaskSpec": "core.eval.tasks",
}


def __getattr__(name: str) -> Any:
    """Load a name of ``_LAZY`` from its module the first time it is asked for."""
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'core.api' has no attribute {name!r}; the public names are core.api.__all__")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
