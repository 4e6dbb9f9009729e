"""Fairness of the checker service without Ray (issue 26 item 8): the scheduler (who gets a freed
worker, the per-client cap, the queue-wait limit, what a cancelled waiter leaves behind) and the
HTTP client's handling of the service's 429 + Retry-After."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from checkers.fair_scheduler import ClientId, FairScheduler, QueueWaitExceeded
from clients.checker_client import CheckRequest, HttpCheckerClient
from clients.errors import RateLimitedError, is_outage

FLOOD = ClientId("10.0.0.1", "flood")
SIMPLE = ClientId("10.0.0.2")


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


def test_a_newcomer_gets_the_next_free_slot_ahead_of_a_flood():
    async def scenario() -> list[str]:
        scheduler = FairScheduler(slots=2, per_client=2, retry_after_s=10)
        order: list[str] = []

        async def take(client: ClientId, name: str) -> None:
            await scheduler.acquire(client, None)
            order.append(name)

        flood = [asyncio.ensure_future(take(FLOOD, f"flood{i}")) for i in range(30)]
        await _settle()
        simple = asyncio.ensure_future(take(SIMPLE, "simple"))
        await _settle()
        assert order == ["flood0", "flood1"]  # both slots held by the flood
        scheduler.release(FLOOD)
        await _settle()
        assert order[-1] == "simple"  # the freed slot skipped the 28 flood checks queued before it
        for task in flood:
            task.cancel()
        await asyncio.gather(*flood, simple, return_exceptions=True)
        return order

    asyncio.run(scenario())


def test_one_client_holds_at_most_its_share():
    async def scenario() -> None:
        scheduler = FairScheduler(slots=4, per_client=2, retry_after_s=10)
        waiters = [asyncio.ensure_future(scheduler.acquire(FLOOD, None)) for _ in range(5)]
        await _settle()
        assert sum(w.done() for w in waiters) == 2 and scheduler.free == 2  # two slots stay free for others
        await asyncio.wait_for(scheduler.acquire(SIMPLE, None), timeout=5)
        assert scheduler.free == 1
        for waiter in waiters:
            waiter.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)

    asyncio.run(scenario())


def test_queue_wait_over_the_limit_is_refused_and_leaves_no_state():
    async def scenario() -> None:
        scheduler = FairScheduler(slots=1, per_client=1, retry_after_s=7)
        await scheduler.acquire(FLOOD, 0.5)
        with pytest.raises(QueueWaitExceeded) as refused:
            await scheduler.acquire(FLOOD, 0.2)
        assert refused.value.status == 429 and refused.value.retry_after_s == 7
        assert "(max_queue_wait_s)" in str(refused.value) and refused.value.limit == "max_queue_wait_s"
        assert scheduler.rejected == 1
        scheduler.release(FLOOD)
        assert scheduler.free == 1 and scheduler.snapshot() == {"free": 1, "clients": 0, "waiting": 0}

    asyncio.run(scenario())


def test_minted_keys_from_one_address_do_not_jump_another_address():
    async def scenario() -> None:
        scheduler = FairScheduler(slots=2, per_client=1, retry_after_s=10)
        for i in range(2):
            await scheduler.acquire(ClientId("10.0.0.1", f"k{i}"), None)
        minted = [asyncio.ensure_future(scheduler.acquire(ClientId("10.0.0.1", f"m{i}"), None)) for i in range(20)]
        await _settle()
        other = asyncio.ensure_future(scheduler.acquire(SIMPLE, None))
        await _settle()
        scheduler.release(ClientId("10.0.0.1", "k0"))
        await _settle()
        assert other.done() and not any(m.done() for m in minted)
        for waiter in minted:
            waiter.cancel()
        await asyncio.gather(*minted, return_exceptions=True)

    asyncio.run(scenario())


def test_a_cancelled_waiter_that_was_just_granted_hands_the_slot_on():
    async def scenario() -> None:
        scheduler = FairScheduler(slots=1, per_client=1, retry_after_s=10)
        await scheduler.acquire(FLOOD, None)
        waiter = asyncio.ensure_future(scheduler.acquire(SIMPLE, None))
        await _settle()
        scheduler.release(FLOOD)  # grants SIMPLE's future ...
        waiter.cancel()  # ... but its caller is cancelled before it resumes
        await asyncio.gather(waiter, return_exceptions=True)
        assert scheduler.free == 1 and scheduler.snapshot()["clients"] == 0

    asyncio.run(scenario())


def test_client_identity_hashes_the_key():
    keyed = ClientId.from_headers("1.2.3.4", {"x-api-key": "sk-secret-value"})
    assert keyed.address == "1.2.3.4" and "sk-secret" not in keyed.name and len(keyed.key_hash) == 16
    assert ClientId.from_headers("1.2.3.4", {}) == ClientId("1.2.3.4")
    assert ClientId.from_headers("1.2.3.4", {"x-forwarded-for": "9.9.9.9"}).address == "1.2.3.4"


BUSY = {"error": "waited 30.0s for a worker, over the limit of 30s (max_queue_wait_s); retry after 1s",
        "limit": "max_queue_wait_s", "retry_after_s": 1}  # fmt: skip
REQUEST = CheckRequest("math.equality", {"lhs": "x", "rhs": "x"})


def test_client_waits_the_retry_after_then_gets_the_answer():
    seen: list[float] = []

    def busy_twice(request: httpx.Request) -> httpx.Response:
        seen.append(time.monotonic())
        if len(seen) <= 2:
            return httpx.Response(429, json=BUSY, headers={"Retry-After": "1"})
        return httpx.Response(200, json={"kind": "math.equality", "outcome": "confirmed"})

    client = HttpCheckerClient("http://checkers.test/checkers", transport=httpx.MockTransport(busy_twice))
    reply = asyncio.run(client.check(REQUEST))
    assert reply.outcome == "confirmed" and len(seen) == 3
    gaps = [later - earlier for earlier, later in zip(seen, seen[1:], strict=False)]
    assert all(gap >= 1.0 for gap in gaps), gaps  # honoured the server's 1 s


def test_client_treats_429_after_its_retries_as_an_outage_and_caps_a_hostile_retry_after():
    calls: list[int] = []

    def always_busy(request: httpx.Request) -> httpx.Response:
        calls.append(1)
        return httpx.Response(429, json=BUSY, headers={"Retry-After": "1000000000"})

    client = HttpCheckerClient("http://checkers.test/checkers", transport=httpx.MockTransport(always_busy),
                               max_attempts=3, retry_after_cap=0.2)  # fmt: skip
    start = time.monotonic()
    with pytest.raises(RateLimitedError, match="max_queue_wait_s") as caught:
        asyncio.run(client.check_many([REQUEST]))
    assert len(calls) == 3 and time.monotonic() - start < 30  # a billion seconds asked, 0.2 s waited
    assert caught.value.status == 429 and caught.value.retry_after == 1e9
    assert is_outage(caught.value)  # never a verdict
