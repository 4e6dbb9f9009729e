"""Answers a shard paid for travel through the run's storage (local disk and a real S3 API, moto
server): exported while they arrive (batch files of an `AnswerFlusher`) and per shard (only the
entries it touched), imported once into another node's cache, keys unchanged, per run."""

from __future__ import annotations

import gzip
import time

import pytest

from clients.answer_exchange import AnswerFlusher, export_shard_answers, import_run_answers
from clients.llm_cache import LLMCache
from clients.llm_request import LLMRequest, LLMResponse
from clients.response_cache import CachedResponse, ResponseCache, drain_touched, record_touched, request_key
from storage.store import Store
from tests.helpers.s3_server import STORE_BACKENDS, file_or_s3_store

MSG = [{"role": "user", "content": "is this citation real?"}]
SCOPE = "snapshot:2026-11-29"


@pytest.fixture(params=STORE_BACKENDS)
def store(request, tmp_path, monkeypatch) -> Store:
    return file_or_s3_store(request, tmp_path, monkeypatch, "answers")


def test_export_import_round_trip_keeps_keys_and_touched_entries_only(store, tmp_path):
    node_a, node_b = tmp_path / "cache-a", tmp_path / "cache-b"
    record_touched(node_a)
    llm_a, sources_a = LLMCache(node_a), ResponseCache(node_a, scope=SCOPE)
    requests = [LLMRequest("openai/replay-model", MSG, {"temperature": t}) for t in (0.0, 0.5, 0.9)]
    for i, request in enumerate(requests):
        llm_a.put(request, LLMResponse(f"answer {i}", "replay-model", 10, 2, 0.01, 0.3, "stop"), variant="http://x/v1")
    digest, readable = request_key("crossref", "GET", "/works", {"query": "attention"})
    sources_a.put(CachedResponse("crossref", readable, 200, "application/json", '{"items": []}', "2026-11-29T00:00:00+00:00"), digest)
    assert export_shard_answers(store, "run-1", 0, [node_a]) == 4

    # the next shard touches one answer (a hit): its export holds that entry alone
    assert llm_a.get(requests[1], variant="http://x/v1").text == "answer 1"
    assert export_shard_answers(store, "run-1", 1, [node_a]) == 1
    assert export_shard_answers(store, "run-1", 2, [node_a]) == 0  # nothing touched: no file
    files = [p for p, _, _ in store.list_files("run-1", "answers")]
    assert [p.rsplit("/", 1)[1] for p in files] == ["shard-00000.jsonl.gz", "shard-00001.jsonl.gz"]

    assert import_run_answers(store, "run-1", node_b).added == 4  # node B never saw them
    assert import_run_answers(store, "run-1", node_b).added == 0  # once per process
    llm_b = LLMCache(node_b, frozen=True)  # frozen: a miss would raise, so these are real hits
    assert [llm_b.get(r, variant="http://x/v1").text for r in requests] == ["answer 0", "answer 1", "answer 2"]
    assert llm_b.get(requests[0], variant="http://x/v1").cached
    hit = ResponseCache(node_b, frozen=True, scope=SCOPE).get("crossref", digest, readable)
    assert hit is not None and hit.text == '{"items": []}' and hit.fetched_at == "2026-11-29T00:00:00+00:00"
    assert ResponseCache(node_b, scope="snapshot:2026-12-01").get("crossref", digest, readable) is None  # scope stays in the key

    assert import_run_answers(store, "another-run", tmp_path / "cache-c").added == 0  # the export is per run


def test_only_recorded_directories_collect_touched_keys(tmp_path):
    request = LLMRequest("openai/replay-model", MSG, {})
    LLMCache(tmp_path / "driver").put(request, LLMResponse("a", "m", 1, 1, 0.0, 0.1, "stop"))
    assert drain_touched(tmp_path / "driver") == set()  # never recorded: nothing kept in memory
    record_touched(tmp_path / "worker")
    LLMCache(tmp_path / "worker").put(request, LLMResponse("a", "m", 1, 1, 0.0, 0.1, "stop"))
    assert drain_touched(tmp_path / "worker") == {request.cache_key()}
    assert drain_touched(tmp_path / "worker") == set()


def test_import_keeps_local_entries_and_names_a_bad_line(store, tmp_path):
    node_a, node_b = tmp_path / "cache-a", tmp_path / "cache-b"
    record_touched(node_a)
    request = LLMRequest("openai/replay-model", MSG, {})
    LLMCache(node_a).put(request, LLMResponse("exported", "m", 1, 1, 0.0, 0.1, "stop"))
    export_shard_answers(store, "run-2", 3, [node_a])
    LLMCache(node_b).put(request, LLMResponse("local", "m", 1, 1, 0.0, 0.1, "stop"))
    assert import_run_answers(store, "run-2", node_b).added == 0
    assert LLMCache(node_b).get(request).text == "local"

    # a bad file is skipped whole and named with its line and field; the good ones are imported
    store.write_file("run-2", "answers/shard-00004.jsonl.gz", gzip.compress(b'{"key": "k", "value": {"text": 1}}\n'))
    imported = import_run_answers(store, "run-2", tmp_path / "cache-c")
    assert imported.added == 1
    assert len(imported.skipped) == 1 and "shard-00004.jsonl.gz:1: 'key' is not a stored key" in imported.skipped[0]
    assert LLMCache(tmp_path / "cache-c").get(request).text == "exported"


def _wait_for(condition, what: str, timeout: float = 60.0) -> None:
    """Poll until `condition()` (a generous limit: the machine may be loaded)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what} after {timeout:.0f}s"
        time.sleep(0.02)


def _parts(store: Store, run_id: str) -> list[str]:
    return [p for p, _, _ in store.list_files(run_id, "answers") if ".part-" in p]


def _pay(cache: LLMCache, n: int, start: int = 0) -> list[LLMRequest]:
    requests = [LLMRequest("openai/replay-model", [{"role": "user", "content": f"question {i}"}], {})
                for i in range(start, start + n)]  # fmt: skip
    for i, request in enumerate(requests, start):
        cache.put(request, LLMResponse(f"answer {i}", "m", 1, 1, 0.0, 0.1, "stop"))
    return requests


def test_the_flusher_exports_answers_while_they_arrive_and_on_close(store, tmp_path):
    node_a = tmp_path / "cache-a"
    cache = LLMCache(node_a)
    flusher = AnswerFlusher(store, "run-3/answers", "shard-00007", [node_a], batch=8, interval_s=3600).start()
    _pay(cache, 8)  # a full batch goes at once, long before the interval
    # the file lands before the thread counts it: wait for both (under load the count came a moment later)
    _wait_for(lambda: len(_parts(store, "run-3")) == 1 and flusher.exported == 8, "the first batch file, counted")
    _pay(cache, 3, start=8)  # less than a batch: waits for the interval, or for close
    assert flusher.close() == 11
    parts = _parts(store, "run-3")
    assert len(parts) == 2 and all(p.rsplit("/", 1)[1].startswith("shard-00007.part-") for p in parts)
    assert import_run_answers(store, "run-3", tmp_path / "cache-b").added == 11  # a killed worker's answers
    hit = LLMCache(tmp_path / "cache-b", frozen=True).get(_pay(LLMCache(tmp_path / "scratch"), 1, start=9)[0])
    assert hit is not None and hit.text == "answer 9"

    # once the shard's own file holds them, the batch files go; the final file stays
    record_touched(node_a)
    cache.get(LLMRequest("openai/replay-model", [{"role": "user", "content": "question 0"}], {}))
    export_shard_answers(store, "run-3", 7, [node_a])
    flusher.discard_parts()
    assert [p.rsplit("/", 1)[1] for p, _, _ in store.list_files("run-3", "answers")] == ["shard-00007.jsonl.gz"]


def test_the_flusher_writes_a_lone_answer_after_the_interval(tmp_path):
    store = Store(str(tmp_path / "runs"))
    cache = LLMCache(tmp_path / "cache")
    with AnswerFlusher(store, "run-4/answers", "shard-00000", [tmp_path / "cache"], batch=1000, interval_s=0.1):
        _pay(cache, 1)
        _wait_for(lambda: len(_parts(store, "run-4")) == 1, "the lone answer's batch file")
        with pytest.raises(RuntimeError, match="already being exported"):  # one flusher per cache directory
            AnswerFlusher(store, "run-4/answers", "shard-00001", [tmp_path / "cache"]).start()


def test_a_failed_batch_write_keeps_its_answers_for_the_next(tmp_path, monkeypatch):
    store = Store(str(tmp_path / "runs"))
    cache = LLMCache(tmp_path / "cache")
    real_write, calls = store.write_file, []

    def flaky_write(*args):
        calls.append(args)
        if len(calls) == 1:
            raise OSError("storage unavailable")
        return real_write(*args)

    monkeypatch.setattr(store, "write_file", flaky_write)
    flusher = AnswerFlusher(store, "run-5/answers", "shard-00000", [tmp_path / "cache"], batch=2, interval_s=3600)
    flusher.start()
    _pay(cache, 2)
    _wait_for(lambda: flusher.failures == 1, "the failed write")
    _pay(cache, 2, start=2)  # the next batch carries the kept answers too
    _wait_for(lambda: flusher.exported == 4, "the retried batch")
    flusher.close()
    assert len(_parts(store, "run-5")) == 1
    assert import_run_answers(store, "run-5", tmp_path / "cache-b").added == 4


def test_a_file_deleted_after_the_listing_is_passed_over(store, tmp_path, monkeypatch):
    node_a = tmp_path / "cache-a"
    with AnswerFlusher(store, "run-6/answers", "shard-00000", [node_a]) as flusher:
        _pay(LLMCache(node_a), 2)
    listed = store.list_files("run-6", "answers")
    flusher.discard_parts()  # as a finished shard does while another worker imports
    monkeypatch.setattr(store, "list_files", lambda *_: listed)
    imported = import_run_answers(store, "run-6", tmp_path / "cache-b")
    assert imported.added == 0 and imported.skipped == ()
