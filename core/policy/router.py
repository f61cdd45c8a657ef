"""Routing model calls: a fallback endpoint for when the primary fails or is over quota.

    primary.complete ──ok──────────────────────────────> response
         │ EndpointFailed (retry budget spent, or HTTP 402 / 429 over quota)
         └──> fallback.complete (for this call and every later one of the run)

Any other ``ModelUnavailable`` (HTTP 400, 401, 404: the request or the settings are wrong) is
raised as it is: it would fail on any endpoint. Once the primary has failed the run stays on the
fallback: going back and forth would cost a cold prefix cache on each switch, and a primary that
just spent its retry budget would make every step wait that long again. A resumed run builds its
policy anew and tries the primary first. The response's ``model`` names the endpoint's model, so
the trajectory shows which one answered each step.
"""

from __future__ import annotations

import logging
from typing import Any

from core.config import Settings
from core.policy.base import PolicyResponse
from core.policy.openai_server import EndpointFailed, OpenAIServerPolicy
from core.policy.retry import RetryConfig

log = logging.getLogger(__name__)


class FallbackPolicy:
    """A primary policy with a fallback; see the module docstring.

    Args:
        primary: the preferred endpoint.
        fallback: the endpoint used once the primary raises ``EndpointFailed``.

    Attributes:
        switched: why the run moved to the fallback (empty while on the primary).
    """

    def __init__(self, primary: OpenAIServerPolicy, fallback: OpenAIServerPolicy) -> None:
        self.primary = primary
        self.fallback = fallback
        self.name = f"{primary.name} (fallback {fallback.name})"
        self.switched = ""
        self.vision = primary.vision  # the loop sends images when the primary sees them; a text-only fallback drops them

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> PolicyResponse:
        """Ask the primary, or the fallback once the primary has failed; see ``Policy.complete``.

        Raises:
            ModelUnavailable: the fallback failed too (its message says both failures), or the
                request itself was rejected.
        """
        if not self.switched:
            try:
                return self.primary.complete(messages, tools)
            except EndpointFailed as exc:
                self.switched = str(exc)
                log.warning("primary model endpoint failed (%s); using the fallback %s", exc, self.fallback.base_url)
        try:
            return self.fallback.complete(messages, tools)
        except EndpointFailed as exc:
            raise EndpointFailed(f"the fallback endpoint failed too: {exc} (the primary had failed: {self.switched})") from None

    def close(self) -> None:
        """Close both endpoints' connection pools."""
        self.primary.close()
        self.fallback.close()


def with_fallback(primary: OpenAIServerPolicy, settings: Settings) -> OpenAIServerPolicy | FallbackPolicy:
    """Wrap ``primary`` in a ``FallbackPolicy`` when ``settings.fallback_base_url`` is set.

    The fallback takes ``fallback_model`` (default: the primary's model), ``fallback_api_key``
    (default: ``api_key``), and the primary's sampling, timeout, retry budget and ``vision``.
    """
    if not settings.fallback_base_url:
        return primary
    fallback = OpenAIServerPolicy(
        settings.fallback_base_url, settings.fallback_model or primary.model,
        api_key=settings.fallback_api_key or settings.api_key,
        temperature=primary.temperature, max_tokens=primary.max_tokens, timeout_s=primary.timeout_s, vision=primary.vision,
        retry=RetryConfig(max_attempts=settings.retry_max_attempts, max_total_s=settings.retry_max_total_s),
    )
    return FallbackPolicy(primary, fallback)
