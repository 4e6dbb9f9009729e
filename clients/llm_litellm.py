"""Hosted and OpenAI-compatible models through litellm, with litellm's own retries off.

litellm would retry on its own and wait as long as a `Retry-After` says (unbounded); we call it
with `num_retries=0` and `max_retries=0` and translate its exceptions into `clients/errors.py`
types here, at the boundary, so the one retry policy (`clients/retry.py`) decides. A 429 whose
message speaks of quota or billing is `QuotaExhaustedError` (waiting will not help), not a rate
limit. A missing key is an `AuthError` naming the model and the variable, raised before any call
(`missing_key_reasons`); litellm reports an OpenAI-style missing key as a 500 "Missing
credentials", which is classed as auth too, never as an outage that a resubmission would retry.

Every key this backend sends (the `api_key_env` value, or the provider variables litellm reads on
its own) is registered with the redactor (`storage/redaction.py`) before the call, so a provider
that echoes it in an error body never gets it into an output, a report or MLflow.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

from clients.errors import (
    AuthError,
    BadRequestError,
    ClientError,
    NotFoundError,
    QuotaExhaustedError,
    RateLimitedError,
    TransientError,
)
from clients.llm_request import LLMRequest, LLMResponse, ToolCall
from clients.process_state import PROCESS_STATE
from storage.redaction import register_environment_secrets, register_secret_env

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

__all__ = ["LiteLLMBackend", "classify_litellm_error", "missing_key_reasons"]

_QUOTA_WORDS = ("quota", "billing", "insufficient_quota", "credit", "payment required")
# What the SDKs say when no key was given at all (OpenAI's arrives as a 500 from litellm).
_MISSING_KEY_WORDS = ("missing credentials", "api_key client option must be set", "no key is set",
                      "missing api key", "api key not found", "api key is missing")  # fmt: skip


def missing_key_reasons(model: str, api_key_env: str | None = None, api_base: str | None = None) -> list[str]:
    """What this machine's environment lacks to call `model` (variable names only, never values):
    the `api_key_env` variable when one is named, else the provider's own variables litellm
    expects. A self-hosted model or a custom endpoint without `api_key_env` needs none."""
    if api_key_env:
        return [] if os.environ.get(api_key_env) else [f"environment variable {api_key_env} (api_key_env) is not set"]
    if model.startswith("self/") or api_base:
        return []  # its key, if any, is the endpoint's business
    import litellm

    try:
        missing = litellm.validate_environment(model=model).get("missing_keys") or []
    except Exception:  # an unknown provider: litellm says so when called
        return []
    return [f"model {model} needs environment variable {k}" for k in missing]


def _retry_after(exc: BaseException) -> float | None:
    headers: Any = getattr(exc, "headers", None) or {}
    response = getattr(exc, "response", None)
    if not headers and response is not None:
        headers = getattr(response, "headers", None) or {}
    for name in ("retry-after", "Retry-After", "x-ratelimit-reset-requests"):
        value = headers.get(name) if hasattr(headers, "get") else None
        if value is not None:
            try:
                return float(str(value).rstrip("s"))
            except ValueError:
                return None
    return None


def classify_litellm_error(exc: BaseException, source: str) -> ClientError:
    """Translate a litellm / OpenAI-SDK exception into the project's error tree."""
    import litellm

    status = getattr(exc, "status_code", None)
    message = str(getattr(exc, "message", None) or exc)[:300]
    lowered = message.lower()
    if any(w in lowered for w in _MISSING_KEY_WORDS):  # no key on this machine: a definite answer
        return AuthError(message, source=source, status=status if status in (401, 403) else None)
    if isinstance(exc, litellm.RateLimitError) or status == 429:
        if any(w in lowered for w in _QUOTA_WORDS):
            return QuotaExhaustedError(message, source=source, status=429)
        return RateLimitedError(message, retry_after=_retry_after(exc), source=source)
    if status == 402:
        return QuotaExhaustedError(message, source=source, status=402)
    if isinstance(exc, (litellm.AuthenticationError, litellm.PermissionDeniedError)) or status in (401, 403):
        return AuthError(message, source=source, status=status)
    if isinstance(exc, litellm.NotFoundError) or status == 404:
        return NotFoundError(message, source=source, status=status)
    if isinstance(exc, (litellm.BadRequestError, litellm.UnprocessableEntityError)) or status in (
        400,
        405,
        422,
    ):
        return BadRequestError(message, source=source, status=status)
    # timeouts, connection errors, 5xx, malformed/truncated bodies: worth another try
    return TransientError(f"{type(exc).__name__}: {message}", source=source, status=status)




class LiteLLMBackend:
    """Any litellm model string; `api_base` points it at a self-hosted or replay server.

    Args:
        api_base: base URL of an OpenAI-compatible server (None: the provider's default).
        api_key_env: name of the environment variable holding the key (its value is read at
            call time and never logged or recorded).
        extra: further litellm keyword arguments that do not change answers (headers ...).
    """

    def __init__(self, api_base: str | None = None, api_key_env: str | None = None,
                 extra: dict[str, Any] | None = None) -> None:  # fmt: skip
        self.api_base = api_base
        self.api_key_env = api_key_env
        self.extra = dict(extra or {})
        self._warm_lock: asyncio.Lock | None = None
        self._keys_ready: set[str] = set()
        """Models whose key was found and registered with the redactor in this process."""

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_warm_lock": None, "_keys_ready": set()}  # checked again where it lands

    def _ensure_key(self, model: str) -> None:
        """Register the key this call sends with the redactor; `AuthError` when it is missing here."""
        if model in self._keys_ready:
            return
        if self.api_key_env:
            register_secret_env(self.api_key_env)
        else:
            register_environment_secrets()  # litellm picks the provider's variable itself
        missing = missing_key_reasons(model, self.api_key_env, self.api_base)
        if missing:
            raise AuthError(f"{'; '.join(missing)} on this machine", source=model)
        self._keys_ready.add(model)

    async def warm_up(self, model: str) -> None:
        """Pay litellm's first-call cost (lazy imports, clients: seconds on a busy host) before a
        rate-limited slot is taken, with a mock answer that sends nothing: otherwise the first
        requests of every worker leave seconds after their slots, bunched with later ones, and a
        server counting at the limit answers 429."""
        import litellm

        key = (model, self.api_base)
        if key in PROCESS_STATE.warmed_models:
            return
        if self._warm_lock is None:
            self._warm_lock = asyncio.Lock()
        async with self._warm_lock:
            if key in PROCESS_STATE.warmed_models:
                return
            with contextlib.suppress(Exception):  # a failed warm-up only costs time later
                await litellm.acompletion(model=model, messages=[{"role": "user", "content": "warm-up"}],
                                          mock_response="ok", api_base=self.api_base, api_key="unused")  # fmt: skip
            PROCESS_STATE.warmed_models.add(key)

    async def generate(self, request: LLMRequest, timeout: float) -> LLMResponse:
        import litellm

        self._ensure_key(request.model)
        kwargs: dict[str, Any] = {**self.extra, **request.params}
        if self.api_base:
            kwargs["api_base"] = self.api_base
        if self.api_key_env:
            kwargs["api_key"] = os.environ.get(self.api_key_env)
        elif self.api_base:
            kwargs.setdefault("api_key", "unused")  # local servers need a placeholder
        if request.tools:
            kwargs["tools"] = request.tools
        started = time.monotonic()
        try:
            raw = await litellm.acompletion(
                model=request.model, messages=request.messages, timeout=timeout,
                num_retries=0, max_retries=0, **kwargs,
            )  # fmt: skip
        except ClientError:
            raise
        except Exception as exc:  # noqa: BLE001 - every provider error is translated here
            # not chained: the provider's exception may quote the key (a 401 echoing it)
            raise classify_litellm_error(exc, request.model) from None
        latency = time.monotonic() - started
        try:
            choice = raw.choices[0]
            message = choice.message
        except (AttributeError, IndexError) as exc:
            raise TransientError("response without choices", source=request.model) from exc
        usage = getattr(raw, "usage", None)
        calls = [
            ToolCall(id=c.id, name=c.function.name, arguments=c.function.arguments or "")
            for c in (getattr(message, "tool_calls", None) or [])
        ]
        return LLMResponse(
            text=message.content,
            model_id=getattr(raw, "model", None),
            tokens_in=int(getattr(usage, "prompt_tokens", 0) or 0),
            tokens_out=int(getattr(usage, "completion_tokens", 0) or 0),
            latency_s=latency,
            finish_reason=getattr(choice, "finish_reason", None),
            tool_calls=calls,
        )
