"""``agent serve``: the engine commands against each engine's documented flags, the config it
writes, its errors, and the llama.cpp server path for real with the bundled SmolLM2 GGUF."""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest

from core.config import load_settings
from core.errors import ConfigError, UserError
from core.serve import check_engine, engine_command, serve_options, start_server, stop_server, write_config

ROOT = Path(__file__).resolve().parents[2]
AGENT = [sys.executable, "-c", "from core.cli import main; main()"]

# vLLM docs, "vllm serve" CLI reference (docs.vllm.ai/en/latest/cli/serve) and "Tool Calling"
# (docs/features/tool_calling.md): the flags and tool-call parser names Horizon uses.
VLLM_FLAGS = {
    "--host", "--port", "--served-model-name", "--enable-auto-tool-choice", "--tool-call-parser",
    "--enable-prefix-caching", "--enable-prompt-tokens-details", "--speculative-config", "--kv-cache-dtype",
}
VLLM_PARSERS = {"hermes", "llama3_json", "llama4_pythonic", "mistral", "qwen3_xml", "deepseek_v3", "deepseek_v31",
                "openai", "kimi_k2", "glm45", "granite4"}
# vLLM docs, "Speculative Decoding" and vllm.config.speculative (SpeculativeMethod; n-gram keys)
VLLM_SPEC_METHODS = {"ngram", "eagle", "eagle3", "mtp", "suffix", "draft_model", "medusa", "mlp_speculator"}
VLLM_SPEC_KEYS = {"method", "model", "num_speculative_tokens", "prompt_lookup_max", "prompt_lookup_min"}
VLLM_KV_DTYPES = {"auto", "fp8", "fp8_e4m3", "fp8_e5m2"}  # --kv-cache-dtype choices

# SGLang docs, "Server Arguments" (docs.sglang.io/advanced_features/server_arguments), "Tool
# Parser" and "Speculative Decoding".
SGLANG_FLAGS = {
    "--model-path", "--host", "--port", "--served-model-name", "--tool-call-parser", "--enable-cache-report",
    "--speculative-algorithm", "--speculative-draft-model-path", "--speculative-num-steps",
    "--speculative-eagle-topk", "--speculative-num-draft-tokens", "--kv-cache-dtype",
}
SGLANG_PARSERS = {"qwen25", "qwen3_coder", "llama3", "llama4", "mistral", "deepseekv3", "deepseekv31", "gpt-oss",
                  "kimi_k2", "glm45", "granite4", "pythonic"}
SGLANG_ALGORITHMS = {"EAGLE", "EAGLE3", "NEXTN", "NGRAM", "STANDALONE"}
SGLANG_KV_DTYPES = {"auto", "fp8_e5m2", "fp8_e4m3"}


def flags(cmd: list[str]) -> dict[str, str | None]:
    """``--flag value`` pairs of a command (a flag followed by another flag has no value)."""
    out: dict[str, str | None] = {}
    for i, arg in enumerate(cmd):
        if arg.startswith("--"):
            nxt = cmd[i + 1] if i + 1 < len(cmd) else None
            out[arg] = None if nxt is None or nxt.startswith("--") else nxt
    return out


def dry_run(*args: str) -> list[str]:
    """``agent serve ... --dry-run`` through the real CLI; the printed command, split."""
    out = subprocess.run([*AGENT, "serve", *args, "--dry-run"], check=False, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
    return shlex.split(out.stdout.strip())


@pytest.mark.parametrize("model, parser", [
    ("Qwen/Qwen3-8B", "hermes"), ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_xml"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama3_json"), ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
    ("openai/gpt-oss-20b", "openai"),
])
def test_vllm_command_uses_documented_flags(model, parser):
    plain = engine_command(serve_options(model=model))
    cmd = engine_command(serve_options(model=model, fast=True, port=8123))
    assert plain[1:3] == ["serve", model] and cmd[1:3] == ["serve", model]
    f = flags(cmd)
    assert set(f) <= VLLM_FLAGS, set(f) - VLLM_FLAGS
    assert f["--tool-call-parser"] == parser and parser in VLLM_PARSERS
    assert "--enable-auto-tool-choice" in f and "--enable-prefix-caching" in f and f["--port"] == "8123"
    spec = json.loads(f["--speculative-config"])
    assert spec["method"] == "ngram" and set(spec) <= VLLM_SPEC_KEYS and spec["method"] in VLLM_SPEC_METHODS
    assert f["--kv-cache-dtype"] == "fp8" and f["--kv-cache-dtype"] in VLLM_KV_DTYPES
    assert "--speculative-config" not in plain and "--kv-cache-dtype" not in plain


def test_vllm_eagle3_with_a_draft_model_and_the_cli_prints_it():
    cmd = dry_run("meta-llama/Llama-3.1-8B-Instruct", "--fast", "--draft-model", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B")
    spec = json.loads(flags(cmd)["--speculative-config"])
    assert spec == {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}
    assert json.loads(flags(engine_command(serve_options(model="deepseek-ai/DeepSeek-V3", fast=True, spec="mtp")))
                      ["--speculative-config"])["method"] == "mtp"


@pytest.mark.parametrize("model, parser", [
    ("Qwen/Qwen2.5-7B-Instruct", "qwen25"), ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3_coder"),
    ("meta-llama/Llama-3.1-8B-Instruct", "llama3"), ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
])
def test_sglang_command_uses_documented_flags(model, parser):
    cmd = dry_run(model, "--engine", "sglang", "--fast")
    assert cmd[1:3] == ["-m", "sglang.launch_server"]
    f = flags(cmd)
    assert set(f) <= SGLANG_FLAGS, set(f) - SGLANG_FLAGS
    assert f["--model-path"] == model and f["--tool-call-parser"] == parser and parser in SGLANG_PARSERS
    assert f["--speculative-algorithm"] == "NGRAM" and f["--kv-cache-dtype"] in SGLANG_KV_DTYPES
    eagle = flags(engine_command(serve_options(model=model, engine="sglang", fast=True, draft_model="d/eagle3")))
    assert eagle["--speculative-algorithm"] == "EAGLE3" and eagle["--speculative-algorithm"] in SGLANG_ALGORITHMS
    assert eagle["--speculative-draft-model-path"] == "d/eagle3"


def test_llama_cpp_command_uses_the_installed_servers_own_options():
    """Every flag is a field of llama-cpp-python's server settings, and the chat format is registered."""
    settings = pytest.importorskip("llama_cpp.server.settings", reason="llama-cpp-python[server] is not installed")
    from llama_cpp.llama_chat_format import LlamaChatCompletionHandlerRegistry

    known = {f"--{name}" for cls in (settings.ModelSettings, settings.ServerSettings) for name in cls.model_fields}
    cmd = engine_command(serve_options(model="/models/small.gguf", fast=True))
    f = flags(cmd)
    assert set(f) <= known, set(f) - known
    assert f["--model_alias"] == "small" and f["--n_gpu_layers"] == "0"
    assert f["--chat_format"] in LlamaChatCompletionHandlerRegistry()._chat_handlers
    assert f["--draft_model"] == "prompt-lookup-decoding"


@pytest.mark.parametrize("values, message", [
    ({"model": "foo/bar"}, "no tool-call parser is known for 'foo/bar'.*--tool-parser"),
    ({"model": "x.gguf", "engine": "vllm"}, "GGUF file: serve it with --engine llama.cpp"),
    ({"model": "Qwen/Qwen3-8B", "engine": "llama.cpp"}, "llama.cpp serves GGUF files"),
    ({"model": "Qwen/Qwen3-8B", "fast": True, "spec": "eagle3"}, "--spec eagle3 needs --draft-model"),
    ({"model": "Qwen/Qwen3-8B", "engine": "sglang", "fast": True, "spec": "suffix"}, "SGLang has no suffix decoding"),
])
def test_bad_options_are_clear_errors(values, message):
    with pytest.raises(ConfigError, match=message):
        engine_command(serve_options(**values))


def test_unknown_engine_is_refused_by_the_cli():
    out = subprocess.run([*AGENT, "serve", "m", "--engine", "tgi", "--dry-run"], check=False, capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 2 and "--engine: Input should be 'vllm', 'sglang' or 'llama.cpp'" in out.stdout


def test_missing_engine_or_gpu_says_what_to_install(monkeypatch):
    monkeypatch.setitem(__import__("core.serve").serve.MODULES, "vllm", "horizon_no_such_engine")
    with pytest.raises(UserError, match=r"vllm engine is not installed: pip install vllm"):
        check_engine("vllm")
    monkeypatch.setitem(__import__("core.serve").serve.MODULES, "sglang", "json")  # "installed"
    monkeypatch.setenv("PATH", "/nonexistent")  # no nvidia-smi: no GPU
    with pytest.raises(UserError, match="sglang needs an NVIDIA GPU.*--engine llama.cpp"):
        check_engine("sglang")


def test_write_config_keeps_other_settings_and_agent_run_reads_it(horizon_home, monkeypatch, tmp_path):
    horizon_home.mkdir(parents=True)
    (horizon_home / "config.toml").write_text('model = "old"\ntemperature = 0.3\ninput_per_mtok = 2.5\n')
    monkeypatch.chdir(tmp_path)
    write_config("http://127.0.0.1:8000/v1", 'Qwen/Qwen3-8B "q"')
    settings = load_settings()
    assert (settings.base_url, settings.model, settings.temperature, settings.input_per_mtok) == (
        "http://127.0.0.1:8000/v1", 'Qwen/Qwen3-8B "q"', 0.3, 2.5)
    (horizon_home / "config.toml").write_text("model = \n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        write_config("http://x/v1", "m")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: A task long enough that the first prompt is over 200 tokens with the test plugin's short system
#: prompt (SmolLM2's template leaves the tool schemas out): the usage checks below need a real prefix.
LONG_TASK = (
    "Read log.md, which keeps a dated log of the work on this folder, and add one line at its end saying "
    "that the answer was checked today; keep every earlier line exactly as it is, including the comment "
    "that marks the end of the log. Then open ANSWER.txt, which says todo, and replace its content with "
    "the single word done, with no other text, no quotes and no trailing spaces, so that whoever reads "
    "the folder next sees at once that the task is finished. Do not create other files, do not rename "
    "or delete anything, and do not run commands that change files outside this folder. When both files "
    "are written, look at each once more to check that the change is what was asked, and then call "
    "finish with a one-sentence summary that names the two files you changed and what each now holds. "
    "If a tool answers with an error, read the error, correct the call and try again rather than giving up."
)


def test_llama_cpp_server_serves_a_real_episode(horizon_home, notes_plugin, notes_folder, tmp_path):
    """The bundled SmolLM2 GGUF behind llama-cpp-python's server; `agent run` against it for 2 steps,
    on the test plugin (``notes``: its ``agent`` process finds it through ``PYTHONPATH``).

    The server uses the GGUF's own chat template (``chat_format="gguf"``): the default
    ``chatml-function-calling`` renders the tool schemas into the prompt (over a thousand more
    tokens), which a 2-core machine prefills in tens of seconds. SmolLM2's template ignores tools,
    so the model answers in text and the loop's nudge follows: real calls, usage and trajectory.
    """
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] is not installed")
    from core.policy.embedded import bundled_model_path
    from core.runner import list_runs, open_store

    opts = serve_options(model=str(bundled_model_path()), port=free_port(), n_ctx=4096, chat_format="gguf", n_threads=1)
    # one thread that sleeps when idle: spinning OpenMP threads crawl on a CPU shared with other tests
    process = start_server(opts, log=tmp_path / "server.log", timeout_s=120, env={"OMP_WAIT_POLICY": "PASSIVE"})
    try:
        write_config(opts.base_url, opts.name)
        env = {**os.environ, "HORIZON_MAX_COMPLETION_TOKENS": "24", "HORIZON_RETRY_MAX_ATTEMPTS": "1"}
        run = subprocess.run([*AGENT, "run", notes_plugin, LONG_TASK, "--repo", str(notes_folder), "--max-steps", "2"],
                             check=False, capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600)
    finally:
        stop_server(process)
    assert process.poll() is not None
    assert f"openai:{opts.name}@{opts.base_url}" in run.stdout, run.stdout + run.stderr
    [row] = list_runs()
    assert row["exit_status"] in ("step_limit", "submitted", "format_errors"), run.stdout
    with closing(open_store(row["run_id"])) as store:
        calls, messages, run_row = store.steps(), store.messages(), store.run()
    assert [c["step"] for c in calls] == [1, 2]
    assert all(c["usage"].prompt_tokens > 200 and c["usage"].completion_tokens > 0 for c in calls)
    assert calls[1]["usage"].cached_prompt_tokens > 100  # estimated: the second prompt extends the first
    assert run_row["prompt_tokens"] == sum(c["usage"].prompt_tokens for c in calls)
    assert [m.role for m in messages[:3]] == ["system", "user", "assistant"] and len(messages) >= 5


def test_a_server_that_dies_while_starting_is_a_clear_error(tmp_path):
    pytest.importorskip("llama_cpp.server.app", reason="llama-cpp-python[server] is not installed")
    with pytest.raises(UserError, match="no GGUF file at"):
        start_server(serve_options(model=str(tmp_path / "missing.gguf"), port=free_port()), log=tmp_path / "a.log")
    broken = tmp_path / "broken.gguf"
    broken.write_text("not a model")
    with pytest.raises(UserError, match=r"exited with status \d+ before it answered; the end of its log"):
        start_server(serve_options(model=str(broken), port=free_port()), log=tmp_path / "b.log", timeout_s=120)
