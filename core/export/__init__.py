"""RL data export from the run store, behind quality gates.

    export_runs(run_ids, format, out)
        load_run (source.py)  ->  apply_gates (gates.py)  ->  one writer per format:

    sft-jsonl, sft-parquet   sft.py        multi-turn SFT rows: messages with tool calls, tools
    openai                   openai_ft.py  OpenAI fine-tuning JSONL
    verl, skyrl              tasks.py      task Parquet for online RL (+ verl's tool config YAML)
    tokens                   tokens.py     token ids, loss mask, logprobs, reward; step-wise and whole
    grpo                     grpo.py       groups of one task with group-normalised advantages
    trl-env                  core.trainers.trl  one row per task for TRL's environment_factory (JSON Lines)

Runs that fail a gate are left out (``keep_flagged`` keeps them, with their reasons in a
``quality_flags`` field where the format has one); runs without a single model turn have nothing
to train on and are left out too. The result says what was written and what was left out, why.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from core.errors import UserError
from core.export.gates import Flag, GateReport, apply_gates
from core.export.grpo import left_out_reason
from core.export.source import RunRecord, load_run, runs_dir, select_runs

__all__ = ["FORMATS", "ExportResult", "Flag", "GateReport", "RunRecord", "apply_gates", "export_runs", "load_run", "select_runs"]

FORMATS = ("sft-jsonl", "sft-parquet", "openai", "verl", "skyrl", "tokens", "grpo", "trl-env")
#: The formats written as Parquet; the others are JSON Lines.
PARQUET_FORMATS = ("sft-parquet", "verl", "skyrl", "tokens")
_JSON_SUFFIXES = (".jsonl", ".json", ".ndjson")


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
        warnings: what was written but will not train as one may expect (a GRPO group of one).
    """

    format: str
    files: list[Path] = field(default_factory=list)
    rows: int = 0
    exported: list[str] = field(default_factory=list)
    gates: GateReport = field(default_factory=GateReport)
    left_out: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


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
) -> ExportResult:
    """Export runs from the run store in one format.

    Args:
        run_ids: the runs (``select_runs`` resolves ``--all``/``--plugin``).
        fmt: one of ``FORMATS``.
        out: the file to write (Parquet for ``sft-parquet``, ``verl``, ``skyrl``, ``tokens``; JSON
            Lines otherwise); its folder is created.
        home: Horizon's home (default ``$HORIZON_HOME`` or ``~/.horizon``).
        keep_flagged: export runs that failed a gate too, with their reasons.
        overwrite: replace ``out`` if it exists (default: refuse, so no earlier export is lost).
        tool_class: verl only: the ``class_name`` written into the tool config.
        tokenizer: tokens only: a GGUF file whose chat template and vocabulary to use (default:
            the bundled SmolLM2-135M-Instruct).

    Returns:
        An ``ExportResult``; nothing is written when no run is left to export.

    Raises:
        UserError: unknown format, ``out``'s name says the other file kind (``file_kind_error``), ``out`` exists without ``overwrite``, ``tokenizer`` is no file,
            or a run cannot be read (unknown id, being written now, damaged store, plugin not installed).
        ModelUnavailable: ``tokens`` without llama-cpp-python or the bundled tokenizer.
    """
    if fmt not in FORMATS:
        raise UserError(f"unknown export format {fmt!r}; choose one of: {', '.join(FORMATS)}")
    if (wrong := file_kind_error(fmt, out)) is not None:
        raise UserError(wrong)
    if out.exists() and not overwrite:
        raise UserError(f"{out} exists; choose another --out or pass --overwrite to replace it")
    if out.is_dir():
        raise UserError(f"{out} is a folder; --out names the file to write")
    if tokenizer is not None and not tokenizer.is_file():
        raise UserError(f"--tokenizer {tokenizer} is not a file; give a GGUF model file (its vocabulary and chat template are used)")
    records = [load_run(r, home) for r in run_ids]
    report = apply_gates(records, runs_dir(home))
    result = ExportResult(format=fmt, gates=report)
    chosen: list[RunRecord] = []
    for run in records:
        flags = report.flags[run.run_id]
        if flags and not keep_flagged:
            result.left_out[run.run_id] = "; ".join(f"{f.reason}: {f.detail}" for f in flags)
        elif not any(m.role == "assistant" for m in run.messages):
            result.left_out[run.run_id] = "no model turn: nothing to train on"
        elif fmt == "grpo" and (why := left_out_reason(run)) is not None:
            result.left_out[run.run_id] = f"{why[0]}: {why[1]}"  # a GRPO group needs every member's reward
        else:
            chosen.append(run)
    if not chosen:
        return result
    flag_text = {r.run_id: [f"{f.reason}: {f.detail}" for f in report.flags[r.run_id]] for r in chosen}
    result.exported = [r.run_id for r in chosen]
    result.files = [out]
    result.rows = _write(fmt, chosen, out, flag_text, tool_class, tokenizer, result)
    if fmt == "grpo":
        from core.export.tasks import group_by_task

        groups = group_by_task(chosen)
        if alone := sum(1 for group in groups if len(group) == 1):
            result.warnings.append(f"{alone} of {len(groups)} GRPO groups hold a single run, whose advantage is 0 (no contrast, "
                                   "nothing to learn from): run each task several times (agent eval --attempts k) before exporting")
    return result


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
        rows, config = write_verl(runs, out, tool_class or DEFAULT_TOOL_CLASS)
        result.files.append(config)
        return rows
    if fmt == "skyrl":
        from core.export.tasks import write_skyrl
        return write_skyrl(runs, out)
    if fmt == "tokens":
        from core.export.tokens import write_tokens
        return write_tokens(runs, out, flags, tokenizer)
    if fmt == "trl-env":
        from core.trainers.trl import run_rows, write_rows
        return write_rows(run_rows(runs), out)
    from core.export.grpo import write_grpo
    return write_grpo(runs, out)
