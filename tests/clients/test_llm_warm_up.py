"""A backend's first-call cost is paid before the first rate-limited slot (clients/llm_gateway.py).

litellm's first call in a process takes seconds on a busy host (lazy imports, clients): paid after
the slot, every worker's first requests leave late and bunched, and a server counting at the limit
answers 429 (measured with 8 workers on two hosts, tests/multihost/test_multihost_rate_limits.py).
"""

from __future__ import annotations

import asyncio
import uuid

from clients.llm_gateway import LLMGateway, LLMServices
from clients.llm_request import LLMRequest, LLMResponse
from cluster.rate_limiter import LimiterClient


class _Backend:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    async def warm_up(self, model: str) -> None:
        self.events.append(f"warm_up {model}")

    async def generate(self, request: LLMRequest, timeout: float) -> LLMResponse:
        self.events.append("generate")
        return LLMResponse(text="ok", model_id="m", tokens_in=1, tokens_out=1, latency_s=0.0, finish_reason="stop")


class _Limiter(LimiterClient):
    def __init__(self, events: list[str]) -> None:
        super().__init__(name=f"t-{uuid.uuid4().hex}", local=True)
        self.events = events

    async def acquire(self, key: str, requests: float = 1, tokens: float = 0) -> float:
        self.events.append("acquire")
        return await super().acquire(key, requests, tokens)


def test_the_backend_is_warmed_before_the_first_slot():
    events: list[str] = []
    gateway = LLMGateway("openai/m", LLMServices(limiter=_Limiter(events)), backend=_Backend(events))
    asyncio.run(gateway.send(LLMRequest(model="openai/m", messages=[{"role": "user", "content": "a"}])))
    assert events[:3] == ["warm_up openai/m", "acquire", "generate"]
