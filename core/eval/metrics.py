"""Scoring an evaluation: pass@k and the per-task and overall summary.

pass@k is the unbiased estimator of Chen et al. (2021), "Evaluating Large Language Models Trained
on Code", section 2.1: with ``n`` attempts at a task of which ``c`` succeeded,

    pass@k = 1 - C(n - c, k) / C(n, k)

computed as the product form of their Figure 3, which never forms the large binomials.
"""

from __future__ import annotations

from typing import Any


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased estimate of the chance that at least one of ``k`` attempts succeeds.

    Args:
        n: attempts made (n >= 1).
        c: attempts that succeeded (0 <= c <= n).
        k: attempts allowed (1 <= k <= n).

    Returns:
        A probability in [0, 1].

    Raises:
        ValueError: the counts are inconsistent.
    """
    if not (n >= 1 and 0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"pass@k needs 1 <= k <= n and 0 <= c <= n; got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    miss = 1.0
    for i in range(n - c + 1, n + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def summarize(results: list[dict[str, Any]], k: int) -> dict[str, Any]:
    """Per-task and overall scores from episode results.

    Args:
        results: one dict per episode with ``task``, ``resolved`` (bool), ``reward`` (float or
            None: not judged, counted as 0), optionally ``reward_status`` (``not_applicable``
            episodes are left out of the mean reward, not counted as 0) and ``cost`` (currency
            of the pricing).
        k: the k of pass@k (at most the attempts of every task).

    Returns:
        ``{"tasks": {name: {"attempts", "resolved", "pass@1", "pass@k", "mean_reward", "not_applicable", "cost"}},
        "pass@1", "pass@k", "k", "mean_reward", "resolved_tasks", "tasks_total", "episodes", "cost"}``;
        the overall pass@1, pass@k and mean reward are means over tasks (a task whose every
        episode was not applicable has ``mean_reward`` None and is left out of the overall mean).
    """
    by_task: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        by_task.setdefault(r["task"], []).append(r)
    tasks = {}
    for name, rows in sorted(by_task.items()):
        n, c = len(rows), sum(1 for r in rows if r["resolved"])
        judged = [r for r in rows if r.get("reward_status") != "not_applicable"]
        tasks[name] = {
            "attempts": n,
            "resolved": c,
            "pass@1": pass_at_k(n, c, 1),
            f"pass@{k}": pass_at_k(n, c, min(k, n)),
            "mean_reward": sum(r["reward"] or 0.0 for r in judged) / len(judged) if judged else None,
            "not_applicable": n - len(judged),
            "cost": sum(r["cost"] for r in rows),
        }
    count = len(tasks) or 1
    means = [t["mean_reward"] for t in tasks.values() if t["mean_reward"] is not None]
    return {
        "tasks": tasks,
        "k": k,
        "pass@1": sum(t["pass@1"] for t in tasks.values()) / count,
        f"pass@{k}": sum(t[f"pass@{k}"] for t in tasks.values()) / count,
        "mean_reward": sum(means) / len(means) if means else None,
        "resolved_tasks": sum(1 for t in tasks.values() if t["resolved"]),
        "tasks_total": len(tasks),
        "episodes": len(results),
        "cost": sum(t["cost"] for t in tasks.values()),
    }
