"""The one error tree for everything in `clients/` (bibliographic sources and the LLM gateway).

Adapters translate whatever their transport raises into exactly one of these types at the
boundary (as httpx's `map_httpcore_exceptions` does); one layer (`clients/retry.py`) decides what
to retry from the type alone. No adapter sleeps or retries on its own.

Our exception hierarchy:

* ClientError                    -- anything a client could not answer
  + TransientError               -- may succeed if tried again: timeouts, 5xx, connection resets,
  |                                 truncated bodies (peer closed before Content-Length)
  |  + RateLimitedError          -- 429 or a rate-limit header said stop; carries `retry_after`
  + SourceOutageError            -- the outage guard has marked the source down; never a verdict
  + FatalError                   -- a definite answer; retrying gives the same answer
  |  + AuthError                 -- 401 / 403: missing or wrong key
  |  + QuotaExhaustedError       -- plan or budget used up (402, or a 429 that says "quota")
  |  + BadRequestError           -- 400 / 405 / 422: our request is malformed
  |  + NotFoundError             -- 404: the thing asked for does not exist (a real "no")
  + CacheMissError               -- pinned to a frozen cache and the request is not in it
  + ParseError                   -- a complete body we cannot read (malformed JSON / XML)

A `NotFoundError` (or a source's empty result) is the only "not there" evidence a verifier may
use; every other type means "no evidence", so an outage is never read as a fabricated citation.

Which failures are *outages* is decided here, once (`is_outage`): a `TransientError` that
survived the retry policy (5xx, timeouts, connection errors, truncated transfers, a 429 still
refused after every retry) and a `SourceOutageError`. An outage leaves the item UNCERTAIN with
`detail["outage_sources"]` naming the source or provider; the run is incomplete and a resumed run
retries exactly those items. Every other failure (`FatalError`: bad request, auth, quota, content
filter; `CacheMissError`; `ParseError`) is a definite answer about this request: an errored
output with its reason, never retried by a resume and never a verdict.
"""

from __future__ import annotations

from storage.redaction import redact_text

__all__ = [
    "AuthError",
    "BadRequestError",
    "CacheMissError",
    "ClientError",
    "FatalError",
    "NotFoundError",
    "ParseError",
    "QuotaExhaustedError",
    "RateLimitedError",
    "SourceOutageError",
    "TransientError",
    "is_outage",
]


class ClientError(Exception):
    """Base of every client error.

    Args:
        message: human-readable reason. Redacted here (`storage.redaction.redact_text`: registered
            keys, URL credentials, bearer tokens, password-like pairs), so a key a provider echoed
            in its error body goes nowhere this error goes (outputs, votes, logs, stdout).
        source: the source or provider name (`crossref`, `openalex`, `openai/gpt-4o`, ...).
        status: the HTTP status, when there was a response.
    """

    def __init__(self, message: str, *, source: str | None = None, status: int | None = None) -> None:
        message = redact_text(message) or message
        super().__init__(message)
        self.message = message
        self.source = source
        self.status = status

    @property
    def reason(self) -> str:
        """Short reason string for an `Output.error` / UNCERTAIN explanation."""
        where = f"{self.source}: " if self.source else ""
        code = f" (HTTP {self.status})" if self.status is not None else ""
        return f"{type(self).__name__}: {where}{self.message}{code}"


class TransientError(ClientError):
    """Timeouts, 5xx, connection errors, truncated transfers: worth retrying."""


class RateLimitedError(TransientError):
    """Told to slow down (429, or a rate-limit header at zero).

    Args:
        retry_after: seconds the server asked us to wait, if it said (uncapped; the retry
            policy applies its cap).
    """

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        source: str | None = None,
        status: int | None = 429,
    ) -> None:
        super().__init__(message, source=source, status=status)
        self.retry_after = retry_after


class SourceOutageError(ClientError):
    """The outage guard marked this source unavailable: the lookup was not attempted."""


class FatalError(ClientError):
    """A definite answer: retrying the same request cannot change it."""


class AuthError(FatalError):
    """Missing, wrong or revoked credentials (401 / 403)."""


class QuotaExhaustedError(FatalError):
    """The plan, credit or budget is used up; waiting a few seconds will not help."""


class BadRequestError(FatalError):
    """The request itself is wrong (400 / 405 / 422 / context too long ...)."""


class NotFoundError(FatalError):
    """The requested record does not exist at the source (404): real negative evidence."""


class CacheMissError(ClientError):
    """Pinned to a frozen cache and the request is not in it; no network call was made."""


class ParseError(ClientError):
    """The body arrived whole but cannot be read as the format the API promises."""


def is_outage(exc: BaseException) -> bool:
    """True when `exc` (as it reached the caller, after the retry policy) means the source or
    provider was unavailable, not that it answered: the item must be retried, never scored."""
    return isinstance(exc, (TransientError, SourceOutageError))
