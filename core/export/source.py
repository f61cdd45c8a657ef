"""Reading finished runs out of the run store for export: one ``RunRecord`` per run.

Stores are opened through ``core.runs`` (not ``core.runner``, which loads the whole agent loop:
LangGraph, the model clients, seconds of start-up an export does not need).

A record holds what every exporter and quality gate needs: the run's row (task, plugin,
status, reward), the history in OpenAI chat format, each tool call's stored record, the reward
components, the tool schemas the model was shown, a digest of the starting files, and the files
the final patch touches. Stores are opened read-only, so export never changes a run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from contextlib import closing
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import duckdb

from core import gitstore
from core.catalog import list_runs
from core.config import runs_dir
from core.errors import PluginNotFound, UserError
from core.runs import open_store
from core.state import Message


@dataclass
class RunRecord:
    """One run as the exporters see it.

    Attributes:
        run_id: the run's id.
        folder: the run's folder (``$HORIZON_HOME/runs/<id>``).
        row: the ``runs`` row (``plugin``, ``task``, ``repo``, ``status``, ``exit_status``,
            ``exit_detail``, ``reward``, ``steps``, token counts, ``config``...).
        messages: the whole history, in order.
        tool_calls: the ``tool_calls`` view's rows, in order: ``seq``, ``tool_call_id``, ``step``,
            ``tool``, ``arguments`` (JSON text), ``output``, ``is_error``, ``data`` (dict), ``duration_s``.
        rewards: ``{component: {"value", "weight", "detail"}}`` (empty when never verified).
        tools: the plugin's tools as OpenAI function schemas, in the order the model saw them.
        start_tree: git tree hash of the starting files (the workspace snapshot), or "" if unknown.
        patched_files: paths the final patch changes, adds or deletes; for a container task also
            those its ``container.diff`` changes outside the working folder, as absolute paths (``/tmp/x``).
        read_only_tools: names of the plugin's tools that never change the workspace.
        engine_tokens: per model call, the engine's ``prompt_token_ids``, ``completion_token_ids``
            and ``completion_logprobs`` (``RunStore.model_call_tokens``; None where not returned).
    """

    run_id: str
    folder: Path
    row: dict[str, Any]
    messages: list[Message]
    tool_calls: list[dict[str, Any]]
    rewards: dict[str, dict[str, Any]]
    tools: list[dict[str, Any]]
    start_tree: str = ""
    patched_files: list[str] = field(default_factory=list)
    read_only_tools: frozenset[str] = frozenset()
    engine_tokens: list[dict[str, Any]] = field(default_factory=list)

    @property
    def plugin(self) -> str:
        """The plugin's name."""
        return self.row["plugin"]

    @property
    def instruction(self) -> str:
        """The task as the user gave it."""
        return self.row["task"]

    @property
    def reward(self) -> float | None:
        """The reward in [0, 1]; None when the run never reached its end or its reward was not
        applicable (``row["reward_status"]``), never 0 in those cases."""
        return self.row["reward"] if self.row.get("status") == "finished" else None

    @property
    def task_key(self) -> tuple[str, str, str]:
        """``(plugin, instruction, start_tree)``: runs with the same key are attempts at one task
        from the same starting state."""
        return self.plugin, self.instruction, self.start_tree

    def openai_messages(self) -> list[dict[str, Any]]:
        """The history as chat-completions message dicts (``Message.to_openai``)."""
        return [m.to_openai() for m in self.messages]


@cache
def plugin_tools(plugin: str) -> tuple[tuple[str, ...], frozenset[str]]:
    """The plugin's tools as OpenAI function schemas (JSON text each), as the loop gives them to the
    policy (``Tool.schema()`` of ``plugin.tools()``, in order), and the names of the read-only ones.

    The store does not record the schemas a run was shown: they are the installed plugin's now.

    Raises:
        UserError: the plugin is not installed here, so its tools cannot be described.
    """
    from core.plugin import load_plugin

    try:
        plugin_obj = load_plugin(plugin)
    except PluginNotFound as exc:
        raise UserError(f"cannot export runs of plugin {plugin!r}: {exc}; install it to get its tool schemas") from None
    tools = plugin_obj.tools()
    return tuple(json.dumps(t.schema()) for t in tools), frozenset(t.name for t in tools if t.read_only)


@cache
def plugin_checker_inputs(plugin: str) -> Callable[[str], bool]:
    """The plugin's ``is_checker_input(path) -> bool`` hook (``core.plugin.Plugin``): which files of
    a patch its reward checks against; a plugin without the hook has none.

    Raises:
        UserError: the plugin is not installed here.
    """
    from core.plugin import load_plugin

    try:
        hook = getattr(load_plugin(plugin), "is_checker_input", None)
    except PluginNotFound as exc:
        raise UserError(f"cannot check runs of plugin {plugin!r}: {exc}; install it to check them") from None
    return hook if hook is not None else (lambda path: False)


def baseline_git(folder: Path, *args: str) -> str | None:
    """Run git on a run's ``baseline.git`` (the starting snapshot) with ``core.gitstore``'s
    scrubbed environment; its output, or None on failure."""
    try:
        return gitstore.git(folder / "baseline.git", *args).decode("utf-8", "surrogateescape")
    except UserError:
        return None


def root_commit(folder: Path) -> str:
    """The first commit of a run's ``baseline.git``: the files as the run started ("" if none)."""
    if not (folder / "baseline.git").is_dir():
        return ""
    out = baseline_git(folder, "rev-list", "--max-parents=0", "HEAD")
    return out.split()[0] if out and out.split() else ""


def start_tree(folder: Path) -> str:
    """The git tree hash of a run's starting files; "" when the run has no baseline (it failed
    before the snapshot)."""
    root = root_commit(folder)
    out = baseline_git(folder, "rev-parse", root + "^{tree}") if root else None
    return out.strip() if out else ""


_DIFF_HEADER = re.compile(r"^diff --git a/(.+?) b/(.+)$")


def patched_files(patch: Path) -> list[str]:
    """Paths a git diff touches (both sides of a rename), from its ``diff --git a/X b/Y`` lines."""
    try:
        text = patch.read_text(errors="surrogateescape")
    except OSError:
        return []
    found: set[str] = set()
    for line in text.splitlines():
        match = _DIFF_HEADER.match(line)
        if match:
            found.update(match.groups())
    return sorted(found)


def load_run(run_id: str, home: Path | None = None) -> RunRecord:
    """Read one run from its store (read-only).

    Raises:
        RunNotFound: no such run.
        UserError: the run is being written by another process, its store is damaged, or its
            plugin is not installed.
    """
    with closing(open_store(run_id, home)) as store:
        row = store.run()
        messages = store.messages()
        rewards = store.rewards()
        cols = ["seq", "tool_call_id", "step", "tool", "arguments", "output", "is_error", "data", "duration_s"]
        calls = [dict(zip(cols, r)) for r in store.con.execute(f"SELECT {', '.join(cols)} FROM tool_calls ORDER BY seq").fetchall()]
        try:
            engine_tokens = store.model_call_tokens()
        except duckdb.Error:  # a store from before token capture, opened read-only: no such columns
            engine_tokens = []
    for call in calls:
        call["data"] = json.loads(call["data"]) if call["data"] else {}
    folder = runs_dir(home) / run_id
    schemas, read_only = plugin_tools(row["plugin"])
    # External MCP servers' tools (core.mcp.client) are the run's own: recorded when it started.
    external = row["config"].get("external_tools", [])
    read_only = read_only | frozenset(row["config"].get("external_read_only", []))
    return RunRecord(
        run_id=run_id, folder=folder, row=row, messages=messages, tool_calls=calls, rewards=rewards,
        tools=[*(json.loads(s) for s in schemas), *external], start_tree=start_tree(folder),
        patched_files=sorted({*patched_files(folder / "patch.diff"), *("/" + p for p in patched_files(folder / "container.diff"))}),
        read_only_tools=read_only, engine_tokens=engine_tokens,
    )


def select_runs(
    run_ids: list[str], *, all_runs: bool = False, plugin: str | None = None, home: Path | None = None
) -> tuple[list[str], list[str]]:
    """Resolve the command line's choice of runs to run ids, oldest first.

    Args:
        run_ids: explicit ids (kept in the given order, duplicates dropped).
        all_runs: every run in the store.
        plugin: every run of this plugin (combines with ``run_ids``).

    Returns:
        ``(run ids to export, "RUN_ID (why)" for each listed run that cannot be read now)``:
        with ``--all`` a run being written (``running``, ``in use``) or damaged is skipped and named, not fatal.

    Raises:
        UserError: nothing was chosen, or the choice matches no run.
    """
    if not run_ids and not all_runs and not plugin:
        raise UserError("say which runs to export: run ids, --all, or --plugin NAME (list runs with: agent runs)")
    chosen = list(dict.fromkeys(run_ids))
    skipped: list[str] = []
    if all_runs or plugin:
        for r in reversed(list_runs(home)):  # oldest first
            if r["run_id"] in chosen:
                continue
            if r["status"] in ("running", "in use", "damaged", "unreadable"):  # running: another process writes it now
                skipped.append(f"{r['run_id']} ({r['status']})")
            elif all_runs or r.get("plugin") == plugin:
                chosen.append(r["run_id"])
    if not chosen:
        what = "runs" if all_runs else f"runs of plugin {plugin!r}"
        raise UserError(f"no {what} in the run store{' that can be read now' if skipped else ''}; list runs with: agent runs")
    return chosen, skipped
