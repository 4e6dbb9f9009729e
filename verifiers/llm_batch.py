"""How every LLM system runs a batch: one gateway per worker built from the run context, a
bounded number of items in flight, and a clean stop when the run's budget is reached (every item
not done gets a `budget` failure, which the runner does not persist, so a resumed run redoes it
and pays nothing twice thanks to the response cache)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from clients.llm_budget import BudgetExhausted
from clients.llm_gateway import LLMGateway, LLMServices
from storage.records import Item, Output
from verifiers.system import RunContext


def gateway_from_context(ctx: RunContext, model: str, **options) -> LLMGateway:
    """The gateway a system uses in this run: the run's shared services (limiter, budget, self-hosted
    backends) and response cache."""
    services = ctx.services.get("llm") or LLMServices(limiter=ctx.services.get("rate_limiter"))
    return LLMGateway(model, services, cache_dir=ctx.cache_dir, **options)


def budget_failure(item_id: str, reason: str, left: int, total: int) -> Output:
    return Output.failed(item_id, f"{reason}; {left} of {total} items in this batch not done", "budget")


async def run_batch(items: list[Item], gateway: LLMGateway, one: Callable[[Item], Awaitable[Output]]) -> list[Output]:
    """`one(item)` for every item, at most `services.concurrency` at a time, stopping at the budget."""
    slots = asyncio.Semaphore(gateway.services.concurrency)
    stop: list[str] = []

    async def guarded(item: Item) -> Output:
        async with slots:
            if stop:
                return Output.failed(item.item_id, stop[0], "budget")
            try:
                return await one(item)
            except BudgetExhausted as exc:
                stop.append(str(exc))
                return Output.failed(item.item_id, str(exc), "budget")

    outputs = list(await asyncio.gather(*(guarded(i) for i in items)))
    if stop:
        left = sum(o.error_kind == "budget" for o in outputs)
        outputs = [budget_failure(o.item_id, stop[0], left, len(items)) if o.error_kind == "budget" else o
                   for o in outputs]  # fmt: skip
    return outputs
