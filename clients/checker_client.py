"""Client of the mechanical-checker service (checkers/service.py), over HTTP or a Serve handle.

Verifiers and adjudication call this, never the checkers room directly, so a run can point at a
shared service. Two transports with one interface (`CheckerClient` protocol):

* `HttpCheckerClient(base_url)` -- JSON over HTTP to the Serve proxy (127.0.0.1 by default);
  an injectable httpx transport serves tests. Failures map onto the clients error tree:
  connection errors, timeouts, 408/425 and 5xx -> `TransientError`; 429 (the service's
  `max_queue_wait_s`) -> `RateLimitedError`. Both are retried under the one retry policy
  (`clients/retry.py`: backoff, a 429 after the `Retry-After` it names, capped at
  `retry_after_cap`) up to `max_attempts` in all, then raised: an outage (`clients.errors.is_outage`),
  never a verdict -- the service is a provider like the others, and a caller leaves the item
  UNCERTAIN-by-outage naming `OUTAGE_SOURCE`; other 4xx -> `BadRequestError` carrying
  the service's message (e.g. the 413 naming `max_checks_per_request`); an
  unreadable body -> `ParseError`. A check that ran and could not decide is not an error: it
  is a `CheckReply` with outcome `inconclusive` / `error` / `unavailable`.
* `HandleCheckerClient(app_name)` -- a Ray Serve deployment handle, for code running in Ray
  tasks and actors on the same cluster.

`CheckReply` mirrors `checkers.result.CheckResult` field for field (this room does not import
the checkers room).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from clients.errors import BadRequestError, ParseError, RateLimitedError, TransientError
from clients.rate_limit_headers import retry_after_seconds
from clients.retry import RetryPolicy

__all__ = ["OUTAGE_SOURCE", "CheckReply", "CheckRequest", "CheckerClient", "HandleCheckerClient", "HttpCheckerClient"]

OUTAGE_SOURCE = "checkers"
"""How an outage answer names the checker service in `detail["outage_sources"]` (storage/outages.py)."""

OUTCOMES = ("confirmed", "refuted", "inconclusive", "error", "skipped", "unavailable")


@dataclass(frozen=True)
class CheckRequest:
    """One check to run."""

    kind: str
    """Check kind, e.g. `math.equality`, `units.dimensions`, `numerics.ratio` (GET /kinds lists them)."""
    payload: dict[str, Any]
    """The kind's input fields (see `python jobs/check.py --help`)."""

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "payload": self.payload}


@dataclass(frozen=True)
class CheckReply:
    """What the service concluded for one check."""

    kind: str
    outcome: str
    """confirmed | refuted | inconclusive | error | skipped | unavailable."""
    reason: str = ""
    engine: str = ""
    """sympy | wolframscript | pint | python."""
    evidence: dict[str, Any] = field(default_factory=dict)
    severity: str | None = None
    elapsed_s: float | None = None

    @classmethod
    def from_json(cls, data: Any, source: str) -> CheckReply:
        if not isinstance(data, dict) or data.get("outcome") not in OUTCOMES:
            raise ParseError("checker reply is not a check result", source=source)
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})


class CheckerClient(Protocol):
    async def check(self, request: CheckRequest) -> CheckReply: ...

    async def check_many(self, requests: list[CheckRequest]) -> list[CheckReply]: ...


class HttpCheckerClient:
    """JSON over HTTP to the Serve app (`base_url` includes the route prefix)."""

    name = "checkers"

    def __init__(self, base_url: str = "http://127.0.0.1:8000/checkers", timeout_s: float = 120.0,
                 transport: httpx.AsyncBaseTransport | None = None, max_per_request: int = 64,
                 max_attempts: int = 4, retry_after_cap: float = 60.0,
                 retry: RetryPolicy | None = None) -> None:  # fmt: skip
        self.base_url = base_url.rstrip("/")
        self.retry = retry or RetryPolicy(max_attempts=max(1, max_attempts), base_wait=1.0, max_wait=retry_after_cap,
                                          retry_after_cap=retry_after_cap)  # fmt: skip
        """Attempts per POST (`max_attempts`) and the longest wait honoured from the service's
        Retry-After (`retry_after_cap`: a hostile value is capped); transient failures and 429s."""
        self.max_attempts = self.retry.max_attempts
        self.retry_after_cap = self.retry.retry_after_cap
        self.timeout_s = timeout_s
        self.transport = transport
        self.max_per_request = max(1, max_per_request)
        """Longest list sent in one POST (the service's `max_checks_per_request`, default 64)."""

    async def _send(self, method: str, path: str, body: Any = None) -> Any:
        """One exchange under the one retry policy; the last error raised (an outage if transient)."""
        return await self.retry.call(self._send_once, method, path, body)

    async def _send_once(self, method: str, path: str, body: Any = None) -> Any:
        try:
            async with httpx.AsyncClient(timeout=self.timeout_s, transport=self.transport) as http:
                response = await http.request(method, self.base_url + path, json=body)
        except httpx.TimeoutException as exc:
            raise TransientError(
                f"timeout after {self.timeout_s}s: {type(exc).__name__}", source=self.name
            ) from None
        except httpx.TransportError as exc:
            raise TransientError(
                f"cannot reach the checker service: {type(exc).__name__}", source=self.name
            ) from None
        if response.status_code >= 500 or response.status_code in (408, 425):
            raise TransientError("checker service failed", source=self.name, status=response.status_code)
        if response.status_code == 429:
            raise RateLimitedError(f"checker service is busy: {_service_error(response)}", source=self.name,
                                   retry_after=retry_after_seconds(response.headers))  # fmt: skip
        if response.status_code >= 400:
            raise BadRequestError(f"checker service refused the request: {_service_error(response)}",
                                  source=self.name, status=response.status_code)  # fmt: skip
        try:
            return response.json()
        except ValueError:
            raise ParseError(
                "checker service answered with a body that is not JSON", source=self.name
            ) from None

    async def check(self, request: CheckRequest) -> CheckReply:
        return CheckReply.from_json(await self._send("POST", "/", request.to_json()), self.name)

    async def check_many(self, requests: list[CheckRequest]) -> list[CheckReply]:
        """Results in order; a long list goes in POSTs of at most `max_per_request` checks."""
        replies: list[CheckReply] = []
        for start in range(0, len(requests), self.max_per_request):
            chunk = requests[start : start + self.max_per_request]
            data = await self._send("POST", "/", [r.to_json() for r in chunk])
            if not isinstance(data, list) or len(data) != len(chunk):
                raise ParseError("checker service returned a different number of results", source=self.name)
            replies.extend(CheckReply.from_json(item, self.name) for item in data)
        return replies

    async def kinds(self) -> dict[str, str]:
        return await self._send("GET", "/kinds")


def _service_error(response: httpx.Response) -> str:
    """The service's one-line `error` (e.g. which limit a 413 hit), or the HTTP status."""
    try:
        message = response.json().get("error")
    except (ValueError, AttributeError):
        message = None
    return str(message)[:300] if message else f"HTTP {response.status_code}"


class HandleCheckerClient:
    """Through a Ray Serve deployment handle (inside Ray tasks and actors)."""

    name = "checkers"

    def __init__(self, app_name: str = "checkers") -> None:
        from ray import serve

        self.handle = serve.get_app_handle(app_name)

    async def check(self, request: CheckRequest) -> CheckReply:
        return CheckReply.from_json(await self.handle.check.remote(request.to_json()), self.name)

    async def check_many(self, requests: list[CheckRequest]) -> list[CheckReply]:
        data = await self.handle.check_many.remote([r.to_json() for r in requests])
        return [CheckReply.from_json(item, self.name) for item in data]

    def check_blocking(self, request: CheckRequest) -> CheckReply:
        """For synchronous code (e.g. a plain Ray task): waits for the reply."""
        return CheckReply.from_json(self.handle.check.remote(request.to_json()).result(), self.name)
