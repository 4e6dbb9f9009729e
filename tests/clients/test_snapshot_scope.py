"""The snapshot scope of cached source answers (issue 12): a run under another snapshot date asks
the sources again instead of replaying answers recorded for a different date, unless the user
asked for that replay (`[llm] replay_snapshot`), which then answers from the cache only. The same
holds for answers that travel through the run's storage (`clients/answer_exchange.py`). A real
HTTP source server on 127.0.0.1 counts the requests."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from clients.answer_exchange import export_answers, import_answers
from clients.errors import ClientError
from clients.response_cache import record_touched
from cluster.services_builder import LLMConfig, build_services
from storage.store import Store
from tests.helpers.bib_server import start_bib_server

TITLE = "Attention is all you need"


@pytest.fixture(scope="module")
def bib():
    server = start_bib_server()
    yield server
    server.stop()


def lookup(bib, cache: Path, snapshot: str, key: str, *, replay: str | None = None, title: str = TITLE):  # noqa: ANN001
    llm = LLMConfig(cache_dir=str(cache), replay_snapshot=replay, source_base_urls=bib.base_urls())
    services = build_services(llm, key, snapshot)
    try:
        return asyncio.run(services.bib_source("crossref").search_title(title))
    finally:
        services.forget_process_state()


def sent(bib) -> int:  # noqa: ANN001
    return bib.stats["crossref"].requests


def test_another_snapshot_asks_again_unless_replay_was_asked_for(bib, tmp_path):
    cache = tmp_path / "cache"
    record_touched(cache)  # what a shard worker does: the touched answers are exported below
    lookup(bib, cache, "2026-11-01", "run-nov")
    november = sent(bib)
    assert november >= 1
    lookup(bib, cache, "2026-11-01", "run-nov-again")  # the same snapshot (a resumed run): nothing sent
    assert sent(bib) == november
    lookup(bib, cache, "2026-12-01", "run-dec")  # December does not replay November's answers
    assert sent(bib) == 2 * november
    # December replaying November, as asked: from the cache only; a lookup November never made
    # is an error, not a network call
    assert lookup(bib, cache, "2026-12-01", "run-dec-replay", replay="2026-11-01") is not None
    assert sent(bib) == 2 * november
    with pytest.raises(ClientError, match="not in frozen cache"):
        lookup(bib, cache, "2026-12-01", "run-dec-replay", replay="2026-11-01", title="A title never looked up")
    assert sent(bib) == 2 * november

    # the same scope through the run's storage, on a node with an empty cache
    store = Store(str(tmp_path / "runs"))
    assert export_answers(store, "run-x/answers", "shard-00000", [cache]) >= 2  # both dates' answers
    fresh = tmp_path / "fresh-cache"
    assert import_answers(store, "run-x/answers", fresh).added >= 2
    lookup(bib, fresh, "2026-11-01", "node-b-nov")  # November's answer came from storage
    lookup(bib, fresh, "2026-12-01", "node-b-dec", replay="2026-11-01")
    assert sent(bib) == 2 * november
    other = tmp_path / "other-cache"
    import_answers(store, "run-x/answers", other)
    store_nov_only = Store(str(tmp_path / "runs-nov"))
    record_touched(other)
    lookup(bib, other, "2026-11-01", "node-c-nov")
    export_answers(store_nov_only, "run-y/answers", "shard-00000", [other])
    only_nov = tmp_path / "only-nov-cache"
    import_answers(store_nov_only, "run-y/answers", only_nov)
    lookup(bib, only_nov, "2026-12-01", "node-d-dec")  # another date with only November's answers: asks
    assert sent(bib) == 3 * november
