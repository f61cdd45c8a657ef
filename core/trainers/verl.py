"""verl's tool interface over Horizon episodes: ``HorizonTool``, and ``compute_score`` for verl's reward.

``agent export --format verl`` (``core.export.tasks``) writes a task Parquet whose rows carry
``extra_info.tools_kwargs = {tool: {"create_kwargs": {...}}}`` and a tool config YAML naming
``core.trainers.verl.HorizonTool`` once per tool. verl builds one ``HorizonTool`` per entry
(``verl/tools/tool_registry.py``, ``initialize_tools_from_config``) and drives it through
``verl.tools.base_tool.BaseTool`` (read from verl 0.9.1's wheel and 0.5.0's)::

    async create(instance_id=None, **kwargs) -> (instance_id, ToolResponse)    # 0.5.0: instance_id only
    async execute(instance_id, parameters: dict, **kwargs) -> (ToolResponse, step reward, metrics dict)
    async calc_reward(instance_id, **kwargs) -> float
    async release(instance_id, **kwargs) -> None

verl calls it in one of two ways, and both are handled here:

- Per trajectory (the SGLang multi-turn rollout, ``verl/workers/rollout/sglang_rollout/
  sglang_rollout.py`` up to 0.5.x): every tool's ``create(request_id, **create_kwargs)`` when
  the trajectory starts, ``execute(request_id, arguments)`` per tool call, then every tool's
  ``calc_reward(request_id)`` and ``release(request_id)`` at the end. ``request_id`` (a fresh
  ``uuid4`` per sample) is the episode's key: the episode is opened by the first ``create``,
  shared by all the tools, judged once (the first ``calc_reward``; a later call reuses the
  verdict unless a tool call came in between) and closed by the last ``release``.
- Per tool call (``ToolAgentLoop``, ``verl/experimental/agent_loop/tool_agent_loop.py``, the
  ``tool_agent`` agent loop of verl 0.5 to 0.9.1): ``create(create_kwargs=...)`` with no
  instance id, ``execute(id, arguments, agent_data=...)`` and ``release(id)`` around every
  single call, and no ``calc_reward``. The one object that lives exactly as long as the
  trajectory is ``agent_data`` (``AgentData``); its ``request_id`` is not usable as a key
  (``det-<priority>`` under ``full_determinism``, the same for different samples). So the
  episode's key is a fresh id kept in ``agent_data.extra_fields["horizon_episode"]``; the
  episode is opened by the trajectory's first call and closed when ``agent_data`` is
  garbage-collected (``weakref.finalize``), or by ``close_all``. Since nothing tells a tool that
  the trajectory ended, the plugin's reward is computed when the model calls the episode's
  ending tool (``finish``: a result with ``done``) and written to
  ``extra_fields["horizon_reward"]``; verl hands ``extra_fields`` to the reward function in
  ``extra_info`` (``experimental/reward_loop/reward_manager/naive.py``), where ``compute_score``
  below reads it. Limit: a trajectory that never calls ``finish`` (turn or length limit) is
  scored 0.0 there, where Horizon's own loop would still judge its final files.

An episode is what ``core.runner.Run.start`` builds for a run, without the run store: the
repository copied into ``<HORIZON_HOME>/episodes/<id>/workspace`` (not under /tmp: the bwrap
sandbox mounts its own /tmp and hides the home folder, and episodes sit beside ``runs/`` like
runs do), snapshotted into ``baseline.git`` (its tree must equal the exported ``start_tree``,
so that the files are those the prompt describes), the sandbox, the ``ToolContext`` and the
plugin's ``setup`` (``core.environment.Environment.open`` and ``reset``, as the runner does).
Tool calls of one episode run one at a time, in the order they arrive, in a worker thread (a
test run takes seconds; other trajectories go on meanwhile), through ``Environment.step``: the
loop's error policy (an unknown tool, bad arguments, ``ToolError``, an unchecked ``OSError`` are
error observations), its output cap (``max_observation_chars`` in the tool config, default the
loop's 8,000 characters: the whole output saved in the workspace, the cut naming the lines left
out) and its stuck detector (a warning appended; a stop ends the episode as ``stuck``, judged
then like ``finish``). So a policy trained through verl sees the observations it is evaluated
with (``tests/core/test_environment.py`` proves it on one episode through both paths); only the
loop's budget note (steps and tokens left under ``agent run``'s limits) is not added, since
verl's own turn and length limits govern the rollout.

"Not applicable" rewards (``core.reward``: nothing to judge) have no place in verl's float:
``calc_reward`` and ``compute_score`` give 0.0 for them, log a warning, and ``compute_score``
says so in its ``horizon_scored`` field, so that a trainer can filter such samples out. A reward
that raises is no reason to stop a rollout either: it is logged, ``execute`` names it in the
``finish`` observation and its ``reward_failed`` metric, and the sample gets 0.0, not scored.

Without verl installed, ``HorizonTool`` subclasses a local stand-in with the same methods and
``ToolResponse`` is a local model with verl's fields (``text``, ``image``, ``video``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import time
import uuid
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel

# verl imports this file by its module name (``tool_registry.get_tool_class``) and keeps a module
# that failed half-way in ``sys.modules``: its next attempt then says only "no attribute
# 'HorizonTool'". So a failed import of Horizon is kept and raised, with what failed, when verl
# builds the tool (``HorizonTool.__init__``).
try:
    from core.environment import MAX_OBSERVATION_CHARS, Environment, Observation
    from core.errors import UserError
    from core.plugin import Task
    from core.reward import RewardResult, Trajectory
    from core.state import ToolCall
    from core.tools import ToolResult
    from core.trainers.episodes import episodes_dir, open_episode
except ImportError as _exc:  # pragma: no cover - exercised in a subprocess by the tests
    _IMPORT_ERROR: ImportError | None = _exc

    class UserError(Exception):  # type: ignore[no-redef]  # the name the module's code raises
        """Stand-in: Horizon could not be imported."""
else:
    _IMPORT_ERROR = None

__all__ = ["EPISODE_FIELD", "REWARD_ERROR_FIELD", "REWARD_FIELD", "SCORED_FIELD", "HorizonTool", "ToolResponse", "close_all", "compute_score", "episodes_dir"]

log = logging.getLogger(__name__)

#: ``agent_data.extra_fields`` keys: the trajectory's episode id, and its reward once judged.
EPISODE_FIELD = "horizon_episode"
REWARD_FIELD = "horizon_reward"
SCORED_FIELD = "horizon_scored"
#: ``agent_data.extra_fields`` key set when the plugin's reward raised: why (the reward is then 0.0, not scored).
REWARD_ERROR_FIELD = "horizon_reward_error"

try:  # verl imports torch and Ray: present on a training node, never required by Horizon
    from verl.tools.base_tool import BaseTool as _Base
    from verl.tools.schemas import OpenAIFunctionToolSchema, ToolResponse
except ImportError:
    OpenAIFunctionToolSchema = None  # type: ignore[assignment,misc]

    class ToolResponse(BaseModel):  # type: ignore[no-redef]
        """Stand-in for ``verl.tools.schemas.ToolResponse``: what a tool call shows the model."""

        text: str | None = None
        image: list[Any] | None = None
        video: list[Any] | None = None

    class _Base:  # type: ignore[no-redef]
        """Stand-in for ``verl.tools.base_tool.BaseTool``: its constructor and attributes."""

        def __init__(self, config: dict, tool_schema: Any):
            self.config = config
            self.tool_schema = tool_schema
            function = tool_schema["function"] if isinstance(tool_schema, dict) else tool_schema.function
            self.name = function["name"] if isinstance(function, dict) else function.name

        def get_openai_tool_schema(self) -> Any:
            """The tool's OpenAI function schema, as given."""
            return self.tool_schema


@dataclass
class _Episode:
    """One trajectory's Horizon episode: its folder and its ``Environment`` (``core.environment``).

    ``exit_status`` is ``submitted`` after ``finish``, ``stuck`` after the stuck detector's stop,
    as the loop records them; then no further call runs.
    """

    key: str
    folder: Path
    env: Environment
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    refs: int = 0
    exit_status: str | None = None
    tool_data: list[dict[str, Any]] = field(default_factory=list)
    verdict: RewardResult | None = None
    calls: int = 0

    @property
    def task(self) -> Task:
        """The episode's task."""
        return self.env.task

    @property
    def done(self) -> bool:
        """The episode has ended (``finish`` was called, or the stuck detector stopped it)."""
        return self.exit_status is not None


_EPISODES: dict[str, _Episode] = {}  # open episodes by key, shared by every HorizonTool of the process
_OPENING: dict[str, asyncio.Future[_Episode]] = {}  # episodes being opened, so concurrent callers share one
_CALLS: dict[str, tuple[dict[str, Any], str | None]] = {}  # per-call ids: (create kwargs, episode key once known)


def _open_episode(key: str, kwargs: dict[str, Any], config: dict[str, Any]) -> _Episode:
    """Build an episode from verl's create kwargs (blocking; runs in a thread).

    ``core.trainers.episodes.open_episode`` does the work, as it does for TRL's environments: the
    kwargs are the export's task spec (``plugin``, ``instruction``, ``repo``, ``start_tree``,
    ``metadata``), the plugin defaulting to the tool config's ``plugin``, Horizon's home to its
    ``horizon_home``. The sandbox shows the workspace a second time at the task metadata's
    ``workspace_alias`` (``/app`` for a Terminal-Bench task), as ``core.runner`` does.

    Raises:
        PluginNotFound, UserError: unknown plugin, the exported repository is missing on this
            machine, the plugin's ``validate`` refused the task, the copied files are not the
            exported ``start_tree``, or the sandbox cannot show the workspace at its alias.
        SandboxUnavailable: isolation is on and bwrap cannot start here.
    """
    spec = {**kwargs, "plugin": kwargs.get("plugin") or config.get("plugin")}
    home = Path(config["horizon_home"]) if config.get("horizon_home") else None
    opened = open_episode(spec, home=home, isolated=config.get("isolated", True),
                          max_observation_chars=int(config.get("max_observation_chars") or MAX_OBSERVATION_CHARS))  # fmt: skip
    return _Episode(key=key, folder=opened.folder, env=opened.env)


def _close_episode(key: str) -> None:
    """Tear an episode down (the plugin's ``teardown``) and delete its folder; unknown keys are ignored."""
    episode = _EPISODES.pop(key, None)
    if episode is None:
        return
    try:
        episode.env.close()
    except Exception:  # the folder must go whatever the plugin did
        log.exception("teardown of Horizon episode %s failed", key)
    finally:
        shutil.rmtree(episode.folder, ignore_errors=True)


def close_all() -> int:
    """Close every open episode of this process (a worker shutting down, a test); return how many."""
    keys = list(_EPISODES)
    for key in keys:
        _close_episode(key)
    return len(keys)


async def _attach(key: str, kwargs: dict[str, Any], config: dict[str, Any]) -> _Episode:
    """The open episode ``key``, opening it from ``kwargs`` if it is new; concurrent callers share one opening."""
    if key in _EPISODES:
        return _EPISODES[key]
    opening = _OPENING.get(key)
    if opening is None:
        opening = _OPENING[key] = asyncio.ensure_future(asyncio.to_thread(_open_episode, key, kwargs, config))
        try:
            _EPISODES[key] = await opening
        finally:
            _OPENING.pop(key, None)
        return _EPISODES[key]
    return await asyncio.shield(opening)


def _step(episode: _Episode, name: str, parameters: Any) -> Observation:
    """Run one tool call through the episode's ``Environment``, as the loop does (the same error
    policy, output cap and stuck detector), with an id of its own (verl gives none)."""
    episode.calls += 1
    arguments = parameters if isinstance(parameters, str) else json.dumps(parameters)
    call = ToolCall(id=f"verl_{episode.calls}", name=name, arguments=arguments)
    try:
        return episode.env.step(call)
    except Exception as exc:  # a bug in a tool ends a run of the loop (resumably); a rollout goes on
        log.exception("Horizon episode %s: the %s tool crashed", episode.key, name)
        failed = ToolResult(output=f"{name} failed: {type(exc).__name__}: {exc}", is_error=True)
        return Observation(content=failed.output, result=failed, malformed=False, digest="")


async def _judge(episode: _Episode) -> RewardResult:
    """The plugin's verdict on the episode as it is now (kept until the next tool call changes it)."""
    if episode.verdict is None:
        ctx = episode.env.ctx
        trajectory = Trajectory(tool_data=list(episode.tool_data), exit_status=episode.exit_status, workspace=ctx.workspace,
                                scratch=ctx.scratch, metadata=episode.task.metadata, context=ctx)  # fmt: skip
        episode.verdict = await episode.env.areward(trajectory)
    return episode.verdict


async def _judge_safely(episode: _Episode) -> tuple[RewardResult | None, str]:
    """``_judge``, with a reward that raises (a crash in the plugin, a wrong return type) caught:
    ``(verdict, "")``, or ``(None, "ExcType: message")`` when it failed (logged with its traceback).
    A failed verdict is not kept: the next call tries again."""
    try:
        return await _judge(episode), ""
    except Exception as exc:
        log.exception("Horizon episode %s: the %s plugin's reward failed; verl gets 0.0", episode.key, episode.task.plugin)
        return None, f"{type(exc).__name__}: {exc}"


def _scalar(result: RewardResult, key: str) -> float:
    """The verdict as verl's float: 0.0 when not applicable (logged)."""
    if result.applicable:
        return float(result.reward)
    log.warning("Horizon episode %s: reward not applicable (%s); verl gets 0.0", key, result.summary)
    return 0.0


class HorizonTool(_Base):
    """One Horizon tool as a verl tool: ``create`` opens the trajectory's episode, ``execute`` runs a call.

    verl builds one instance per tool config entry; all of them share the process's open
    episodes (see the module docstring for how a trajectory's episode is found).

    Args:
        config: the tool config entry's ``config``: ``type`` (``native``), ``plugin`` (used when
            create kwargs name none), and optionally ``horizon_home`` (where ``episodes/`` goes;
            default ``$HORIZON_HOME``) and ``isolated`` (False: no sandbox, like ``--no-sandbox``).
        tool_schema: the entry's OpenAI function schema (verl's ``OpenAIFunctionToolSchema``, or
            a dict without verl); its function name is the Horizon tool that ``execute`` runs.
    """

    def __init__(self, config: dict, tool_schema: Any):
        if _IMPORT_ERROR is not None:
            raise ImportError(f"core.trainers.verl.HorizonTool: Horizon could not be imported in this process "
                              f"({type(_IMPORT_ERROR).__name__}: {_IMPORT_ERROR}); install Horizon where verl's workers run "
                              "(pip install horizon-agents) or put its checkout first on PYTHONPATH") from _IMPORT_ERROR
        if isinstance(tool_schema, dict) and OpenAIFunctionToolSchema is not None:
            tool_schema = OpenAIFunctionToolSchema.model_validate(tool_schema)  # verl's BaseTool reads .function.name
        super().__init__(config, tool_schema)
        self.config = dict(config or {})

    async def create(self, instance_id: str | None = None, create_kwargs: dict[str, Any] | None = None,
                     **kwargs: Any) -> tuple[str, ToolResponse]:
        """Open (or join) the trajectory's episode.

        Args:
            instance_id: the trajectory's request id (per-trajectory rollout), or None (the agent
                loop's per-call use: a fresh call id is returned and the episode is opened by
                ``execute``, which knows the trajectory).
            create_kwargs: the row's ``create_kwargs`` when passed as one argument (agent loop);
                otherwise they are the keyword arguments (SGLang rollout): ``plugin``, ``repo``
                (the folder copied into the workspace), ``start_tree`` (git tree hash the copy
                must have), ``instruction`` and ``metadata`` (JSON text of ``Task.metadata``).

        Returns:
            ``(instance id, empty ToolResponse)``.

        Raises:
            PluginNotFound, UserError, SandboxUnavailable: the episode cannot start (see
                ``_open_episode``); only with an ``instance_id``.
        """
        options = dict(create_kwargs if create_kwargs is not None else kwargs)
        if instance_id is None:
            call_id = uuid.uuid4().hex
            _CALLS[call_id] = (options, None)
            return call_id, ToolResponse()
        episode = await _attach(instance_id, options, self.config)
        episode.refs += 1
        return instance_id, ToolResponse()

    async def _episode_for(self, instance_id: str, agent_data: Any) -> _Episode:
        """The episode a call belongs to: the instance's own, or the trajectory's for a per-call id."""
        if instance_id not in _CALLS:
            if instance_id not in _EPISODES:
                raise UserError(f"no open Horizon episode {instance_id!r}: create was not called, or it was released")
            return _EPISODES[instance_id]
        options, key = _CALLS[instance_id]
        if key is None:
            fields = getattr(agent_data, "extra_fields", None)
            if isinstance(fields, dict):
                key = fields.setdefault(EPISODE_FIELD, uuid.uuid4().hex)
            else:
                key = instance_id  # no trajectory given: the episode lives as long as this call
            _CALLS[instance_id] = (options, key)
        fresh = key not in _EPISODES
        episode = await _attach(key, options, self.config)
        if fresh and key != instance_id:
            try:
                weakref.finalize(agent_data, _close_episode, key)
            except TypeError:
                log.warning("Horizon episode %s cannot follow its trajectory's lifetime; close it with close_all()", key)
        return episode

    async def execute(self, instance_id: str, parameters: dict[str, Any] | str, **kwargs: Any) -> tuple[ToolResponse, float, dict]:
        """Run this tool's call in the episode; calls of one episode run one at a time, in order.

        Args:
            instance_id: from ``create``.
            parameters: the call's arguments (a dict, or JSON text), validated by the tool.
            **kwargs: ``agent_data`` (verl's ``AgentData``) in the agent loop; the rest is ignored.

        Returns:
            ``(observation, 0.0, metrics)``; metrics: ``duration_s`` (seconds), ``is_error``,
            ``done`` (the call ended the episode) and ``reward_failed`` (the plugin's reward,
            computed at ``done`` in the agent loop, raised) as floats 0/1, so that verl can
            average them. Every failure, the episode's own start and the reward included, is an
            observation, never an exception: a reward that raises is logged, its reason is
            appended to the observation and kept in ``extra_fields["horizon_reward_error"]``, and
            the trajectory's reward is 0.0 with ``horizon_scored`` False.
        """
        agent_data = kwargs.get("agent_data")
        start = time.perf_counter()
        reward_failed = False
        try:
            episode = await self._episode_for(instance_id, agent_data)
        except Exception as exc:  # noqa: BLE001 - the model sees why; the rollout goes on
            log.warning("Horizon episode for %s could not start: %s", self.name, exc)
            text = f"the Horizon episode could not start: {type(exc).__name__}: {exc}"
            metrics = {"duration_s": time.perf_counter() - start, "is_error": 1.0, "done": 0.0, "reward_failed": 0.0}
            return ToolResponse(text=text), 0.0, metrics
        async with episode.lock:
            if episode.done:
                why = "finish was called" if episode.exit_status == "submitted" else "the agent repeated itself"
                text = f"the episode has ended ({why}); no further tool calls are run"
                result = ToolResult(output=text, is_error=True)
            else:
                seen = await asyncio.to_thread(_step, episode, self.name, parameters)
                arguments = parameters if isinstance(parameters, str) else json.dumps(parameters)
                episode.tool_data.append({"tool": self.name, "arguments": arguments, "is_error": seen.result.is_error, "data": seen.result.data})
                episode.verdict = None  # the files may have changed
                episode.exit_status = "submitted" if seen.done else "stuck" if seen.stop else None
                result = ToolResult(output=seen.content, is_error=seen.result.is_error, done=episode.done, data=seen.result.data)
                if episode.done and isinstance(getattr(agent_data, "extra_fields", None), dict):
                    verdict, failure = await _judge_safely(episode)
                    if verdict is None:
                        agent_data.extra_fields.update({REWARD_FIELD: 0.0, SCORED_FIELD: False, REWARD_ERROR_FIELD: failure})
                        text = f"{result.output}\n\nthe episode's reward failed ({failure}); it counts as 0.0, not scored"
                        result = ToolResult(output=text, is_error=result.is_error, done=result.done, data=result.data)
                        reward_failed = True
                    else:
                        agent_data.extra_fields[REWARD_FIELD] = _scalar(verdict, episode.key)
                        agent_data.extra_fields[SCORED_FIELD] = verdict.applicable
        metrics = {"duration_s": time.perf_counter() - start, "is_error": float(result.is_error), "done": float(result.done),
                   "reward_failed": float(reward_failed)}
        return ToolResponse(text=result.output), 0.0, metrics

    async def calc_reward(self, instance_id: str, **kwargs: Any) -> float:
        """The plugin's reward for the episode as it is now, in [0, 1] (0.0 when not applicable, or
        when the reward raised: logged with its traceback).

        Raises:
            UserError: no open episode for ``instance_id``.
        """
        episode = await self._episode_for(instance_id, kwargs.get("agent_data"))
        async with episode.lock:
            verdict, _ = await _judge_safely(episode)
            return 0.0 if verdict is None else _scalar(verdict, episode.key)

    async def release(self, instance_id: str, **kwargs: Any) -> None:
        """Let go of ``instance_id``: a per-call id is forgotten (its episode lives on with the
        trajectory); a trajectory's episode is closed by its last ``release`` (teardown, folder deleted)."""
        if _CALLS.pop(instance_id, None) is not None:
            if instance_id in _EPISODES:  # a call without a trajectory: its own episode
                _close_episode(instance_id)
            return
        episode = _EPISODES.get(instance_id)
        if episode is None:
            return
        episode.refs -= 1
        if episode.refs <= 0:
            async with episode.lock:  # a call still running finishes first
                _close_episode(instance_id)


def compute_score(data_source: str, solution_str: str, ground_truth: str, extra_info: dict[str, Any] | None = None,
                  **kwargs: Any) -> dict[str, Any]:
    """verl's custom reward function for Horizon rows (``custom_reward_function.path`` = this file,
    ``.name = compute_score``): the reward ``HorizonTool`` recorded when the model called ``finish``.

    Args:
        data_source, solution_str, ground_truth: verl's arguments (unused: the episode was judged
            on its files, in its sandbox).
        extra_info: the row's ``extra_info`` with the trajectory's ``extra_fields`` merged in by
            verl's reward manager (``horizon_reward``, ``horizon_scored``).

    Returns:
        ``{"score": reward in [0, 1], "horizon_scored": bool}``: score 0.0 and scored False when
        the trajectory never called ``finish`` or the plugin's reward was not applicable.
    """
    info = extra_info or {}
    reward = info.get(REWARD_FIELD)
    scored = bool(info.get(SCORED_FIELD)) and reward is not None
    return {"score": float(reward) if reward is not None else 0.0, "horizon_scored": scored}
