"""The one HTTP layer under every bibliographic source: limiter, cache, guard, retry, classification.

A request goes: response cache (a hit returns at once; a frozen miss raises) → outage guard
(a source marked down raises `SourceOutageError`) → retry policy around one attempt, where one
attempt is: acquire from the cluster limiter → send with httpx → classify the answer into the
error tree (`clients/errors.py`) and report rate-limit news to the limiter. Definite answers
(2xx, 404) are cached with their fetch date; the outcome of the whole lookup goes to the guard.

Adapters never see httpx errors or status codes: they get text / JSON or a `ClientError`.
Secrets (API keys in headers or params, the polite-pool mailto) never enter cache keys, error
messages or logs: errors name the path, not the query string.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import httpx

from clients.errors import (
    AuthError,
    BadRequestError,
    ClientError,
    FatalError,
    ParseError,
    QuotaExhaustedError,
    RateLimitedError,
    TransientError,
)
from clients.limiter import Limiter
from clients.outage_guard import OutageGuard
from clients.rate_limit_headers import announced_rpm, pause_seconds, retry_after_seconds
from clients.response_cache import CachedResponse, ResponseCache, request_key
from clients.retry import RetryPolicy
from storage.redaction import register_secret

__all__ = [
    "REDACTOR",
    "HttpLayer",
    "HttpOptions",
    "HttpResponse",
    "USER_AGENT",
    "mailto_from_env",
    "parse_json",
]

log = logging.getLogger(__name__)

USER_AGENT = "scrutineer/0.1 (citation audit; https://github.com/scrutineer)"


def mailto_from_env() -> str | None:
    """The polite-pool contact address (`SCRUTINEER_MAILTO`, else `CROSSREF_MAILTO`)."""
    return os.environ.get("SCRUTINEER_MAILTO") or os.environ.get("CROSSREF_MAILTO") or None


@dataclass(frozen=True)
class HttpOptions:
    """Everything shared by the sources of one run; pass one to each adapter."""

    transport: httpx.AsyncBaseTransport | None = None
    """Injectable transport (None: httpx's default network transport)."""
    limiter: Limiter | None = None
    """The cluster limiter (`cluster.rate_limiter.LimiterClient`); None: no client-side limit."""
    cache: ResponseCache | None = None
    """Response cache; a frozen one makes the run network-free."""
    guard: OutageGuard | None = None
    """Outage guard; None: never mark a source down."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    """The retry policy."""
    timeout: float = 15.0
    """Seconds per attempt (connect, read, write, pool)."""
    mailto: str | None = field(default_factory=mailto_from_env)
    """Polite-pool address, sent as `mailto` (header and/or param, per source)."""


@dataclass(frozen=True)
class HttpResponse:
    """A definite answer, from the network or the cache."""

    status: int
    text: str
    content_type: str
    fetched_at: str
    from_cache: bool
    data: Any = None
    """The parsed body (2xx with a parser), else None."""


Parser = Callable[[str], Any]


def parse_json(text: str) -> Any:
    """JSON parser for `HttpLayer.get(parse=...)`; ValueError on a malformed body."""
    return json.loads(text)


def _parsed(text: str, parse: Parser | None, source: str, path: str) -> Any:
    if parse is None:
        return None
    try:
        return parse(text)
    except Exception as exc:  # any parser failure is a malformed body
        raise ParseError(f"{path}: unreadable body ({len(text)} chars: {type(exc).__name__})",
                         source=source) from exc  # fmt: skip


def classify_status(status: int, source: str, path: str, headers: httpx.Headers, text: str) -> ClientError:
    """The error for a non-2xx, non-404 answer (404 is handled as a definite answer)."""
    where = f"{path} -> HTTP {status}"
    if status == 429:
        lowered = text[:500].lower()
        if "quota" in lowered and ("exceed" in lowered or "exhaust" in lowered):
            return QuotaExhaustedError(where, source=source, status=status)
        return RateLimitedError(where, retry_after=retry_after_seconds(headers), source=source)
    if status >= 500:
        return TransientError(where, source=source, status=status)
    if status in (401, 403):
        return AuthError(where, source=source, status=status)
    if status == 402:
        return QuotaExhaustedError(where, source=source, status=status)
    if status in (408, 425):
        return TransientError(where, source=source, status=status)
    return BadRequestError(where, source=source, status=status)


class SecretRedactor(logging.Filter):
    """Masks registered secret values in records of httpx / httpcore (which log full URLs)."""

    LOGGERS = ("httpx", "httpcore.http11", "httpcore.http2", "httpcore.connection", "httpcore.proxy")

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def add(self, *values: str | None) -> None:
        register_secret(*values)  # and out of every stored or printed text (storage/redaction.py)
        new = {v for v in values if v and len(v) >= 4} - self.secrets
        if new:
            self.secrets |= new
            self.secrets |= {quote(v, safe="") for v in new}  # as it appears in a query string

    def filter(self, record: logging.LogRecord) -> bool:
        if self.secrets:
            message = record.getMessage()
            redacted = message
            for secret in self.secrets:
                redacted = redacted.replace(secret, "***")
            if redacted != message:
                record.msg, record.args = redacted, None
        return True


REDACTOR = SecretRedactor()
for _name in SecretRedactor.LOGGERS:
    logging.getLogger(_name).addFilter(REDACTOR)


class HttpLayer:
    """HTTP for one source.

    Args:
        source: source name; also the limiter key (plus a key fingerprint when keyed).
        base_url: the API root (override for 127.0.0.1 tests and mirrors).
        options: shared transport / limiter / cache / guard / retry / timeout.
        headers: extra request headers (secrets allowed: they are never keyed or logged).
        secret_params: query parameters sent but never keyed or logged (e.g. `api_key`).
        api_key: when given, the limiter key becomes `source:key=<sha256 prefix>`.
        default_rpm: the source's polite default, configured on the limiter key before the first
            request unless the run already configured that key.
    """

    def __init__(self, source: str, base_url: str, options: HttpOptions | None = None, *,
                 headers: dict[str, str] | None = None, secret_params: dict[str, str] | None = None,
                 api_key: str | None = None, default_rpm: float | None = None) -> None:  # fmt: skip
        self.source = source
        self.base_url = base_url.rstrip("/")
        self.options = options or HttpOptions()
        self.headers = {"User-Agent": USER_AGENT, **(headers or {})}
        self.secret_params = {k: v for k, v in (secret_params or {}).items() if v}
        REDACTOR.add(api_key, *self.secret_params.values())
        fingerprint = hashlib.sha256(api_key.encode()).hexdigest()[:8] if api_key else None
        self.limiter_key = f"{source}:key={fingerprint}" if fingerprint else source
        self.network_calls = 0
        self.default_rpm = default_rpm
        self._defaults_sent = False
        self._client: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Picklable (sources travel to Ray workers): the connection pool is rebuilt there."""
        return {**self.__dict__, "_client": None, "_loop": None}

    def _http(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._client is not None and self._loop is not loop:
            self._client = None  # made under another event loop (e.g. a second asyncio.run): unusable here
        if self._client is None:
            self._loop = loop
            self._client = httpx.AsyncClient(
                base_url=self.base_url, transport=self.options.transport, headers=self.headers,
                timeout=self.options.timeout, follow_redirects=True,
            )  # fmt: skip
        return self._client

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def get(self, path: str, params: dict[str, Any] | None = None, *,
                  accept: str | None = None, parse: Parser | None = None) -> HttpResponse:  # fmt: skip
        """GET `path`: a 2xx or 404 `HttpResponse`, or a `ClientError`.

        `parse` reads a 2xx body into `HttpResponse.data`; a body it cannot read is a
        `ParseError` (never cached, counted as a failure by the guard).
        """
        params = {k: v for k, v in (params or {}).items() if v is not None}
        cache = self.options.cache
        digest, readable = request_key(self.source, "GET", path, params, accept)
        if cache is not None:
            hit = cache.get(self.source, digest, readable)
            if hit is not None:
                data = _parsed(hit.text, parse, self.source, path) if hit.status < 300 else None
                return HttpResponse(hit.status, hit.text, hit.content_type, hit.fetched_at, True, data)
        guard = self.options.guard
        if guard is not None:
            guard.check(self.source)
        try:
            response = await self.options.retry.call(self._attempt, path, params, accept, parse)
        except (TransientError, ParseError) as exc:
            if guard is not None:
                guard.record(self.source, ok=False, error=exc.reason)
            raise
        except FatalError:
            if guard is not None:
                guard.record(self.source, ok=True)
            raise
        if guard is not None:
            guard.record(self.source, ok=True)
        if cache is not None:
            cache.put(CachedResponse(self.source, readable, response.status, response.content_type,
                                     response.text, response.fetched_at), digest)  # fmt: skip
        return response

    async def _attempt(self, path: str, params: dict[str, Any], accept: str | None,
                       parse: Parser | None) -> HttpResponse:  # fmt: skip
        limiter = self.options.limiter
        if limiter is not None:
            if self.default_rpm and not self._defaults_sent:
                await limiter.configure(self.limiter_key, rpm=self.default_rpm, if_unset=True)
                self._defaults_sent = True
            await limiter.acquire(self.limiter_key)
        headers = {"Accept": accept} if accept else {}
        self.network_calls += 1
        try:
            raw = await self._http().get(path, params={**params, **self.secret_params}, headers=headers)
        except httpx.TimeoutException as exc:
            raise TransientError(f"{path}: timeout ({type(exc).__name__})", source=self.source) from exc
        except httpx.TooManyRedirects as exc:
            raise BadRequestError(f"{path}: redirect loop", source=self.source) from exc
        except httpx.HTTPError as exc:
            # connection refused/reset, peer closed before Content-Length was met, bad encoding, ...
            raise TransientError(f"{path}: {type(exc).__name__}", source=self.source) from exc
        status = raw.status_code
        if limiter is not None:
            await self._report(limiter, raw)
        if 200 <= status < 300 or status == 404:
            data = _parsed(raw.text, parse, self.source, path) if status < 300 else None
            return HttpResponse(status, raw.text, raw.headers.get("content-type", ""),
                                ResponseCache.now(), False, data)  # fmt: skip
        raise classify_status(status, self.source, path, raw.headers, raw.text)

    async def _report(self, limiter: Limiter, raw: httpx.Response) -> None:
        announced = announced_rpm(raw.headers)
        if raw.status_code == 429:
            await limiter.report(self.limiter_key, rate_limited=True,
                                 retry_after=retry_after_seconds(raw.headers), announced_rpm=announced)  # fmt: skip
            return
        pause = pause_seconds(raw.headers)
        if pause is not None or announced is not None:
            await limiter.report(self.limiter_key, rate_limited=False, retry_after=pause,
                                 announced_rpm=announced)  # fmt: skip
