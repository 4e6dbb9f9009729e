"""Reading what a server says about its rate limits: Retry-After, reset times, announced limits.

Understood headers (case-insensitive):

* `Retry-After`: seconds, or an HTTP date (RFC 9110 §10.2.3).
* `X-RateLimit-Remaining` / `RateLimit-Remaining` at 0 with `X-RateLimit-Reset` /
  `RateLimit-Reset`: a reset given as seconds from now, or as a Unix time (values > 10^9).
* Crossref's `X-Rate-Limit-Limit` + `X-Rate-Limit-Interval` (e.g. 50 per `1s`): an announced
  limit, converted to requests per minute.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from email.utils import parsedate_to_datetime

__all__ = ["announced_rpm", "pause_seconds", "retry_after_seconds"]


def _get(headers: Mapping[str, str], *names: str) -> str | None:
    lower = {k.lower(): v for k, v in headers.items()}
    for name in names:
        value = lower.get(name.lower())
        if value is not None and str(value).strip():
            return str(value).strip()
    return None


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds the `Retry-After` header asks for, or None when absent or unreadable."""
    value = _get(headers, "retry-after")
    if value is None:
        return None
    now = time.time() if now is None else now
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - now)
    except (TypeError, ValueError, IndexError):
        return None


def pause_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds until the quota resets when the server says none is left, else None."""
    remaining = _get(headers, "x-ratelimit-remaining", "ratelimit-remaining", "x-rate-limit-remaining")
    reset = _get(headers, "x-ratelimit-reset", "ratelimit-reset", "x-rate-limit-reset")
    if remaining is None or reset is None:
        return None
    try:
        if float(remaining) > 0:
            return None
        value = float(reset)
    except ValueError:
        return None
    now = time.time() if now is None else now
    return max(0.0, value - now) if value > 1e9 else max(0.0, value)


_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def announced_rpm(headers: Mapping[str, str]) -> float | None:
    """Requests per minute a server announces (limit over an explicit interval), else None."""
    limit = _get(headers, "x-rate-limit-limit")
    interval = _get(headers, "x-rate-limit-interval")
    if limit is None or interval is None:
        return None
    match = _INTERVAL.match(interval)
    try:
        count = float(limit)
    except ValueError:
        return None
    if match is None or count <= 0:
        return None
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
    return count * 60.0 / seconds if seconds > 0 else None
