"""Evaluating a plugin on a suite of tasks: ``agent eval PLUGIN SUITE``.

    tasks.py        task folders (task.json/task.toml, repo/ or a start recipe, fix.diff or
                    reference.jsonl), suites of suites, and diff hunks as edits
    sources.py      a task's starting tree built from archives named by URL and SHA-256 into
                    Horizon's cache, checked against the recipe's tree digest
    policies.py     scripted policies built from a task: reference, finish-only, edit-tests
    runner.py       one episode per (task, attempt) as a Horizon run; run_eval schedules them
    ray_backend.py  the episodes on Ray: tasks, an actor per heavy (3D) episode, hard time limits,
                    retries of infrastructure failures only
    metrics.py      pass@k (Chen et al., 2021) and the summary
"""

from core.eval.metrics import pass_at_k, summarize
from core.eval.policies import SCRIPTED
from core.eval.runner import EpisodeResult, EpisodeSpec, episode_specs, new_eval_dir, run_episode, run_eval
from core.eval.tasks import EvalTask, TaskSpec, diff_edits, load_suite, load_task

__all__ = [
    "SCRIPTED",
    "EpisodeResult",
    "EpisodeSpec",
    "EvalTask",
    "TaskSpec",
    "diff_edits",
    "episode_specs",
    "load_suite",
    "load_task",
    "new_eval_dir",
    "pass_at_k",
    "run_episode",
    "run_eval",
    "summarize",
]
