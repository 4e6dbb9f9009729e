"""What a run lends its systems across the cluster: the response cache directory, the one rate
limiter, the LLM budget and self-hosted model actors — built once by the driver from the `[llm]`
table of a run config and handed to every worker inside `RunContext.services`.

None of this changes a system's answers, so none of it enters run identity or cache keys.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class RateLimit(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rpm: float | None = Field(None, description="requests per minute")
    tpm: float | None = Field(None, description="tokens per minute")


class SelfHostedModel(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="systems reach it as model 'self/<name>'")
    kind: Literal["llamacpp", "vllm"] = Field(description="llamacpp (CPU nodes) or vllm (GPU nodes)")
    args: dict[str, Any] = Field(default_factory=dict, description="backend arguments (model_path, n_ctx, tensor_parallel_size, ...)")
    accelerator_type: str | None = Field(None, description="Ray accelerator label for GPU actors")


class LLMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cache_dir: str = Field("./cache", description="response cache (LLM and bibliographic sources); reused on resume")
    replay_only: bool = Field(False, description="pinned snapshot: answer from the cache only, a miss is an error")
    budget_usd: float | None = Field(None, ge=0, description="dollar budget per run, across resumptions")
    budget_tokens: int | None = Field(None, ge=0, description="token budget per run, across resumptions")
    concurrency: int = Field(8, ge=1, description="requests in flight per worker")
    timeout_s: float = Field(120.0, gt=0, description="seconds one model request may take before it is retried")
    limits: dict[str, RateLimit] = Field(default_factory=dict, description="rate limit per model string")
    self_hosted: list[SelfHostedModel] = Field(default_factory=list, description="open-weights models run as Ray actors")


def resolve_cache_dir(llm: LLMConfig) -> str:
    """Absolute, so every worker (in its own working directory) uses the same cache."""
    path = Path(llm.cache_dir).expanduser().resolve()
    path.mkdir(parents=True, exist_ok=True)
    return str(path)


def build_services(llm: LLMConfig, run_id: str, spent_usd: float = 0.0, spent_tokens: int = 0) -> dict[str, Any]:
    """Services for one run. The budget left is the configured budget minus what the run's
    stored outputs already spent, so a resumed run never pays twice and never overspends."""
    from clients.llm_budget import BudgetClient
    from clients.llm_gateway import LLMServices
    from cluster.model_actors import ModelSpec, start_model_actor
    from cluster.rate_limiter import LimiterClient

    limiter = LimiterClient()
    budget = None
    if llm.budget_usd is not None or llm.budget_tokens is not None:
        budget = BudgetClient(
            f"{run_id}:{uuid.uuid4().hex[:8]}",
            None if llm.budget_usd is None else max(llm.budget_usd - spent_usd, 0.0),
            None if llm.budget_tokens is None else max(llm.budget_tokens - spent_tokens, 0),
        )
    backends = {
        m.name: start_model_actor(ModelSpec(m.name, m.kind, m.args, m.accelerator_type)) for m in llm.self_hosted
    }
    services = LLMServices(
        limiter=limiter,
        limits={model: (lim.rpm, lim.tpm) for model, lim in llm.limits.items()},
        budget=budget,
        backends=backends,
        replay_only=llm.replay_only,
        concurrency=llm.concurrency,
        timeout_s=llm.timeout_s,
    )
    return {"llm": services, "rate_limiter": limiter}


def release_services(services: dict[str, Any]) -> None:
    """Drop per-run shared state (the budget actor) once the driver is done with the run."""
    llm = services.get("llm")
    if llm is not None and llm.budget is not None:
        llm.budget.kill()
