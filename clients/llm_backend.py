"""The one-method interface every model provider speaks to the gateway.

A backend translates: it sends one request and returns one `LLMResponse`, or raises one of the
`clients/errors.py` types. It never sleeps, retries, caches or counts money; the gateway
(`clients/llm_gateway.py`) owns all of that. Implementations: `LiteLLMBackend` (any hosted API,
or any OpenAI-compatible server such as `jobs/serve_gguf.py` (llama.cpp), vLLM's server or
`jobs/llm_replay_server.py`), `LlamaCppBackend` (GGUF weights in-process, CPU, on the prebuilt
xllamacpp runtime or llama-cpp-python),
`VllmBackend` (open weights on a GPU), and `cluster.model_actors.ActorBackend` (either of the
last two inside a Ray actor, shared by every worker).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from clients.llm_request import LLMRequest, LLMResponse

__all__ = ["ModelBackend", "estimate_tokens"]


@runtime_checkable
class ModelBackend(Protocol):
    """Sends one chat request to one model."""

    async def generate(self, request: LLMRequest, timeout: float) -> LLMResponse: ...


def estimate_tokens(request: LLMRequest) -> tuple[int, int]:
    """Rough (input, output) token counts before sending: ~4 characters per token for the prompt
    and tools, the requested completion budget (or 256) for the answer. Used to reserve
    tokens-per-minute capacity and to estimate a run's cost; actual counts replace it after."""
    chars = sum(len(str(m.get("content") or "")) for m in request.messages) + len(str(request.tools or ""))
    out = request.params.get("max_completion_tokens") or request.params.get("max_tokens") or 256
    return chars // 4 + 4 * len(request.messages), int(out)
