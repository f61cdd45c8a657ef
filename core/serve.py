"""``agent serve``: start a local model server with what an agent needs, and point Horizon at it.

Engines (optional extras, never hard dependencies):

- ``vllm`` (GPU): ``vllm serve MODEL`` with the OpenAI API, ``--enable-auto-tool-choice`` and the
  model family's ``--tool-call-parser`` (vLLM docs, "Tool Calling"), ``--enable-prefix-caching``
  and ``--enable-prompt-tokens-details`` (so usage reports cached tokens). ``--fast`` adds
  ``--speculative-config`` (JSON; vLLM docs, "Speculative Decoding": ``{"method": "ngram",
  "num_speculative_tokens": .., "prompt_lookup_max": .., "prompt_lookup_min": ..}``, or
  ``eagle``/``eagle3`` with a draft ``model``, ``mtp`` for models with MTP heads, ``suffix``
  when Arctic Inference is installed) and ``--kv-cache-dtype fp8``.
- ``sglang`` (GPU): ``python -m sglang.launch_server --model-path MODEL`` with the family's
  ``--tool-call-parser`` and ``--enable-cache-report`` (SGLang docs, "Server Arguments", "Tool
  Parser"); RadixAttention prefix caching is on by default. ``--fast`` adds
  ``--speculative-algorithm NGRAM`` (or ``EAGLE``/``EAGLE3`` with ``--speculative-draft-model-path``,
  ``NEXTN`` for MTP) and ``--kv-cache-dtype fp8_e4m3``.
- ``llama.cpp`` (CPU, a GGUF file): ``python -m llama_cpp.server`` (the ``llama-cpp-python[server]``
  extra) with ``--chat_format chatml-function-calling`` (grammar-constrained tool calls) and no GPU
  layers; ``--fast`` adds prompt-lookup decoding (``--draft_model prompt-lookup-decoding``) and an
  8-bit KV cache (``--type_k 8 --type_v 8``, GGML type q8_0). The server reuses the KV cache of
  the longest common prefix with the previous request.

``serve`` checks that the engine is importable and, for vLLM and SGLang, that an NVIDIA GPU is
visible; then starts the server, waits until ``GET /v1/models`` answers, and writes ``base_url``
and ``model`` into ``$HORIZON_HOME/config.toml`` so ``agent run`` uses it.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
import urllib.error
import urllib.request
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, ValidationError

from core.config import horizon_home
from core.errors import ConfigError, UserError

Engine = Literal["vllm", "sglang", "llama.cpp"]
SpecMethod = Literal["ngram", "eagle", "eagle3", "mtp", "suffix"]

#: model-family patterns (on the lower-cased model id) and each engine's tool-call parser for them
#: (vLLM docs "Tool Calling"; SGLang docs "Tool Parser"); the first match wins.
TOOL_PARSERS: list[tuple[str, str, str]] = [
    (r"qwen3[-_.]?coder", "qwen3_xml", "qwen3_coder"),
    (r"qwen", "hermes", "qwen25"),
    (r"hermes", "hermes", "qwen25"),
    (r"llama[-_.]?4", "llama4_pythonic", "llama4"),
    (r"llama", "llama3_json", "llama3"),
    (r"mistral|mixtral|ministral|devstral|codestral", "mistral", "mistral"),
    (r"deepseek[-_.]?v3\.1|deepseek[-_.]?v3\.2", "deepseek_v31", "deepseekv31"),
    (r"deepseek", "deepseek_v3", "deepseekv3"),
    (r"gpt[-_.]?oss", "openai", "gpt-oss"),
    (r"kimi[-_.]?k2", "kimi_k2", "kimi_k2"),
    (r"glm[-_.]?4", "glm45", "glm45"),
    (r"granite[-_.]?4", "granite4", "granite4"),
]
INSTALL = {
    "vllm": "pip install vllm  (or: pip install 'horizon-agents[vllm]')",
    "sglang": "pip install 'sglang[all]'  (or: pip install 'horizon-agents[sglang]')",
    "llama.cpp": "pip install 'llama-cpp-python[server]'  (or: pip install 'horizon-agents[llamacpp]')",
}
MODULES = {"vllm": "vllm", "sglang": "sglang", "llama.cpp": "llama_cpp.server"}


class ServeOptions(BaseModel):
    """What to serve and how.

    Attributes:
        model: a Hugging Face id or a local folder (vLLM, SGLang), or a GGUF file (llama.cpp).
        engine: the engine; default ``llama.cpp`` for a ``.gguf`` file, else ``vllm``.
        fast: the fast-path preset: speculative decoding and an 8-bit (FP8 on GPUs) KV cache.
        spec: the speculative method with ``fast``; default ``eagle3`` when ``draft_model`` is
            given, else ``ngram`` (needs no draft model).
        draft_model: an EAGLE/EAGLE-3 draft head (Hugging Face id or folder).
        tool_parser: override the parser chosen from the model's family.
        host: address to bind (default loopback only).
        port: TCP port (default 8000).
        served_name: the model name clients send (default ``model``; for a GGUF file, its name
            without ``.gguf``).
        n_ctx: context window in tokens for llama.cpp (vLLM and SGLang read it from the model).
        n_threads: CPU threads for llama.cpp (default: all cores).
        chat_format: llama-cpp-python's chat handler; the default ``chatml-function-calling``
            renders the tool schemas into the prompt and constrains tool calls by grammar; None
            uses the GGUF's own chat template (a much shorter prompt, but tools are not shown to
            a model whose template ignores them, and no tool calls are parsed).
    """

    model: str
    engine: Engine | None = None
    fast: bool = False
    spec: SpecMethod | None = None
    draft_model: str | None = None
    tool_parser: str | None = None
    host: str = "127.0.0.1"
    port: int = Field(8000, ge=1, le=65535)
    served_name: str | None = None
    n_ctx: int = Field(8192, ge=256)
    n_threads: int | None = Field(None, ge=1)
    chat_format: str = "chatml-function-calling"

    @property
    def chosen_engine(self) -> Engine:
        """The engine to use (see ``engine``)."""
        return self.engine or ("llama.cpp" if self.model.lower().endswith(".gguf") else "vllm")

    @property
    def name(self) -> str:
        """The model name clients send."""
        if self.served_name:
            return self.served_name
        return Path(self.model).name.removesuffix(".gguf") if self.model.lower().endswith(".gguf") else self.model

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible root, as clients reach it."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") else self.host
        return f"http://{host}:{self.port}/v1"


def serve_options(**values: object) -> ServeOptions:
    """Build ``ServeOptions`` from command-line values (``None`` ones are left at their defaults).

    Raises:
        ConfigError: a value is invalid (the option and the reason are named).
    """
    try:
        return ServeOptions(**{k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        problems = "; ".join(f"--{'.'.join(map(str, e['loc'])).replace('_', '-')}: {e['msg']}" for e in exc.errors())
        raise ConfigError(f"invalid agent serve options: {problems}") from None


def tool_parser(engine: Engine, model: str) -> str | None:
    """The tool-call parser for ``model``'s family on ``engine`` (None: unknown family, or llama.cpp)."""
    if engine == "llama.cpp":
        return None
    for pattern, vllm_parser, sglang_parser in TOOL_PARSERS:
        if re.search(pattern, model.lower()):
            return vllm_parser if engine == "vllm" else sglang_parser
    return None


def _spec_method(opts: ServeOptions) -> SpecMethod:
    method = opts.spec or ("eagle3" if opts.draft_model else "ngram")
    if method in ("eagle", "eagle3") and not opts.draft_model:
        raise ConfigError(f"--spec {method} needs --draft-model (an {method.upper()} head trained for {opts.model})")
    return method


def vllm_speculative_config(opts: ServeOptions) -> dict[str, object]:
    """The ``--speculative-config`` JSON for the fast path (vLLM docs, "Speculative Decoding")."""
    method = _spec_method(opts)
    if method == "ngram":
        return {"method": "ngram", "num_speculative_tokens": 4, "prompt_lookup_max": 4, "prompt_lookup_min": 2}
    if method in ("eagle", "eagle3"):
        return {"method": method, "model": opts.draft_model, "num_speculative_tokens": 3}
    if method == "mtp":
        return {"method": "mtp", "num_speculative_tokens": 1}
    return {"method": "suffix", "num_speculative_tokens": 16}


def engine_command(opts: ServeOptions) -> list[str]:
    """The exact command line that serves ``opts`` (see the module docstring for each engine's flags).

    Raises:
        ConfigError: a GGUF with a GPU engine, a non-GGUF with llama.cpp, unknown model family
            without ``tool_parser``, EAGLE without a draft model, or a speculative method the
            engine has not.
    """
    engine, parser = opts.chosen_engine, opts.tool_parser or tool_parser(opts.chosen_engine, opts.model)
    if engine == "llama.cpp":
        if not opts.model.lower().endswith(".gguf"):
            raise ConfigError(f"llama.cpp serves GGUF files; {opts.model!r} is not one (use --engine vllm or sglang)")
        cmd = [sys.executable, "-m", "llama_cpp.server", "--model", opts.model, "--model_alias", opts.name,
               "--host", opts.host, "--port", str(opts.port), "--n_ctx", str(opts.n_ctx), "--n_gpu_layers", "0",
               "--n_threads", str(opts.n_threads or os.cpu_count() or 1)]
        if opts.chat_format != "gguf":
            cmd += ["--chat_format", opts.chat_format]
        if opts.fast:
            cmd += ["--draft_model", "prompt-lookup-decoding", "--draft_model_num_pred_tokens", "10", "--type_k", "8", "--type_v", "8"]
        return cmd
    if opts.model.lower().endswith(".gguf"):
        raise ConfigError(f"{opts.model} is a GGUF file: serve it with --engine llama.cpp")
    if parser is None:
        raise ConfigError(f"no tool-call parser is known for {opts.model!r} on {engine}; name one with --tool-parser "
                          "(vLLM: hermes, llama3_json, mistral, qwen3_xml, ...; SGLang: qwen25, llama3, mistral, ...)")
    if engine == "vllm":
        cmd = [shutil.which("vllm") or "vllm", "serve", opts.model, "--host", opts.host, "--port", str(opts.port),
               "--served-model-name", opts.name, "--enable-auto-tool-choice", "--tool-call-parser", parser,
               "--enable-prefix-caching", "--enable-prompt-tokens-details"]
        if opts.fast:
            cmd += ["--speculative-config", json.dumps(vllm_speculative_config(opts), separators=(",", ":")),
                    "--kv-cache-dtype", "fp8"]
        return cmd
    cmd = [sys.executable, "-m", "sglang.launch_server", "--model-path", opts.model, "--host", opts.host,
           "--port", str(opts.port), "--served-model-name", opts.name, "--tool-call-parser", parser, "--enable-cache-report"]
    if opts.fast:
        method = _spec_method(opts)
        if method == "suffix":
            raise ConfigError("SGLang has no suffix decoding; use --spec ngram, eagle, eagle3 or mtp")
        algorithm = {"ngram": "NGRAM", "eagle": "EAGLE", "eagle3": "EAGLE3", "mtp": "NEXTN"}[method]
        cmd += ["--speculative-algorithm", algorithm]
        if opts.draft_model and method in ("eagle", "eagle3"):
            cmd += ["--speculative-draft-model-path", opts.draft_model, "--speculative-num-steps", "3",
                    "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]
        cmd += ["--kv-cache-dtype", "fp8_e4m3"]
    return cmd


def check_engine(engine: Engine) -> None:
    """Fail early, saying what to install, when the engine or (for vLLM/SGLang) an NVIDIA GPU is missing.

    Raises:
        UserError: the engine's Python package is not installed, or no GPU is visible.
    """
    try:
        found = importlib.util.find_spec(MODULES[engine]) is not None
    except ModuleNotFoundError:  # the parent package is missing
        found = False
    if not found:
        raise UserError(f"the {engine} engine is not installed: {INSTALL[engine]}")
    if engine != "llama.cpp" and not gpu_visible():
        raise UserError(f"{engine} needs an NVIDIA GPU and none is visible here (nvidia-smi finds none); "
                        "on a CPU-only machine serve a GGUF file with --engine llama.cpp")


def gpu_visible() -> bool:
    """Whether ``nvidia-smi -L`` lists at least one GPU."""
    if shutil.which("nvidia-smi") is None:
        return False
    try:
        out = subprocess.run(["nvidia-smi", "-L"], check=False, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def wait_until_ready(base_url: str, process: subprocess.Popen, timeout_s: float, log: Path | None = None) -> None:
    """Poll ``GET {base_url}/models`` every 0.5 s until it answers 200.

    Raises:
        UserError: the server process exited, or ``timeout_s`` seconds passed (the log's tail is quoted).
    """
    deadline = time.monotonic() + timeout_s
    while True:
        code = process.poll()
        if code is not None:
            raise UserError(f"the model server exited with status {code} before it answered{_tail(log)}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=5) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise UserError(f"the model server did not answer {base_url}/models within {timeout_s:g} s{_tail(log)}")
        time.sleep(0.5)


def _tail(log: Path | None, lines: int = 15) -> str:
    if log is None or not log.is_file():
        return ""
    text = log.read_text(errors="replace").splitlines()[-lines:]
    return f"; the end of its log ({log}):\n" + "\n".join(text)


def start_server(opts: ServeOptions, *, log: Path, timeout_s: float = 900.0, env: dict[str, str] | None = None) -> subprocess.Popen:
    """Check the engine, start the server (output to ``log``) and wait until it answers.

    Args:
        env: variables to add to the server's environment (e.g. ``OMP_WAIT_POLICY=PASSIVE`` for
            llama.cpp on a machine shared with other work: its OpenMP threads otherwise spin).

    Returns:
        The server process; the caller stops it (``stop_server``).

    Raises:
        UserError, ConfigError: see ``check_engine``, ``engine_command`` and ``wait_until_ready``.
    """
    cmd = engine_command(opts)
    check_engine(opts.chosen_engine)
    if opts.chosen_engine == "llama.cpp" and not Path(opts.model).is_file():
        raise UserError(f"no GGUF file at {opts.model}")
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        process = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                   env={**os.environ, **(env or {})})
    try:
        wait_until_ready(opts.base_url, process, timeout_s, log)
    except BaseException:
        stop_server(process)
        raise
    return process


def stop_server(process: subprocess.Popen, grace_s: float = 15.0) -> None:
    """Stop the server's process group: SIGTERM, then SIGKILL after ``grace_s`` seconds."""
    if process.poll() is not None:
        return
    try:
        os.killpg(process.pid, 15)
        process.wait(grace_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, 9)
        process.wait()
    except ProcessLookupError:
        pass


def write_config(base_url: str, model: str, home: Path | None = None) -> Path:
    """Set ``base_url`` and ``model`` in ``$HORIZON_HOME/config.toml``, keeping its other settings.

    Returns:
        The file written.

    Raises:
        ConfigError: the existing file is not valid TOML (it is left as it is).
    """
    path = (home or horizon_home()) / "config.toml"
    data: dict[str, object] = {}
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot update {path}: it is not valid TOML ({exc}); fix or remove it") from None
    data.update(base_url=base_url, model=model)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".toml.tmp")
    tmp.write_text("".join(f"{key} = {_toml_value(value)}\n" for key, value in data.items()), encoding="utf-8")
    os.replace(tmp, path)  # a crash mid-write leaves the old file
    return path


def _toml_value(value: object) -> str:
    """A scalar as TOML (Horizon's settings are all scalars; JSON's string escapes are valid TOML)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return json.dumps(value, ensure_ascii=False)
    raise ConfigError(f"config.toml holds a value Horizon does not write back: {value!r}")
