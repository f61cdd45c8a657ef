"""Is a model server there? One ``GET {base_url}/models`` with a short timeout, before a run is made.

``agent run`` and ``agent eval`` call ``probe_model_server`` before they copy a repository, build
its environment or run its tests, so a dead or wrong server is reported in a second, with the URL,
what failed and what to do, instead of after the whole set-up. Every OpenAI-compatible server
Horizon names (vLLM, SGLang, llama.cpp's server, Ollama) answers ``GET /v1/models`` with a JSON
object holding a ``data`` list; a 404, 405 or 501 (a server without that route) passes, and
anything else (nothing listening, a timeout, another HTTP error, a 2xx body that is not that JSON)
is a ``ModelServerUnreachable``, a ``UserError`` (exit code 2).
"""

from __future__ import annotations

import json
from typing import Any

from core.errors import UserError

#: seconds the probe waits for the server (a loaded local server still answers /models at once)
PROBE_TIMEOUT_S = 5.0

#: statuses that say a server is there but has no ``GET /models`` (not found, method not allowed, not implemented)
NO_SUCH_ROUTE = frozenset({404, 405, 501})

_WHAT_TO_DO = ("start an OpenAI-compatible server there (vLLM: vllm serve MODEL; SGLang: python -m sglang.launch_server; "
               "llama.cpp: llama-server -m MODEL.gguf; or agent serve MODEL), fix the URL (--base-url, HORIZON_BASE_URL or base_url in "
               "a config file: the server's root, usually ending in /v1), or leave it out to use the embedded model")


class ModelServerUnreachable(UserError):
    """The model server did not answer ``GET /models`` as an OpenAI-compatible server does.

    Attributes:
        url: the URL asked; what: what went wrong (the message adds what to do).
    """

    def __init__(self, url: str, what: str, source: str | None = None) -> None:
        where = f" (its URL is set by {source})" if source and source not in ("--base-url", "unknown") else ""
        super().__init__(f"the model server{where} did not answer GET {url}: {what}. Nothing was set up. To go on: {_WHAT_TO_DO}")
        self.url = url
        self.what = what


def probe_model_server(base_url: str, *, api_key: str | None = None, timeout_s: float = PROBE_TIMEOUT_S, source: str | None = None) -> list[str]:
    """Ask ``GET {base_url}/models`` once, without retries.

    Args:
        base_url: the server's OpenAI-compatible root, e.g. ``http://localhost:8000/v1``.
        api_key: sent as the bearer token (local servers accept any value).
        timeout_s: seconds to wait for the connection and the answer.
        source: where ``base_url`` was set, for the message (``Settings.source_of``).

    Returns:
        The model ids the server lists (empty when it lists none or has no such route: 404, 405, 501).

    Raises:
        ModelServerUnreachable: nothing answered, it timed out, it answered an HTTP error, or its
            body is not an OpenAI model list; the message names the URL, what failed and what to do.
    """
    import openai

    url = base_url.rstrip("/") + "/models"
    client = openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)
    try:
        raw = client.models.with_raw_response.list()
        body = raw.http_response.content
    except openai.APITimeoutError:
        raise ModelServerUnreachable(url, f"no answer within {timeout_s:g} s", source) from None
    except openai.APIConnectionError as exc:
        cause = exc.__cause__
        reason = f"{type(cause).__name__}: {cause}" if cause is not None else str(exc)
        if type(cause).__name__ == "ConnectError":
            reason = f"nothing is listening there ({cause})"
        raise ModelServerUnreachable(url, f"cannot connect: {reason}", source) from None
    except openai.APIStatusError as exc:
        if exc.status_code in NO_SUCH_ROUTE:
            return []  # a server is there, without the route (some proxies); a wrong path shows at the first call
        hint = " (check HORIZON_API_KEY or api_key)" if exc.status_code in (401, 403) else ""
        raise ModelServerUnreachable(url, f"it answered HTTP {exc.status_code}{hint}: {_short(exc.response.content)}", source) from None
    finally:
        client.close()
    try:
        page: Any = json.loads(body)
    except (ValueError, RecursionError):
        raise ModelServerUnreachable(url, f"its answer is not JSON: {_short(body)}", source) from None
    if not isinstance(page, dict) or not isinstance(page.get("data"), list):
        raise ModelServerUnreachable(url, f"its answer is not an OpenAI model list (a JSON object with a 'data' list): {_short(body)}", source)
    return [str(m.get("id")) for m in page["data"] if isinstance(m, dict) and m.get("id")]


def _short(body: bytes | str | None, limit: int = 160) -> str:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    text = " ".join(text.split())
    return repr(text if len(text) <= limit else text[:limit] + "...") if text else "an empty body"
