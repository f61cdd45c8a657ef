"""One Horizon episode opened for a trainer's rollout: a task spec in, an ``Environment`` out.

A trainer that rolls out episodes itself (TRL's ``environment_factory``: ``core.trainers.trl``)
names each task by the same fields verl's ``create_kwargs`` carry (``core.export.tasks``):
``plugin``, ``repo`` (the folder copied into the workspace; empty: none), ``start_tree`` (the git
tree hash the copy must have; empty: not checked), ``instruction`` and ``metadata``
(``Task.metadata``, as JSON text or a dict). ``open_episode`` builds what ``core.runner.Run.start``
builds for a run, without the run store: ``<HORIZON_HOME>/episodes/<id>/`` with the workspace
copy, ``scratch/`` and ``baseline.git`` (``Environment.prepare``), the sandbox and tool context
(``Environment.open``) and the plugin's set-up (``Environment.reset``). Episodes sit beside
``runs/``, not under /tmp: the bwrap sandbox mounts its own /tmp and hides the home folder.

verl's tool adapter (``core.trainers.verl``) opens its episodes here too, from its create kwargs.
"""

from __future__ import annotations

import json
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import workspace as ws
from core.config import horizon_home
from core.environment import MAX_OBSERVATION_CHARS, Environment
from core.errors import UserError
from core.plugin import Plugin, Task, load_plugin
from core.state import Message

__all__ = ["OpenEpisode", "episodes_dir", "open_episode", "task_from_spec"]


def episodes_dir(home: Path | None = None) -> Path:
    """The folder holding one subfolder per open trainer episode (``$HORIZON_HOME/episodes``)."""
    return (home or horizon_home()) / "episodes"


def task_from_spec(spec: dict[str, Any]) -> Task:
    """The ``Task`` a row names (``plugin``, ``instruction``, ``repo``, ``metadata``; module docstring).

    Raises:
        UserError: no plugin named, or ``metadata`` is neither a JSON object (text) nor a dict.
    """
    name = spec.get("plugin")
    if not name or not isinstance(name, str):
        raise UserError("the task names no plugin (a 'plugin' column); build the rows with core.trainers.trl.suite_rows "
                        "or agent export --format trl-env")
    metadata = spec.get("metadata")
    if isinstance(metadata, str):
        try:
            metadata = json.loads(metadata) if metadata.strip() else {}
        except json.JSONDecodeError as exc:
            raise UserError(f"the task's metadata is not JSON ({exc.msg} at position {exc.pos}); it is Task.metadata as JSON text") from None
    if not isinstance(metadata or {}, dict):
        raise UserError(f"the task's metadata must be a JSON object, not {type(metadata).__name__}")
    repo = spec.get("repo") or None
    return Task(plugin=name, instruction=str(spec.get("instruction") or ""), repo=Path(repo) if repo else None,
                metadata=dict(metadata or {}))


@dataclass
class OpenEpisode:
    """An episode ready for its first tool call.

    Attributes:
        folder: ``<HORIZON_HOME>/episodes/<id>`` (workspace, scratch, baseline.git); delete it to close.
        env: the episode's ``Environment`` (set-up done).
        opening: the opening messages ``Environment.reset`` returned (system prompt, task with set-up).
    """

    folder: Path
    env: Environment
    opening: list[Message]

    def close(self) -> None:
        """Run the plugin's teardown and delete the episode's folder (whatever the teardown did)."""
        try:
            self.env.close()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)


def open_episode(spec: dict[str, Any], *, plugin: Plugin | None = None, home: Path | None = None, isolated: bool = True,
                 max_observation_chars: int = MAX_OBSERVATION_CHARS) -> OpenEpisode:  # fmt: skip
    """Build an episode from a task spec (module docstring) as ``core.runner.Run.start`` builds a run.

    Args:
        spec: ``plugin``, ``instruction``, ``repo``, ``start_tree``, ``metadata``.
        plugin: the plugin, when the caller has loaded it (default ``load_plugin(spec["plugin"])``).
        home: Horizon's home (``episodes/`` goes there; default ``$HORIZON_HOME`` or ``~/.horizon``).
        isolated: run commands in the bwrap sandbox (False: like ``--no-sandbox``).
        max_observation_chars: each tool call's output budget (``Environment``).

    Raises:
        PluginNotFound, UserError: unknown plugin, bad metadata, the repository is missing on this
            machine, the plugin's ``validate`` refused the task, the copied files are not the
            spec's ``start_tree``, or the sandbox cannot be made.
        SandboxUnavailable: isolation is on and bwrap cannot start here.
    """
    task = task_from_spec(spec)
    plugin = plugin or load_plugin(task.plugin)
    validate = getattr(plugin, "validate", None)
    if validate is not None:
        validate(task)
    if task.repo is not None and not task.repo.is_dir():
        raise UserError(f"the task's starting repository {task.repo} is missing on this machine; the rollout workers need "
                        "the same path, or build the rows again where they run")
    folder = episodes_dir(home) / uuid.uuid4().hex
    try:
        Environment.prepare(task, folder)
        expected = spec.get("start_tree") or ""
        if expected and (tree := ws.save_tree(folder / "workspace", folder / "baseline.git")) != expected:
            raise UserError(f"the files of {task.repo} (tree {tree[:12]}) are not the task's starting files (tree {expected[:12]}): "
                            "the repository changed since the rows were built; restore it or build them again")
        env = Environment.open(task, folder, isolated=isolated, plugin=plugin, max_observation_chars=max_observation_chars)
        try:
            opening = env.reset()
        except BaseException:
            env.close()
            raise
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return OpenEpisode(folder=folder, env=env, opening=opening)
