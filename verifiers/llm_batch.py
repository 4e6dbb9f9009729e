"""How every LLM system runs a batch: one gateway per worker built from the run context, a
bounded number of items in flight, and a clean stop when the run's budget is reached (every item
not done gets a `budget` failure, which the runner does not persist, so a resumed run redoes it
and pays nothing twice thanks to the response cache).

A provider call that failed becomes `provider_failure(...)`: an outage (`clients.errors.is_outage`:
5xx, timeout, connection error, 429 after every retry) is the UNCERTAIN-by-outage answer that
source outages give (`detail["outage_sources"] = ["llm:<model>"]`, storage/outages.py), so the run
is incomplete and a resume retries the item; any other failure (bad request, content filter, auth,
quota) is an errored output with its reason, which a resume keeps."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from clients.errors import ClientError, is_outage
from clients.llm_budget import BudgetExhausted
from clients.llm_gateway import LLMGateway
from storage.outages import OUTAGE_KEY
from storage.records import Item, Output
from verifiers.system import RunContext


def gateway_from_context(ctx: RunContext, model: str, **options) -> LLMGateway:
    """The gateway a system uses in this run: the run's shared services (limiter, budget, self-hosted
    backends) and response cache."""
    return LLMGateway(model, ctx.services.llm, cache_dir=ctx.cache_dir, **options)


OUTAGE_CONFIDENCE = 0.5
"""Confidence of an outage answer (the same as a source outage's `no_evidence`): it is never scored."""


def provider_source(model: str) -> str:
    """How an outage answer names a model provider in `detail["outage_sources"]`."""
    return f"llm:{model}"


def provider_failure(item_id: str, exc: ClientError, model: str, *, detail: dict[str, Any] | None = None,
                     **fields: Any) -> Output:  # fmt: skip
    """The output of an item whose provider call failed with `exc` (after the retry policy):
    UNCERTAIN-by-outage when the provider was unavailable, else an errored `provider` output."""
    if is_outage(exc):
        return Output(item_id, "UNCERTAIN", OUTAGE_CONFIDENCE, f"no answer: provider unavailable: {exc.reason}",
                      detail={**(detail or {}), OUTAGE_KEY: [provider_source(model)]}, **fields)  # fmt: skip
    return Output.failed(item_id, exc.reason, "provider")


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
