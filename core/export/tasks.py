"""Task specifications for online RL: verl's task Parquet with its tool config, and SkyRL's variant.

One row per task (same plugin, instruction and starting files, however many runs attempted it);
the prompt is the episode's opening (system prompt and task message), so a trainer rolls the task
out itself.

verl (https://verl.readthedocs.io/en/latest/preparation/prepare_data.html and the multi-turn
rollout page, https://verl.readthedocs.io/en/latest/sglang_multiturn/multiturn.html) reads::

    data_source  str            which dataset/reward the row belongs to
    prompt       list[message]  chat messages, {"role", "content"}
    ability      str            the task's domain
    reward_model {"style": "rule", "ground_truth": str}
    extra_info   {"index", "split", "need_tools_kwargs", "tools_kwargs": {tool: {"create_kwargs": {...}}},
                  "tool_selection": [tool, ...], ...}
    agent_name   str            the agent loop that rolls it out ("tool_agent")

and a tool config YAML, ``tools: [{"class_name", "config": {"type": "native", ...}, "tool_schema":
<OpenAI function schema>}]``, one entry per tool name (verl keeps one tool per name; plugins of a
mixed export that share a name, ``finish`` at least, share its entry, and ``export_runs`` warns
when their schemas differ). ``tool_selection`` is the row's own plugin's tools: ``ToolAgentLoop``
(verl 0.8.0 and 0.9.1, ``extra_info.tool_selection``) offers a prompt only those, in that order.
``tools_kwargs`` names every tool of the config, each with the row's own ``create_kwargs``: Parquet
stores one struct type per column and would fill the names of another plugin's tools with null,
which verl's ``_call_tool`` reads with ``.get``. ``class_name`` must name a ``verl.tools.base_tool.BaseTool`` subclass
that starts a Horizon episode in ``create`` (from ``create_kwargs``: plugin, repository, starting
tree, instruction, task metadata as JSON text) and runs the named Horizon tool in ``execute``:
by default Horizon's own, ``core.trainers.verl.HorizonTool``. verl validates each ``tool_schema``
with its ``OpenAIFunctionToolSchema``, which needs a ``type`` on every property and a
``required`` list and keeps only ``type``, ``description`` and ``enum`` of a property: the
export's schemas are already in that form (``core.export.schemas.portable_schema``, every
format), and ``verl_tool_schema`` fills a missing type for schemas given otherwise.

SkyRL (https://skyrl.readthedocs.io/en/latest/datasets/dataset-preparation.html) reads
``data_source``, ``prompt``, ``env_class`` and ``reward_spec`` ``{"method": "rule", "ground_truth"}``,
plus optional ``extra_info``.

Both rows' ``extra_info`` carries what judged the exported runs, one entry per run of ``run_ids``
(in that order): ``reward_version`` (``RewardResult.version``, ``"<plugin>:unversioned"`` for runs
judged before versions were stored), ``reward_status`` (``scored``, ``not_applicable`` or
``not_judged``) and ``correct`` (solved, or null when not judged or not applicable), so that data
judged by different reward versions is never mixed silently, and ``quality_flags`` (the gates'
reasons kept with ``--keep-flagged``, one list per run).

``ground_truth`` is JSON text: the starting tree and repository, and what the reward checks
against (the set-up test outcomes ``before`` and the ``targets`` that must pass, for the coding
reward).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from core.export.sft import is_correct, reward_version
from core.export.source import RunRecord

AGENT_NAME = "tool_agent"
DEFAULT_TOOL_CLASS = "core.trainers.verl.HorizonTool"


def reward_status(run: RunRecord) -> str:
    """How the plugin's reward judged ``run``: ``scored``, ``not_applicable`` (nothing to judge), or
    ``not_judged`` (the run never reached its end, or no verdict was stored)."""
    if run.row.get("status") != "finished":
        return "not_judged"
    stored = run.row.get("reward_status")
    if stored:
        return str(stored)
    return "scored" if run.row.get("reward") is not None else "not_judged"  # a run stored before reward_status was


def reward_labels(run: RunRecord) -> dict[str, Any]:
    """``{"reward_version", "reward_status", "correct"}`` of ``run``: what judged it, how, and whether
    it counts as solved (``core.export.sft.reward_version``, ``reward_status``, ``core.export.sft.is_correct``)."""
    return {"reward_version": reward_version(run), "reward_status": reward_status(run), "correct": is_correct(run)}


def group_by_task(runs: list[RunRecord]) -> list[list[RunRecord]]:
    """Runs grouped by ``RunRecord.task_key`` (plugin, instruction, starting tree), groups in order of
    their first run, runs oldest first."""
    groups: dict[tuple[str, str, str], list[RunRecord]] = {}
    for run in sorted(runs, key=lambda r: r.run_id):
        groups.setdefault(run.task_key, []).append(run)
    return list(groups.values())


def opening(run: RunRecord) -> list[dict[str, str]]:
    """The messages before the first model turn (system prompt, task message), as ``{"role", "content"}``."""
    out = []
    for m in run.messages:
        if m.role == "assistant":
            break
        out.append({"role": m.role, "content": m.content or ""})
    return out


def ground_truth(run: RunRecord) -> str:
    """JSON text of what the reward checks against (see the module docstring)."""
    truth: dict[str, Any] = {"plugin": run.plugin, "repo": run.row.get("repo") or "", "start_tree": run.start_tree}
    for component in run.rewards.values():
        detail = component.get("detail") or {}
        for key in ("before", "targets"):
            if key in detail and key not in truth:
                truth[key] = detail[key]
    return json.dumps(truth, sort_keys=True)


def tool_names(runs: list[RunRecord]) -> list[str]:
    """Every tool name the exported plugins have, each once, in order of first appearance: the
    tool config's entries (verl keeps one tool per name)."""
    return list(dict.fromkeys(t["function"]["name"] for run in runs for t in run.tools))


def _extra_info(runs: list[RunRecord], index: int, split: str, names: list[str] | None = None,
                flags: dict[str, list[str]] | None = None) -> dict[str, Any]:
    first = runs[0]
    create = {"plugin": first.plugin, "repo": first.row.get("repo") or "", "start_tree": first.start_tree,
              "instruction": first.instruction, "metadata": json.dumps((first.row.get("config") or {}).get("task_metadata") or {})}
    own = [t["function"]["name"] for t in first.tools]
    return {
        "index": index, "split": split, "need_tools_kwargs": True,
        # every tool of the config, not only this plugin's: Parquet stores one struct type for the
        # column, and would fill another plugin's tools with null, on which verl's _call_tool fails
        "tools_kwargs": {name: {"create_kwargs": create} for name in (names or own)},
        "tool_selection": own,
        "instruction": first.instruction, "run_ids": [r.run_id for r in runs],
        **{key: [reward_labels(r)[key] for r in runs] for key in ("reward_version", "reward_status", "correct")},
        "quality_flags": [list((flags or {}).get(r.run_id) or []) for r in runs],
    }


def verl_rows(runs: list[RunRecord], split: str = "train", flags: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """One verl row per task (see the module docstring)."""
    rows = []
    names = tool_names(runs)
    for index, group in enumerate(group_by_task(runs)):
        first = group[0]
        rows.append({
            "data_source": f"horizon/{first.plugin}", "prompt": opening(first), "ability": first.plugin,
            "reward_model": {"style": "rule", "ground_truth": ground_truth(first)},
            "extra_info": _extra_info(group, index, split, names, flags), "agent_name": AGENT_NAME,
        })
    return rows


def skyrl_rows(runs: list[RunRecord], split: str = "train", flags: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """One SkyRL row per task: the verl row's prompt and truth under SkyRL's field names."""
    rows = []
    for index, group in enumerate(group_by_task(runs)):
        first = group[0]
        rows.append({
            "data_source": f"horizon/{first.plugin}", "prompt": opening(first), "env_class": f"horizon_{first.plugin}",
            "reward_spec": {"method": "rule", "ground_truth": ground_truth(first)},
            "extra_info": _extra_info(group, index, split, None, flags),
        })
    return rows


def verl_tool_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` (``Tool.schema()``) as verl's ``OpenAIFunctionToolSchema`` accepts it: every property
    with a ``type`` (a union's non-null types: one name, or a list), and a ``required`` list."""
    params = dict(schema["function"].get("parameters") or {"type": "object", "properties": {}})
    properties = {}
    for name, prop in (params.get("properties") or {}).items():
        if "type" not in prop:
            types = [t["type"] for t in prop.get("anyOf", []) if t.get("type") not in (None, "null")]
            prop = {**prop, "type": (types[0] if len(types) == 1 else types) if types else "object"}
        properties[name] = prop
    params.update(properties=properties, required=params.get("required", []))
    return {**schema, "function": {**schema["function"], "parameters": params}}


def tool_config(runs: list[RunRecord], tool_class: str = DEFAULT_TOOL_CLASS) -> dict[str, Any]:
    """verl's tool config: one entry per tool name of the exported plugins (verl holds one tool per
    name: ``ToolAgentLoop.tools`` is a dict by name), ``config.plugins`` naming every plugin that has
    it (``HorizonTool`` runs a call with the row's own plugin, from ``create_kwargs``)."""
    tools: dict[str, dict[str, Any]] = {}
    for run in runs:
        for schema in run.tools:
            name = schema["function"]["name"]
            entry = tools.setdefault(name, {"class_name": tool_class, "config": {"type": "native", "plugin": run.plugin, "plugins": []},
                                            "tool_schema": verl_tool_schema(schema)})
            if run.plugin not in entry["config"]["plugins"]:
                entry["config"]["plugins"].append(run.plugin)
    return {"tools": list(tools.values())}


def schema_conflicts(runs: list[RunRecord]) -> dict[str, list[str]]:
    """``{tool name: [plugins]}`` for names that plugins of ``runs`` give different schemas: verl shows
    every row the first plugin's (``tool_config``)."""
    seen: dict[str, dict[str, str]] = {}
    for run in runs:
        for schema in run.tools:
            seen.setdefault(schema["function"]["name"], {}).setdefault(run.plugin, json.dumps(schema, sort_keys=True))
    return {name: list(by_plugin) for name, by_plugin in seen.items() if len(set(by_plugin.values())) > 1}


def write_task_parquet(rows: list[dict[str, Any]], out: Path) -> None:
    """Write rows as Parquet (Arrow infers the nested types from the rows; ``extra_info.correct``
    is ``list<bool>`` even when every value is null, where Arrow would infer ``list<null>``)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(rows)
    if "extra_info" in table.column_names:
        info = table.schema.field("extra_info").type
        if isinstance(info, pa.StructType) and info.get_field_index("correct") >= 0:
            fixed = {"correct": pa.list_(pa.bool_()), "quality_flags": pa.list_(pa.list_(pa.string()))}
            fields = [f.with_type(fixed[f.name]) if f.name in fixed else f for f in info]
            index = table.column_names.index("extra_info")
            table = table.set_column(index, "extra_info", table.column("extra_info").cast(pa.struct(fields)))
    pq.write_table(table, out)


def write_verl(runs: list[RunRecord], out: Path, tool_class: str = DEFAULT_TOOL_CLASS,
               flags: dict[str, list[str]] | None = None) -> tuple[int, Path]:
    """Write verl's task Parquet to ``out`` and its tool config beside it (``<stem>.tool_config.yaml``).

    Returns:
        ``(rows written, the tool config's path)``.
    """
    rows = verl_rows(runs, flags=flags)
    write_task_parquet(rows, out)
    config_path = out.with_name(f"{out.stem}.tool_config.yaml")
    config_path.write_text(yaml.safe_dump(tool_config(runs, tool_class), sort_keys=False, allow_unicode=True))
    return len(rows), config_path


def write_skyrl(runs: list[RunRecord], out: Path, flags: dict[str, list[str]] | None = None) -> int:
    """Write SkyRL's task Parquet; return the number of rows."""
    rows = skyrl_rows(runs, flags=flags)
    write_task_parquet(rows, out)
    return len(rows)
