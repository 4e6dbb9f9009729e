"""Answer files in the run's storage are read as written by an adversary (issue 26, item 12): a torn
gzip stream, a decompression bomb, a line that is not an entry, a wrong-typed field or a model answer
the gateway could not read is skipped whole and named (file, line, field), never read as an answer,
and the good files beside it are imported. And the shard worker exports what a shard paid for
while it runs: a shard whose system dies leaves its answers in storage; a finished one leaves its
one file."""

from __future__ import annotations

import asyncio
import gzip
import json

import pyarrow as pa
import pytest

import clients.answer_exchange as answer_exchange
from clients.answer_exchange import export_shard_answers, import_run_answers
from clients.llm_cache import LLMCache
from clients.llm_request import LLMRequest, LLMResponse
from clients.response_cache import record_touched
from cluster.shard_worker import ShardWorker
from cluster.shards import ShardTask
from storage.records import Item, Output
from storage.schemas import ITEM_SCHEMA, table_from_rows
from storage.store import Store
from verifiers.system import RunContext

REQUEST = LLMRequest("openai/replay-model", [{"role": "user", "content": "is this citation real?"}], {})


def _good_file(store: Store, tmp_path) -> str:
    node = tmp_path / "cache-good"
    record_touched(node)
    LLMCache(node).put(REQUEST, LLMResponse("paid answer", "m", 1, 1, 0.0, 0.1, "stop"))
    export_shard_answers(store, "run", 0, [node])
    (path,) = [p for p, _, _ in store.list_files("run", "answers")]
    return path


def _line(**value_changes) -> dict:
    value = {"source": "openai/replay-model", "request": "[]", "status": 200, "fetched_at": "2026-11-29T00:00:00+00:00",
             "content_type": "application/vnd.scrutineer.llm-response+json",
             "text": json.dumps(LLMResponse("x", "m", 1, 1).to_json())}  # fmt: skip
    return {"key": "a" * 64, "value": value | value_changes}


def _gz(*lines: object) -> bytes:
    return gzip.compress("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines).encode())


def test_hostile_answer_files_are_skipped_and_named_and_the_rest_imported(tmp_path, monkeypatch):
    store = Store(str(tmp_path / "runs"))
    good = _good_file(store, tmp_path)
    whole = store.read_bytes(good)
    hostile = {
        "shard-00001.jsonl.gz": (whole[: len(whole) // 2], "torn: the gzip stream stops after"),
        "shard-00002.jsonl.gz": (b"not gzip at all", "not a gzip stream"),
        "shard-00003.jsonl.gz": (_gz(_line(), "{not json"), ":2: invalid JSON"),
        "shard-00004.jsonl.gz": (_gz(["a", "list"]), ":1: expected a JSON object, got list"),
        "shard-00005.jsonl.gz": (_gz(_line() | {"key": "../../etc"}), ":1: 'key' is not a stored key"),
        "shard-00006.jsonl.gz": (_gz(_line(status="200")), ":1: 'value.status': Input should be a valid integer"),
        "shard-00007.jsonl.gz": (_gz(_line(extra=1)), ":1: 'value' must have exactly the fields"),
        "shard-00008.jsonl.gz": (_gz(_line(text="prose, not a model answer")), ":1: 'value.text' is not a model answer"),
        "shard-00009.jsonl.gz": (_gz(_line(text='{"text": "x", "evil": 1}')), ":1: 'value.text' is not a model answer"),
        "shard-00010.jsonl.gz": (gzip.compress(b"\n" * 5000), "inflates past 4096 bytes"),
    }
    monkeypatch.setattr(answer_exchange, "MAX_FILE_BYTES", 4096)  # a bomb, scaled down
    for name, (data, _) in hostile.items():
        store.write_file("run", f"answers/{name}", data)
    store.write_file("run", "answers/shard-00011.jsonl.gz.tmp-0123", b"half a write")  # a killed writer's temp file

    imported = import_run_answers(store, "run", tmp_path / "cache-b")
    assert imported.added == 1  # the good file's answer, and nothing of the hostile ones
    assert LLMCache(tmp_path / "cache-b", frozen=True).get(REQUEST).text == "paid answer"
    assert len(imported.skipped) == len(hostile), imported.skipped
    for (name, (_, reason)), skipped in zip(sorted(hostile.items()), imported.skipped, strict=True):
        assert name in skipped and reason in skipped, skipped
    assert LLMCache(tmp_path / "cache-b").get(LLMRequest("openai/replay-model", [{"role": "user", "content": "?"}], {})) is None
    assert import_run_answers(store, "run", tmp_path / "cache-b").skipped == ()  # each file named once per process


class PayingSystem:
    """Pays for one answer per item (into the run's cache, as the gateway does), then maybe dies."""

    name = "paying"

    def __init__(self, fail: bool) -> None:
        self.fail = fail

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        cache = LLMCache(ctx.cache_dir)
        for item in items:
            request = LLMRequest("openai/replay-model", [{"role": "user", "content": item.item_id}], {})
            cache.put(request, LLMResponse(f"answer for {item.item_id}", "m", 1, 1, 0.0, 0.1, "stop"))
            await asyncio.sleep(0)
        if self.fail:
            raise RuntimeError("the system died mid-shard")
        return [Output(i.item_id, "VALID", 0.9, "paid") for i in items]


def _shard(tmp_path, shard_id: int, fail: bool) -> tuple[ShardWorker, ShardTask, pa.Table]:
    items = table_from_rows([Item(f"item-{i}", "citation", "c", None, {}, "c.jsonl", i + 1).to_row() for i in range(5)],
                            ITEM_SCHEMA)  # fmt: skip
    context = RunContext("run", "2026-11-29", str(tmp_path / f"cache-{shard_id}"), {})
    task = ShardTask("run", "paying", "key", {"fail": fail}, context, shard_id, 0, 5)
    return ShardWorker(lambda spec: PayingSystem(**spec), str(tmp_path / "runs")), task, items


@pytest.mark.parametrize("fail", [True, False])
def test_a_shard_exports_its_answers_whether_it_finishes_or_dies(tmp_path, fail):
    worker, task, items = _shard(tmp_path, 3, fail)
    if fail:
        with pytest.raises(RuntimeError, match="died mid-shard"):
            asyncio.run(worker.run_shard(task, items))
    else:
        assert asyncio.run(worker.run_shard(task, items)).status == "done"
    store = Store(str(tmp_path / "runs"))
    names = [p.rsplit("/", 1)[1] for p, _, _ in store.list_files("run", "answers")]
    if fail:  # only batch files: the answers it paid for before it died
        assert names and all(n.startswith("shard-00003.part-") for n in names), names
    else:  # the shard's one file replaced its batch files
        assert names == ["shard-00003.jsonl.gz"]
    imported = import_run_answers(store, "run", tmp_path / "another-node")
    assert imported.added == 5 and imported.skipped == ()
