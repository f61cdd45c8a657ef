#!/usr/bin/env bash
# GPU check of the fast path: serve a small local model with vLLM without and with `--fast`
# (n-gram speculative decoding + FP8 KV cache), replay a recorded multi-step coding episode's
# requests against each, and print tokens/s, time to first token, prefix-cache hit rate and the
# speedup. For a machine with an NVIDIA GPU and no network; CI never runs it. About 5-8 minutes
# on one H200 (two server start-ups dominate).
#
#   bench/gpu/serve_check.sh [--quick] [MODEL_DIR] [REQUESTS]
#
# --quick: replay only the first 8 requests with at most 64 tokens each (the two server start-ups
#   still dominate: about 3-5 minutes). CI skips this check either way (no GPU there).
# MODEL_DIR: a local Hugging Face model folder (config.json + *.safetensors); default: the
#   smallest instruct model found under $HF_HOME/hub, ~/.cache/huggingface/hub, /models,
#   /data/models, /opt/models, /root/models.
# REQUESTS: JSON Lines of chat-completions request bodies, one per model call of the episode;
#   default bench/gpu/episode_requests.jsonl.gz (30 steps, recorded on examples/python-user-service
#   by `bench/prefix_cache.py --steps 30 --write-requests FILE`, then gzipped).
# Environment: PYTHON (the interpreter that has vllm; default .venv/bin/python, else python3),
#   PORT (default 8765), MAX_TOKENS per replayed call (default 128; 64 with --quick), READY_TIMEOUT_S (default 300).
set -euo pipefail

QUICK=""
if [[ "${1:-}" == "--quick" ]]; then QUICK=1; shift; fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
PORT="${PORT:-8765}"
MAX_TOKENS="${MAX_TOKENS:-$([[ -n "$QUICK" ]] && echo 64 || echo 128)}"
READY_TIMEOUT_S="${READY_TIMEOUT_S:-300}"
WORK="$(mktemp -d -t horizon-serve-check.XXXXXX)"
SERVER_PID=""

say() { printf '[serve_check %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { say "error: $*"; exit 1; }

cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM -- "-$SERVER_PID" 2>/dev/null || kill -TERM "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 1; done
        kill -KILL -- "-$SERVER_PID" 2>/dev/null || true
    fi
}
trap cleanup EXIT
trap 'die "interrupted"' INT TERM

# --- the interpreter, the engine and the GPU -------------------------------------------------
PY="${PYTHON:-}"
if [[ -z "$PY" ]]; then
    if [[ -x "$ROOT/.venv/bin/python" ]]; then PY="$ROOT/.venv/bin/python"; else PY="$(command -v python3 || true)"; fi
fi
[[ -n "$PY" ]] || die "no Python found; set PYTHON=/path/to/python (the one with vllm installed)"
"$PY" -c 'import vllm' 2>/dev/null || die "vLLM is not importable by $PY: pip install vllm (or set PYTHON)"
command -v nvidia-smi >/dev/null || die "nvidia-smi not found: this check needs an NVIDIA GPU and its driver"
nvidia-smi -L | grep -q GPU || die "nvidia-smi lists no GPU"
say "GPU: $(nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -1); vLLM $("$PY" -c 'import vllm; print(vllm.__version__)')"

# --- the model --------------------------------------------------------------------------------
MODEL="${1:-}"
if [[ -z "$MODEL" ]]; then
    MODEL="$("$PY" - <<'EOF'
import os
from pathlib import Path

roots = [os.environ.get("HF_HOME", "") + "/hub", "~/.cache/huggingface/hub", "/models", "/data/models", "/opt/models", "/root/models"]
found = []
for root in roots:
    base = Path(root).expanduser()
    if not base.is_dir():
        continue
    for config in list(base.glob("*/config.json")) + list(base.glob("*/snapshots/*/config.json")) + list(base.glob("*/*/config.json")):
        folder = config.parent
        weights = list(folder.glob("*.safetensors"))
        name = str(folder).lower()
        if weights and "instruct" in name or weights and "chat" in name:
            size = sum(w.stat().st_size for w in weights)  # follows the hub cache's links to blobs
            if size < 40e9:
                found.append((size, str(folder)))
print(min(found)[1] if found else "")
EOF
)"
    [[ -n "$MODEL" ]] || die "no local instruct model found (looked under \$HF_HOME/hub, ~/.cache/huggingface/hub, /models, /data/models, /opt/models, /root/models); pass a model folder: $0 /path/to/Qwen2.5-1.5B-Instruct"
fi
[[ -f "$MODEL/config.json" ]] || die "$MODEL is not a model folder (no config.json)"
say "model: $MODEL"

# --- the recorded episode ---------------------------------------------------------------------
REQUESTS="${2:-$ROOT/bench/gpu/episode_requests.jsonl.gz}"
[[ -f "$REQUESTS" ]] || die "no requests file at $REQUESTS; write one with: .venv/bin/python bench/prefix_cache.py --steps 30 --write-requests FILE"
case "$REQUESTS" in
    *.gz) gzip -dc "$REQUESTS" > "$WORK/requests.jsonl" ;;
    *) cp "$REQUESTS" "$WORK/requests.jsonl" ;;
esac
if [[ -n "$QUICK" ]]; then
    head -n 8 "$WORK/requests.jsonl" > "$WORK/requests.quick.jsonl"
    mv "$WORK/requests.quick.jsonl" "$WORK/requests.jsonl"
fi
say "episode: $(wc -l < "$WORK/requests.jsonl") recorded requests"

# --- the two server commands, from `agent serve --dry-run` when Horizon is importable ---------
serve_command() {  # $1: "" or "--fast"
    local cmd agent=("$PY" -c 'from core.cli import main; main()' serve "$MODEL" --port "$PORT")
    # the model family's tool-call parser when Horizon knows the family, else hermes (Qwen, Hermes)
    if cmd="$("${agent[@]}" $1 --dry-run 2>/dev/null)" || cmd="$("${agent[@]}" --tool-parser hermes $1 --dry-run 2>/dev/null)"; then
        printf '%s' "$cmd"
    else  # Horizon's dependencies are not installed here: the same flags as core/serve.py
        cmd="vllm serve $MODEL --host 127.0.0.1 --port $PORT --served-model-name $MODEL --enable-auto-tool-choice --tool-call-parser hermes --enable-prefix-caching --enable-prompt-tokens-details"
        if [[ -n "$1" ]]; then
            cmd="$cmd --speculative-config '{\"method\":\"ngram\",\"num_speculative_tokens\":4,\"prompt_lookup_max\":4,\"prompt_lookup_min\":2}' --kv-cache-dtype fp8"
        fi
        printf '%s' "$cmd"
    fi
}

# the context: the model's own limit, at most 32k tokens (the 30-step episode's last prompt is ~15k)
MAX_LEN="$("$PY" -c 'import json, sys; c = json.load(open(sys.argv[1])); print(min(32768, int(c.get("max_position_embeddings") or 32768)))' "$MODEL/config.json")"

run_config() {  # $1: label, $2: "" or "--fast"
    local label="$1" cmd log
    cmd="$(serve_command "$2") --max-model-len $MAX_LEN --gpu-memory-utilization 0.85"
    log="$WORK/$label.log"
    say "[$label] starting: $cmd"
    # own process group, so cleanup stops vLLM's workers too; the vllm script next to $PY first
    PATH="$(dirname "$PY"):$PATH" setsid bash -c "exec $cmd" > "$log" 2>&1 &
    SERVER_PID=$!
    local waited=0
    until curl -sf "http://127.0.0.1:$PORT/v1/models" > /dev/null; do
        kill -0 "$SERVER_PID" 2>/dev/null || { tail -n 30 "$log" >&2; die "[$label] the server exited while starting (log above, full log $log)"; }
        (( waited >= READY_TIMEOUT_S )) && { tail -n 30 "$log" >&2; die "[$label] the server did not answer within ${READY_TIMEOUT_S} s"; }
        sleep 2; waited=$((waited + 2))
    done
    say "[$label] ready after ${waited} s; replaying"
    timeout 300 "$PY" - "$label" "$PORT" "$MODEL" "$MAX_TOKENS" "$WORK/requests.jsonl" "$WORK/$label.json" <<'EOF'
import json, sys, time, urllib.request

label, port, model, max_tokens, requests_path, out_path = sys.argv[1:]
base = f"http://127.0.0.1:{port}"


def stream(body):
    """Send one streamed request; return (seconds to the first token, total seconds, usage).

    A server that sends no usage in the stream gets its completion tokens counted as the chunks
    that carried text (one token each without speculative decoding; a lower bound with it)."""
    req = urllib.request.Request(f"{base}/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"})
    start, first, usage, chunks = time.perf_counter(), None, {}, 0
    with urllib.request.urlopen(req, timeout=120) as resp:
        for raw in resp:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[5:])
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("content") or delta.get("tool_calls") or delta.get("reasoning_content"):
                    chunks += 1
                    first = first or time.perf_counter()
            if chunk.get("usage"):
                usage = chunk["usage"]
    end = time.perf_counter()
    return (first or end) - start, end - start, usage or {"completion_tokens": chunks}


def metrics():
    """Prefix-cache counters from /metrics (vLLM v1 names; 0 when absent)."""
    try:
        text = urllib.request.urlopen(f"{base}/metrics", timeout=10).read().decode()
    except OSError as exc:
        print(f"[{label}] no /metrics ({exc}): the cache hit rate comes from usage only", file=sys.stderr)
        return {}
    values = {}
    for line in text.splitlines():
        for name in ("prefix_cache_queries", "prefix_cache_hits"):
            if line.startswith(f"vllm:{name}") and not line.startswith("#"):
                values[name] = values.get(name, 0.0) + float(line.rsplit(" ", 1)[1])
    return values


stream({"model": model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 4, "stream": True})  # warm-up
before = metrics()
ttft, decode_s, completion, prompt, cached, errors = [], 0.0, 0, 0, 0, 0
for n, line in enumerate(open(requests_path, encoding="utf-8")):
    body = json.loads(line)
    body.update(model=model, max_tokens=int(max_tokens), temperature=0.0, stream=True, stream_options={"include_usage": True})
    try:
        first, total, usage = stream(body)
    except Exception as exc:  # a prompt over the context, a parser error: count it, go on
        errors += 1
        print(f"[{label}] request {n + 1} failed: {exc}", file=sys.stderr)
        continue
    ttft.append(first)
    out = usage.get("completion_tokens", 0)
    completion += out
    decode_s += max(total - first, 1e-6) if out > 1 else 0.0
    prompt += usage.get("prompt_tokens", 0)
    cached += (usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0
after = metrics()
queries = after.get("prefix_cache_queries", 0) - before.get("prefix_cache_queries", 0)
hits = after.get("prefix_cache_hits", 0) - before.get("prefix_cache_hits", 0)
ttft.sort()
result = {
    "label": label, "requests": len(ttft), "errors": errors,
    "decode_tok_s": completion / decode_s if decode_s else 0.0,
    "ttft_median_s": ttft[len(ttft) // 2] if ttft else 0.0,
    "ttft_p90_s": ttft[int(len(ttft) * 0.9)] if ttft else 0.0,
    "cache_hit_usage": cached / prompt if prompt else 0.0,
    "cache_hit_metrics": hits / queries if queries else 0.0,
    "prompt_tokens": prompt, "completion_tokens": completion,
}
json.dump(result, open(out_path, "w"))
print(f"[{label}] {result}", file=sys.stderr)
EOF
    cleanup
    SERVER_PID=""
    sleep 3  # the port and the GPU memory are free again
}

START=$(date +%s)
run_config baseline ""
run_config fast "--fast"

"$PY" - "$WORK/baseline.json" "$WORK/fast.json" "$MODEL" <<'EOF'
import json, sys

base, fast = (json.load(open(p)) for p in sys.argv[1:3])
print(f"\nvLLM on {sys.argv[3]}: {base['requests']} replayed calls of a recorded coding episode\n")
print("| config | decode tokens/s | TTFT median (s) | TTFT p90 (s) | cache hit (usage) | cache hit (/metrics) | errors |")
print("|---|---:|---:|---:|---:|---:|---:|")
for r in (base, fast):
    print(f"| {r['label']} | {r['decode_tok_s']:.1f} | {r['ttft_median_s']:.3f} | {r['ttft_p90_s']:.3f} | "
          f"{r['cache_hit_usage']:.1%} | {r['cache_hit_metrics']:.1%} | {r['errors']} |")
speed = fast["decode_tok_s"] / base["decode_tok_s"] if base["decode_tok_s"] else float("nan")
print(f"\nspeedup of --fast (decode tokens/s): {speed:.2f}x")
EOF
say "done in $(( $(date +%s) - START )) s; logs in $WORK"
