"""The error tree and the one retry policy: what is retried, how long it waits, what surfaces."""

from __future__ import annotations

import asyncio
import random

import pytest

from clients.errors import (
    AuthError,
    BadRequestError,
    CacheMissError,
    ClientError,
    FatalError,
    NotFoundError,
    ParseError,
    QuotaExhaustedError,
    RateLimitedError,
    SourceOutageError,
    TransientError,
)
from clients.retry import RetryPolicy, backoff_seconds


def test_tree_shape():
    assert issubclass(RateLimitedError, TransientError)
    for cls in (AuthError, QuotaExhaustedError, BadRequestError, NotFoundError):
        assert issubclass(cls, FatalError) and not issubclass(cls, TransientError)
    for cls in (SourceOutageError, CacheMissError, ParseError, FatalError, TransientError):
        assert issubclass(cls, ClientError)
    for cls in (SourceOutageError, CacheMissError, ParseError):
        assert not issubclass(cls, (TransientError, FatalError))
    err = RateLimitedError("slow down", retry_after=3.0, source="crossref")
    assert err.retry_after == 3.0 and err.status == 429
    assert err.reason == "RateLimitedError: crossref: slow down (HTTP 429)"


class Flaky:
    def __init__(self, errors: list[ClientError], result: str = "ok"):
        self.errors = list(errors)
        self.calls = 0
        self.result = result

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return self.result


def run(coro):
    return asyncio.run(coro)


def test_transient_retried_until_success():
    fn = Flaky([TransientError("500"), TransientError("timeout")])
    assert run(RetryPolicy(max_attempts=5, base_wait=0.01).call(fn)) == "ok"
    assert fn.calls == 3


@pytest.mark.parametrize("error", [
    NotFoundError("404"), AuthError("401"), QuotaExhaustedError("quota"), BadRequestError("400"),
    SourceOutageError("down"), CacheMissError("miss"), ParseError("bad json"),
])  # fmt: skip
def test_non_transient_never_retried(error):
    fn = Flaky([error])
    with pytest.raises(type(error)):
        run(RetryPolicy(max_attempts=5, base_wait=0.01).call(fn))
    assert fn.calls == 1


def test_gives_up_after_max_attempts_with_last_error():
    errors = [TransientError(f"e{i}") for i in range(10)]
    fn = Flaky(errors)
    with pytest.raises(TransientError, match="e2"):
        run(RetryPolicy(max_attempts=3, base_wait=0.001).call(fn))
    assert fn.calls == 3


def test_retry_after_honoured_and_capped():
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    async def go(policy: RetryPolicy, retry_after: float) -> int:
        fn = Flaky([RateLimitedError("429", retry_after=retry_after)])
        await policy.retrying(sleep=sleep)(fn)
        return fn.calls

    assert run(go(RetryPolicy(base_wait=0.01, retry_after_cap=60), 2.0)) == 2
    assert 2.0 <= slept[-1] <= 2.2  # the server's wait, plus at most 10% jitter
    run(go(RetryPolicy(base_wait=0.01, retry_after_cap=5), 3600.0))
    assert 5.0 <= slept[-1] <= 5.5  # an hour-long Retry-After is cut to the cap


def test_exponential_full_jitter_bounds():
    rng = random.Random(0)
    for attempt, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (8, 30.0)]:
        waits = [backoff_seconds(attempt, TransientError("x"), base_wait=0.5, max_wait=30,
                                 retry_after_cap=60, rng=rng) for _ in range(200)]  # fmt: skip
        assert all(0 <= w <= ceiling for w in waits)
        assert max(waits) > 0.8 * ceiling  # jitter spans the interval, not a fixed value
