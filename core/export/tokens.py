"""Token-level rows: prompt ids, response ids, a loss mask over the model's own tokens, logprobs, reward.

Two kinds of row per run, as RL trainers for agents take them (verl's multi-turn ``loss_mask``,
SkyRL's step-wise trajectories):

- ``trajectory``: ``prompt_ids`` are the opening (system prompt, task) up to the first
  assistant header; ``response_ids`` are everything after, model turns and tool observations
  interleaved; ``loss_mask[i]`` is 1 where ``response_ids[i]`` is a token the model generated
  (an assistant turn's text and its end-of-turn token) and 0 for tool/environment tokens and
  the chat template's glue (role headers, newlines). ``reward_index`` is the position of the last
  model token, where an outcome reward lands.
- ``step``: one per model call: ``prompt_ids`` the whole history before it (with the assistant
  header), ``response_ids`` what the model generated, every mask value 1; ``reward`` is the
  episode's reward on the last step and 0.0 on the others.

Every row names the chat template that made its ids (``chat_template``: the GGUF's own
template, or the serving engine's), and carries the run's ``reward_version``, ``reward_status`` (``scored``,
``not_applicable``, ``not_judged``) and ``correct`` (null when not judged or not applicable),
``core.export.tasks.reward_labels``, so that data judged by different reward versions is never
mixed silently.

Token source. Where every model call of a run stored the engine's own token ids (vLLM with
``return_token_ids``), the rows are ``token_source: "engine"`` (``engine_token_rows``). Otherwise
they are ``token_source: "retokenized"``: the stored text rendered with the chat template of the bundled
SmolLM2-135M-Instruct GGUF (its ``tokenizer.chat_template``) and tokenised by llama.cpp with that
GGUF's vocabulary (``Llama(vocab_only=True)``), or another GGUF's (``Retokenizer(path)``, ``agent
export --tokenizer``); assistant tool calls are rendered as the JSON the embedded policy makes the
model write (``core.policy.embedded.to_plain_chat``; a turn with several calls, one JSON object a
line; an assistant's text beside its tool calls is not rendered, as in that function). ``logprobs`` is
null: no engine reported them. Re-tokenised ids can differ from what an engine sampled; rows
with ``token_source == "engine"`` (once the store keeps engine tokens) are the ones to prefer.
Every segment (template glue, model text, observation) is tokenised on its own, so the mask's
boundaries are exact; the history is the full one, even where the embedded policy dropped old
turns to fit its context window.
"""

from __future__ import annotations

import atexit
import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from jinja2.sandbox import ImmutableSandboxedEnvironment

from core.errors import ModelUnavailable
from core.export.source import RunRecord
from core.export.tasks import reward_labels
from core.policy.embedded import bundled_model_path, to_plain_chat

TOKEN_SCHEMA = pa.schema([
    ("run_id", pa.string()),
    ("kind", pa.string()),
    ("step", pa.int32()),
    ("prompt_ids", pa.list_(pa.int32())),
    ("response_ids", pa.list_(pa.int32())),
    ("loss_mask", pa.list_(pa.int8())),
    ("logprobs", pa.list_(pa.float32())),
    ("reward", pa.float64()),
    ("reward_index", pa.int32()),
    ("token_source", pa.string()),
    ("tokenizer", pa.string()),
    ("chat_template", pa.string()),
    ("quality_flags", pa.list_(pa.string())),
    ("reward_version", pa.string()),
    ("reward_status", pa.string()),
    ("correct", pa.bool_()),
])


#: ``chat_template`` of rows made from the engine's own tokens: the template the server applied.
ENGINE_TEMPLATE = "engine: the serving model's own"


@dataclass
class Segment:
    """A run of text tokenised on its own: ``trainable`` when the model generated it."""

    text: str
    ids: list[int]
    trainable: bool
    step: int | None = None  # the model call that generated it (1-based), for trainable segments


class Retokenizer:
    """A GGUF's chat template and vocabulary, loaded without weights.

    Args:
        model_path: a GGUF file; default the bundled SmolLM2-135M-Instruct.

    Raises:
        ModelUnavailable: llama-cpp-python or the file is missing, or the GGUF has no chat template.
    """

    def __init__(self, model_path: Path | None = None) -> None:
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise ModelUnavailable(f"token export needs llama-cpp-python ({exc}): pip install llama-cpp-python") from exc
        self.model_path = model_path or bundled_model_path()
        self.name = self.model_path.name
        self._llm = Llama(model_path=str(self.model_path), vocab_only=True, verbose=False)
        atexit.register(self._llm.close)  # before interpreter teardown, where llama.cpp's own __del__ fails
        source = self._llm.metadata.get("tokenizer.chat_template")
        if not source:
            raise ModelUnavailable(f"{self.model_path} has no tokenizer.chat_template; token export needs one")
        env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
        self._template = env.from_string(source)
        self.eos_text = self.decode([self._llm.token_eos()])
        #: what ``chat_template`` in a row names: this GGUF's own template, tool calls as plain JSON
        self.template_name = f"{self.name}:tokenizer.chat_template (tool calls as the embedded policy's JSON)"

    def render(self, messages: list[dict[str, str]], add_generation_prompt: bool = False) -> str:
        """The chat template applied to ``messages`` (``{"role", "content"}`` each)."""
        return self._template.render(messages=messages, add_generation_prompt=add_generation_prompt)

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``, special tokens (``<|im_start|>``) parsed as such, no BOS added."""
        return self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True) if text else []

    def decode(self, ids: list[int]) -> str:
        """The text of ``ids``, special tokens included."""
        return self._llm.detokenize(ids, special=True).decode("utf-8", errors="replace")

    def segments(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[Segment]:
        """Split a chat-completions history into template glue, observations and model text.

        Raises:
            ValueError: the chat template does not render a longer history as an extension of a
                shorter one, or an assistant turn does not render as its text plus the end token;
                a mask could not be exact then.
        """
        plain = to_plain_chat(messages, tools)
        for original, turn in zip(messages, plain):
            calls = original.get("tool_calls") or []
            if original["role"] == "assistant" and len(calls) > 1:  # to_plain_chat renders one call: keep them all
                turn["content"] = "\n".join(_call_json(c) for c in calls)
        out: list[Segment] = []
        before = ""
        step = 0
        for k, message in enumerate(plain):
            rendered = self.render(plain[: k + 1])
            if not rendered.startswith(before):
                raise ValueError(f"the chat template of {self.name} re-renders earlier turns at message {k}; no exact mask possible")
            piece = rendered[len(before):]
            if message["role"] == "assistant":
                step += 1
                header = self.render(plain[:k], add_generation_prompt=True)[len(before):]
                generated = message["content"] + self.eos_text
                if not piece.startswith(header + generated):
                    raise ValueError(f"assistant turn {step} does not render as header + text + {self.eos_text!r}")
                rest = piece[len(header) + len(generated):]
                out += [Segment(header, self.encode(header), False), Segment(generated, self.encode(generated), True, step)]
                if rest:
                    out.append(Segment(rest, self.encode(rest), False))
            else:
                out.append(Segment(piece, self.encode(piece), False))
            before = rendered
        return out


def _call_json(call: dict[str, Any]) -> str:
    """One tool call as the embedded policy's JSON text, ``{"name": ..., "arguments": {...}}``."""
    fn = call["function"]
    try:
        args: Any = json.loads(fn["arguments"])
    except json.JSONDecodeError:
        args = fn["arguments"]
    return json.dumps({"name": fn["name"], "arguments": args})


@cache
def default_retokenizer() -> Retokenizer:
    """The bundled model's retokenizer, loaded once per process (about a second)."""
    return Retokenizer()


def token_rows(run: RunRecord, tok: Retokenizer, flags: list[str] | None = None) -> list[dict[str, Any]]:
    """The ``trajectory`` row and one ``step`` row per model call for ``run`` (see the module docstring).

    Returns an empty list for a run without a model turn.
    """
    segments = tok.segments(run.openai_messages(), run.tools)
    first = next((i for i, s in enumerate(segments) if s.trainable), None)
    if first is None:
        return []
    common = {"run_id": run.run_id, "logprobs": None, "token_source": "retokenized", "tokenizer": tok.name, "chat_template": tok.template_name,
              "quality_flags": list(flags or []), **reward_labels(run)}
    prompt = [t for s in segments[:first] for t in s.ids]  # the opening and the first assistant header
    response = [t for s in segments[first:] for t in s.ids]
    mask = [int(s.trainable) for s in segments[first:] for _ in s.ids]
    last_model_token = max(i for i, m in enumerate(mask) if m)
    rows = [{**common, "kind": "trajectory", "step": None, "prompt_ids": prompt, "response_ids": response,
             "loss_mask": mask, "reward": run.reward, "reward_index": last_model_token}]
    steps = [s for s in segments if s.trainable]
    history: list[int] = []
    for s in segments:
        if s.trainable:
            last = s.step == steps[-1].step
            rows.append({**common, "kind": "step", "step": s.step, "prompt_ids": list(history), "response_ids": s.ids,
                         "loss_mask": [1] * len(s.ids), "reward": run.reward if last else (None if run.reward is None else 0.0),
                         "reward_index": len(s.ids) - 1})
        history += s.ids
    return rows


def engine_token_rows(run: RunRecord, flags: list[str] | None = None) -> list[dict[str, Any]] | None:
    """Rows from the engine's own tokens (``token_source: "engine"``), or None when a model call lacks them.

    ``step`` rows are each call's prompt ids and sampled ids as the engine reported them, with
    its logprobs. The ``trajectory`` row splices them: the first prompt, then each completion
    (mask 1) and the tokens the next prompt adds after it (template glue and observations, mask
    0); it is left out, with the flag ``engine_prefix_break``, where a prompt does not start with
    the previous prompt and completion (a compaction, or a template that re-renders turns).
    """
    calls = run.engine_tokens
    if not calls or any(c["prompt_token_ids"] is None or c["completion_token_ids"] is None for c in calls):
        return None
    flags = list(flags or [])
    model = str(run.row.get("policy") or "")
    labels = reward_labels(run)
    rows = []
    for k, call in enumerate(calls):
        ids, logprobs = call["completion_token_ids"], call["completion_logprobs"]
        last = k == len(calls) - 1
        rows.append({
            "run_id": run.run_id, "kind": "step", "step": call["step"], "prompt_ids": call["prompt_token_ids"],
            "response_ids": ids, "loss_mask": [1] * len(ids), "logprobs": logprobs if logprobs and len(logprobs) == len(ids) else None,
            "reward": run.reward if last else (None if run.reward is None else 0.0), "reward_index": len(ids) - 1,
            "token_source": "engine", "tokenizer": model, "chat_template": ENGINE_TEMPLATE, "quality_flags": flags, **labels,
        })
    prompt = calls[0]["prompt_token_ids"]
    response: list[int] = []
    mask: list[int] = []
    logprobs_all: list[float] | None = []
    for k, call in enumerate(calls):
        ids, logprobs = call["completion_token_ids"], call["completion_logprobs"]
        response += ids
        mask += [1] * len(ids)
        logprobs_all = logprobs_all + logprobs if logprobs_all is not None and logprobs and len(logprobs) == len(ids) else None
        if k + 1 < len(calls):
            so_far, following = prompt + response, calls[k + 1]["prompt_token_ids"]
            if following[: len(so_far)] != so_far:
                return [{**r, "quality_flags": [*flags, "engine_prefix_break"]} for r in rows]
            glue = following[len(so_far):]
            response += glue
            mask += [0] * len(glue)
            logprobs_all = None if logprobs_all is None else logprobs_all + [0.0] * len(glue)
    last_model_token = max(i for i, m in enumerate(mask) if m) if any(mask) else 0
    return [{"run_id": run.run_id, "kind": "trajectory", "step": None, "prompt_ids": prompt, "response_ids": response,
             "loss_mask": mask, "logprobs": logprobs_all, "reward": run.reward, "reward_index": last_model_token,
             "token_source": "engine", "tokenizer": model, "chat_template": ENGINE_TEMPLATE, "quality_flags": flags, **labels}, *rows]


def write_tokens(runs: list[RunRecord], out: Path, flags: dict[str, list[str]] | None = None,
                 tokenizer: Path | None = None) -> int:
    """Write token rows of every run as Parquet with ``TOKEN_SCHEMA``; return the number of rows.

    Args:
        tokenizer: a GGUF whose chat template and vocabulary to use (default: the bundled SmolLM2).
    """
    rows = []
    tok = None
    for run in runs:
        run_flags = (flags or {}).get(run.run_id)
        engine = engine_token_rows(run, run_flags)
        if engine is not None:  # the engine's own tokens: no re-tokenisation drift
            rows += engine
            continue
        tok = tok or (Retokenizer(tokenizer) if tokenizer else default_retokenizer())
        rows += token_rows(run, tok, run_flags)
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=TOKEN_SCHEMA), out)
    return len(rows)
