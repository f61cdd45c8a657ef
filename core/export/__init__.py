"""RL data export from the run store, behind quality gates.

    export_runs(run_ids, format, out)
        load_run (source.py)  ->  apply_gates (gates.py)  ->  one writer per format:

    sft-jsonl, sft-parquet   sft.py        multi-turn SFT rows: messages with tool calls, tools
    openai                   openai_ft.py  OpenAI fine-tuning JSONL
    verl, skyrl              tasks.py      task Parquet for online RL (+ verl's tool config YAML)
    tokens                   tokens.py     token ids, loss mask, logprobs, reward; step-wise and whole
    grpo                     grpo.py       groups of one task with group-normalised advantages
    trl-env                  core.trainers.trl  one row per task for TRL's environment_factory (JSON Lines)

Runs that fail a gate are left out (``keep_flagged`` keeps them), except that a GRPO export keeps
near-duplicates in their group (``SAMPLE_FORMATS``); every row carries the reasons of the runs
it was made from in ``quality_flags`` (verl and SkyRL: ``extra_info.quality_flags``, one list per
run; OpenAI's format defines no such field, so its lines' flags are in the length report). Runs
without a single model turn have nothing to train on and are left out too, and so are prompts
over ``max_prompt_tokens``. Every format's tool schemas are ``core.export.schemas.portable_schema``
of the plugin's (what verl keeps), and every export writes a length report beside the data
(``core.export.lengths``: the training chat template, the tokenizer, the trainer settings to
use). The result says what was written and what was left out, why.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from core.errors import UserError
from core.export.gates import Flag, GateReport, apply_gates
from core.export.grpo import left_out_reason
from core.export.lengths import ChatTemplate, Counter, length_report, load_chat_template, measure, token_counter
from core.export.schemas import portable_schema
from core.export.source import RunRecord, load_run, runs_dir, select_runs

__all__ = ["FORMATS", "ExportResult", "Flag", "GateReport", "RunRecord", "apply_gates", "export_runs", "load_run", "select_runs"]

FORMATS = ("sft-jsonl", "sft-parquet", "openai", "verl", "skyrl", "tokens", "grpo", "trl-env")
#: The formats written as Parquet; the others are JSON Lines.
PARQUET_FORMATS = ("sft-parquet", "verl", "skyrl", "tokens")
_JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")
#: Formats whose rows are samples of a policy (GRPO groups): a near-duplicate there is another
#: sample with the same outcome, kept (with its flag), since dropping it changes the group's advantages.
SAMPLE_FORMATS = ("grpo",)
SAMPLE_REASONS = ("near_duplicate",)


@dataclass
class ExportResult:
    """What ``export_runs`` did.

    Attributes:
        format: the format written.
        files: the files written (the data file; for ``verl`` also the tool config).
        rows: rows (lines) written.
        exported: run ids whose data is in the files.
        gates: every run's gate verdicts.
        left_out: ``{run_id: why}`` for runs not exported (failed a gate, or no model turn).
        warnings: what was written but will not train as one may expect (a GRPO group of one, a
            tool name two plugins of a verl export give different schemas).
        lengths: the length report (``core.export.lengths``), also written as ``<stem>.lengths.json``.
    """

    format: str
    files: list[Path] = field(default_factory=list)
    rows: int = 0
    exported: list[str] = field(default_factory=list)
    gates: GateReport = field(default_factory=GateReport)
    left_out: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    lengths: dict[str, Any] = field(default_factory=dict)


def file_kind_error(fmt: str, out: Path) -> str | None:
    """Why ``out``'s name contradicts what ``fmt`` writes (Parquet into ``x.jsonl``, JSON Lines into
    ``x.parquet``), or None; any other name is accepted."""
    suffix = out.suffix.lower()
    if fmt in PARQUET_FORMATS and suffix in _JSON_SUFFIXES:
        return f"--format {fmt} writes Parquet, not JSON Lines; name the file {out.with_suffix('.parquet').name}"
    if fmt not in PARQUET_FORMATS and suffix == ".parquet":
        return f"--format {fmt} writes JSON Lines, not Parquet; name the file {out.with_suffix('.jsonl').name}"
    return None


def export_runs(
    run_ids: list[str], fmt: str, out: Path, *, home: Path | None = None, keep_flagged: bool = False,
    overwrite: bool = False, tool_class: str | None = None, tokenizer: Path | None = None,
    chat_template: str | Path | None = None, max_prompt_tokens: int | None = None,
) -> ExportResult:
    """Export runs from the run store in one format, with a length report beside the data.

    Args:
        run_ids: the runs (``select_runs`` resolves ``--all``/``--plugin``).
        fmt: one of ``FORMATS``.
        out: the file to write (Parquet for ``sft-parquet``, ``verl``, ``skyrl``, ``tokens``; JSON
            Lines otherwise); its folder is created.
        home: Horizon's home (default ``$HORIZON_HOME`` or ``~/.horizon``).
        keep_flagged: export runs that failed a gate too, with their reasons.
        overwrite: replace ``out`` if it exists (default: refuse, so no earlier export is lost).
        tool_class: verl only: the ``class_name`` written into the tool config.
        tokenizer: the vocabulary the length report counts with: a GGUF file or a Hugging Face
            tokenizer folder (default the bundled SmolLM2-135M-Instruct); for ``tokens`` (a GGUF
            file only) also the chat template and vocabulary of the rows.
        chat_template: the training chat template the rows are measured with and made for
            (``core.export.lengths.load_chat_template``; default TRL's ``qwen3_training``).
        max_prompt_tokens: leave out rows whose prompt is longer (for verl: with every tool of
            the config, as verl's length filter counts).

    Returns:
        An ``ExportResult``; nothing is written when no run is left to export.

    Raises:
        UserError: unknown format, ``out``'s name says the other file kind (``file_kind_error``), ``out`` exists without ``overwrite``,
            ``tokenizer`` is missing, ``chat_template`` unknown, or a run cannot be read (unknown id, being written now, damaged
            store, plugin not installed).
        ModelUnavailable: ``tokens`` or the length report without llama-cpp-python or the bundled tokenizer.
    """
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if (wrong := file_kind_error(fmt, out)) is not None:
        raise UserError(wrong)
    if out.exists() and not overwrite:
        raise UserError(f"{out} exists; choose another --out or pass --overwrite to replace it")
    if out.is_dir():
        raise UserError(f"{out} is a folder; --out names the file to write")
    if tokenizer is not None and not (tokenizer.is_file() or (tokenizer.is_dir() and fmt != "tokens")):
        raise UserError(f"--tokenizer {tokenizer} is not a file; give a GGUF model file (its vocabulary and chat template are used)"
                        + ("" if fmt == "tokens" else " or a Hugging Face tokenizer folder"))
    if max_prompt_tokens is not None and max_prompt_tokens < 1:
        raise UserError(f"--max-prompt-tokens {max_prompt_tokens}: give a positive number of tokens")
    if max_prompt_tokens is not None and fmt == "tokens":
        raise UserError("--max-prompt-tokens does not apply to --format tokens, whose ids come from its own tokenizer and template: "
                        "filter its rows by len(prompt_ids), or export another format")
    template = load_chat_template(chat_template)
    records = [load_run(r, home) for r in run_ids]
    report = apply_gates(records, runs_dir(home))
    result = ExportResult(format=fmt, gates=report)
    chosen: list[RunRecord] = []
    for run in records:
        flags = report.flags[run.run_id]
        blocking = [f for f in flags if not (fmt in SAMPLE_FORMATS and f.reason in SAMPLE_REASONS)]
        if blocking and not keep_flagged:
            result.left_out[run.run_id] = "; ".join(f"{f.reason}: {f.detail}" for f in blocking)
        elif not any(m.role == "assistant" for m in run.messages):
            result.left_out[run.run_id] = "no model turn: nothing to train on"
        elif fmt == "grpo" and (why := left_out_reason(run)) is not None:
            result.left_out[run.run_id] = f"{why[0]}: {why[1]}"  # a GRPO group needs every member's reward
        else:
            chosen.append(replace(run, tools=[portable_schema(t) for t in run.tools]))  # what verl keeps, in every format
    if not chosen:
        return result
    counter = token_counter(tokenizer)
    if max_prompt_tokens is not None:
        chosen = _fit_prompts(fmt, chosen, template, counter, max_prompt_tokens, result)
        if not chosen:
            return result
    flag_text = {r.run_id: [f"{f.reason}: {f.detail}" for f in report.flags[r.run_id]] for r in chosen}
    result.exported = [r.run_id for r in chosen]
    result.files = [out]
    result.rows = _write(fmt, chosen, out, flag_text, tool_class, tokenizer, result)
    result.lengths = length_report(fmt, measure_rows(fmt, chosen, out, flag_text, template, counter), template, counter, max_prompt_tokens)
    lengths_path = out.with_name(f"{out.stem}.lengths.json")
    lengths_path.write_text(json.dumps(result.lengths, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    result.files.append(lengths_path)
    if fmt == "grpo":
        from core.export.tasks import group_by_task

        groups = group_by_task(chosen)
        if alone := sum(1 for group in groups if len(group) == 1):
            result.warnings.append(f"{alone} of {len(groups)} GRPO groups hold a single run, whose advantage is 0 (no contrast, "
                                   "nothing to learn from): run each task several times (agent eval --attempts k) before exporting")
    if fmt == "verl":
        from core.export.tasks import schema_conflicts

        for name, plugins in schema_conflicts(chosen).items():
            result.warnings.append(f"the {name} tool of {' and '.join(plugins)} has different schemas; verl holds one tool per name, "
                                   f"so every row is shown the schema of {plugins[0]} (each call still runs the row's own plugin's tool): "
                                   "export the plugins separately to keep each one's own")
    return result


def _fit_prompts(fmt: str, runs: list[RunRecord], template: ChatTemplate, counter: Counter, limit: int,
                 result: ExportResult) -> list[RunRecord]:
    """``runs`` whose prompt fits ``limit`` tokens; the others named in ``result.left_out``."""
    from core.export.tasks import opening, tool_config

    all_tools = [t["tool_schema"] for t in tool_config(runs)["tools"]] if fmt == "verl" else None
    kept = []
    for run in runs:
        lengths = measure(template, counter, opening(run), run.tools, whole=False, all_tools=all_tools)
        need = lengths.filter_prompt if lengths.filter_prompt is not None else lengths.prompt
        if need > limit:
            what = "with every tool of the tool config, as verl's length filter counts" if fmt == "verl" else "with its tools"
            result.left_out[run.run_id] = (f"prompt_too_long: {need} tokens ({what}; {counter.name}, {template.name} template) "
                                           f"> --max-prompt-tokens {limit}")
        else:
            kept.append(run)
    return kept


def measure_rows(fmt: str, runs: list[RunRecord], out: Path, flags: dict[str, list[str]], template: ChatTemplate,
                 counter: Counter) -> list[dict[str, Any]]:
    """The length report's rows for what ``_write`` wrote (``core.export.lengths``)."""
    from core.export.tasks import group_by_task, opening, tool_config

    if fmt in ("verl", "skyrl"):
        config = {t["tool_schema"]["function"]["name"]: t["tool_schema"] for t in tool_config(runs)["tools"]}
        rows = []
        for group in group_by_task(runs):
            first = group[0]
            shown = [config[t["function"]["name"]] for t in first.tools]  # what verl shows for the row's tool_selection
            lengths = measure(template, counter, opening(first), shown, whole=False,
                              all_tools=list(config.values()) if fmt == "verl" else None)
            row = {"run_ids": [r.run_id for r in group], "quality_flags": [flags.get(r.run_id, []) for r in group],
                   "prompt_tokens": lengths.prompt}
            if lengths.filter_prompt is not None:
                row["filter_prompt_tokens"] = lengths.filter_prompt
            rows.append(row)
        return rows
    if fmt == "tokens":
        import pyarrow.parquet as pq

        table = pq.read_table(out, columns=["run_id", "kind", "prompt_ids", "response_ids"]).to_pylist()
        return [{"run_ids": [r["run_id"]], "quality_flags": flags.get(r["run_id"], []), "prompt_tokens": len(r["prompt_ids"]),
                 "tokens": len(r["prompt_ids"]) + len(r["response_ids"])} for r in table if r["kind"] == "trajectory"]
    from core.export.openai_ft import openai_messages

    rows = []
    for run in runs:
        messages = openai_messages(run) if fmt == "openai" else run.openai_messages()
        lengths = measure(template, counter, messages, run.tools)
        rows.append({"run_ids": [run.run_id], "quality_flags": flags.get(run.run_id, []), "prompt_tokens": lengths.prompt,
                     "tokens": lengths.whole})
    return rows


def _write(fmt: str, runs: list[RunRecord], out: Path, flags: dict[str, list[str]], tool_class: str | None,
           tokenizer: Path | None, result: ExportResult) -> int:
    if fmt == "sft-jsonl":
        from core.export.sft import write_sft_jsonl
        return write_sft_jsonl(runs, out, flags)
    if fmt == "sft-parquet":
        from core.export.sft import write_sft_parquet
        return write_sft_parquet(runs, out, flags)
    if fmt == "openai":
        from core.export.openai_ft import write_openai_jsonl
        return write_openai_jsonl(runs, out)
    if fmt == "verl":
        from core.export.tasks import DEFAULT_TOOL_CLASS, write_verl
        rows, config = write_verl(runs, out, tool_class or DEFAULT_TOOL_CLASS, flags)
        result.files.append(config)
        return rows
    if fmt == "skyrl":
        from core.export.tasks import write_skyrl
        return write_skyrl(runs, out, flags)
    if fmt == "tokens":
        from core.export.tokens import write_tokens
        return write_tokens(runs, out, flags, tokenizer)
    if fmt == "trl-env":
        from core.trainers.trl import run_rows, write_rows
        return write_rows(run_rows(runs), out)
    from core.export.grpo import write_grpo
    return write_grpo(runs, out, flags)
