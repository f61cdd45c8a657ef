"""Retrying a model call: the budget, the backoff delay and the server's ``Retry-After``.

A failed call that may succeed later (timeout, connection error, HTTP 408, 409, 429 or 5xx, a
response body that is not a usable completion) is retried after a delay, within a budget of
attempts and of seconds; when the budget is spent the caller raises ``ModelUnavailable`` and the
run stops resumably.

The delay is "full jitter" exponential backoff, from Marc Brooker, "Exponential Backoff And
Jitter", AWS Architecture Blog, 2015
(https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/)::

    sleep = random_between(0, min(cap, base * 2 ** retry))

Spreading each wait over the whole interval, rather than adding a little noise to a fixed
wait, keeps many clients that failed together from retrying together. A delay the server asks
for (``Retry-After``, RFC 9110 section 10.2.3, in seconds or as an HTTP date; or the
``retry-after-ms`` header some servers send) is used as given instead.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator


class RetryConfig(BaseModel):
    """How hard to retry one model call before giving up.

    Attributes:
        max_attempts: attempts in all, the first included (1: never retry).
        max_total_s: no retry starts once this many seconds have passed since the first attempt
            began, nor when its wait would end after that; an attempt already running is bounded
            by the call timeout only, so a slow but healthy server is never cut off.
        base_delay_s: the backoff interval before the first retry; it doubles each retry.
        max_delay_s: the largest backoff interval (the cap).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_attempts: int = Field(6, ge=1, le=1000, description="attempts per model call, the first included")
    max_total_s: float = Field(120.0, gt=0, description="seconds after which no retry starts")
    base_delay_s: float = Field(1.0, gt=0, description="backoff interval before the first retry (doubles each retry)")
    max_delay_s: float = Field(30.0, gt=0, description="largest backoff interval")

    @model_validator(mode="after")
    def _cap_not_below_base(self) -> RetryConfig:
        if self.max_delay_s < self.base_delay_s:
            raise ValueError(f"max_delay_s ({self.max_delay_s}) must not be below base_delay_s ({self.base_delay_s})")
        return self


def backoff_delay(retry: int, config: RetryConfig, rng: random.Random | None = None) -> float:
    """The wait before retry number ``retry`` (0 for the first retry): full jitter, see the module doc."""
    ceiling = min(config.max_delay_s, config.base_delay_s * 2.0 ** min(retry, 64))
    return (rng or random).uniform(0.0, ceiling)


def retry_after_s(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """The wait a response asks for, in seconds, or None when it asks for none (or garbles it).

    Reads ``retry-after-ms`` (milliseconds), then ``Retry-After`` as seconds or as an HTTP date.
    A date in the past gives 0. Negative, infinite and unparsable values count as not given.
    """
    if not headers:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue
        return seconds if math.isfinite(seconds) and seconds >= 0 else None
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None or when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))
