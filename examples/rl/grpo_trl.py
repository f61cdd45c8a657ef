"""GRPO with TRL on Horizon episodes: ``GRPOTrainer(environment_factory=...)`` on a coding task.

Every rollout is a real Horizon episode of the coding plugin (``core.trainers.trl``): the task's
repository copied into ``$HORIZON_HOME/episodes/<id>``, the bwrap sandbox, the plugin's set-up
(the baseline test run, appended to the prompt), its tools as methods TRL calls, its reward (the
tests, run on the episode's files) as the rollout's reward, and the workspace deleted after.

On CPU with no model given, the policy is the tiny Qwen3-format model of ``core.trainers.tiny``,
built on the spot (random weights: the point is the wiring, not learning; it seldom writes a
well-formed tool call). With a GPU, give a real tool-calling model and vLLM::

    python examples/rl/grpo_trl.py --model Qwen/Qwen3-0.6B --vllm colocate --steps 100

``--quick`` is CI's mode: two steps of two rollouts each, short completions. The README beside
this file shows its output and the GPU settings.

Run from the repository root: ``.venv/bin/python examples/rl/grpo_trl.py --quick``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))  # a checkout's core/ and plugins/, installed or not

INSTRUCTION = ("Two tests in tests/test_service.py fail with an AttributeError in UserService.display_name; "
               "fix the service so that every test passes, then call finish.")  # fmt: skip


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line (``--help`` lists it)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="CI: 2 steps x 2 rollouts, completions of at most 96 tokens")
    p.add_argument("--suite", type=Path, help="rows from a task suite (default: one task on examples/python-user-service)")
    p.add_argument("--task", action="append", default=None, help="task names or patterns in --suite (repeatable)")
    p.add_argument("--model", help="a checkpoint folder or hub id (default: the tiny model, built in --out)")
    p.add_argument("--steps", type=int, default=20, help="training steps (default 20)")
    p.add_argument("--generations", type=int, default=4, help="rollouts per prompt: the GRPO group (default 4)")
    p.add_argument("--max-completion-length", type=int, default=2048, help="tokens per rollout, tool results included")
    p.add_argument("--max-tool-calls", type=int, default=16, help="TRL's max_tool_calling_iterations (default 16)")
    p.add_argument("--vllm", choices=["off", "colocate", "server"], default="off",
                   help="generate with vLLM: in the trainer's process (colocate) or from `trl vllm-serve` (server)")
    p.add_argument("--vllm-server-url", default="http://localhost:8000", help="server mode: the `trl vllm-serve` URL")
    p.add_argument("--vllm-memory", type=float, default=0.3, help="colocate mode: the GPU memory share vLLM takes")
    p.add_argument("--out", type=Path, help="checkpoints and the tiny model (default: a temporary folder, deleted)")
    p.add_argument("--no-sandbox", action="store_true", help="run commands without bwrap (like agent run --no-sandbox)")
    args = p.parse_args(argv)
    if args.quick:
        args.steps, args.generations, args.max_completion_length, args.max_tool_calls = 2, 2, 96, 2
    return args


def build_rows(args: argparse.Namespace) -> list[dict]:
    """The dataset: a suite's tasks, or the example repository's bug (``core.trainers.trl``'s row shape)."""
    from core.plugin import Task
    from core.trainers.trl import suite_rows, task_row

    if args.suite:
        return suite_rows(args.suite, only=args.task)
    task = Task(plugin="coding", instruction=INSTRUCTION, repo=ROOT / "examples" / "python-user-service")
    return [task_row(task, "python-user-service/display-name")]


def main(argv: list[str] | None = None) -> int:
    """Train; print TRL's per-step logs, then what the episodes did."""
    args = parse_args(argv)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16
    import torch
    from datasets import Dataset
    from transformers import AutoTokenizer
    from trl import GRPOConfig, GRPOTrainer

    from core.trainers.episodes import episodes_dir
    from core.trainers.tiny import build_tiny_model
    from core.trainers.trl import closing_callback, environment_class, horizon_reward

    out = args.out or Path(tempfile.mkdtemp(prefix="horizon-grpo-"))
    started = time.monotonic()
    try:
        model = args.model or str(build_tiny_model(out / "tiny-model"))
        rows = build_rows(args)
        print(f"{len(rows)} task rows: {', '.join(r['task'] for r in rows)}; policy: {model if args.model else 'the tiny model'}")
        seen = {"episodes": 0, "tool_calls": 0, "rewards": []}

        def plugin_reward(environments, **kwargs):
            """The plugin's reward of each rollout (horizon_reward), counted for the summary below."""
            rewards = horizon_reward(environments)
            seen["episodes"] += len(environments)
            seen["tool_calls"] += sum(len(env.tool_calls) for env in environments)
            seen["rewards"] += rewards
            return rewards

        cuda = torch.cuda.is_available()
        config = GRPOConfig(
            output_dir=str(out / "checkpoints"), max_steps=args.steps, per_device_train_batch_size=args.generations,
            num_generations=args.generations, max_completion_length=args.max_completion_length,
            max_tool_calling_iterations=args.max_tool_calls, learning_rate=1e-6 if args.model else 1e-4, beta=0.0,
            logging_steps=1, report_to=[], save_strategy="no", use_cpu=not cuda, bf16=cuda, seed=0,
            use_vllm=args.vllm != "off", vllm_mode="colocate" if args.vllm == "off" else args.vllm,
            vllm_server_base_url=args.vllm_server_url if args.vllm == "server" else None,
            vllm_gpu_memory_utilization=args.vllm_memory,
        )  # fmt: skip
        trainer = GRPOTrainer(
            model=model, args=config, train_dataset=Dataset.from_list(rows * args.generations),
            processing_class=AutoTokenizer.from_pretrained(model), reward_funcs=[plugin_reward],
            environment_factory=environment_class("coding", isolated=not args.no_sandbox, owns_reward=False),
            callbacks=[closing_callback()],
        )  # fmt: skip
        trainer.train()
        left = list(episodes_dir().iterdir()) if episodes_dir().is_dir() else []
        scored = [r for r in seen["rewards"] if r is not None]
        mean = f"{sum(scored) / len(scored):.3f}" if scored else "none scored"
        print(f"episodes: {seen['episodes']}, tool calls: {seen['tool_calls']}, plugin reward mean: {mean}, "
              f"episode folders left after training: {len(left)}, wall time: {time.monotonic() - started:.0f} s")  # fmt: skip
        return 1 if left else 0
    finally:
        if args.out is None:
            shutil.rmtree(out, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
