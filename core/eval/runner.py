"""Running a suite: every task, k attempts each, in parallel; each episode a normal Horizon run.

``run_episode`` is the unit of work: it takes a picklable ``EpisodeSpec`` and returns an
``EpisodeResult``, so any pool can run it: Ray tasks and actors (``core.eval.ray_backend``, the
default when Ray is installed) or a local process pool. Each episode is started with
``core.runner.Run`` and is listed by ``agent runs`` like any other run. ``run_eval`` schedules
the episodes and appends each result to the evaluation's ``results.jsonl`` the moment it ends,
so an evaluation cut short keeps what it finished::

    $HORIZON_HOME/evals/<eval id>/
        eval.json          what was evaluated: plugin, suite, policy, attempts, tasks (written at the start)
        results.jsonl      one EpisodeResult per line, in the order episodes ended
        summary.json       pass@1, pass@k, mean reward and cost, overall and per task
        scripts/           the scripted policies' turns (task-attempt.jsonl)
"""

from __future__ import annotations

import json
import multiprocessing
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from core.config import horizon_home
from core.errors import HorizonError, NoReference, SandboxUnavailable, UserError
from core.eval.metrics import summarize
from core.eval.policies import SCRIPTED, write_script
from core.eval.tasks import EvalTask
from core.reward import RewardResult
from core.runs import mark_killed, new_run_id
from core.state import Limits


class EpisodeSpec(BaseModel):
    """Everything one worker needs to run one attempt at one task (picklable, JSON-able).

    Attributes:
        task: the task's name; ``task_folder`` its folder (holding ``repo/``).
        attempt: 0-based attempt number.
        plugin: the plugin that runs the episode (``coding``).
        instruction: the task message.
        fail_to_pass, pass_to_pass: the task's test ids, checked against the final outcomes.
        policy: ``{"kind": ...}`` as ``core.runner.policy_spec`` makes it (a scripted policy
            carries its script's path).
        limits, pricing: ``core.state.Limits`` / ``Pricing`` as dicts.
        isolated: run commands in the bwrap sandbox.
        home: Horizon's home folder (runs are stored under it).
        label: the policy's name as the user gave it (``reference``, ``openai``, ...), kept in the result.
        hard_timeout_s: wall-clock seconds after which the scheduler kills the episode's worker
            (the loop's own ``limits.max_wall_s`` ends it gracefully before; this catches hangs).
        repo: the starting tree when it is not ``task_folder/repo`` (a Terminal-Bench task's); empty: that.
        metadata: more of the task's ``Task.metadata`` (a Terminal-Bench task's working folder and tests).
        run_id: the run id the episode's run takes, chosen by the scheduler for each try (so
            that it can find and mark the run after killing its worker); empty: a fresh one.
    """

    task: str
    task_folder: str
    attempt: int
    plugin: str
    instruction: str
    fail_to_pass: list[str]
    pass_to_pass: list[str]
    policy: dict[str, Any]
    limits: dict[str, Any]
    pricing: dict[str, Any]
    isolated: bool = True
    home: str
    label: str = ""
    hard_timeout_s: float = 3900.0
    run_id: str = ""
    repo: str = ""
    metadata: dict[str, Any] = {}


class EpisodeResult(BaseModel):
    """How one episode went.

    Attributes:
        task, attempt, label: which episode, and the policy's name.
        run_id: its run (``agent show RUN_ID``); empty when it could not start.
        exit_status: the episode's exit status (``error`` when it could not start).
        reward: the plugin's reward in [0, 1], or None when the episode was not judged or the
            reward was not applicable (``reward_status``).
        reward_version, reward_status: the verdict's ``RewardResult.version`` and ``status``
            (empty when the episode was not judged).
        resolved: the plugin's reward counts the task as solved (``correct``), every fail-to-pass test of the task passes
            and every pass-to-pass test still passes (SWE-bench's definition).
        fail_to_pass_passed: fail-to-pass tests that pass at the end (of ``len(fail_to_pass)``).
        pass_to_pass_broken: pass-to-pass tests that do not pass at the end.
        summary: the verdict's one-line summary, or the error.
        steps: model calls; cost: spend in the pricing's currency; seconds: wall-clock time in the worker.
        plugin: the plugin that ran it.
        infra_failure: why the episode failed for a reason that is not the policy's (worker died,
            sandbox unavailable, hard time limit); empty otherwise. Only these are retried.
        tries: how many times the episode was started (1 + infrastructure retries).
        timings: seconds by phase: ``start`` (copying the repository, snapshot, store),
            ``setup`` (the plugin's set-up up to the first model call: the coding plugin's
            baseline test run, the finance plugin's ingestion, Blender's start), ``tools``
            (tool calls: sandbox commands, Blender, queries), ``verify`` (the plugin's
            verification, e.g. the test run), ``other`` (the loop, checkpoints, store writes,
            policy); the scheduler adds ``scheduler`` (submission to result, minus ``seconds``:
            queueing, worker start, serialisation).
    """

    task: str
    attempt: int
    label: str = ""
    plugin: str = ""
    run_id: str = ""
    exit_status: str = ""
    reward: float | None = None
    reward_version: str = ""
    reward_status: str = ""
    resolved: bool = False
    fail_to_pass_passed: int = 0
    fail_to_pass_total: int = 0
    pass_to_pass_broken: list[str] = []
    summary: str = ""
    steps: int = 0
    cost: float = 0.0
    seconds: float = 0.0
    infra_failure: str = ""
    tries: int = 1
    timings: dict[str, float] = {}


def declared_tests_outcome(verdict: RewardResult, fail_to_pass: list[str], pass_to_pass: list[str]) -> tuple[list[str], list[str]]:
    """The plugin's own word on a task's declared tests, read from its verdict, never re-derived
    (which test passes is the plugin's to judge: a module whose tests were all skipped, say).

    A plugin whose tasks declare ``fail_to_pass`` / ``pass_to_pass`` (``TaskSpec``; the eval passes
    them in ``Task.metadata``) reports them as the components ``fail_to_pass`` (``detail["fixed"]``:
    the declared ids that pass at the end) and ``pass_to_pass`` (``detail["broken"]``: those that
    no longer pass). A verdict that says nothing of them verified none: no fail-to-pass test
    counts as passing and every pass-to-pass test as broken.

    Returns:
        ``(fail-to-pass ids that pass, pass-to-pass ids broken)``, each in the task's order.
    """

    def said(component: str, key: str) -> set[str] | None:
        found = verdict.components.get(component)
        value = found.detail.get(key) if found is not None else None
        return {str(t) for t in value} if isinstance(value, list) else None

    fixed, broken = said("fail_to_pass", "fixed"), said("pass_to_pass", "broken")
    passing = [t for t in fail_to_pass if fixed is not None and t in fixed]
    return passing, [t for t in pass_to_pass if broken is None or t in broken]


def run_episode(spec: EpisodeSpec) -> EpisodeResult:
    """Run one attempt at one task as a Horizon run and grade it against the task's tests.

    Never raises for a failing episode: a run that cannot start gives a result with
    ``exit_status="error"`` and the reason in ``summary`` (and in ``infra_failure`` when the
    sandbox could not start: the scheduler may retry that).
    """
    from core.config import load_settings
    from core.plugin import Task
    from core.runner import Run, make_policy
    from core.state import Pricing

    started = time.monotonic()
    result = EpisodeResult(task=spec.task, attempt=spec.attempt, label=spec.label, plugin=spec.plugin,
                           fail_to_pass_total=len(spec.fail_to_pass))  # fmt: skip
    seen: dict[str, Any] = {"tools": 0.0, "last": started}

    def on_event(kind: str, data: dict[str, Any]) -> None:
        now = time.monotonic()
        if kind == "progress":  # a line while set-up runs: not the end of set-up
            return
        if "setup" not in seen and "start" in seen:  # the first event follows the plugin's set-up
            seen["setup"] = now - seen["last"]
        if kind == "verify":
            seen["verdict"] = data["reward"]
            seen["verify"] = now - seen["last"]  # from the episode's last step to the verdict
        elif kind == "tool":
            seen["tools"] += float(data.get("duration_s") or 0.0)
        seen["last"] = now

    try:
        policy = make_policy(spec.policy, load_settings())
        run = Run.start(
            Task(plugin=spec.plugin, instruction=spec.instruction, repo=Path(spec.repo or Path(spec.task_folder) / "repo"),
                 # the suite (reference fixes, declared and hidden tests) is out of the agent's sight
                 metadata={"fail_to_pass": spec.fail_to_pass, "pass_to_pass": spec.pass_to_pass, **spec.metadata,
                           "sandbox_hidden": [str(Path(spec.task_folder).resolve().parent), *spec.metadata.get("sandbox_hidden", [])]}),
            policy, policy_config=spec.policy, limits=Limits(**spec.limits), pricing=Pricing(**spec.pricing),
            isolated=spec.isolated, home=Path(spec.home), on_event=on_event, run_id=spec.run_id or None,
        )  # fmt: skip
        seen["start"] = time.monotonic() - started
        seen["last"] = time.monotonic()
        try:
            outcome = run.execute()
        finally:
            run.close()
    except Exception as exc:  # noqa: BLE001 - a task that cannot even start is a result, not the end of the evaluation
        result.exit_status = "error"
        result.summary = f"{type(exc).__name__}: {exc}"
        if isinstance(exc, SandboxUnavailable):
            result.infra_failure = f"sandbox unavailable: {exc}"
        if not isinstance(exc, HorizonError):  # a bug, not a refusal: keep where it happened
            result.summary += "\n" + traceback.format_exc(limit=5)
        result.seconds = time.monotonic() - started
        return result
    result.run_id, result.exit_status = outcome.run_id, outcome.exit_status.value
    result.reward, result.steps, result.cost = outcome.reward, outcome.steps, outcome.state.cost
    verdict = seen.get("verdict")
    if verdict is not None:
        result.summary, result.reward_version, result.reward_status = verdict.summary, verdict.version, verdict.status.value
        passing, result.pass_to_pass_broken = declared_tests_outcome(verdict, spec.fail_to_pass, spec.pass_to_pass)
        result.fail_to_pass_passed = len(passing)
        result.resolved = (
            bool(verdict.correct)
            and result.fail_to_pass_passed == len(spec.fail_to_pass)
            and not result.pass_to_pass_broken
        )
    else:
        result.summary = outcome.exit_detail
    result.seconds = time.monotonic() - started
    phases = {"start": seen.get("start", 0.0), "setup": seen.get("setup", 0.0), "tools": seen["tools"], "verify": seen.get("verify", 0.0)}
    result.timings = {**{k: round(v, 3) for k, v in phases.items()}, "other": round(max(0.0, result.seconds - sum(phases.values())), 3)}
    return result


def episode_specs(
    tasks: list[EvalTask],
    *,
    plugin: str,
    attempts: int,
    policy: str,
    policy_config: dict[str, Any] | None,
    limits: dict[str, Any],
    pricing: dict[str, Any],
    isolated: bool,
    home: Path,
    scripts_dir: Path,
    hard_timeout_s: float | None = None,
    baseline_runs: int = 1,
    on_skip: Callable[[str, str], None] | None = None,
) -> list[EpisodeSpec]:
    """Make the episodes of an evaluation: ``attempts`` per task, tasks in order.

    Args:
        plugin: the plugin of tasks that name none (``auto``: only tasks that name one, or whose
            suite of suites does, are accepted).
        policy: ``reference``, ``finish-only``, ``edit-tests`` (scripts written to ``scripts_dir``)
            or any other kind, whose ``policy_config`` (``core.runner.policy_spec``) is used as is.
        limits: ``Limits`` as a dict; a scripted policy gets at least one step per turn.
        hard_timeout_s: seconds after which the scheduler kills an episode (default: the
            limits' ``max_wall_s`` plus 300 s for set-up and verification). A Terminal-Bench
            task's own agent time limit (``[agent] timeout_sec``) lowers its ``max_wall_s``.
        baseline_runs: 2 asks the coding plugin to run each task's tests twice at set-up, so
            that the export's non-determinism gate can tell a flaky environment (``Task.metadata``).
        on_skip: called with ``(task name, why)`` for a task the scripted policy has no turns for
            (``NoReference``: a Terminal-Bench task without a solution script under
            ``--policy reference``); that task gets no episode and the rest go on. None: the
            ``NoReference`` is raised.

    Raises:
        UserError: a task's reference fix does not match its repository, a task's plugin is
            unknown under ``auto``, or a task names another plugin than the one asked for.
        NoReference: a task has no reference solution and ``on_skip`` is None.
    """
    specs = []
    hard = hard_timeout_s or float(limits.get("max_wall_s", Limits().max_wall_s)) + 300.0
    for task in tasks:
        task_plugin = task.plugin("" if plugin == "auto" else plugin)
        if not task_plugin:
            raise UserError(f"task {task.name} names no plugin; give one (agent eval coding SUITE) or add \"plugin\" to its task file")
        if plugin != "auto" and task_plugin != plugin:
            raise UserError(f"task {task.name} is a {task_plugin} task, not {plugin}; run it with agent eval {task_plugin} (or auto)")
        # a task's own time limit for the agent (metadata "max_wall_s", seconds: Terminal-Bench's [agent] timeout_sec) caps --time-limit
        own_limit = task.metadata.get("max_wall_s")
        if policy in SCRIPTED:
            try:
                turns = SCRIPTED[policy](task)
            except NoReference as exc:
                if on_skip is None:
                    raise
                on_skip(task.name, str(exc))
                continue
        for attempt in range(attempts):
            task_limits = dict(limits)
            if own_limit:
                task_limits["max_wall_s"] = min(float(task_limits.get("max_wall_s", own_limit)), float(own_limit))
            if policy in SCRIPTED:
                script = write_script(turns, scripts_dir / f"{task.name}-{attempt}.jsonl")
                config = {"kind": "scripted", "script": str(script.resolve())}
                task_limits["max_steps"] = max(task_limits.get("max_steps", Limits().max_steps), len(turns) + 1)
            else:
                config = dict(policy_config or {})
            specs.append(EpisodeSpec(
                task=task.name, task_folder=str(task.folder), attempt=attempt, plugin=task_plugin, hard_timeout_s=hard,
                instruction=task.spec.instruction, fail_to_pass=task.spec.fail_to_pass,
                pass_to_pass=task.spec.pass_to_pass, policy=config, limits=task_limits, pricing=pricing,
                isolated=isolated, home=str(home), label=policy, repo=str(task.repo),
                metadata={**task.metadata, **({"baseline_runs": baseline_runs} if baseline_runs > 1 else {})},
            ))  # fmt: skip
    return specs


def run_eval(
    specs: list[EpisodeSpec],
    *,
    workers: int,
    k: int,
    out_dir: Path,
    worker: Callable[[EpisodeSpec], EpisodeResult] = run_episode,
    on_result: Callable[[EpisodeResult], None] | None = None,
    backend: str = "processes",
    ray_address: str | None = None,
    retries: int = 2,
    skipped: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run the episodes, ``workers`` at a time, and score them.

    Args:
        specs: from ``episode_specs``.
        workers: episodes at once (``processes`` with 1: in this process, no pool).
        k: the k of pass@k.
        out_dir: the evaluation's folder (``results.jsonl``, ``summary.json``).
        worker: the function run per episode (a pool's task; must be picklable for workers > 1).
        on_result: called in this process as each episode ends (e.g. to print a line).
        backend: ``ray`` (``core.eval.ray_backend``: Ray tasks, an actor per heavy episode, hard
            time limits, retries of infrastructure failures) or ``processes`` (a local process pool).
        ray_address: an existing Ray cluster (``ray://host:10001`` or ``host:6379``); None: a
            local Ray on this machine with ``workers`` CPUs.
        retries: restarts of an episode whose failure was the infrastructure's (Ray backend).
        skipped: ``{task name: why}`` of the tasks ``episode_specs`` gave no episode (``on_skip``),
            kept in the summary; they are not counted in the scores.

    Returns:
        The summary (``core.eval.metrics.summarize``) plus ``eval_id``, ``backend``,
        ``results`` (every EpisodeResult as a dict), ``seconds`` and ``skipped`` (``{task: why}``).

    Raises:
        UserError: an unknown backend, or ``ray`` without Ray installed.
    """
    if backend not in ("ray", "processes"):
        raise UserError(f"unknown backend {backend!r}; use ray or processes")
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    results: list[EpisodeResult] = []
    with (out_dir / "results.jsonl").open("a", encoding="utf-8") as sink:

        def record(result: EpisodeResult) -> None:
            sink.write(result.model_dump_json() + "\n")
            sink.flush()
            results.append(result)
            if on_result is not None:
                on_result(result)

        if backend == "ray":
            from core.eval.ray_backend import run_on_ray

            run_on_ray(specs, workers=workers, record=record, address=ray_address, retries=retries, worker=worker)
        elif workers <= 1:
            for spec in specs:
                record(worker(spec))
        else:
            # spawn: a fresh interpreter per worker; forking a process that holds DuckDB and
            # LangGraph threads is not safe.
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
                taken: set[str] = set()
                named = [spec.model_copy(update={"run_id": spec.run_id or new_run_id(taken)}) for spec in specs]
                futures = {pool.submit(worker, spec): spec for spec in named}
                for future in as_completed(futures):
                    spec = futures[future]
                    try:
                        record(future.result())
                    except Exception as exc:  # noqa: BLE001 - the worker process died (killed, out of memory)
                        summary = f"worker failed: {type(exc).__name__}: {exc}"
                        found = mark_killed(spec.run_id, f"worker died: {summary[:300]}", Path(spec.home))
                        record(EpisodeResult(task=spec.task, attempt=spec.attempt, label=spec.label, plugin=spec.plugin, exit_status="error",
                                             summary=summary, infra_failure="worker died", run_id=spec.run_id if found else ""))
    results.sort(key=lambda r: (r.task, r.attempt))
    summary = summarize([r.model_dump() for r in results], k)
    summary.update(eval_id=out_dir.name, backend=backend, seconds=round(time.monotonic() - started, 1),
                   infra_failures=sum(1 for r in results if r.infra_failure), results=[r.model_dump() for r in results],
                   skipped=dict(sorted((skipped or {}).items())))
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    return summary


def new_eval_dir(home: Path | None = None, **about: Any) -> Path:
    """A fresh folder ``$HORIZON_HOME/evals/<id>`` for one evaluation.

    Args:
        home: the Horizon home (default ``horizon_home()``).
        about: what the evaluation is (``plugin``, ``suite``, ``policy``, ``attempts``, ...), written
            to its ``eval.json`` for ``agent ui``'s evaluations list; nothing is written without it.
    """
    folder = (home or horizon_home()) / "evals" / new_run_id()
    folder.mkdir(parents=True)
    if about:
        (folder / "eval.json").write_text(json.dumps(about, indent=1, default=str) + "\n", encoding="utf-8")
    return folder
