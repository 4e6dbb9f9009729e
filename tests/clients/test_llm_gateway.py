"""The gateway against a real OpenAI-compatible server on 127.0.0.1, through litellm."""

from __future__ import annotations

import asyncio
import time

import pytest

from clients.errors import (
    AuthError,
    BadRequestError,
    CacheMissError,
    QuotaExhaustedError,
    RateLimitedError,
    TransientError,
)
from clients.llm_budget import BudgetClient, BudgetExhausted
from clients.llm_gateway import LLMGateway, LLMServices
from clients.llm_litellm import classify_litellm_error
from clients.retry import RetryPolicy
from cluster.rate_limiter import LimiterClient
from tests.helpers.replay_server import replay_server, server_stats

pytestmark = pytest.mark.integration  # a replay server subprocess

ANSWER = '{"label": "VALID", "confidence": 0.9}'
MSG = [{"role": "user", "content": "check this"}]
FAST = RetryPolicy(max_attempts=3, base_wait=0.01, max_wait=0.05, retry_after_cap=0.2)


def gateway(url: str, tmp_path=None, **services) -> LLMGateway:
    services.setdefault("retry", FAST)
    return LLMGateway("openai/gpt-4o-mini", LLMServices(**services), api_base=f"{url}/v1",
                      cache_dir=str(tmp_path / "cache") if tmp_path else None)


def test_transient_500_is_retried_then_cached_with_provenance(tmp_path):
    with replay_server("--fault-schedule", "500", "--default-content", ANSWER, "--model-id", "gpt-4o-mini-2024-07-18") as url:
        gw = gateway(url, tmp_path)
        first = asyncio.run(gw.complete(MSG, {"temperature": 0.0, "seed": 42}))
        assert first.text == ANSWER and not first.cached and first.attempts == 2
        assert first.model_id == "gpt-4o-mini-2024-07-18"
        assert first.tokens_in > 0 and first.tokens_out > 0
        assert first.cost_usd == pytest.approx(first.tokens_in * 0.15e-6 + first.tokens_out * 0.6e-6)
        second = asyncio.run(gateway(url, tmp_path).complete(MSG, {"temperature": 0.0, "seed": 42}))
        assert second.cached and second.text == ANSWER and second.cost_usd == first.cost_usd
        assert server_stats(url)["requests"] == 2  # the cached answer made no call


def test_429_retry_after_is_capped_and_reported_to_the_limiter():
    limiter = LimiterClient("gw-test-429", local=True)
    with replay_server("--fault-schedule", "429", "--retry-after", "3600", "--default-content", ANSWER) as url:
        gw = gateway(url, limiter=limiter)
        started = time.monotonic()
        response = asyncio.run(gw.complete(MSG))
        assert time.monotonic() - started < 5  # Retry-After 3600 s capped at 0.2 s
        assert response.attempts == 2 and gw.stats.rate_limited == 1
        snapshot = asyncio.run(limiter.snapshot(gw.key))
        assert snapshot["rate_limited_reports"] == 1 and snapshot["reservations"] == 2


def test_quota_is_fatal_and_not_retried():
    with replay_server("--fault-schedule", "quota,quota,quota", "--default-content", ANSWER) as url:
        with pytest.raises(QuotaExhaustedError):
            asyncio.run(gateway(url).complete(MSG))
        assert server_stats(url)["requests"] == 1


def test_timeout_is_transient_and_bounded():
    with replay_server("--fault-rate", "timeout=1.0", "--timeout-delay", "5", "--default-content", ANSWER) as url:
        gw = gateway(url, retry=RetryPolicy(max_attempts=2, base_wait=0.01))
        gw.services.timeout_s = 0.5
        started = time.monotonic()
        with pytest.raises(TransientError):
            asyncio.run(gw.complete(MSG))
        assert time.monotonic() - started < 4
        assert gw.stats.network_calls == 2


def test_replay_only_answers_from_the_cache_and_never_calls(tmp_path):
    with replay_server("--default-content", ANSWER) as url:
        asyncio.run(gateway(url, tmp_path).complete(MSG))
        pinned = gateway(url, tmp_path, replay_only=True)
        assert asyncio.run(pinned.complete(MSG)).cached
        with pytest.raises(CacheMissError):
            asyncio.run(pinned.complete([{"role": "user", "content": "never asked"}]))
        assert server_stats(url)["requests"] == 1


def test_budget_stops_paid_calls_and_the_cache_keeps_what_was_paid(tmp_path):
    budget = BudgetClient("gw-budget-test", tokens=1, local=True)
    with replay_server("--default-content", ANSWER) as url:
        gw = gateway(url, tmp_path, budget=budget)
        asyncio.run(gw.complete(MSG))  # allowed: nothing spent yet
        with pytest.raises(BudgetExhausted):
            asyncio.run(gw.complete([{"role": "user", "content": "second"}]))
        assert asyncio.run(gw.complete(MSG)).cached  # a cached answer costs nothing, even when spent
        assert server_stats(url)["requests"] == 1
    budget.kill()


def test_litellm_errors_are_classified_into_the_error_tree():
    import litellm  # here, not at collection: importing litellm costs seconds

    def make(cls, message="x", **kw):
        return cls(message=message, llm_provider="openai", model="gpt-4o", **kw)

    assert isinstance(classify_litellm_error(make(litellm.AuthenticationError), "m"), AuthError)
    assert isinstance(classify_litellm_error(make(litellm.BadRequestError), "m"), BadRequestError)
    assert isinstance(classify_litellm_error(make(litellm.RateLimitError, "insufficient_quota"), "m"), QuotaExhaustedError)
    limited = classify_litellm_error(make(litellm.RateLimitError, headers={"retry-after": "12"}), "m")
    assert isinstance(limited, RateLimitedError) and limited.retry_after == 12.0
    assert type(classify_litellm_error(make(litellm.InternalServerError), "m")) is TransientError


def test_services_travel_to_ray_workers_by_pickle(tmp_path):
    import pickle

    from clients.llm_cache import LLMCache
    from cluster.model_actors import ActorBackend

    services = LLMServices(limiter=LimiterClient("pickle-test"), limits={"openai/m": (60.0, None)},
                           budget=BudgetClient("pickle-test", usd=1.0), backends={"m": ActorBackend("m")},
                           cache=LLMCache(tmp_path / "c"), replay_only=True)
    copy = pickle.loads(pickle.dumps(services))
    assert copy.limits == services.limits and copy.budget.usd == 1.0 and copy.replay_only
    assert copy.backends["m"].name == "m" and copy.cache.store.directory == tmp_path / "c"
