"""The HTTP layer under fault injection: retries, classification, cache, outage guard, secrets."""

from __future__ import annotations

import asyncio
import logging
import time

import pytest

from clients.errors import (
    AuthError,
    BadRequestError,
    CacheMissError,
    ParseError,
    QuotaExhaustedError,
    SourceOutageError,
    TransientError,
)
from clients.http import HttpOptions
from clients.outage_guard import OutageGuard
from clients.rate_limit_headers import announced_rpm, pause_seconds, retry_after_seconds
from clients.response_cache import ResponseCache
from clients.retry import RetryPolicy
from clients.source_catalog import make_source
from cluster.rate_limiter import LimiterClient
from tests.helpers.bib_server import Fault
from tests.helpers.ports import free_port

DOI = "10.1145/2939672.2939785"
FAST = RetryPolicy(max_attempts=4, base_wait=0.01, max_wait=0.05, retry_after_cap=5)


def run(coro):
    return asyncio.run(coro)


def crossref(server, **options):
    options.setdefault("retry", FAST)
    return make_source("crossref", HttpOptions(**options), server.base_url("crossref"))


@pytest.mark.parametrize("kind", ["500", "truncate"])
def test_transient_faults_are_retried(bib_server, kind):
    bib_server.inject("crossref", Fault(kind), Fault(kind))
    src = crossref(bib_server)
    assert run(src.lookup_doi(DOI)).year == 2016
    assert src.network_calls == 3 and bib_server.stats["crossref"].requests == 3


def test_timeout_is_transient_and_retried(bib_server):
    bib_server.inject("crossref", Fault("timeout", delay=1.0))
    src = crossref(bib_server, timeout=0.3)
    start = time.monotonic()
    assert run(src.lookup_doi(DOI)).year == 2016
    assert src.network_calls == 2 and time.monotonic() - start < 1.0


def test_429_honours_retry_after_and_tells_the_limiter(bib_server):
    limiter = LimiterClient(name=f"t429-{time.time_ns()}", local=True)
    bib_server.inject("crossref", Fault("429", retry_after=1))
    src = crossref(bib_server, limiter=limiter)
    start = time.monotonic()
    assert run(src.lookup_doi(DOI)).year == 2016
    elapsed = time.monotonic() - start
    assert 1.0 <= elapsed < 2.0
    snap = run(limiter.snapshot("crossref"))
    assert snap["rate_limited_reports"] == 1 and snap["reservations"] == 2


def test_malformed_body_is_parse_error_not_retried_not_cached(bib_server, tmp_path):
    cache = ResponseCache(tmp_path / "c")
    bib_server.inject("crossref", Fault("malformed"))
    src = crossref(bib_server, cache=cache)
    with pytest.raises(ParseError):
        run(src.lookup_doi(DOI))
    assert src.network_calls == 1 and len(cache) == 0
    assert run(src.lookup_doi(DOI)).year == 2016  # the next (good) answer is fetched and cached
    assert len(cache) == 1


def test_persistent_5xx_surfaces_as_transient(bib_server):
    bib_server.inject("crossref", *[Fault("500")] * 4)
    src = crossref(bib_server)
    with pytest.raises(TransientError) as info:
        run(src.lookup_doi(DOI))
    assert info.value.status == 500 and src.network_calls == 4


def test_cache_then_frozen_replay_without_network(bib_server, tmp_path):
    cache = ResponseCache(tmp_path / "snap")
    src = crossref(bib_server, cache=cache)
    live = run(src.lookup_doi(DOI)), run(src.lookup_doi("10.1371/notarealdoi"))
    again = run(src.lookup_doi(DOI))
    assert src.network_calls == 2 and again == live[0] and again.fetched_at == live[0].fetched_at
    cache.close()
    dead = f"http://127.0.0.1:{free_port()}"  # nothing listens: any network call would fail
    frozen = make_source(
        "crossref", HttpOptions(cache=ResponseCache(tmp_path / "snap", frozen=True), retry=FAST), dead
    )
    assert run(frozen.lookup_doi(DOI)) == live[0]
    assert run(frozen.lookup_doi("10.1371/notarealdoi")) is None  # a cached 404 replays as "not found"
    with pytest.raises(CacheMissError):
        run(frozen.lookup_doi("10.1371/journal.pone.0020476"))
    assert frozen.network_calls == 0


def test_outage_guard_marks_source_down(bib_server):
    guard = OutageGuard(window_seconds=60, threshold=0.5, min_events=3, cooldown_seconds=60)
    src = crossref(bib_server, guard=guard, retry=RetryPolicy(max_attempts=1))
    bib_server.inject("crossref", *[Fault("500")] * 3)
    for _ in range(3):
        with pytest.raises(TransientError):
            run(src.lookup_doi(DOI))
    calls = src.network_calls
    with pytest.raises(SourceOutageError) as info:
        run(src.lookup_doi(DOI))
    assert src.network_calls == calls  # refused without a request
    assert "HTTP 500" in info.value.reason
    report = guard.report()
    assert report.incomplete and report.refused == {"crossref": 1}
    assert report.events[0].source == "crossref" and report.events[0].error_rate == 1.0
    ok, note = report.publishable()
    assert not ok and "crossref" in note
    ok, note = report.publishable(override=True)
    assert ok and note.startswith("INCOMPLETE")


def test_guard_window_and_cooldown():
    guard = OutageGuard(window_seconds=10, threshold=0.5, min_events=4, cooldown_seconds=30)
    for t, ok in [(0, False), (1, False), (2, True), (20, True), (21, False), (22, True)]:
        guard.record("dblp", ok, "e", now=t)
    assert not guard.is_down("dblp", now=22)  # the early failures left the window
    for t in (23, 24):
        guard.record("dblp", False, "e", now=t)
    assert guard.is_down("dblp", now=24) and not guard.is_down("dblp", now=55)
    assert not guard.report().refused


def test_secrets_sent_but_never_keyed_or_logged(bib_server, tmp_path, monkeypatch, caplog):
    monkeypatch.setenv("SEMANTIC_SCHOLAR_API_KEY", "sekrit-key-123")
    monkeypatch.setenv("OPENALEX_API_KEY", "oa-sekrit-456")
    caplog.set_level(logging.DEBUG)
    cache = ResponseCache(tmp_path / "c")
    opts = HttpOptions(cache=cache, retry=FAST, mailto="me@example.org")
    s2 = make_source("semantic_scholar", opts, bib_server.base_url("semantic_scholar"))
    oa = make_source("openalex", opts, bib_server.base_url("openalex"))
    bib_server.inject("semantic_scholar", *[Fault("500")] * 4)
    with pytest.raises(TransientError) as info:
        run(s2.lookup_doi(DOI))
    assert "sekrit" not in info.value.reason and "sekrit" not in str(info.value)
    assert run(s2.lookup_doi(DOI)).year == 2016
    assert bib_server.stats["semantic_scholar"].last_headers["x-api-key"] == "sekrit-key-123"
    assert s2.http.limiter_key.startswith("semantic_scholar:key=") and "sekrit" not in s2.http.limiter_key
    assert run(oa.lookup_doi(DOI)).year == 2016
    assert "api_key=oa-sekrit-456" in bib_server.stats["openalex"].last_query
    assert "mailto=me%40example.org" in bib_server.stats["openalex"].last_query
    stored = [cache._cache[k] for k in cache._cache.iterkeys()]
    assert all("sekrit" not in r["request"] and "example.org" not in r["request"] for r in stored)
    assert "sekrit" not in caplog.text


def test_rate_limit_headers():
    assert retry_after_seconds({"Retry-After": "7"}) == 7.0
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
    assert retry_after_seconds({"Retry-After": "soon"}) is None
    assert pause_seconds({"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "12"}) == 12.0
    assert (
        pause_seconds({"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1700000030"}, now=1700000000)
        == 30.0
    )
    assert pause_seconds({"X-RateLimit-Remaining": "5", "X-RateLimit-Reset": "12"}) is None
    assert announced_rpm({"X-Rate-Limit-Limit": "50", "X-Rate-Limit-Interval": "1s"}) == 3000.0
    assert announced_rpm({"X-Rate-Limit-Limit": "50"}) is None


def test_server_limit_with_and_without_shared_limiter(bib_server):
    """12 concurrent lookups against a server allowing 5/s: the limiter avoids the 429s."""
    bib_server.set_rate_limit("crossref", 5, window=1.0)

    async def burst(src) -> None:
        await asyncio.gather(*(src.lookup_doi(DOI) for _ in range(12)))

    unlimited = crossref(bib_server, retry=RetryPolicy(max_attempts=8, base_wait=0.05, retry_after_cap=1.5))
    run(burst(unlimited))
    assert bib_server.stats["crossref"].statuses[429] >= 7  # everything past the first 5 bounced
    bib_server.set_rate_limit("crossref", 5, window=1.0)
    bib_server.reset_stats()
    limiter = LimiterClient(name=f"tlim-{time.time_ns()}", local=True)
    limited = crossref(bib_server, limiter=limiter)
    # Paced at 60 % of the server's limit: on a loaded machine requests released on time can still reach
    # the server bunched, and the margin keeps six of them out of one second of its window.
    run(limited.http.options.limiter.configure("crossref", rpm=5 * 60 * 0.6, burst_seconds=0.2))
    start = time.monotonic()
    run(burst(limited))
    assert bib_server.stats["crossref"].statuses[429] == 0
    assert bib_server.stats["crossref"].statuses[200] == 12
    assert time.monotonic() - start >= (12 - 1) / 3.0 * 0.95


def test_sources_pickle_for_ray_workers(bib_server, tmp_path):
    import pickle

    opts = HttpOptions(cache=ResponseCache(tmp_path / "c"), guard=OutageGuard(), retry=FAST,
                       limiter=LimiterClient(name=f"tp-{time.time_ns()}", local=True))  # fmt: skip
    src = crossref(bib_server, **{k: getattr(opts, k) for k in ("cache", "guard", "retry", "limiter")})
    assert run(src.lookup_doi(DOI)).year == 2016
    clone = pickle.loads(pickle.dumps(src))
    assert run(clone.lookup_doi(DOI)).year == 2016  # served by the same on-disk cache
    assert clone.network_calls == 1 and clone.http.options.cache.hits == 1


@pytest.mark.parametrize(("status", "body", "error", "calls"), [
    (401, b'{"message":"no key"}', AuthError, 1),
    (403, b"forbidden", AuthError, 1),
    (400, b"bad query", BadRequestError, 1),
    (429, b'{"message":"Daily quota exceeded"}', QuotaExhaustedError, 1),
    (503, b"unavailable", TransientError, 2),
])  # fmt: skip
def test_status_classification(bib_server, status, body, error, calls):
    bib_server.inject("crossref", *[Fault("status", status=status, body=body)] * 2)
    src = crossref(bib_server, retry=RetryPolicy(max_attempts=2, base_wait=0.01))
    with pytest.raises(error) as info:
        run(src.lookup_doi(DOI))
    assert type(info.value) is error and info.value.status == status
    assert src.network_calls == calls  # fatal answers are never retried


def test_default_limits_and_rate_limit_headers_reach_the_limiter(bib_server):
    limiter = LimiterClient(name=f"th-{time.time_ns()}", local=True)
    src = crossref(bib_server, limiter=limiter)
    bib_server.extra_headers["crossref"] = {"X-Rate-Limit-Limit": "2", "X-Rate-Limit-Interval": "1s"}
    assert run(src.lookup_doi(DOI)).year == 2016
    snap = run(limiter.snapshot("crossref"))
    assert snap["rpm"] == 120.0  # the polite default (300/min) lowered to the announced 2/s
    bib_server.extra_headers["crossref"] = {"X-RateLimit-Remaining": "0", "X-RateLimit-Reset": "1"}
    run(src.lookup_doi(DOI))
    assert run(limiter.snapshot("crossref"))["blocked_for"] > 0.8  # paused until the reset
    assert run(limiter.snapshot("crossref"))["factor"] == 1.0  # a pause, not a 429 penalty
    run(limiter.configure("semantic_scholar", rpm=30))  # the run's own limit is kept
    s2 = make_source(
        "semantic_scholar", HttpOptions(limiter=limiter, retry=FAST), bib_server.base_url("semantic_scholar")
    )
    run(s2.lookup_doi(DOI))
    assert run(limiter.snapshot(s2.http.limiter_key))["rpm"] in (30, 60.0)
