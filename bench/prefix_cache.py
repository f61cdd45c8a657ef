"""How much of each prompt a prefix cache can reuse: Horizon's layout against a naive one, and what it costs.

    .venv/bin/python bench/prefix_cache.py [--steps 50] [--write-requests bench/gpu/episode_requests.jsonl]
    .venv/bin/python bench/prefix_cache.py --quick      # a 10-step episode (CI)

Records a ``--steps``-step coding episode on ``examples/python-user-service``: the real OpenAI
policy, loop, coding plugin, sandbox and run store against the recording fake server of
``tests/plugins/coding/episode.py`` (real HTTP on loopback; the server replays scripted tool calls).
Every request body is kept, exactly as sent.

Each request is then rendered as a ChatML prompt (``<|im_start|>system`` with the system text and
the tool list as JSON, then one block per message, assistant tool calls as JSON; the layout of
Qwen/Hermes-style templates) and tokenised with a real tokenizer, the embedded SmolLM2-135M's
(its GGUF, through llama.cpp with ``vocab_only=True``). A call's cached tokens are the longest
common token prefix with the previous call's prompt: what an engine with prefix caching reuses
when nothing was evicted (the previous reply's own tokens are not counted, so this is a lower
bound for engines that cache generated tokens too).

Two layouts of the same episode:

- ``horizon``: the requests as Horizon sent them (system prompt and tools fixed, history
  append-only, assistant turns sent back as returned).
- ``naive``: what many agent loops do: the system prompt starts with the current time (one
  second later each call), and the history is rewritten every turn: observations older than the
  last three are replaced by a one-line note, so each turn changes an earlier part of the prompt.

Cost uses the default price table (per million tokens: cached input 1.3, uncached input 13.0,
output 68.0); completion tokens are the recorded replies, tokenised the same way. There is no
compaction step in these episodes, so every call counts toward the 95% target.

The exit status is 1 when the recorded episode ends early (the benchmark broke) and, in the full
mode only, when Horizon's cached share misses the target. ``--quick`` records 10 steps instead
of 50 (a short episode's cold first call weighs more, so its share is lower and the target is
only reported).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import types
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
# Horizon's tests/ is a namespace package; verl's wheel installs a regular top-level ``tests``
# package that would win the import, so the name is bound to Horizon's folder first (as pytest's
# importlib mode binds it).
_tests = types.ModuleType("tests")
_tests.__path__ = [str(Path(__file__).resolve().parents[1] / "tests")]
sys.modules.setdefault("tests", _tests)

from core.config import Settings
from core.policy.embedded import bundled_model_path
from core.policy.prefix import common_prefix_len
from core.state import Usage

TARGET = 0.95
KEEP_OBSERVATIONS = 3


def render(body: dict[str, Any]) -> str:
    """A request as a ChatML prompt (see the module docstring), ending with the assistant's header."""
    parts = []
    for i, m in enumerate(body["messages"]):
        content = m.get("content") or ""
        if i == 0 and m["role"] == "system":
            content += "\n\n# Tools\n" + "\n".join(json.dumps(t, ensure_ascii=False) for t in body.get("tools", []))
        for call in m.get("tool_calls") or []:
            content += "\n<tool_call>\n" + json.dumps(call["function"], ensure_ascii=False) + "\n</tool_call>"
        parts.append(f"<|im_start|>{m['role']}\n{content}<|im_end|>\n")
    return "".join(parts) + "<|im_start|>assistant\n"


def naive(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The same requests as a naive loop lays them out: timestamped system prompt, history rewritten each turn."""
    out = []
    for n, body in enumerate(bodies):
        messages = [dict(m) for m in body["messages"]]
        messages[0]["content"] = f"Current time: 2026-11-30T09:{n // 60:02d}:{n % 60:02d}Z\n" + (messages[0]["content"] or "")
        tool_positions = [i for i, m in enumerate(messages) if m["role"] == "tool"]
        for i in tool_positions[:-KEEP_OBSERVATIONS]:
            messages[i]["content"] = f"[output elided; {len(tool_positions)} tool calls so far]"
        out.append({**body, "messages": messages})
    return out


def measure(bodies: list[dict[str, Any]], replies: list[dict[str, Any]], tokenize: Any) -> list[Usage]:
    """Per call: prompt tokens, cached (common token prefix with the previous prompt), completion tokens."""
    usages, previous = [], None
    for body, reply in zip(bodies, replies, strict=True):
        ids = tokenize(render(body))
        cached = common_prefix_len(previous, ids) if previous is not None else 0
        completion = len(tokenize(render({"messages": [reply]})))
        usages.append(Usage(prompt_tokens=len(ids), cached_prompt_tokens=cached, completion_tokens=completion))
        previous = ids
    return usages


def main() -> int:
    """Record the episode, measure both layouts, print the table; return the exit status."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=None, help="model calls in the recorded episode (at least 8; default 50)")
    parser.add_argument("--write-requests", type=Path, default=None,
                        help="also write the recorded request bodies, one JSON object a line (for bench/gpu/serve_check.sh)")
    parser.add_argument("--quick", action="store_true", help="a 10-step episode; the target is reported, not asserted (CI)")
    args = parser.parse_args()
    args.steps = args.steps or (10 if args.quick else 50)

    from llama_cpp import Llama

    from tests.plugins.coding.episode import run_episode

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HORIZON_HOME"] = str(Path(tmp) / "home")  # the recorded run stays out of ~/.horizon
        result, server, _ = run_episode(Path(tmp), args.steps)
    bodies = [body for _, body in server.requests]
    if result.steps != args.steps or len(bodies) != args.steps:
        print(f"the recorded episode ended early: {result.exit_status.value} after {result.steps} steps ({result.exit_detail})")
        return 1
    if args.write_requests:
        args.write_requests.parent.mkdir(parents=True, exist_ok=True)
        args.write_requests.write_text("".join(json.dumps(b, ensure_ascii=False) + "\n" for b in bodies), encoding="utf-8")
        print(f"wrote {len(bodies)} requests to {args.write_requests}")

    vocab = Llama(model_path=str(bundled_model_path()), vocab_only=True, verbose=False)

    def tokenize(text: str) -> list[int]:
        return vocab.tokenize(text.encode("utf-8"), add_bos=False, special=True)

    pricing = Settings(base_url="http://bench/v1", model="bench").pricing  # the default table
    rows = []
    for name, layout in (("horizon", bodies), ("naive", naive(bodies))):
        usages = measure(layout, server.replies, tokenize)
        total = sum(usages, Usage())
        share = total.cached_prompt_tokens / total.prompt_tokens
        warm = sum(usages[1:], Usage())  # the first call of a run has nothing before it to reuse
        rows.append((name, total, share, pricing.cost(total), warm.cached_prompt_tokens / warm.prompt_tokens))

    print(f"\n{args.steps}-step coding episode, SmolLM2 tokenizer, prices per Mtok: cached {pricing.cached_input_per_mtok}, "
          f"uncached {pricing.input_per_mtok}, output {pricing.output_per_mtok}\n")
    print(f"| layout | prompt tokens | cached | cached share | after the first call | completion | cost | target >= {TARGET:.0%} |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for name, total, share, cost, warm_share in rows:
        verdict = ("met" if share >= TARGET else "missed") if name == "horizon" else "-"
        print(f"| {name} | {total.prompt_tokens:,} | {total.cached_prompt_tokens:,} | {share:.1%} | {warm_share:.1%} | "
              f"{total.completion_tokens:,} | {cost:.4f} | {verdict} |")
    print(f"\ncost ratio naive / horizon: {rows[1][3] / rows[0][3]:.2f}x")
    return 0 if args.quick or rows[0][2] >= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
