"""Turn (config, corpus, system specs) into runs in the store and the shard tasks that fill them.

Each system gets its own run, identified by (corpus@version, system@config-hash, snapshot); its
manifest records what the run is, so a later submission of the same config resumes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from cluster.outage_retry import plan_outage_retries
from cluster.run_config import RunConfig
from cluster.shards import ShardTask, plan_ranges
from storage.code_revision import code_revision
from storage.redaction import redact
from storage.run_id import make_run_id
from storage.schemas import SCHEMA_VERSION
from storage.store import Store


@dataclass(frozen=True)
class PlannedRun:
    run_id: str
    system_label: str
    spec: Any  # verifiers.SystemSpec (opaque here)
    manifest: dict[str, Any]


@dataclass(frozen=True)
class RunPlan:
    runs: list[PlannedRun]
    tasks: list[ShardTask]
    store: Store


def plan_run(config: RunConfig, corpus: Any, specs: list[Any], make_context: Callable[[str], Any]) -> RunPlan:
    store = Store(config.storage)
    revision = code_revision()
    runs, tasks = [], []
    ranges = plan_ranges(corpus.num_items, config.shard_size)
    for spec in specs:
        run_id = make_run_id(corpus.name, corpus.version, spec.display_name, spec.config_hash(), config.snapshot)
        manifest = redact(
            {
                "run_id": run_id,
                "schema_version": SCHEMA_VERSION,
                "corpus": {"name": corpus.name, "version": corpus.version, "split": corpus.split,
                           "path": config.corpus.path, "items": corpus.num_items, "unreadable": len(corpus.errors)},
                "system": {**spec.to_dict(), "config_hash": spec.config_hash()},
                "snapshot": config.snapshot,
                "shard_size": config.shard_size,
                "num_shards": len(ranges),
                "code_revision": revision,
                "config": config.model_dump(),
            }
        )  # fmt: skip
        stored = store.open_run(run_id, manifest)
        if stored.get("shard_size") != config.shard_size:
            raise ValueError(
                f"run {run_id} was started with shard_size {stored.get('shard_size')}; resume it with the same shard size"
            )
        if store.read_table(run_id, "items") is None:
            store.write_table(run_id, "items", corpus.items)
            store.write_table(run_id, "truth", corpus.truth)
        runs.append(PlannedRun(run_id, spec.display_name, spec, stored))
        context = make_context(run_id)
        tasks.extend(
            ShardTask(run_id, spec.display_name, spec.config_hash(), spec, context, shard_id, start, stop)
            for shard_id, start, stop in ranges
        )
        tasks.extend(  # items whose stored answer was an outage: retried, superseding those rows
            ShardTask(run_id, spec.display_name, spec.config_hash(), spec, context, shard_id, rows[0], rows[-1] + 1, rows)
            for shard_id, rows in plan_outage_retries(store, run_id, corpus.items, config.shard_size, len(ranges))
        )
    return RunPlan(runs, tasks, store)
