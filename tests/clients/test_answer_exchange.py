"""Answers a shard paid for travel through the run's storage (local disk and a real S3 API, moto
server): exported per shard (only the entries it touched), imported once into another node's cache,
keys unchanged, per run."""

from __future__ import annotations

import gzip

import pytest

from clients.answer_exchange import export_shard_answers, import_run_answers
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

    assert import_run_answers(store, "run-1", node_b) == 4  # node B never saw them
    assert import_run_answers(store, "run-1", node_b) == 0  # once per process
    llm_b = LLMCache(node_b, frozen=True)  # frozen: a miss would raise, so these are real hits
    assert [llm_b.get(r, variant="http://x/v1").text for r in requests] == ["answer 0", "answer 1", "answer 2"]
    assert llm_b.get(requests[0], variant="http://x/v1").cached
    hit = ResponseCache(node_b, frozen=True, scope=SCOPE).get("crossref", digest, readable)
    assert hit is not None and hit.text == '{"items": []}' and hit.fetched_at == "2026-11-29T00:00:00+00:00"
    assert ResponseCache(node_b, scope="snapshot:2026-12-01").get("crossref", digest, readable) is None  # scope stays in the key

    assert import_run_answers(store, "another-run", tmp_path / "cache-c") == 0  # the export is per run


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
    assert import_run_answers(store, "run-2", node_b) == 0
    assert LLMCache(node_b).get(request).text == "local"

    store.write_file("run-2", "answers/shard-00004.jsonl.gz", gzip.compress(b'{"key": "k", "value": {"text": 1}}\n'))
    with pytest.raises(ValueError, match=r"shard-00004\.jsonl\.gz:1: expected"):
        import_run_answers(store, "run-2", tmp_path / "cache-c")
