"""The reward interface every plugin shares: a function of the task and the whole trajectory.

A reward function is any callable ``fn(task, trajectory)`` returning a ``RewardResult``, or an
awaitable of one (``async def``); ``evaluate``/``aevaluate`` call either kind. The result holds
the scalar reward, its named components (each a value in [0, 1] with a weight), whether the
outcome is correct, optional per-step rewards and the reward's version string, so that data
scored by different versions of a reward are never mixed silently.

"Not applicable" (the reward has nothing to judge: a finance question given to the coding
reward, an episode that never reached the end) is its own status, with ``reward`` None, never
0.0: an RL trainer must drop such a sample, not learn from it as a failure.

Every plugin's ``reward`` method is such a function (``core.plugin.Plugin``); the loop calls
it once the episode ends, with the live ``ToolContext`` in ``Trajectory.context`` so that it can
run commands in the episode's sandbox (the coding reward runs the tests), and stores the whole
result with the run (``core.store.RunStore.set_reward``). ``Trajectory.from_run`` rebuilds a
finished run's trajectory from its store.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable
from contextlib import closing
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, model_validator

from core.state import Message

if TYPE_CHECKING:  # core.plugin imports this module
    from core.plugin import Task
    from core.store import RunStore
    from core.tools import ToolContext

__all__ = [
    "NOT_APPLICABLE",
    "RewardComponent",
    "RewardFn",
    "RewardResult",
    "RewardStatus",
    "Trajectory",
    "aevaluate",
    "evaluate",
]


class RewardComponent(BaseModel):
    """One named part of a reward: a value in [0, 1], its weight, and what it was computed from."""

    value: float = Field(ge=0.0, le=1.0)
    weight: float = 1.0
    detail: dict[str, Any] = {}


class RewardStatus(str, Enum):
    """Whether a reward judged the episode (``scored``) or had nothing to judge."""

    SCORED = "scored"
    NOT_APPLICABLE = "not_applicable"


NOT_APPLICABLE = RewardStatus.NOT_APPLICABLE


class RewardResult(BaseModel):
    """A reward function's verdict on one episode.

    Attributes:
        status: ``scored``, or ``not_applicable`` (then ``reward`` and ``correct`` are None).
        reward: the scalar reward in [0, 1] (None when not applicable).
        components: named parts, each a value in [0, 1] with a weight (weight 0: a gate or a
            diagnostic that the scalar does not average in) and details.
        correct: whether the outcome counts as solved (None when not applicable).
        step_rewards: optional reward per step (model call), step 1 first; the trainer decides
            how to combine them with ``reward``.
        version: the reward's version string, e.g. ``"coding-tests/1"``; required.
        summary: one line saying why.
    """

    status: RewardStatus = RewardStatus.SCORED
    reward: float | None = Field(default=None, ge=0.0, le=1.0)
    components: dict[str, RewardComponent] = {}
    correct: bool | None = None
    step_rewards: list[float] | None = None
    version: str = Field(min_length=1)
    summary: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> RewardResult:
        if self.status is RewardStatus.NOT_APPLICABLE:
            if self.reward is not None or self.correct is not None:
                raise ValueError("a not-applicable reward has reward=None and correct=None; use RewardResult.not_applicable")
        elif self.reward is None or self.correct is None:
            raise ValueError("a scored reward needs both reward (in [0, 1]) and correct (bool); if there is nothing to judge, "
                             "use RewardResult.not_applicable(version, reason)")
        return self

    @classmethod
    def scored(cls, version: str, components: dict[str, RewardComponent], correct: bool, summary: str,
               reward: float | None = None) -> RewardResult:
        """A scored result whose ``reward`` is the components' weighted mean unless given.

        Raises:
            ValueError: no reward given and no component has weight.
        """
        if reward is None:
            reward = _weighted_mean(components)
            if reward is None:
                raise ValueError("no component has weight: pass reward= explicitly")
        return cls(reward=reward, components=components, correct=correct, version=version, summary=summary)

    @classmethod
    def not_applicable(cls, version: str, reason: str) -> RewardResult:
        """The verdict of a reward that has nothing to judge in this episode (``reason`` says why)."""
        return cls(status=RewardStatus.NOT_APPLICABLE, version=version, summary=reason)

    @property
    def applicable(self) -> bool:
        """True when the episode was scored."""
        return self.status is RewardStatus.SCORED

    def weighted_mean(self) -> float | None:
        """The components' weighted mean ``sum(w * v) / sum(w)``; None if no component has weight."""
        return _weighted_mean(self.components)


def _weighted_mean(components: dict[str, RewardComponent]) -> float | None:
    total = sum(c.weight for c in components.values())
    if total <= 0:
        return None
    return sum(c.value * c.weight for c in components.values()) / total


class Trajectory(BaseModel):
    """What a reward function sees of an episode.

    Attributes:
        run_id: the run's id, when it comes from the run store.
        messages: the whole history in OpenAI chat format (system, task, assistant turns with
            tool calls, tool observations).
        tool_data: per executed tool call, in order: ``{"tool", "arguments", "is_error", "data"}``
            (``data`` is the structured result the model did not see, e.g. test outcomes).
        exit_status: why the episode ended (``core.state.ExitStatus`` value), if it did.
        workspace: the episode's final files, when the reward needs to inspect them.
        scratch: the run-private folder (the coding plugin keeps its baseline there).
        metadata: the task's metadata as the run recorded it (``Task.metadata``).
        context: the episode's live ``ToolContext`` (workspace, sandbox, scratch, plugin state)
            when the loop calls the reward at the end of an episode; None offline. Not
            serialised.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    run_id: str | None = None
    messages: list[Message] = []
    tool_data: list[dict[str, Any]] = []
    exit_status: str | None = None
    workspace: Path | None = None
    scratch: Path | None = None
    metadata: dict[str, Any] = {}
    context: Any = Field(default=None, exclude=True, repr=False)

    def require_context(self, plugin: str) -> ToolContext:
        """The live ``ToolContext``, for rewards that must run commands in the episode's sandbox.

        Raises:
            ValueError: the trajectory has no context (it was rebuilt offline).
        """
        if self.context is None:
            raise ValueError(f"the {plugin} reward runs in the episode's sandbox: give the trajectory its ToolContext (context=...)")
        return self.context

    @classmethod
    def from_store(cls, store: RunStore, folder: Path, *, context: ToolContext | None = None) -> Trajectory:
        """The trajectory recorded in an open run store.

        Args:
            store: the run's store (``core.store.RunStore``), open.
            folder: the run's folder (its ``workspace`` and ``scratch`` are taken from there).
            context: the live ``ToolContext``, when the episode is still open.
        """
        row = store.run()
        rows = store.con.execute("SELECT tool, arguments, is_error, data FROM tool_calls ORDER BY seq").fetchall()
        return cls(
            run_id=row["run_id"], messages=store.messages(), exit_status=row["exit_status"],
            tool_data=[{"tool": t, "arguments": a, "is_error": bool(e), "data": json.loads(d) if d else {}} for t, a, e, d in rows],
            workspace=folder / "workspace", scratch=folder / "scratch",
            metadata=row["config"].get("task_metadata", {}), context=context,
        )  # fmt: skip

    @classmethod
    def from_run(cls, run_id: str, home: Path | None = None) -> Trajectory:
        """Rebuild a run's trajectory from its run store (read-only; no ``context``).

        Raises:
            RunNotFound: no such run.
            UserError: the run is being written right now, or its store is damaged.
        """
        from core.config import runs_dir
        from core.runs import open_store

        with closing(open_store(run_id, home)) as store:
            return cls.from_store(store, runs_dir(home) / run_id)


@runtime_checkable
class RewardFn(Protocol):
    """A reward: ``fn(task, trajectory) -> RewardResult``, or ``async def`` returning one."""

    def __call__(self, task: Task, trajectory: Trajectory) -> RewardResult | Awaitable[RewardResult]:
        """Judge one episode."""
        ...


async def aevaluate(fn: RewardFn, task: Task, trajectory: Trajectory) -> RewardResult:
    """Call a sync or async reward function from async code.

    Raises:
        TypeError: the function returned something other than a ``RewardResult``.
    """
    result = fn(task, trajectory)
    if inspect.isawaitable(result):
        result = await result
    return _checked(fn, result)


def evaluate(fn: RewardFn, task: Task, trajectory: Trajectory) -> RewardResult:
    """Call a sync or async reward function from sync code (an async one runs in its own event loop).

    Raises:
        TypeError: the function returned something other than a ``RewardResult``.
        RuntimeError: an async reward function was called from inside a running event loop
            (use ``aevaluate`` there).
    """
    result = fn(task, trajectory)
    if inspect.isawaitable(result):
        result = asyncio.run(_await(result))
    return _checked(fn, result)


async def _await(awaitable: Awaitable[RewardResult]) -> RewardResult:
    return await awaitable


def _checked(fn: Any, result: Any) -> RewardResult:
    if not isinstance(result, RewardResult):
        name = getattr(fn, "__qualname__", type(fn).__name__)
        raise TypeError(f"reward function {name} returned {type(result).__name__}, not a RewardResult")
    return result
