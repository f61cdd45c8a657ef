"""Starting, resuming and finishing runs: the run folder, the checkpointer and the final patch.

A run lives in ``$HORIZON_HOME/runs/<run id>/``::

    trajectory.duckdb    the run store (history, model calls, tool calls, rewards)
    checkpoints.sqlite   LangGraph's checkpoints, thread id = run id
    workspace/           the private copy of the repository the agent works in
    scratch/             run-private files outside the workspace (test reports)
    baseline.git/        the workspace as it was at the start, for the patch
    patch.diff           the final diff, written whenever the run stops, however it stops

and its row in the runs catalog, ``$HORIZON_HOME/catalog.sqlite`` (``core.catalog``), written
when it starts, at each step's end and when it ends.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sqlite3
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import closing
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from core import workspace as ws
from core.catalog import list_runs
from core.catalog_db import catalog_path
from core.checkpoint import CheckpointsDamaged, PruningSqliteSaver, open_checkpoints
from core.config import Settings, horizon_home, make_data_folder, runs_dir
from core.environment import Environment, SandboxFactory
from core.errors import ConfigError, DiskFull, ModelUnavailable, UserError, disk_full
from core.loop import Episode, EventSink, StopRequested, build_graph, recursion_limit
from core.plugin import Plugin, Task, load_plugin
from core.policy import EmbeddedPolicy, OpenAIServerPolicy, Policy, ScriptedPolicy
from core.policy.retry import RetryConfig
from core.policy.router import with_fallback
from core.runs import RUN_ID, apply_run, mark_killed, new_run_id, open_store, open_store_for_writing
from core.state import EpisodeState, ExitStatus, Limits, Pricing
from core.store import RunStore

# Re-exported: callers that start runs find the run-folder helpers here too (core.runs has them).
__all__ = ["Run", "RunResult", "apply_run", "list_runs", "make_policy", "mark_killed", "new_run_id", "open_store", "policy_spec", "runs_dir"]


class RunResult(BaseModel):
    """How a run ended.

    Attributes:
        run_id: the run's id.
        status: ``finished`` (verified), or ``interrupted``/``model_error``/``crashed`` (resumable).
        exit_status: the episode's ``ExitStatus``.
        exit_detail: one line saying why.
        reward: the reward in [0, 1], or None when the episode did not reach its end or the
            plugin's reward was not applicable (the store's ``reward_status`` says which).
        correct: whether the plugin's reward counts the task as solved (None likewise).
        steps: model calls made.
        state: the final checkpointed state.
        patch_path: the final diff (possibly empty).
    """

    run_id: str
    status: str
    exit_status: ExitStatus
    exit_detail: str
    reward: float | None
    steps: int
    correct: bool | None = None
    state: EpisodeState
    patch_path: Path


def policy_spec(kind: str, settings: Settings, script: Path | None = None, exchange: Path | None = None) -> dict[str, Any]:
    """Describe a policy so a resumed run can rebuild it (no secrets are kept).

    Args:
        kind: ``auto`` (``settings.auto_policy``: a server if ``base_url`` is set, else embedded), ``embedded``, ``openai``,
            ``scripted`` or ``human`` (a person answers each request: ``core.policy.human``).
        script: the tool calls of ``scripted`` (JSON Lines).
        exchange: the folder of ``human``'s requests and answers (default: a new folder under
            ``<horizon home>/human``).

    Raises:
        ConfigError: ``openai`` without base_url/model, ``scripted`` without a script, unknown kind.
    """
    if kind == "human":
        folder = exchange or horizon_home() / "human" / time.strftime("%Y%m%d-%H%M%S")
        return {"kind": "human", "exchange": str(folder.expanduser().resolve())}
    if kind == "auto":
        kind = settings.auto_policy
    if kind == "openai":
        if not settings.base_url or not settings.model:
            raise ConfigError("a model server needs both --base-url and --model (or HORIZON_BASE_URL and HORIZON_MODEL)")
        # The cache salt is recorded so that a resumed run keeps hitting its own prefix cache.
        return {"kind": "openai", "base_url": settings.base_url, "model": settings.model, "tool_format": settings.tool_format,
                "vision": settings.vision, "critic": settings.critic, "cache_salt": secrets.token_urlsafe(32)}
    if kind == "scripted":
        if script is None:
            raise ConfigError("--policy scripted needs --script FILE (JSON Lines of tool calls)")
        return {"kind": "scripted", "script": str(script.resolve())}
    if kind == "embedded":
        return {"kind": "embedded"}
    raise ConfigError(f"unknown policy {kind!r}; use auto, embedded, openai, scripted or human")


def make_policy(spec: dict[str, Any], settings: Settings) -> Policy:
    """Build the policy described by ``policy_spec``; its server and model are the recorded ones
    (a resumed run talks to the same model), the key and sampling settings come from ``settings``.

    A run on a named model server (``core.config.ModelServer``, chosen through ``agent server``:
    the spec has ``server`` and ``api_key_env``) gets that server's key, read from its variable,
    and no fallback endpoint: ``settings.api_key`` is only ever sent to the server it was set for."""
    if spec["kind"] == "openai":
        named = "api_key_env" in spec
        api_key = (os.environ.get(spec["api_key_env"]) if spec["api_key_env"] else None) if named else settings.api_key
        server = OpenAIServerPolicy(
            spec["base_url"], spec["model"], api_key=api_key,
            retry=RetryConfig(max_attempts=settings.retry_max_attempts, max_total_s=settings.retry_max_total_s),
            temperature=settings.temperature, max_tokens=settings.max_completion_tokens, timeout_s=settings.timeout_s,
            cache_salt=spec.get("cache_salt"), tool_format=spec.get("tool_format", "native"), vision=spec.get("vision", False),
        )
        return server if named else with_fallback(server, settings)  # a second endpoint, when the settings name one
    if spec["kind"] == "scripted":
        return ScriptedPolicy.from_file(Path(spec["script"]))
    if spec["kind"] == "mcp":  # never the embedded model in an MCP client's place
        raise ConfigError("an MCP session's policy is its MCP client; agent mcp --resume RUN_ID continues such a run")
    if spec["kind"] == "human":
        from core.policy.human import HumanPolicy

        return HumanPolicy(Path(spec["exchange"]))
    return EmbeddedPolicy()


def _open_checkpoints(folder: Path, run_id: str, keep: int) -> PruningSqliteSaver:
    """A run's checkpointer, its newest checkpoint checked (``core.checkpoint.open_checkpoints``).

    Raises:
        UserError: ``damaged: <file> (...)`` with what to do, or the file cannot be opened.
    """
    path = folder / "checkpoints.sqlite"
    try:
        return open_checkpoints(path, keep=keep, thread_id=run_id)
    except CheckpointsDamaged as exc:
        raise _damaged_checkpoints(folder, run_id, str(exc)) from None
    except sqlite3.Error as exc:
        raise UserError(f"cannot open {path} ({exc}); check its permissions and the file system") from None


def _damaged_checkpoints(folder: Path, run_id: str, reason: str) -> UserError:
    return UserError(
        f"damaged: {folder / 'checkpoints.sqlite'} ({reason}); the run cannot be resumed from its checkpoints. Its "
        f"trajectory is kept (agent show {run_id}), and so are its patch ({folder / 'patch.diff'}) and workspace; "
        f"start the task again with agent run, and delete {folder} when you no longer need it"
    )


class Run:
    """An open run: its folder, store, checkpointer and episode. Use ``Run.start`` or ``Run.open``."""

    def __init__(self, run_id: str, folder: Path, store: RunStore, episode: Episode, checkpointer: PruningSqliteSaver, sqlite: sqlite3.Connection):
        self.run_id = run_id
        self.folder = folder
        self.store = store
        self.episode = episode
        self.checkpointer = checkpointer
        self._sqlite = sqlite
        self.graph = build_graph(episode, checkpointer)

    @staticmethod
    def _open_parts(folder: Path, run_id: str, task: Task, policy: Policy, config: dict[str, Any], on_event: EventSink | None,
                    store: RunStore, plugin: Plugin | None = None, make_sandbox: SandboxFactory | None = None) -> Run:
        env = Environment.open(task, folder, isolated=config["isolated"], journal=True, plugin=plugin, make_sandbox=make_sandbox)
        episode = Episode(run_id, task, env, policy, store, limits=Limits(**config["limits"]), pricing=Pricing(**config["pricing"]),
                          on_event=on_event, critic=bool(config["policy"].get("critic")))  # fmt: skip
        checkpointer = _open_checkpoints(folder, run_id, config.get("keep_checkpoints", 20))
        return Run(run_id, folder, store, episode, checkpointer, checkpointer.conn)

    @classmethod
    def start(
        cls,
        task: Task,
        policy: Policy,
        *,
        policy_config: dict[str, Any],
        limits: Limits,
        pricing: Pricing,
        isolated: bool = True,
        keep_checkpoints: int = 20,
        home: Path | None = None,
        on_event: EventSink | None = None,
        run_id: str | None = None,
        plugin: Plugin | None = None,
        make_sandbox: SandboxFactory | None = None,
    ) -> Run:
        """Create a run: copy the repository, snapshot it, record the run (``execute`` starts it).

        Args:
            run_id: the run's id, when the caller chooses it (a scheduler that must find the
                run again after killing its worker: ``mark_killed``); default ``new_run_id()``.
            plugin: the plugin object to run, when it is not ``load_plugin(task.plugin)``'s (Horizon
                as a Harbor agent: the coding plugin shaped for Harbor's container); its ``name``
                is what the run records.
            make_sandbox: the episode's sandbox maker instead of ``open_sandbox``
                (``Environment.open``); a run made with one is not resumed with ``agent resume``
                (that opens the default sandbox).

        Raises:
            PluginNotFound, UserError: unknown plugin, the repository is not a folder, the
                plugin's ``validate`` refused the task, ``run_id`` is taken or not a plain name,
                or Horizon's runs folder cannot be written (``make_data_folder``).
            SandboxUnavailable: isolation was asked for and cannot start here.
            DiskFull: the disk filled up while the run was made (nothing is left behind).
        """
        plugin = plugin or load_plugin(task.plugin)  # fail before copying anything
        validate = getattr(plugin, "validate", None)
        if validate is not None:
            validate(task)  # the plugin's own check of its task files and inputs
        make_data_folder(runs_dir(home))  # an unwritable HORIZON_HOME is one line, before anything is copied
        chosen = run_id
        run_id = chosen or new_run_id()
        folder = runs_dir(home) / run_id
        while chosen is None and (folder.exists() or folder.with_name(f".{run_id}.partial").exists()):
            run_id = new_run_id()  # another process took this one in the same second
            folder = runs_dir(home) / run_id
        if not RUN_ID.fullmatch(run_id) or folder.exists() or folder.with_name(f".{run_id}.partial").exists():
            raise UserError(f"run id {run_id!r} is taken or not a plain name (letters, digits, '.', '_', '-')")
        # Built under a hidden name and renamed when complete: a run killed while starting
        # leaves no half-made run behind for `agent runs` or `agent resume` to trip over.
        partial = folder.with_name(f".{run_id}.partial")
        partial.mkdir(parents=True)
        config = {
            "policy": policy_config, "limits": limits.model_dump(), "pricing": pricing.model_dump(), "isolated": isolated,
            "keep_checkpoints": keep_checkpoints, "task_metadata": task.metadata,
        }
        try:
            Environment.prepare(task, partial, progress=None if on_event is None else
                                (lambda text: on_event("progress", {"text": text})))  # fmt: skip
            with closing(RunStore(partial / "trajectory.duckdb")) as store:
                store.create_run(run_id, plugin=task.plugin, task=task.instruction, repo=str(task.repo or ""),
                                 policy=policy.name, config=config, steps=0)
        except BaseException as exc:
            shutil.rmtree(partial, ignore_errors=True)
            if isinstance(exc, Exception) and disk_full(exc):
                raise DiskFull(f"no space left on the disk holding {runs_dir(home)} while the run was made (its half-made folder "
                               "is removed); free space there, then start it again") from None
            raise
        os.replace(partial, folder)
        store = RunStore(folder / "trajectory.duckdb", catalog=catalog_path(home))
        try:
            opened = cls._open_parts(folder, run_id, task, policy, config, on_event, store, plugin, make_sandbox)
        except BaseException:  # nothing ran: leave no run behind that looks killed
            store.catalog = None
            store.close()
            shutil.rmtree(folder, ignore_errors=True)
            raise
        store.sync_catalog()  # the run is listed from now on (core.catalog)
        return opened

    def _begin(self) -> None:
        """Set the plugin up and write the system and task messages (the episode's step 0).

        Runs inside ``execute``, so Ctrl-C or a kill during set-up is resumable like any step.
        """
        ep = self.episode
        if ep.env.mcp is not None:  # the store keeps what the external servers offered, for the export's tool list
            config = self.store.run()["config"]
            # as JSON text (as create_run writes it): DuckDB cannot type a dict's empty parts (a tool without arguments)
            self.store.update_run(config=json.dumps({**config, "external_tools": [t.schema() for t in ep.env.mcp.tools],
                                                     "external_read_only": [t.name for t in ep.env.mcp.tools if t.read_only]}))  # fmt: skip
        ep.env.ctx.progress = lambda text: ep.on_event("progress", {"text": text})  # the set-up's long steps
        opening = ep.env.reset()
        ep.on_event("setup", {"text": ep.env.setup_text})  # what the plugin found (failing tests, unreadable files)
        self.store.append_opening(opening)
        for message in opening:
            ep.append(message)

    @classmethod
    def open(
        cls,
        run_id: str,
        *,
        settings: Settings,
        policy_overrides: dict[str, str] | None = None,
        home: Path | None = None,
        on_event: EventSink | None = None,
        policy: Policy | None = None,
    ) -> Run:
        """Reopen a run to resume it; the policy is rebuilt from the run's recorded config.

        Args:
            policy_overrides: e.g. ``{"base_url": ...}`` when the model server moved; recorded.
            policy: the policy to continue with instead of the recorded one: an MCP session's
                (``core.mcp``), whose model is a client only its own server can hear.

        Raises:
            RunNotFound: no such run.
            UserError: the run is in use by another process, or its store or its checkpoint database
                is damaged (``damaged: <file> (...)``, with what to do) or cannot be opened, or it
                is an MCP session and no ``policy`` was given (``agent mcp --resume`` continues it).
        """
        store = open_store_for_writing(run_id, home)
        try:
            row = store.run()
            config = row["config"]
            task = Task(plugin=row["plugin"], instruction=row["task"], repo=Path(row["repo"]) if row["repo"] else None,
                        metadata=config.get("task_metadata", {}))
            if policy_overrides:
                config["policy"].update(policy_overrides)
                store.update_run(config=json.dumps(config))
            if policy is None and config["policy"].get("kind") == "mcp":
                if row["status"] == "finished":
                    raise UserError(f"run {run_id} is an MCP session that has finished; agent show {run_id} prints it")
                raise UserError(f"run {run_id} is an MCP session: its model is an MCP client, so only an MCP server can continue "
                                f"it; run: agent mcp {row['plugin']} --resume {run_id} (and reconnect the client)")
            folder = runs_dir(home) / run_id
            chosen = policy if policy is not None else make_policy(config["policy"], settings)
            opened = cls._open_parts(folder, run_id, task, chosen, config, on_event, store)
        except BaseException:
            store.close()  # a run that cannot be opened does not keep its store's write lock
            raise
        try:
            opened.state()  # the newest checkpoint, read as resuming reads it: damage shows now, as one line
        except Exception as exc:  # noqa: BLE001 - whatever LangGraph raises on a checkpoint it cannot follow
            opened.close()
            raise _damaged_checkpoints(folder, run_id, f"its newest checkpoint cannot be read: {type(exc).__name__}: {exc}") from None
        return opened

    @property
    def _graph_config(self) -> dict[str, Any]:
        return {"configurable": {"thread_id": self.run_id}, "recursion_limit": recursion_limit(self.episode.limits)}

    def state(self) -> EpisodeState | None:
        """The last checkpointed state, or None before the first checkpoint."""
        snap = self.graph.get_state(self._graph_config)
        if not snap.values:
            return None
        return snap.values if isinstance(snap.values, EpisodeState) else EpisodeState(**snap.values)

    def execute(self) -> RunResult:
        """Run (or resume) the episode until it ends or stops; always save the patch and totals.

        Ctrl-C, a dead model server and a crash stop the run resumably (``agent resume``); the
        checkpoint keeps every completed node and the store every completed call.

        Raises:
            DiskFull: the disk holding the run's folder filled up (``core.errors.disk_full``):
                nothing more is written, the run stays resumable once space is freed.
        """
        snap = self.graph.get_state(self._graph_config)
        # Ended means no task is left in the last checkpoint's step. `snap.next` is not enough: it
        # leaves out a task whose writes were saved by a process killed before the checkpoint after it.
        if snap.values and not snap.tasks:
            return self._finish("finished")  # already ended: report it again, change nothing
        status, forced = "finished", None
        self.store.update_run(status="running")
        self.store.sync_catalog()
        restore = self._graceful_ctrl_c()
        try:
            if not self.episode.history:  # new, or killed before step 0 was complete
                self._begin()
            first_input = None if snap.values else EpisodeState(n_messages=len(self.episode.history))
            self.graph.invoke(first_input, self._graph_config, durability="sync")
        except (KeyboardInterrupt, StopRequested) as exc:  # a StopRequested may say why and how to continue (an MCP client left)
            detail = str(exc) if isinstance(exc, StopRequested) and str(exc) else "interrupted by the user; continue with: agent resume " + self.run_id
            status, forced = "interrupted", (ExitStatus.INTERRUPTED, detail)
        except ModelUnavailable as exc:
            status, forced = "model_error", (ExitStatus.MODEL_ERROR, f"{exc}; continue with: agent resume {self.run_id}")
        except Exception as exc:  # noqa: BLE001 - a bug in Horizon or a plugin: keep everything, say where
            if disk_full(exc):  # not a bug: nothing more is written (it would fail too); the last checkpoint is the truth
                raise self._disk_full(exc) from None
            (self.folder / "crash.txt").write_text(traceback.format_exc())
            status, forced = "crashed", (ExitStatus.CRASHED, f"{type(exc).__name__}: {exc} (traceback in {self.folder / 'crash.txt'})")
        finally:
            restore()
        return self._finish(status, forced)

    def _disk_full(self, exc: BaseException) -> DiskFull:
        """The one line for a run stopped by a full disk (``execute``): the folder, and how to go on."""
        try:
            done = self.state()
        except Exception:  # noqa: BLE001 - only for the message: the step is a courtesy
            done = None
        return DiskFull(f"no space left on the disk holding {self.folder} ({type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}); "
                        f"run {self.run_id} stopped after step {done.step if done else 0}, its completed steps are kept. Free space "
                        f"there (df -h {self.folder}), then continue with: agent resume {self.run_id}")

    def _graceful_ctrl_c(self) -> Callable[[], None]:
        """First Ctrl-C: stop at the next node boundary (the step in flight is kept); second: now.

        A model call in native code (llama.cpp) cannot be interrupted between Python bytecodes
        anyway, so stopping after it keeps its answer instead of throwing it away.
        Returns a function that puts the previous handler back.
        """
        if threading.current_thread() is not threading.main_thread():
            return lambda: None
        episode = self.episode

        def handler(signum: int, frame: Any) -> None:
            if episode.stop_requested:
                raise KeyboardInterrupt
            episode.stop_requested = True
            episode.on_event("stopping", {})

        previous = signal.signal(signal.SIGINT, handler)
        return lambda: signal.signal(signal.SIGINT, previous)

    def _finish(self, status: str, forced: tuple[ExitStatus, str] | None = None) -> RunResult:
        state = self.state() or EpisodeState()
        exit_status, detail = forced or (state.exit_status or ExitStatus.CRASHED, state.exit_detail)
        patch = self.folder / "patch.diff"
        patch.write_text(ws.diff(self.episode.ctx.workspace, self.folder / "baseline.git"), errors="surrogateescape")
        self.store.update_run(
            status=status, exit_status=exit_status.value, exit_detail=detail, steps=state.step,
            prompt_tokens=state.usage.prompt_tokens, cached_prompt_tokens=state.usage.cached_prompt_tokens,
            completion_tokens=state.usage.completion_tokens, cost=state.cost, active_s=state.active_s,
            patch_path=str(patch),
        )  # the reward's verdict was stored by the loop's verify node (RunStore.set_reward)
        self.store.sync_catalog()
        return RunResult(
            run_id=self.run_id, status=status, exit_status=exit_status, exit_detail=detail,
            reward=state.reward if state.verified else None, correct=state.correct if state.verified else None,
            steps=state.step, state=state, patch_path=patch,
        )

    def close(self) -> None:
        """Release the plugin's resources (its optional ``teardown``), the store, the checkpoint
        database and the policy's connections."""
        self.episode.env.close()  # e.g. the 3D plugin's Blender worker
        self.store.close()
        self._sqlite.close()
        close_policy = getattr(self.episode.policy, "close", None)
        if close_policy is not None:
            close_policy()
