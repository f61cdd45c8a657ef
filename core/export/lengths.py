"""The chat template an export is made for, and how long its rows are once rendered with it.

Training template. A trainer renders Horizon's rows with a chat template; one that cannot
render tool calls, or has no ``{% generation %}`` markers, cannot train on them with an
assistant-only loss (SmolLM2's template: ``'dict object' has no attribute 'content'``). Exports
name the template they are made for (``--chat-template``, default ``qwen3_training``: TRL's own
training variant of Qwen3's template, ``trl/chat_templates/qwen3_training.jinja`` of TRL 1.16,
Apache-2.0, kept byte for byte in ``core/export/templates/``). It renders tool calls from
``arguments`` as a dict or as JSON text, marks every assistant turn with ``{% generation %}``,
and renders a longer history as an extension of a shorter one. TRL swaps it in for a Qwen3
tokenizer when ``assistant_only_loss=True``; give a model of another family its own training
template (a ``.jinja`` path). verl renders prompts with the tokenizer's own template, which for
a prompt (no assistant turn yet) renders the same text as this one for Qwen3.

Length report. Every export measures its rows with that template and a named tokenizer
(``--tokenizer``: a GGUF file, or a Hugging Face tokenizer folder; default the bundled
SmolLM2-135M-Instruct's vocabulary) and writes ``<stem>.lengths.json`` beside the data: per row
the run(s), ``quality_flags``, ``prompt_tokens`` (the opening and the tools, up to the first
assistant header: what verl's ``data.max_prompt_length`` and the rollout's ``prompt_length``
compare against) and ``tokens`` (the whole conversation: what TRL's ``SFTConfig.max_length``
truncates), and the trainer settings under which no row is filtered or truncated. For verl it
also gives ``filter_prompt_tokens``: ``RLHFDataset`` filters long prompts with every tool of the
tool config (``maybe_filter_out_long_prompts``, verl 0.8.0 and 0.9.1), not the row's
``tool_selection``, so that is the number ``data.max_prompt_length`` must cover. Counts are
exact for the named tokenizer; another model's vocabulary gives other numbers (pass its
tokenizer folder).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, Protocol

from core.errors import UserError

TEMPLATES = Path(__file__).resolve().parent / "templates"
DEFAULT_TEMPLATE = "qwen3_training"


@dataclass(frozen=True)
class ChatTemplate:
    """A chat template's name (a bundled template's, or a file's path) and its Jinja source."""

    name: str
    source: str


def load_chat_template(spec: str | Path | None = None) -> ChatTemplate:
    """The template named by ``spec``: None for ``DEFAULT_TEMPLATE``, a bundled template's name
    (``core/export/templates/<name>.jinja``), or a ``.jinja`` file.

    Raises:
        UserError: no bundled template of that name and no such file.
    """
    spec = spec or DEFAULT_TEMPLATE
    bundled = TEMPLATES / f"{spec}.jinja"
    if isinstance(spec, str) and "/" not in spec and bundled.is_file():
        return ChatTemplate(str(spec), bundled.read_text(encoding="utf-8"))
    path = Path(spec)
    if path.is_file():
        return ChatTemplate(str(path), path.read_text(encoding="utf-8"))
    have = ", ".join(sorted(p.stem for p in TEMPLATES.glob("*.jinja")))
    raise UserError(f"--chat-template {spec}: no such file and no bundled template of that name (bundled: {have})")


@cache
def _compiled(source: str) -> Any:
    """The template compiled as transformers compiles chat templates (``_compile_jinja_template``):
    a sandbox, trimmed blocks, ``tojson`` without HTML escaping, ``raise_exception``, and the
    ``{% generation %}`` tag (rendered as its body here)."""
    import jinja2
    from jinja2.ext import Extension, loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class Generation(Extension):
        tags = frozenset({"generation"})

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.CallBlock(self.call_method("_body"), [], [], body).set_lineno(lineno)

        def _body(self, caller: Any) -> str:
            return caller()

    def raise_exception(message: str) -> None:
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x: Any, ensure_ascii: bool = False, indent: Any = None, separators: Any = None, sort_keys: bool = False) -> str:
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(source)


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Chat-completions messages as a template takes them: tool-call ``arguments`` as a dict (the
    form TRL documents), keys with no value left out."""
    out = []
    for m in messages:
        msg = {k: v for k, v in m.items() if v is not None}
        if msg.get("tool_calls"):
            calls = []
            for call in msg["tool_calls"]:
                fn = dict(call["function"])
                if isinstance(fn.get("arguments"), str):
                    try:
                        fn["arguments"] = json.loads(fn["arguments"])
                    except json.JSONDecodeError:
                        pass  # the model's own malformed text: rendered as it wrote it
                calls.append({**call, "function": fn})
            msg["tool_calls"] = calls
        out.append(msg)
    return out


def render(template: ChatTemplate, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None,
           add_generation_prompt: bool = False) -> str:
    """``template`` applied to ``messages`` with ``tools``, as ``tokenizer.apply_chat_template(..., tokenize=False)`` renders it."""
    return _compiled(template.source).render(messages=template_messages(messages), tools=tools or None,
                                             add_generation_prompt=add_generation_prompt)


class Counter(Protocol):
    """Counts the tokens of a text with one vocabulary."""

    name: str

    def count(self, text: str) -> int:
        """Tokens in ``text``, special tokens parsed as such, none added."""
        ...


class _GGUFCounter:
    def __init__(self, path: Path | None) -> None:
        from core.export.tokens import Retokenizer, default_retokenizer

        self._tok = Retokenizer(path) if path else default_retokenizer()
        self.name = self._tok.name

    def count(self, text: str) -> int:
        return len(self._tok.encode(text))


class _HFCounter:
    def __init__(self, folder: Path) -> None:
        try:
            from transformers import AutoTokenizer
        except ImportError as exc:
            raise UserError(f"--tokenizer {folder} is a Hugging Face tokenizer folder, which needs transformers ({exc}); "
                            "pip install transformers, or give a GGUF file") from None
        self._tok = AutoTokenizer.from_pretrained(str(folder))
        self.name = str(folder)

    def count(self, text: str) -> int:
        return len(self._tok(text, add_special_tokens=False)["input_ids"])


def token_counter(tokenizer: Path | None = None) -> Counter:
    """A counter for ``tokenizer``: a GGUF file (llama.cpp's vocabulary), a Hugging Face tokenizer
    folder (``AutoTokenizer``), or None for the bundled SmolLM2-135M-Instruct GGUF.

    Raises:
        ModelUnavailable: a GGUF without llama-cpp-python, or the bundled model missing.
        UserError: a folder without transformers installed.
    """
    if tokenizer is not None and tokenizer.is_dir():
        return _HFCounter(tokenizer)
    return _GGUFCounter(tokenizer)


def prompt_of(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages before the first assistant turn (the system prompt and the task)."""
    out = []
    for m in messages:
        if m["role"] == "assistant":
            break
        out.append(m)
    return out


@dataclass
class Lengths:
    """One row's lengths in tokens: ``prompt`` (opening and tools, with the assistant header), ``whole``
    (the conversation, None for task rows), ``filter_prompt`` (verl: with every tool of the config)."""

    prompt: int
    whole: int | None = None
    filter_prompt: int | None = None


def measure(template: ChatTemplate, counter: Counter, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
            *, whole: bool = True, all_tools: list[dict[str, Any]] | None = None) -> Lengths:
    """``messages``' prompt and (``whole``) full lengths with ``tools`` shown; with ``all_tools``
    also the prompt as verl's length filter renders it."""
    opening = prompt_of(messages)
    out = Lengths(prompt=counter.count(render(template, opening, tools, add_generation_prompt=True)))
    if whole:
        out.whole = counter.count(render(template, messages, tools))
    if all_tools is not None:
        out.filter_prompt = counter.count(render(template, opening, all_tools, add_generation_prompt=True))
    return out


def settings(fmt: str, rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The trainer settings under which no row of ``rows`` (``length_report``'s) is filtered or truncated."""
    if not rows:
        return {}
    prompt = max(r["prompt_tokens"] for r in rows)
    if fmt == "verl":
        from core.environment import MAX_OBSERVATION_CHARS

        need = max(r.get("filter_prompt_tokens") or r["prompt_tokens"] for r in rows)
        # verl cuts each tool response to multi_turn.max_tool_response_length characters (default 256);
        # HorizonTool's observations are capped at max_observation_chars (the loop's, by default)
        return {"verl (0.8.0, 0.9.1)": {"data.max_prompt_length": need, "actor_rollout_ref.rollout.prompt_length": prompt,
                                        "data.filter_overlong_prompts": True,
                                        "actor_rollout_ref.rollout.multi_turn.max_tool_response_length": MAX_OBSERVATION_CHARS}}
    if fmt in ("sft-jsonl", "sft-parquet"):
        return {"trl (1.16)": {"SFTConfig.max_length": max(r["tokens"] for r in rows), "SFTConfig.assistant_only_loss": True}}
    if fmt == "openai":
        return {"openai fine-tuning": {"context window at least": max(r["tokens"] for r in rows)}}
    return {}


def length_report(fmt: str, rows: list[dict[str, Any]], template: ChatTemplate, counter: Counter,
                  max_prompt_tokens: int | None) -> dict[str, Any]:
    """The report written beside the data (see the module docstring): ``rows`` are
    ``{"run_ids", "quality_flags", "prompt_tokens", "tokens"?, "filter_prompt_tokens"?}``."""
    def span(key: str) -> dict[str, int] | None:
        values = [r[key] for r in rows if r.get(key) is not None]
        return {"min": min(values), "max": max(values)} if values else None

    return {
        "format": fmt, "tokenizer": counter.name, "chat_template": template.name, "max_prompt_tokens": max_prompt_tokens,
        "prompt_tokens": span("prompt_tokens"), "tokens": span("tokens"), "filter_prompt_tokens": span("filter_prompt_tokens"),
        "settings": settings(fmt, rows), "rows": rows,
    }


def summary(report: dict[str, Any]) -> list[str]:
    """The report in a few lines for the terminal."""
    lines = [f"lengths with {report['tokenizer']}'s vocabulary and the {report['chat_template']} chat template:"]
    for key, what in (("prompt_tokens", "prompt"), ("filter_prompt_tokens", "prompt with every tool (verl's filter)"), ("tokens", "row")):
        if report.get(key):
            lines.append(f"  {what}: {report[key]['min']}-{report[key]['max']} tokens")
    for trainer, values in report["settings"].items():
        lines.append(f"  {trainer}: " + " ".join(f"{k}={json.dumps(v)}" for k, v in values.items()))
    return lines
