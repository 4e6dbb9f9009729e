"""The cluster-wide limiter: bucket arithmetic, adaptive backoff, and one actor shared by workers."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from cluster.rate_limiter import (
    DEFAULT_BURST_SECONDS,
    DEFAULT_HEADROOM,
    NAMESPACE,
    LimiterClient,
    LimiterState,
)


def test_request_bucket_spacing():
    s = LimiterState()
    s.configure("k", rpm=600, burst_seconds=1.0, now=0.0)  # 10/s, burst 10
    waits = [s.reserve("k", now=0.0) for _ in range(20)]
    # A new key starts with one request, not a full burst: a server whose bucket is as large as
    # ours would otherwise see twice its rate in the first second (and its slack spent for good).
    assert waits[:2] == [0.0, pytest.approx(0.1)]
    assert waits[19] == pytest.approx(1.9)
    again = [s.reserve("k", now=10.0) for _ in range(11)]  # idle long enough: the burst is there
    assert again[:10] == [0.0] * 10
    assert again[10] == pytest.approx(0.1)


def test_headroom_paces_under_the_limit():
    s = LimiterState(headroom=0.97)
    s.configure("k", rpm=600, now=0.0)
    waits = [s.reserve("k", now=0.0) for _ in range(98)]
    assert waits[97] == pytest.approx(97 / 9.7)  # 9.7/s: 97 % of 10/s
    assert s.snapshot("k", now=0.0)["effective_rpm"] == pytest.approx(582)
    client = LimiterClient(name=f"t-{uuid.uuid4().hex}", local=True)
    assert client.settings["headroom"] == DEFAULT_HEADROOM == 0.98  # what a run's cluster limiter paces at


def test_a_client_burst_stays_under_a_servers_one_second_allowance():
    client = LimiterClient(name=f"t-{uuid.uuid4().hex}", local=True)
    asyncio.run(client.configure("src", rpm=480))  # 8/s; a source told no burst gets half a second's
    assert DEFAULT_BURST_SECONDS == 0.5
    state = client._resolve()[0]
    assert state.keys["src"].requests.capacity == 4.0


def test_a_dead_limiter_actor_is_recreated_with_the_limits_it_had(ray_session):
    import ray

    name = f"limiter-{uuid.uuid4().hex[:8]}"
    client = LimiterClient(name=name)
    asyncio.run(client.configure("src", rpm=120))
    ray.kill(ray.get_actor(name, namespace=NAMESPACE))  # as when its node vanishes
    # ray.kill returns before the actor is gone: under load an acquire could still reach the old one
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            ray.get_actor(name, namespace=NAMESPACE)
        except ValueError:
            break
        time.sleep(0.1)
    asyncio.run(client.acquire("src"))  # no error: a new actor, given the limits back
    snap = asyncio.run(client.snapshot("src"))
    assert (snap["rpm"], snap["reservations"]) == (120, 1)
    ray.kill(ray.get_actor(name, namespace=NAMESPACE))


def test_token_bucket_and_requests_together():
    s = LimiterState()
    s.configure("m", rpm=6000, tpm=6000, now=0.0)  # 100 req/s, 100 tok/s, burst 1 s each
    assert s.reserve("m", tokens=100, now=0.0) == 0.0
    assert s.reserve("m", tokens=250, now=0.0) == pytest.approx(2.5)  # tokens dominate
    s.report("m", tokens_delta=-100, now=0.0)  # used 100 fewer tokens than reserved
    assert s.reserve("m", tokens=0, now=0.0) == pytest.approx(0.02)  # the request bucket: 3rd at 100/s
    assert s.reserve("m", tokens=50, now=0.0) == pytest.approx(2.0)


def test_429_backs_off_then_recovers_slowly():
    s = LimiterState(backoff=0.5, recovery_seconds=60.0, coalesce_seconds=1.0)
    s.configure("k", rpm=600, now=0.0)
    s.report("k", rate_limited=True, retry_after=2.0, now=0.0)
    snap = s.snapshot("k", now=0.0)
    assert snap["factor"] == pytest.approx(0.5) and snap["effective_rpm"] == pytest.approx(300)
    assert s.reserve("k", now=0.0) >= 2.0  # nobody sends before Retry-After
    s.report("k", rate_limited=True, now=0.5)  # same episode (another worker bounced): no new penalty
    assert s.snapshot("k", now=0.5)["factor"] == pytest.approx(0.5 + 0.5 / 60)
    s.report("k", rate_limited=True, now=1.5)  # a new episode, no header: halves again
    assert s.snapshot("k", now=1.5)["factor"] == pytest.approx((0.5 + 1.5 / 60) * 0.5)
    assert s.snapshot("k", now=31.5)["factor"] == pytest.approx((0.5 + 1.5 / 60) * 0.5 + 0.5)  # linear
    assert s.snapshot("k", now=100.0)["factor"] == 1.0
    for t in range(10):
        s.report("k", rate_limited=True, now=100.0 + 2 * t)
    assert s.snapshot("k", now=118.0)["factor"] == pytest.approx(0.1)  # floor
    assert s.snapshot("k", now=118.0)["rate_limited_reports"] == 13


def test_unconfigured_key_only_honours_pauses_and_headers():
    s = LimiterState(max_pause=10.0)
    assert s.reserve("free", now=0.0) == 0.0
    s.report("free", rate_limited=False, retry_after=3.0, now=0.0)  # header said: reset in 3 s
    assert s.reserve("free", now=1.0) == pytest.approx(2.0)
    assert s.snapshot("free", now=1.0)["factor"] == 1.0  # no penalty without a 429
    s.report("free", retry_after=3600.0, now=10.0)
    assert s.reserve("free", now=10.0) == pytest.approx(10.0)  # capped
    s.report("free", announced_rpm=120.0, now=30.0)  # header announced 2/s
    assert s.snapshot("free", now=30.0)["rpm"] == 120.0
    assert [s.reserve("free", now=30.0) for _ in range(3)] == pytest.approx([0.0, 0.0, 0.5])


def test_same_configure_keeps_buckets():
    s = LimiterState()
    s.configure("k", rpm=60, now=0.0)
    assert s.reserve("k", now=0.0) == 0.0
    s.configure("k", rpm=60, now=0.0)  # a second worker configuring the same limit
    assert s.reserve("k", now=0.0) == pytest.approx(1.0)
    s.configure("k", rpm=6000, now=0.0, if_unset=True)  # a client's default never overrides
    assert s.snapshot("k", now=0.0)["rpm"] == 60
    s.configure("fresh", rpm=6000, now=0.0, if_unset=True)
    assert s.snapshot("fresh", now=0.0)["rpm"] == 6000


def test_local_client_rate():
    async def go() -> float:
        client = LimiterClient(name=f"t-{uuid.uuid4().hex}", local=True)
        await client.configure("src", rpm=1200, burst_seconds=0.25)  # 20/s, burst 5
        start = time.monotonic()
        await asyncio.gather(*(client.acquire("src") for _ in range(25)))
        return time.monotonic() - start

    elapsed = asyncio.run(go())
    assert 0.95 <= elapsed <= 1.5  # (25 - 5) / 20 = 1.0 s


def test_actor_shared_by_ray_workers(ray_session):
    import ray

    name = f"limiter-{uuid.uuid4().hex[:8]}"
    client = LimiterClient(name=name)
    asyncio.run(client.configure("shared", rpm=1200, burst_seconds=0.1))  # 20/s, burst 2

    @ray.remote(num_cpus=0)
    def worker(limiter: LimiterClient, n: int) -> list[float]:
        async def go() -> list[float]:
            stamps = []
            for _ in range(n):
                await limiter.acquire("shared")
                stamps.append(time.time())
            return stamps

        return asyncio.run(go())

    stamps = sorted(t for part in ray.get([worker.remote(client, 10) for _ in range(4)]) for t in part)
    span = stamps[-1] - stamps[0]
    assert len(stamps) == 40
    assert span >= (40 - 2) / 20 * 0.9  # four workers share one 20/s budget, not 4 x 20/s
    snap = asyncio.run(client.snapshot("shared"))
    assert snap["reservations"] == 40
    assert ray.get_actor(name, namespace=NAMESPACE) is not None
    ray.kill(ray.get_actor(name, namespace=NAMESPACE))


def test_late_waker_takes_a_fresh_slot():
    """A caller stalled past its slot re-reserves instead of firing beside the next caller."""

    async def go() -> int:
        client = LimiterClient(name=f"t-{uuid.uuid4().hex}", local=True, late_tolerance=0.05)
        await client.configure("k", rpm=600, burst_seconds=0.1)  # 10/s, capacity 1
        await client.acquire("k")

        async def stall() -> None:
            await asyncio.sleep(0.01)
            time.sleep(0.3)  # the event loop is blocked past the next slot (due at +0.1 s)

        await asyncio.gather(client.acquire("k"), stall())
        return client.missed_slots

    assert asyncio.run(go()) == 1
