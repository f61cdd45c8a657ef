"""``HorizonAgent``: Horizon's loop as a Harbor agent (``harbor run --agent-import-path plugins.coding.harbor:HorizonAgent``).

Harbor makes the agent with ``HorizonAgent(logs_dir=..., model_name=..., logger=..., **kwargs)``
(the ``--agent-kwarg key=value`` pairs are the kwargs), awaits ``setup(environment)`` and then
``run(instruction, environment, context)``, and runs the task's verifier in the same container
afterwards. ``run`` does one Horizon run of the coding plugin, shaped for the container
(``HarborCodingPlugin``):

* the starting tree is the container's working folder, downloaded; the run's workspace is its
  mirror (``plugins.coding.harbor.mirror``), the sandbox is ``HarborSandbox`` (commands through
  ``environment.exec``), and the mirror is pushed once more when the loop ends;
* the loop is ``core.runner.Run``'s (LangGraph, the stuck detector, compaction, checkpoints, the run
  store under ``horizon_home``, by default ``logs_dir/horizon``, so Harbor keeps it with the
  trial's logs; ``HORIZON_HOME=<that> agent show RUN`` and ``agent export`` read it), run in a worker
  thread while ``run`` awaits it (``plugins.coding.harbor.bridge``);
* the model: ``model_name`` (``provider/model``; the part after the first ``/`` is the model's name on
  the server, or the ``model`` kwarg) on the OpenAI-compatible server of the ``base_url`` kwarg
  (else ``HORIZON_BASE_URL`` or Horizon's config), its key from the variable the ``api_key_env``
  kwarg names (else ``HORIZON_API_KEY``); never from the task. ``script=PATH`` replays a scripted
  policy instead (``core.policy.scripted``; tests and demos);
* the reward is not Horizon's to give (``not_applicable``, ``harbor/1``): Harbor's verifier grades the
  container after ``run`` returns;
* ``context`` gets the tokens (``n_input_tokens`` with cached ones included, ``n_cache_tokens``,
  ``n_output_tokens``), ``cost_usd`` (Horizon's pricing, in its configured currency: set
  ``pricing`` in Horizon's config in USD for Harbor) and ``metadata["horizon"]`` (run id, exit
  status, steps, the run's folder and patch), after every model call and at the end.

If Harbor cancels ``run`` (its agent time limit), the loop is asked to stop at its next step, every
later environment call is refused, the context keeps the totals so far, and the cancellation goes on.

Harbor needs Python 3.12 or newer; the module imports ``harbor`` only if it can: with Harbor
installed ``HorizonAgent`` is a subclass of ``harbor.agents.base.BaseAgent``, without it (Horizon's
own tests, Python 3.11) a plain class with the same methods, driven the same way.
"""

from __future__ import annotations

import asyncio
import logging
import shutil
import tempfile
from dataclasses import replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from core.api import (
    Limits,
    Pricing,
    RewardResult,
    Run,
    SandboxLimits,
    Task,
    ToolContext,
    UserError,
    load_settings,
    make_policy,
    policy_spec,
)
from plugins.coding.harbor.bridge import LoopBridge
from plugins.coding.harbor.mirror import ContainerMirror
from plugins.coding.harbor.sandbox import HarborSandbox
from plugins.coding.plugin import TERMINAL_BENCH_PROMPT, CodingPlugin
from plugins.coding.tools import CODING_TOOLS

try:  # Harbor (Python 3.12+) when it is installed; the same class without it
    from harbor.agents.base import BaseAgent as _AgentBase
except ImportError:  # Horizon's tests drive HorizonAgent without Harbor
    _AgentBase = object  # type: ignore[assignment,misc]

REWARD_VERSION = "harbor/1"
#: The coding tools offered in Harbor's container: not run_tests and static_check, which read their
#: reports from the run's scratch folder on this machine, where commands in the container cannot write.
LEFT_OUT_TOOLS = ("run_tests", "static_check")
SHELL_DESCRIPTION = (
    "Run a bash command in the task's container, starting in its working folder: a fresh process each time (no state "
    "carries over between calls). It may read and write anywhere in the container, install packages and start "
    "programs, as the task needs. Returns the exit code, stdout and stderr."
)
#: Entries of the working folder listed in the task message.
LISTED_FILES = 40
DEFAULT_MAX_STEPS = 100


def horizon_version() -> str:
    """The installed ``horizon-agents`` version (``0+unknown`` when it is not installed as a package)."""
    try:
        return version("horizon-agents")
    except PackageNotFoundError:
        return "0+unknown"


class HarborCodingPlugin(CodingPlugin):
    """The coding plugin as Harbor's container needs it: the Terminal-Bench prompt, the tools that
    work across the mirror, a set-up that names the working folder, and no reward of its own."""

    def __init__(self, workdir: str) -> None:
        self.workdir = workdir

    def system_prompt(self, task: Task) -> str:
        """``TERMINAL_BENCH_PROMPT``: hidden tests grade the container's final state, no reproduction test asked."""
        return TERMINAL_BENCH_PROMPT

    def tools(self) -> list[Any]:
        """The coding tools but ``LEFT_OUT_TOOLS``; ``shell`` described as running in the container."""
        return [replace(t, description=SHELL_DESCRIPTION) if t.name == "shell" else t
                for t in CODING_TOOLS if t.name not in LEFT_OUT_TOOLS]  # fmt: skip

    def setup(self, task: Task, ctx: ToolContext) -> str:
        """Where the files are and what is there (no baseline test run: the task's tests are hidden)."""
        entries = sorted(p.name + ("/" if p.is_dir() else "") for p in ctx.workspace.iterdir() if p.name not in (".git", ".horizon"))
        listed = ", ".join(entries[:LISTED_FILES]) + (f" and {len(entries) - LISTED_FILES} more" if len(entries) > LISTED_FILES else "")
        w = self.workdir
        return (f"You work in the task's container. Its working folder is {w}: shell commands start there, and the file "
                f"tools take paths relative to it ({w}/x is x). {w} holds: {listed or 'nothing yet'}. "
                "The task is graded by tests you cannot see, run in this container once you call finish.")  # fmt: skip

    def reward(self, task: Task, trajectory: Any) -> RewardResult:
        """Not Horizon's to give: Harbor's verifier grades the container after the agent ends."""
        return RewardResult.not_applicable(REWARD_VERSION, "graded by Harbor's verifier, in the same container, after the agent ends")


def _number(value: Any, kind: type, name: str) -> Any:
    """A kwarg as ``kind`` (``--agent-kwarg`` values may arrive as text)."""
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise UserError(f"--agent-kwarg {name}={value!r} is not a {kind.__name__}") from None


class HorizonAgent(_AgentBase):  # type: ignore[misc,valid-type]
    """Horizon's coding agent for Harbor (module docstring).

    Args:
        logs_dir: the trial's agent log folder (Harbor's); the run store goes under it by default.
        model_name: Harbor's ``--model`` (``provider/model``).
        logger: Harbor's logger.
        base_url: the OpenAI-compatible server (``http://host:8000/v1``).
        model: the model's name on that server, when it is not ``model_name`` without its provider.
        api_key_env: the environment variable holding the server's key.
        script: a scripted policy's JSON Lines file instead of a model (tests, demos).
        max_steps: model calls per episode (default ``DEFAULT_MAX_STEPS``).
        time_limit: Horizon's own wall-clock limit in seconds (Harbor's agent timeout applies as well).
        horizon_home: where the run store goes (default ``logs_dir/horizon``).
        command_timeout: the longest one command may run, in seconds (default 600).
    """

    SUPPORTS_ATIF = False

    def __init__(self, logs_dir: Path | str, model_name: str | None = None, logger: logging.Logger | None = None, *args: Any,
                 base_url: str | None = None, model: str | None = None, api_key_env: str | None = None, script: str | None = None,
                 max_steps: Any = DEFAULT_MAX_STEPS, time_limit: Any = 3600.0, horizon_home: str | None = None,
                 command_timeout: Any = 600.0, **kwargs: Any) -> None:  # fmt: skip
        if _AgentBase is not object:
            super().__init__(Path(logs_dir), model_name, logger, *args, **kwargs)
        else:
            self.logs_dir, self.model_name = Path(logs_dir), model_name
            self.logger = logger or logging.getLogger("horizon.harbor")
        self.base_url, self.server_model, self.api_key_env = base_url, model, api_key_env
        self.script = Path(script) if script else None
        self.max_steps = _number(max_steps, int, "max_steps")
        self.time_limit = _number(time_limit, float, "time_limit")
        self.command_timeout = _number(command_timeout, float, "command_timeout")
        self.horizon_home = Path(horizon_home) if horizon_home else Path(logs_dir) / "horizon"
        self.run_id: str | None = None  # the Horizon run of the last ``run``
        self.mirror: ContainerMirror | None = None

    @staticmethod
    def name() -> str:
        """The agent's name in Harbor's results."""
        return "horizon"

    def version(self) -> str | None:
        """Horizon's version."""
        return horizon_version()

    async def setup(self, environment: Any) -> None:
        """Check that the container runs commands (nothing is installed in it: Horizon runs on this machine).

        Raises:
            RuntimeError: ``bash`` does not run in the container (the coding tools' commands need it).
        """
        result = await environment.exec("bash -c 'echo horizon-ready'", timeout_sec=60)
        if result.return_code != 0 or "horizon-ready" not in (result.stdout or ""):
            raise RuntimeError(f"Horizon's agent needs bash in the task's container; `bash -c` gave exit code {result.return_code}: "
                               f"{(result.stderr or result.stdout or '').strip()[:300]}")  # fmt: skip

    async def run(self, instruction: str, environment: Any, context: Any) -> None:
        """Run one Horizon episode on the task in ``environment`` and fill ``context`` (module docstring)."""
        loop = asyncio.get_running_loop()
        bridge = LoopBridge(loop)
        workdir = await self._workdir(environment)
        state: dict[str, Any] = {}

        def on_event(kind: str, data: dict[str, Any]) -> None:  # the worker thread; the context is set on the loop
            if kind == "model":
                total = data["total"]
                loop.call_soon_threadsafe(self._fill, context, total.prompt_tokens, total.cached_prompt_tokens,
                                          total.completion_tokens, None, {})  # fmt: skip

        worker = asyncio.ensure_future(asyncio.to_thread(self._episode, instruction, environment, bridge, workdir, on_event, state))
        try:
            outcome = await asyncio.shield(worker)
        except asyncio.CancelledError:
            run = state.get("run")
            if run is not None:
                run.episode.stop_requested = True  # the loop stops before its next step
            bridge.close()
            raise
        usage = outcome.state.usage
        self._fill(context, usage.prompt_tokens, usage.cached_prompt_tokens, usage.completion_tokens, outcome.state.cost, {
            "run_id": outcome.run_id, "exit_status": outcome.exit_status.value, "exit_detail": outcome.exit_detail,
            "steps": outcome.steps, "run_dir": str(self.horizon_home / "runs" / outcome.run_id), "patch": str(outcome.patch_path),
            "workdir": workdir, "horizon_version": horizon_version(),
        })  # fmt: skip

    async def _workdir(self, environment: Any) -> str:
        """The container's working folder: the task's ``[environment] workdir`` if set, else where ``exec`` starts."""
        config = getattr(environment, "task_env_config", None)
        given = getattr(config, "workdir", None)
        if given:
            return str(given)
        result = await environment.exec("pwd", timeout_sec=60)
        found = (result.stdout or "").strip().splitlines()
        return found[-1] if result.return_code == 0 and found and found[-1].startswith("/") else "/"

    @staticmethod
    def _fill(context: Any, prompt: int, cached: int, completion: int, cost: float | None, about: dict[str, Any]) -> None:
        """Set Harbor's ``AgentContext`` fields (on the event loop)."""
        context.n_input_tokens, context.n_cache_tokens, context.n_output_tokens = prompt, cached, completion
        if cost is not None:
            context.cost_usd = cost
        if about:
            context.metadata = {**(context.metadata or {}), "horizon": about}

    def _policy(self) -> tuple[Any, dict[str, Any], Any]:
        """The policy, its recorded spec and the pricing (``core.runner.make_policy``)."""
        if self.script is not None:
            spec = {"kind": "scripted", "script": str(self.script.resolve())}
            return make_policy(spec, load_settings()), spec, Pricing()
        model = self.server_model or (self.model_name.split("/", 1)[-1] if self.model_name else None)
        settings = load_settings(base_url=self.base_url, model=model)
        spec = policy_spec("openai", settings)  # ConfigError without a server and a model
        if self.api_key_env:
            spec["api_key_env"] = self.api_key_env  # the key is read from that variable, and no fallback server is used
        return make_policy(spec, settings), spec, settings.pricing_for("openai")

    def _episode(self, instruction: str, environment: Any, bridge: LoopBridge, workdir: str, on_event: Any,
                 state: dict[str, Any]) -> Any:  # fmt: skip
        """The worker thread: download the working folder, run the episode, push the mirror at the end."""
        policy, spec, pricing = self._policy()
        mirror = self.mirror = ContainerMirror(environment, bridge, workdir)
        limits = SandboxLimits(timeout_s=self.command_timeout)
        staging = Path(tempfile.mkdtemp(prefix="horizon-harbor-start-"))
        try:
            start = mirror.download_start(staging / "workdir")

            def make_sandbox(workspace: Path, scratch: Path) -> HarborSandbox:
                return HarborSandbox(mirror, workspace, scratch, limits)

            run = Run.start(
                Task(plugin="coding", instruction=instruction, repo=start, metadata={"harbor": {"workdir": workdir}}),
                policy, policy_config=spec, limits=Limits(max_steps=self.max_steps, max_wall_s=self.time_limit), pricing=pricing,
                home=self.horizon_home, on_event=on_event, plugin=HarborCodingPlugin(workdir), make_sandbox=make_sandbox,
            )  # fmt: skip
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        state["run"], self.run_id = run, run.run_id
        try:
            mirror.attach(run.episode.ctx.workspace)
            outcome = run.execute()
            if not bridge.closed:
                mirror.push()  # edits after the last command reach the container before the verifier
            return outcome
        finally:
            run.close()


__all__ = ["DEFAULT_MAX_STEPS", "LEFT_OUT_TOOLS", "REWARD_VERSION", "HarborCodingPlugin", "HorizonAgent", "horizon_version"]
