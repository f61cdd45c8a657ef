"""Prefix caching from the client's side: which engine answers, the per-run cache fields, cached-token estimates.

An engine reuses the KV cache of the longest prefix a request shares with earlier ones (vLLM's
automatic prefix caching, SGLang's RadixAttention, llama.cpp's per-slot prompt cache). Horizon
keeps its prompt append-only (``tests/core/test_prefix_stability.py``); this module adds:

- ``detect_engine``: the serving engine, from ``GET /v1/models`` (each model's ``owned_by`` is
  ``vllm``, ``sglang`` or ``llamacpp`` on those servers; llama-cpp-python says ``me``).
- ``cache_fields``: request fields that pin one run to one cache namespace, sent only to servers
  documented to accept them: the OpenAI API's ``user`` everywhere (part of the chat-completions
  request; vLLM, SGLang and both llama.cpp servers accept it); vLLM's ``cache_salt`` (its
  chat-completions extra parameters: the prefix cache is salted with it, so only requests with
  the same salt share blocks); ``prompt_cache_key`` on api.openai.com (OpenAI's prompt-caching
  guide: requests with the same key are routed to the same cache); ``cache_prompt: true`` on
  llama.cpp's ``llama-server`` (its ``/completion`` options; the server then picks the slot whose
  cached prompt is most similar, which keeps a run in its slot; an explicit ``id_slot`` is not
  sent because it must be below the server's slot count and would queue runs on one slot).
- ``estimate_cached_tokens``: when a server reports no ``cached_tokens``, the cached share of a
  prompt from its longest common prefix with the previous call of the same run: over token ids
  when the server returns them (vLLM's ``prompt_token_ids``), else over the serialised request
  (``serialise_prompt``) with the stated approximation that tokens are spread evenly over
  characters: ``cached = floor(prompt_tokens * common_chars / total_chars)``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

#: ``owned_by`` values of ``GET /v1/models`` and the engine they identify.
OWNERS = {"vllm": "vllm", "sglang": "sglang", "llamacpp": "llama.cpp", "me": "llama-cpp-python"}


def engine_from_models(base_url: str, models: Any) -> str:
    """The engine behind a server, from its ``/v1/models`` body (``{"data": [{"owned_by": ...}]}``).

    Returns:
        ``vllm``, ``sglang``, ``llama.cpp``, ``llama-cpp-python``, ``openai`` (api.openai.com) or
        ``unknown``.
    """
    if urlparse(base_url).hostname == "api.openai.com":
        return "openai"
    data = models.get("data") if isinstance(models, dict) else None
    for model in data if isinstance(data, list) else []:
        owner = model.get("owned_by") if isinstance(model, dict) else None
        if isinstance(owner, str) and owner in OWNERS:
            return OWNERS[owner]
    return "unknown"


def cache_fields(engine: str, salt: str) -> dict[str, Any]:
    """Extra request fields that keep one run on one cache namespace or slot (see the module docstring).

    Args:
        engine: from ``engine_from_models``.
        salt: the run's secret, stable for the whole run (43 URL-safe characters, 256 bits).

    Returns:
        Fields to add to the chat-completions body; always ``user``.
    """
    fields: dict[str, Any] = {"user": f"horizon-{salt[:16]}"}
    if engine == "vllm":
        fields["cache_salt"] = salt
    elif engine == "openai":
        fields["prompt_cache_key"] = f"horizon-{salt[:16]}"
    elif engine == "llama.cpp":
        fields["cache_prompt"] = True
    return fields


def serialise_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """The request as chat templates lay it out: tools first (in the system turn), then the messages."""
    return json.dumps(tools, ensure_ascii=False, separators=(",", ":")) + json.dumps(
        messages, ensure_ascii=False, separators=(",", ":"))


def common_prefix_len(a: Sequence[Any], b: Sequence[Any]) -> int:
    """Length of the longest common prefix of two strings or token-id lists."""
    n = min(len(a), len(b))
    lo, step = 0, 4096
    while lo < n and a[lo:lo + step] == b[lo:lo + step]:  # whole chunks first: fast for long equal prefixes
        lo += step
    hi = min(lo + step, n)
    while lo < hi and a[lo] == b[lo]:
        lo += 1
    return lo


def estimate_cached_tokens(prompt_tokens: int, previous: Sequence[Any] | None, current: Sequence[Any], *, ids: bool) -> int:
    """Cached prompt tokens of a call whose server reported none.

    Args:
        prompt_tokens: the call's prompt tokens, as the server reported them.
        previous: the previous call's token ids or serialised prompt (None: first call of the run).
        current: this call's token ids or serialised prompt.
        ids: True when ``previous``/``current`` are token ids (exact), False for serialised text
            (approximation: tokens spread evenly over characters).

    Returns:
        Tokens in ``[0, prompt_tokens]``.
    """
    if not previous or not current or prompt_tokens <= 0:
        return 0
    common = common_prefix_len(previous, current)
    cached = common if ids else prompt_tokens * common // len(current)
    return max(0, min(prompt_tokens, cached))
