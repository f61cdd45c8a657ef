"""GRPO groups: several trajectories of one task from the same starting state, with advantages.

Group Relative Policy Optimization (Shao et al., 2024, "DeepSeekMath: Pushing the Limits of
Mathematical Reasoning in Open Language Models", section 4.1) scores each of a group's outputs
against the group: with outcome rewards ``r_1..r_G``,

    advantage_i = (r_i - mean(r)) / (std(r) + eps)

``std`` is the sample standard deviation (Bessel-corrected), as verl's and TRL's GRPO
implementations compute it; ``eps`` = 1e-6. A group of one has no contrast: its advantage is
0.0 (``std`` undefined). A group is the runs with the same ``RunRecord.task_key`` (plugin,
instruction, starting tree); runs without a verified reward (None, not 0) are left out, and
``export_runs`` says which and why (``left_out_reason``): ``not judged`` (the run never reached
its end, or no verdict was stored) or ``reward not applicable`` (the plugin's reward had nothing
to judge).

One JSON line per trajectory: ``group_id`` (SHA-256 of the task key, 16 hex digits),
``group_size``, ``run_id``, ``reward``, ``advantage``, ``group_mean``, ``group_std``, ``plugin``,
``task``, ``reward_version``, ``reward_status``, ``correct`` (``core.export.tasks.reward_labels``),
``messages``, ``tools``, ``quality_flags`` (the gates' reasons; a ``near_duplicate`` stays in its
group: identical outcomes of one policy are samples of it, and dropping them would change the
group's mean and spread).
"""

from __future__ import annotations

import hashlib
import json
import statistics
from pathlib import Path
from typing import Any

from core.export.sft import write_jsonl
from core.export.source import RunRecord
from core.export.tasks import group_by_task, reward_labels, reward_status

EPS = 1e-6
NOT_JUDGED = "not judged"
NOT_APPLICABLE = "reward not applicable"


def left_out_reason(run: RunRecord) -> tuple[str, str] | None:
    """Why ``run`` has no place in a GRPO group: ``(reason, detail)`` with reason ``not judged`` or
    ``reward not applicable``; None when it has a verified reward."""
    if run.reward is not None:
        return None
    if reward_status(run) == "not_applicable":
        return NOT_APPLICABLE, (run.row.get("reward_summary") or "the plugin's reward had nothing to judge").strip()[:300]
    status, exit_status = run.row.get("status"), run.row.get("exit_status")
    detail = (run.row.get("exit_detail") or "").strip()[:300]
    return NOT_JUDGED, f"run {status or '?'} ({exit_status or '?'}){': ' + detail if detail else ''}"


def advantages(rewards: list[float], eps: float = EPS) -> list[float]:
    """Group-normalised advantages ``(r - mean) / (std + eps)`` (sample std; 0.0 for a group of one)."""
    if len(rewards) < 2:
        return [0.0] * len(rewards)
    mean, std = statistics.fmean(rewards), statistics.stdev(rewards)
    return [(r - mean) / (std + eps) for r in rewards]


def group_id(key: tuple[str, str, str]) -> str:
    """A stable id for a task key (plugin, instruction, starting tree)."""
    return hashlib.sha256(json.dumps(list(key)).encode()).hexdigest()[:16]


def grpo_rows(runs: list[RunRecord], flags: dict[str, list[str]] | None = None) -> list[dict[str, Any]]:
    """One row per verified trajectory, grouped by task (see the module docstring)."""
    rows = []
    for group in group_by_task([r for r in runs if r.reward is not None]):
        rewards = [float(r.reward) for r in group]  # type: ignore[arg-type]  # filtered above
        mean = statistics.fmean(rewards)
        std = statistics.stdev(rewards) if len(rewards) > 1 else 0.0
        gid = group_id(group[0].task_key)
        for run, reward, adv in zip(group, rewards, advantages(rewards)):
            rows.append({
                "group_id": gid, "group_size": len(group), "run_id": run.run_id, "reward": reward, "advantage": adv,
                "group_mean": mean, "group_std": std, "plugin": run.plugin, "task": run.instruction, **reward_labels(run),
                "messages": run.openai_messages(), "tools": run.tools, "quality_flags": list((flags or {}).get(run.run_id) or []),
            })
    return rows


def write_grpo(runs: list[RunRecord], out: Path, flags: dict[str, list[str]] | None = None) -> int:
    """Write GRPO rows as JSON Lines.

    Args:
        runs: the runs to group; those without a verified reward are skipped (``export_runs``
            leaves them out beforehand and says why: ``left_out_reason``).
        out: the JSON Lines file to write (its folder is created).

    Returns:
        The number of rows written.
    """
    rows = grpo_rows(runs, flags)
    write_jsonl(rows, out)
    return len(rows)
