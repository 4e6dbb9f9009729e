"""The one way every component calls a model: cache, budget, limiter, retries, accounting.

    gateway = LLMGateway(model="openrouter/google/gemini-2.5-pro", services=LLMServices(...))
    response = await gateway.complete(messages, params={"temperature": 0.0, "seed": 42})

Per request, in order: the response cache (a hit costs nothing and makes no network call; a run
pinned to a snapshot sets `replay_only`, so a miss raises `CacheMissError` instead of calling);
the budget (`BudgetExhausted` once spent); the cluster-wide limiter (`cluster/rate_limiter.py`,
requests and estimated tokens per key) before each attempt, with 429s reported back to it; the
backend call under the one retry policy (`clients/retry.py`, which caps any Retry-After); then
price (`clients/llm_cost.py`), charge, and write to the cache before returning.

A backend is chosen by model string: `self/<name>` names a self-hosted backend the run provides
in `LLMServices.backends` (a llama.cpp or vLLM Ray actor, see `cluster/model_actors.py`); anything
else goes through litellm, so an open-weights reviewer is configured exactly like an API model.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from clients.errors import CacheMissError, RateLimitedError
from clients.llm_backend import ModelBackend, estimate_tokens
from clients.llm_budget import BudgetClient
from clients.llm_cache import LLMCache
from clients.llm_cost import Price, price_for
from clients.llm_litellm import LiteLLMBackend
from clients.llm_request import LLMRequest, LLMResponse
from clients.retry import RetryPolicy
from storage.redaction import register_secret_env

__all__ = ["GatewayStats", "LLMGateway", "LLMServices", "SELF_HOSTED_PREFIX"]

SELF_HOSTED_PREFIX = "self/"


@dataclass
class LLMServices:
    """What a run lends the gateway (`RunContext.services["llm"]`); none of it changes answers,
    so none of it enters a system's config hash or the cache key."""

    limiter: Any = None
    """A `cluster.rate_limiter.LimiterClient` (or anything with async acquire/report/configure)."""
    limits: dict[str, tuple[float | None, float | None]] = field(default_factory=dict)
    """(rpm, tpm) per model string; applied to the limiter key of that model at first use."""
    burst_seconds: float = 0.5
    """Limiter bucket size in seconds of the rate: kept below a provider's own burst allowance,
    so network jitter between our spacing and theirs does not turn into 429s."""
    budget: BudgetClient | None = None
    """The run's shared budget (None: unlimited)."""
    backends: dict[str, ModelBackend] = field(default_factory=dict)
    """Self-hosted backends by name, reached with model `self/<name>`."""
    replay_only: bool = False
    """Pinned snapshot: answer from the cache only; a miss raises `CacheMissError`."""
    retry: RetryPolicy = field(default_factory=lambda: RetryPolicy(max_attempts=5, retry_after_cap=60.0))
    timeout_s: float = 120.0
    concurrency: int = 8
    """Requests a system keeps in flight per worker."""
    cache: LLMCache | None = None
    """An open cache; when None the gateway opens `RunContext.cache_dir` if there is one (frozen
    when `replay_only`)."""


@dataclass
class GatewayStats:
    """Counters for one gateway (one system in one worker)."""

    requests: int = 0
    cache_hits: int = 0
    network_calls: int = 0
    """Attempts sent to a backend, retries included."""
    rate_limited: int = 0
    failed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)


def limiter_key(model: str, api_base: str | None, api_key_env: str | None) -> str:
    """Limiter key for a model and credentials: provider/model, plus a hash of the base URL and of
    the key (never the key itself), so two keys or two servers get separate buckets."""
    key = f"llm:{model}"
    register_secret_env(api_key_env)  # read here first: out of every stored or printed text from now on
    secret = os.environ.get(api_key_env) if api_key_env else None
    if api_base:
        key += f"@{hashlib.sha256(api_base.encode()).hexdigest()[:8]}"
    if secret:
        key += f":key={hashlib.sha256(secret.encode()).hexdigest()[:8]}"
    return key


def answer_variant(api_base: str | None, weights: str | None) -> str:
    """What besides the request changes a model's answer: the server it is sent to and, for a
    self-hosted model, its weights fingerprint. Empty for a plain provider model (its key is the
    request's alone). Credentials, timeouts and limits are never part of it."""
    parts = {k: v for k, v in (("api_base", (api_base or "").rstrip("/") or None), ("weights", weights)) if v}
    return json.dumps(parts, sort_keys=True) if parts else ""


class LLMGateway:
    """Calls one model with every policy applied. Safe to share between coroutines.

    Args:
        model: litellm model string, or `self/<name>` for a backend in `services.backends`.
        services: the run's limiter, budget, backends, replay mode, retry policy.
        api_base: OpenAI-compatible server URL (self-hosted, replay server, proxy).
        api_key_env: environment variable holding the API key (value never recorded).
        cache_dir: directory of the response cache when `services.cache` is None (None: no cache).
        price_override: USD per 1M (input, output) tokens, replacing the bundled price map.
        backend: an explicit backend (otherwise chosen from the model string).
    """

    def __init__(self, model: str, services: LLMServices | None = None, *, api_base: str | None = None,
                 api_key_env: str | None = None, cache_dir: str | None = None,
                 price_override: tuple[float, float] | None = None,
                 backend: ModelBackend | None = None) -> None:  # fmt: skip
        self.model = model
        self.services = services or LLMServices()
        self.cache = self.services.cache or (
            LLMCache(cache_dir, frozen=self.services.replay_only) if cache_dir else None
        )
        self.backend = backend or self._choose_backend(model, api_base, api_key_env)
        self.price: Price | None = price_for(model, price_override)
        self.key = limiter_key(model, api_base, api_key_env)
        self.cache_variant = answer_variant(api_base, getattr(self.backend, "fingerprint", None))
        self.stats = GatewayStats()
        self._configured = False

    def _choose_backend(self, model: str, api_base: str | None, api_key_env: str | None) -> ModelBackend:
        if model.startswith(SELF_HOSTED_PREFIX):
            name = model[len(SELF_HOSTED_PREFIX) :]
            if name not in self.services.backends:
                raise KeyError(
                    f"no self-hosted backend '{name}' in this run (have: {sorted(self.services.backends)})"
                )
            return self.services.backends[name]
        return LiteLLMBackend(api_base=api_base, api_key_env=api_key_env)

    async def _configure_limiter(self) -> None:
        if self._configured or self.services.limiter is None:
            return
        rpm, tpm = self.services.limits.get(self.model, (None, None))
        if rpm or tpm:
            await self.services.limiter.configure(self.key, rpm, tpm, burst_seconds=self.services.burst_seconds)
        self._configured = True

    async def complete(self, messages: list[dict[str, Any]], params: dict[str, Any] | None = None,
                       tools: list[dict[str, Any]] | None = None) -> LLMResponse:  # fmt: skip
        """Answer one chat request (see the module docstring for the order of policies)."""
        return await self.send(LLMRequest(self.model, messages, dict(params or {}), tools))

    async def send(self, request: LLMRequest) -> LLMResponse:
        self.stats.add(requests=1)
        if self.cache is not None:
            hit = self.cache.get(request, self.cache_variant)  # a frozen cache raises CacheMissError here
            if hit is not None:
                self.stats.add(cache_hits=1)
                return hit
        if self.services.replay_only:
            raise CacheMissError(
                f"request {request.cache_key()[:12]} not in the pinned cache", source=self.model
            )
        if self.services.budget is not None:
            await self.services.budget.check()
        await self._configure_limiter()
        warm_up = getattr(self.backend, "warm_up", None)
        if warm_up is not None and self.services.limiter is not None:
            await warm_up(self.model)  # before the first slot: a slow first call would fire late, bunched
        tokens_in_est, tokens_out_est = estimate_tokens(request)
        attempts = 0
        started = time.monotonic()

        async def attempt() -> LLMResponse:
            nonlocal attempts
            attempts += 1
            limiter = self.services.limiter
            if limiter is not None:
                await limiter.acquire(self.key, 1, tokens_in_est + tokens_out_est)
            self.stats.add(network_calls=1)
            try:
                return await self.backend.generate(request, self.services.timeout_s)
            except RateLimitedError as exc:
                self.stats.add(rate_limited=1)
                if limiter is not None:  # the limiter pauses the key: tell it the capped wait
                    cap = self.services.retry.retry_after_cap
                    await limiter.report(self.key, True, None if exc.retry_after is None else min(exc.retry_after, cap))
                raise

        try:
            response = await self.services.retry.call(attempt)
        except Exception:
            self.stats.add(failed=1)
            raise
        response.attempts = attempts
        response.latency_s = time.monotonic() - started
        response.cost_usd = self.price.cost(response.tokens_in, response.tokens_out) if self.price else None
        if self.services.limiter is not None and self.services.limits.get(self.model, (None, None))[1]:
            used = response.tokens_in + response.tokens_out
            await self.services.limiter.report(
                self.key, False, None, tokens_delta=used - tokens_in_est - tokens_out_est
            )
        if self.cache is not None:
            self.cache.put(request, response, self.cache_variant)
        if self.services.budget is not None:
            await self.services.budget.charge(response.cost_usd, response.tokens_in + response.tokens_out)
        return response
