"""Horizon episodes as environments for TRL's ``GRPOTrainer(environment_factory=...)``.

TRL 1.16's contract (``trl/trainer/grpo_trainer.py``), as read from its source:

* ``environment_factory`` is a callable (here: a class) or ``{name: callable}``. The trainer calls
  it with no arguments: once at start-up to probe the class, then whenever a batch needs more
  instances than its pool holds. Instances are pooled and reused across batches; TRL never
  closes them.
* Before each rollout it calls ``reset(**row)`` with every column of the dataset row (with a dict
  factory, all but ``environment``, which picks the factory). A string it returns is appended to
  the row's last user message.
* Every public function of the class (found with ``inspect.getmembers(type(env),
  inspect.isfunction)``) except ``reset`` and ``get_reward`` is a tool. Its schema is
  ``transformers.utils.get_json_schema``'s: types from the signature's annotations, the
  description and each argument's description from a Google-style docstring. A tool call runs
  ``method(**arguments)``; what it returns is shown as ``str(result)``; an exception becomes
  ``{"error": ...}`` and counts as a tool failure.
* ``get_reward()``, when the class has it, is called once per finished rollout and is a reward
  source of weight 1 (logged under the class's name); ``None`` means "not applicable" (TRL turns
  it into NaN and leaves it out). Reward functions also get ``environments=`` (one per completion).

So ``environment_class(plugin)`` makes one class per plugin, with one method per tool of the
plugin, written from the tool's own JSON schema (``Tool.schema()``): a real signature (JSON types
as Python annotations: ``integer`` -> ``int``, ``enum`` -> ``Literal``, ``anyOf [T, null]`` ->
``T | None``, ``array`` -> ``list[...]``) and a docstring whose ``Args:`` hold each argument's
description. What ``get_json_schema`` cannot express (``default``, ``minimum``/``maximum``,
``minLength``, ``maxItems``, ``pattern``...) is written into the argument's description, e.g.
``first line shown (1-based) (default: 1; minimum: 1)``, so the model still reads it. The
arguments reach the tool as the model wrote them and are validated by Horizon (the method
accepts any keywords), so a bad call is Horizon's error observation, not a Python ``TypeError``.

Each instance holds at most one episode (``core.trainers.episodes.open_episode``: the workspace
copy in ``$HORIZON_HOME/episodes/<id>``, the sandbox, the plugin's set-up). ``reset`` closes the
previous one and opens the row's; the value it returns is the set-up's text (``Environment.
setup_text``: the baseline test run, the files), so the prompt TRL renders is Horizon's opening
exactly (the row's prompt holds the system prompt and the bare instruction). Each tool call goes
through ``Environment.step``: the loop's error policy, output cap (the whole output saved in the
workspace, the cut naming the lines left out) and stuck detector; after ``finish`` (or the
detector's stop) further calls are refused. ``get_reward`` judges the episode with the plugin's
reward on its files as they are, ``finish`` or not (Horizon's loop judges a run that ran out of
steps too): the reward in [0, 1], or None when not applicable or when the reward raised (logged).

An episode is closed (the plugin's teardown, its folder deleted) by the next ``reset``, by
``close_all()`` (``ClosingCallback`` calls it when training ends: pass
``callbacks=[closing_callback()]``), by ``with env:``, when the instance is garbage-collected,
and at interpreter exit. (A public ``close`` method would be a tool, so there is none.)

Rows: ``suite_rows(suite)`` (a task suite) and ``agent export --format trl-env`` (finished runs:
``run_rows``) write one row per task::

    prompt       [{"role": "system", ...}, {"role": "user", "content": instruction}]
    environment  the plugin's name (routes a row with a dict factory, ``environment_factories``)
    plugin, instruction, repo, start_tree, metadata (JSON text of Task.metadata), task (a name)

the fields of verl's ``create_kwargs`` (``core.export.tasks``), so one export shape serves both.
Needs the ``train`` extra (TRL, transformers) only for the trainer itself; this module imports
neither at import time.
"""

from __future__ import annotations

import inspect
import json
import keyword
import logging
import tempfile
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, Literal, Union

from core import workspace as ws
from core.environment import MAX_OBSERVATION_CHARS, Environment
from core.errors import UserError
from core.plugin import Plugin, Task, load_plugin
from core.reward import RewardResult, Trajectory
from core.state import ToolCall
from core.trainers.episodes import OpenEpisode, open_episode

__all__ = [
    "ROW_COLUMNS", "HorizonEnvironment", "close_all", "closing_callback", "environment_class", "environment_factories",
    "horizon_reward", "run_rows", "suite_rows", "task_row", "tool_method", "write_rows",
]

log = logging.getLogger(__name__)

#: The columns of a row (module docstring), in order.
ROW_COLUMNS = ("prompt", "environment", "plugin", "task", "instruction", "repo", "start_tree", "metadata")
#: Names TRL gives a meaning of its own: never a tool's.
_RESERVED = frozenset({"reset", "get_reward"})
#: Schema keys ``get_json_schema`` writes itself; any other key of a property is described in words.
_EXPRESSED = frozenset({"type", "description", "title", "enum", "items", "anyOf"})
_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict, "null": type(None)}

_LIVE: weakref.WeakSet[HorizonEnvironment] = weakref.WeakSet()  # instances of this process that may hold an episode


class HorizonEnvironment:
    """One rollout's Horizon episode for TRL (module docstring); make a class with ``environment_class``.

    TRL constructs instances with no arguments; the class's options (plugin, home, sandbox,
    output budget) are class attributes set by ``environment_class``.
    """

    plugin_name: ClassVar[str] = ""
    _plugin: ClassVar[Plugin | None] = None
    _home: ClassVar[Path | None] = None
    _isolated: ClassVar[bool] = True
    _max_observation_chars: ClassVar[int] = MAX_OBSERVATION_CHARS

    def __init__(self) -> None:
        if not self.plugin_name:
            raise TypeError("HorizonEnvironment is a base class; pass environment_class('<plugin>') to environment_factory")
        self._episode: OpenEpisode | None = None
        self._closer: weakref.finalize | None = None
        self._row: dict[str, Any] = {}
        self._tool_data: list[dict[str, Any]] = []
        self._exit_status: str | None = None
        self._verdict: RewardResult | None = None
        self._reward_error = ""
        _LIVE.add(self)

    # -- what TRL calls ------------------------------------------------------------------------

    def reset(self, **row: Any) -> str | None:
        """Close the previous episode and open the one ``row`` names (``ROW_COLUMNS``).

        Returns:
            The plugin's set-up text, after a blank line (TRL appends it to the row's user
            message, completing Horizon's opening), or None when the set-up said nothing.

        Raises:
            UserError: the row names another plugin than this class's, or the episode cannot
                start (``open_episode``: unknown plugin, missing repository, changed files...).
            SandboxUnavailable: isolation is on and bwrap cannot start here.
        """
        self._close()
        named = row.get("plugin") or row.get("environment")
        if named != self.plugin_name:
            raise UserError(f"the row names the plugin {named!r}, but this environment runs {self.plugin_name!r}'s tools; "
                            "for rows of several plugins pass environment_factory=environment_factories([...]) "
                            "(the rows' 'environment' column picks one)")
        episode = open_episode(row, plugin=self._plugin, home=self._home, isolated=self._isolated,
                               max_observation_chars=self._max_observation_chars)  # fmt: skip
        self._episode, self._row = episode, dict(row)
        self._closer = weakref.finalize(self, OpenEpisode.close, episode)
        self._tool_data, self._exit_status, self._verdict, self._reward_error = [], None, None, ""
        _check_prompt(row.get("prompt"), episode, self.plugin_name)
        setup = episode.env.setup_text
        return f"\n\n{setup}" if setup else None

    # ``get_reward`` is added by ``environment_class`` (``owns_reward``): TRL adds it as a reward source.

    def _get_reward(self) -> float | None:
        """The plugin's reward for the episode as it is now, in [0, 1]; None when not applicable,
        or when the reward raised (logged; ``reward_error`` says why)."""
        verdict = self._judge()
        return float(verdict.reward) if verdict is not None and verdict.applicable else None

    # -- what a caller may read ----------------------------------------------------------------

    @property
    def episode(self) -> OpenEpisode | None:
        """The open episode (folder, ``Environment``), or None before ``reset`` and after closing."""
        return self._episode

    @property
    def tool_calls(self) -> list[dict[str, Any]]:
        """The episode's tool calls so far: ``{"tool", "arguments", "is_error", "data", "observation"}``."""
        return list(self._tool_data)

    @property
    def exit_status(self) -> str | None:
        """``submitted`` after ``finish``, ``stuck`` after the stuck detector's stop, else None."""
        return self._exit_status

    @property
    def verdict(self) -> RewardResult | None:
        """The plugin's last verdict on the episode (``get_reward``), or None."""
        return self._verdict

    @property
    def reward_error(self) -> str:
        """Why the plugin's reward raised at the last ``get_reward`` ("" when it did not)."""
        return self._reward_error

    # -- closing -------------------------------------------------------------------------------

    def __enter__(self) -> HorizonEnvironment:  # noqa: PYI034 - Self needs no import here, but subclasses are made by type()
        return self

    def __exit__(self, *exc: object) -> None:
        self._close()

    def _close(self) -> None:
        """Close the episode (teardown, folder deleted); safe to call again."""
        closer, self._closer, self._episode = self._closer, None, None
        if closer is not None:
            try:
                closer()
            except Exception:  # the plugin's teardown; the folder is gone whatever it did (OpenEpisode.close)
                log.exception("teardown of a Horizon episode of %s failed", self.plugin_name)

    # -- one tool call -------------------------------------------------------------------------

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one tool call through the episode's ``Environment.step`` and return what the model sees."""
        if self._episode is None:
            raise RuntimeError(f"{name} was called before reset(): no Horizon episode is open")
        if self._exit_status is not None:
            why = "finish was called" if self._exit_status == "submitted" else "the agent repeated itself"
            return f"the episode has ended ({why}); no further tool calls are run"
        env = self._episode.env
        text = json.dumps(arguments, ensure_ascii=False, default=str)
        try:
            seen = env.step(ToolCall(id=f"trl_{env.calls + 1}", name=name, arguments=text))
        except Exception:  # a bug in a tool, not a refusal: TRL shows the model {"error": ...} and counts a failure
            log.exception("Horizon episode of %s: the %s tool crashed", self.plugin_name, name)
            raise
        self._tool_data.append({"tool": name, "arguments": text, "is_error": seen.result.is_error, "data": seen.result.data,
                                "observation": seen.content})  # fmt: skip
        self._verdict = None  # the files may have changed
        self._exit_status = "submitted" if seen.done else "stuck" if seen.stop else None
        return seen.content

    def _judge(self) -> RewardResult | None:
        if self._episode is None:
            raise RuntimeError("get_reward() was called before reset(): no Horizon episode is open")
        if self._verdict is None:
            env = self._episode.env
            trajectory = Trajectory(tool_data=[{k: v for k, v in d.items() if k != "observation"} for d in self._tool_data],
                                    exit_status=self._exit_status, workspace=env.ctx.workspace, scratch=env.ctx.scratch,
                                    metadata=env.task.metadata, context=env.ctx)  # fmt: skip
            try:
                self._verdict, self._reward_error = env.reward(trajectory), ""
            except Exception as exc:  # a crash in the plugin's reward: the sample is left out, training goes on
                log.exception("the %s plugin's reward failed; the rollout is not scored", self.plugin_name)
                self._reward_error = f"{type(exc).__name__}: {exc}"
                return None
            if not self._verdict.applicable:
                log.warning("Horizon episode of %s: reward not applicable (%s)", self.plugin_name, self._verdict.summary)
        return self._verdict


def _check_prompt(prompt: Any, episode: OpenEpisode, plugin: str) -> None:
    """Warn when the row's system prompt is not the one the plugin gives now (rows built by an older plugin)."""
    if not isinstance(prompt, list) or not prompt or not isinstance(prompt[0], dict) or prompt[0].get("role") != "system":
        return
    if prompt[0].get("content") != episode.opening[0].content:
        log.warning("the row's system prompt is not the %s plugin's (built by another version?); build the rows again", plugin)


# --------------------------------------------------------------------------- tool methods


def _hint(prop: dict[str, Any]) -> Any:
    """The Python annotation whose ``get_json_schema`` is ``prop``'s type (module docstring)."""
    if "enum" in prop:
        return Literal[tuple(prop["enum"])]
    if "anyOf" in prop:
        branches = [_hint(b) for b in prop["anyOf"] if b.get("type") != "null"]
        nullable = any(b.get("type") == "null" for b in prop["anyOf"])
        hint = branches[0] if len(branches) == 1 else Union[tuple(branches)] if branches else Any  # noqa: UP007 - built at run time
        return hint | None if nullable and hint is not Any else hint
    kind = prop.get("type")
    if isinstance(kind, list):
        return _hint({"anyOf": [{**prop, "type": k} for k in kind]})
    if kind == "array":
        return list[_hint(prop["items"])] if isinstance(prop.get("items"), dict) and prop["items"] else list
    return _JSON_TYPES.get(kind, Any)  # no type, or a $ref: any JSON value


def _notes(prop: dict[str, Any], prefix: str = "") -> list[str]:
    """What of ``prop`` ``get_json_schema`` cannot write (defaults, bounds, lengths, patterns), in words."""
    notes = [f"{prefix}{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in prop.items()
             if key not in _EXPRESSED and not (key == "default" and value is None)]  # optional already says "may be left out"
    for branch in prop.get("anyOf", []):
        if branch.get("type") != "null":
            notes += _notes({k: v for k, v in branch.items() if k != "description"}, prefix)
    if isinstance(prop.get("items"), dict):
        notes += _notes(prop["items"], f"{prefix}each item's ")
    return notes


def _identifier(name: str, what: str) -> None:
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise UserError(f"{what} {name!r} is not a Python identifier, so TRL cannot call it as a method "
                        "(TRL calls method(**arguments)); rename it in the plugin")


def tool_method(schema: dict[str, Any]) -> Callable[..., str]:
    """A method for TRL from one Horizon tool's OpenAI function schema (``Tool.schema()``).

    The method's signature, annotations and docstring are written so that
    ``transformers.utils.get_json_schema`` gives the tool's name, description, arguments, types,
    enums and required list; the rest of each argument's schema is in its description
    (``_notes``). Calling it runs ``self._call(name, arguments)``.

    Raises:
        UserError: the tool's or an argument's name is not a Python identifier (or is a keyword,
            ``self``, or a name TRL reserves: ``reset``, ``get_reward``, or one
            starting with ``_``, which TRL would not offer).
    """
    function = schema["function"]
    name = function["name"]
    _identifier(name, "the tool name")
    if name in _RESERVED or name.startswith("_") or hasattr(HorizonEnvironment, name):
        raise UserError(f"the tool name {name!r} is taken by TRL or by HorizonEnvironment's own attributes; rename the tool")
    params = function.get("parameters") or {}
    required = set(params.get("required") or [])
    signature = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = []
    for arg, prop in (params.get("properties") or {}).items():
        _identifier(arg, f"the argument {arg!r} of {name}: its name")
        if arg == "self":
            raise UserError(f"the tool {name} has an argument named 'self', which a method cannot take; rename it")
        hint = _hint(prop)
        default = inspect.Parameter.empty if arg in required else prop.get("default")
        signature.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=hint))
        annotations[arg] = hint
        notes = _notes(prop)
        described = " ".join(str(prop.get("description") or f"the {arg} argument").split())
        lines.append(f"    {arg}: {described}" + (f" ({'; '.join(notes)})" if notes else ""))
    description = " ".join(str(function.get("description") or name).split())

    def method(self: HorizonEnvironment, **arguments: Any):  # its signature is __signature__, below
        return self._call(name, arguments)

    method.__name__ = method.__qualname__ = name
    # no return annotation or Returns: section: get_json_schema would add a "return" key Horizon's schema lacks
    method.__signature__ = inspect.Signature(signature)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    method.__doc__ = description + ("\n\nArgs:\n" + "\n".join(lines) if lines else "")
    return method


_CLASSES: dict[tuple[str, Path | None, bool, int, bool], type[HorizonEnvironment]] = {}


def environment_class(plugin: str, *, home: Path | None = None, isolated: bool = True,
                      max_observation_chars: int = MAX_OBSERVATION_CHARS, owns_reward: bool = True) -> type[HorizonEnvironment]:  # fmt: skip
    """The ``environment_factory`` for rows of ``plugin``: a ``HorizonEnvironment`` class with one
    method per tool of the plugin (``tool_method``); the same options give the same class.

    Args:
        plugin: the plugin's name (``agent plugins`` lists them).
        home: where episodes go (``$HORIZON_HOME/episodes``; default ``$HORIZON_HOME``).
        isolated: run commands in the bwrap sandbox (False: like ``--no-sandbox``).
        max_observation_chars: each tool call's output budget (the loop's default).
        owns_reward: give the class ``get_reward`` (TRL then adds the plugin's reward as a reward
            source of weight 1); False: leave it out and pass ``reward_funcs=[horizon_reward]``
            (to weigh it against other rewards with ``reward_weights``).

    Raises:
        PluginNotFound: no plugin of that name.
        UserError: a tool of the plugin cannot be a method (``tool_method``).
    """
    key = (plugin, home, isolated, max_observation_chars, owns_reward)
    if key in _CLASSES:
        return _CLASSES[key]
    loaded = load_plugin(plugin)
    namespace: dict[str, Any] = {"plugin_name": plugin, "_plugin": loaded, "_home": home, "_isolated": isolated,
                                 "_max_observation_chars": max_observation_chars, "__module__": __name__}  # fmt: skip
    for tool in loaded.tools():
        method = tool_method(tool.schema())
        if method.__name__ in namespace:
            raise UserError(f"the {plugin} plugin has two tools named {method.__name__!r}")
        namespace[method.__name__] = method
    if owns_reward:
        namespace["get_reward"] = HorizonEnvironment._get_reward
    camel = "".join(part.capitalize() for part in plugin.replace("-", "_").split("_") if part)
    namespace["__doc__"] = f"A Horizon episode of the {plugin} plugin for TRL's GRPOTrainer (core.trainers.trl)."
    cls = type(f"Horizon{camel}Environment", (HorizonEnvironment,), namespace)
    _CLASSES[key] = cls
    return cls


def environment_factories(plugins: list[str], **options: Any) -> dict[str, type[HorizonEnvironment]]:
    """``{plugin: environment_class(plugin)}``: TRL's dict ``environment_factory`` for rows of several
    plugins (each row's ``environment`` column names its plugin; each prompt offers its own tools).

    Args:
        plugins: the plugins' names.
        **options: ``environment_class``'s options, for every plugin.
    """
    return {name: environment_class(name, **options) for name in dict.fromkeys(plugins)}


def horizon_reward(environments: list[HorizonEnvironment] | None = None, **kwargs: Any) -> list[float | None]:
    """A TRL reward function: each completion's plugin reward, read from its environment.

    For classes made with ``owns_reward=False`` (with ``get_reward``, TRL scores the episode itself;
    passing both counts the reward twice).

    Raises:
        ValueError: TRL passed no environments (the trainer has no ``environment_factory``).
    """
    if environments is None:
        raise ValueError("horizon_reward reads the rollouts' environments: give GRPOTrainer environment_factory=environment_class(...)")
    return [env._get_reward() if isinstance(env, HorizonEnvironment) else None for env in environments]


def close_all() -> int:
    """Close every open episode of this process's Horizon environments; return how many were open."""
    open_now = [env for env in list(_LIVE) if env._episode is not None]
    for env in open_now:
        env._close()
    return len(open_now)


def closing_callback() -> Any:
    """A ``transformers.TrainerCallback`` that closes every open Horizon episode when training ends
    (``GRPOTrainer(..., callbacks=[closing_callback()])``): TRL keeps its pooled environments,
    and with them the last batch's episodes, until the trainer is gone."""
    from transformers import TrainerCallback

    class ClosingCallback(TrainerCallback):
        """Closes the Horizon episodes still open at ``on_train_end`` (``close_all``)."""

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            closed = close_all()
            if closed:
                log.info("closed %d Horizon episodes at the end of training", closed)

    return ClosingCallback()


# --------------------------------------------------------------------------- rows


def task_row(task: Task, name: str = "", *, plugin: Plugin | None = None, start_tree: str | None = None) -> dict[str, Any]:
    """The row (``ROW_COLUMNS``) of one task: its system prompt and bare instruction as the prompt.

    Args:
        task: the task (plugin, instruction, starting folder, metadata).
        name: what logs call it (default: the instruction's first 60 characters).
        plugin: the loaded plugin (default ``load_plugin(task.plugin)``).
        start_tree: the starting files' git tree (default: computed on a copy of ``task.repo``).

    Raises:
        PluginNotFound: the task's plugin is not installed.
        UserError: the starting folder cannot be copied.
    """
    plugin = plugin or load_plugin(task.plugin)
    tree = _start_tree(task) if start_tree is None else start_tree
    return _row(plugin, task, name or task.instruction[:60], tree)


def _row(plugin: Plugin, task: Task, name: str, start_tree: str) -> dict[str, Any]:
    return {
        "prompt": [{"role": "system", "content": plugin.system_prompt(task)}, {"role": "user", "content": task.instruction}],
        "environment": task.plugin, "plugin": task.plugin, "task": name, "instruction": task.instruction,
        "repo": str(task.repo) if task.repo else "", "start_tree": start_tree,
        "metadata": json.dumps(task.metadata, sort_keys=True, ensure_ascii=False),
    }


def _start_tree(task: Task) -> str:
    """The git tree of the files an episode of ``task`` starts from (what ``open_episode`` checks)."""
    with tempfile.TemporaryDirectory(prefix="horizon-rows-") as tmp:
        Environment.prepare(task, Path(tmp) / "episode")
        return ws.save_tree(Path(tmp) / "episode" / "workspace", Path(tmp) / "episode" / "baseline.git")


def suite_rows(suite: Path, *, only: list[str] | None = None, plugin: str | None = None) -> list[dict[str, Any]]:
    """One row per task of a suite (``core.eval.tasks.load_suite``), as ``agent eval`` would start it.

    The task's metadata is what ``agent eval`` gives the episode (``fail_to_pass``,
    ``pass_to_pass``, the suite's own metadata, the suite folder hidden from the sandbox); the
    starting files' tree is computed on a copy, so a worker whose files differ refuses the row.

    Args:
        suite: a suite folder (or a suite of suites, or one task folder).
        only: task names or patterns (``load_suite``).
        plugin: the plugin of tasks that name none (default: the suite of suites' folder name).

    Raises:
        UserError: the suite cannot be read (``load_suite``), or a task names no plugin.
        PluginNotFound: a task's plugin is not installed.
    """
    from core.eval.tasks import load_suite

    rows, plugins = [], {}
    for task in load_suite(suite, only):
        name = task.plugin(plugin or "")
        if not name:
            raise UserError(f"task {task.name} names no plugin; pass plugin=... (or put 'plugin' in its task file)")
        if name not in plugins:
            plugins[name] = load_plugin(name)
        hidden = [str(task.folder.parent), *task.metadata.get("sandbox_hidden", [])]
        metadata = {"fail_to_pass": task.spec.fail_to_pass, "pass_to_pass": task.spec.pass_to_pass, **task.metadata,
                    "sandbox_hidden": hidden}  # fmt: skip
        spec = Task(plugin=name, instruction=task.spec.instruction, repo=task.repo, metadata=metadata)
        rows.append(_row(plugins[name], spec, task.name, _start_tree(spec)))
    return rows


def run_rows(runs: list[Any]) -> list[dict[str, Any]]:
    """One row per task of finished runs (``core.export.source.RunRecord``s, grouped as verl's export
    groups them: plugin, instruction, starting tree), named by the task's first run id.

    Raises:
        PluginNotFound: a run's plugin is not installed (its system prompt is the plugin's).
    """
    from core.export.tasks import group_by_task

    rows, plugins = [], {}
    for group in group_by_task(runs):
        first = group[0]
        metadata = (first.row.get("config") or {}).get("task_metadata") or {}
        repo = first.row.get("repo") or ""
        task = Task(plugin=first.plugin, instruction=first.instruction, repo=Path(repo) if repo else None, metadata=metadata)
        if first.plugin not in plugins:
            plugins[first.plugin] = load_plugin(first.plugin)
        rows.append(_row(plugins[first.plugin], task, first.run_id, first.start_tree))
    return rows


def write_rows(rows: list[dict[str, Any]], out: Path) -> int:
    """Write rows as JSON Lines (``datasets.load_dataset("json", data_files=str(out))`` reads them); return how many."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps({key: row[key] for key in ROW_COLUMNS}, ensure_ascii=False) + "\n")
    return len(rows)
