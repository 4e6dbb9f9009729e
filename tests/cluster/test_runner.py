"""The shard runner on a real Ray head: outputs, resume, worker death, exhausted retries."""

from __future__ import annotations

import functools
import json

import pytest

from cluster.runner import PoolConfig, run_shard_tasks
from cluster.shards import ShardTask, plan_ranges
from storage.records import Item
from storage.schemas import ITEM_SCHEMA, table_from_rows
from storage.store import Store
from verifiers import RunContext, SystemSpec, build_system

PLUGIN = ("tests.helpers.scripted_system",)
BUILD = functools.partial(build_system, plugins=PLUGIN)


def make_items(n: int):
    rows = [Item(f"item-{i:03d}", "citation", "toy", None, {"fields": {"title": f"T{i}"}}).to_row() for i in range(n)]
    return table_from_rows(rows, ITEM_SCHEMA)


def make_tasks(run_id: str, spec: SystemSpec, n: int, shard_size: int) -> list[ShardTask]:
    ctx = RunContext(run_id, "2026-01-01")
    return [ShardTask(run_id, "scripted", spec.config_hash(), spec, ctx, s, a, b) for s, a, b in plan_ranges(n, shard_size)]


def calls(log) -> list[str]:
    return [line.split()[1] for line in log.read_text().splitlines()] if log.exists() else []


def test_runs_every_shard_then_resume_skips_them(ray_session, tmp_path):
    log = tmp_path / "calls.log"
    spec = SystemSpec("scripted", {"call_log": str(log)})
    items, store_uri = make_items(23), str(tmp_path / "runs")
    tasks = make_tasks("r1", spec, 23, 5)

    first = run_shard_tasks(tasks, items, build=BUILD, store_uri=store_uri, pool=PoolConfig(workers=2))
    assert first.complete and len(first.done) == 5 and first.skipped == 0
    outputs = Store(store_uri).read_outputs("r1")
    assert sorted(outputs.column("item_id").to_pylist()) == [f"item-{i:03d}" for i in range(23)]
    assert len(calls(log)) == 23

    again = run_shard_tasks(tasks, items, build=BUILD, store_uri=store_uri, pool=PoolConfig(workers=2))
    assert again.skipped == 5 and again.done == []
    assert len(calls(log)) == 23  # nothing recomputed


def test_dead_worker_is_replaced_and_its_shard_retried(ray_session, tmp_path):
    log, marker = tmp_path / "calls.log", tmp_path / "died"
    spec = SystemSpec("scripted", {"call_log": str(log), "die_once_on": "item-007", "die_marker": str(marker)})
    store_uri = str(tmp_path / "runs")
    outcome = run_shard_tasks(make_tasks("r2", spec, 20, 5), make_items(20), build=BUILD, store_uri=store_uri,
                              pool=PoolConfig(workers=2))  # fmt: skip
    assert marker.exists()
    assert outcome.complete and outcome.worker_replacements == 1
    ids = Store(store_uri).read_outputs("r2").column("item_id").to_pylist()
    assert sorted(ids) == [f"item-{i:03d}" for i in range(20)]  # no duplicate, none missing


def test_shard_that_keeps_failing_is_recorded_not_dropped(ray_session, tmp_path):
    spec = SystemSpec("scripted", {"raise_on": ["item-012"]})
    store_uri = str(tmp_path / "runs")
    outcome = run_shard_tasks(make_tasks("r3", spec, 20, 5), make_items(20), build=BUILD, store_uri=store_uri,
                              pool=PoolConfig(workers=2, max_attempts=2))  # fmt: skip
    assert not outcome.complete
    assert list(outcome.failed) == [("r3", 2)]
    store = Store(store_uri)
    assert store.finished_shards("r3") == {0, 1, 3}
    record = store.failed_shards("r3")[2]
    assert record["attempts"] == 2 and "scripted failure on item-012" in record["error"]
    assert json.loads(json.dumps(record))["shard_id"] == 2


def test_plan_ranges_covers_items_once():
    ranges = plan_ranges(101, 25)
    assert [(a, b) for _, a, b in ranges] == [(0, 25), (25, 50), (50, 75), (75, 100), (100, 101)]
    with pytest.raises(ValueError):
        plan_ranges(10, 0)
