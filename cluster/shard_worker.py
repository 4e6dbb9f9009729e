"""The Ray worker actor: builds each system once, runs shards, writes each shard's outputs atomically.

The row contract is enforced here, once for every system: exactly one Output per input item.
An item the system returned nothing for becomes an errored Output (nothing is dropped); an
output for an unknown or repeated item is a contract violation that fails the shard.

Before a shard the worker imports the run's exported answers into its node's response cache; while
it runs, an `AnswerFlusher` exports each paid answer within a fraction of a second (so a SIGKILL
loses only the calls on the wire); after it, it exports the entries the shard touched next to the
outputs and deletes its batch files (`clients/answer_exchange.py`).
"""

from __future__ import annotations

import logging
import posixpath
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from clients.answer_exchange import (
    ANSWERS_FOLDER,
    AnswerFlusher,
    export_shard_answers,
    import_run_answers,
    record_touched,
    shard_answers_name,
)
from cluster.shards import ShardTask
from storage.records import Item, Output
from storage.schemas import OUTPUT_SCHEMA, table_from_rows
from storage.store import Store

BUDGET_ERROR_KIND = "budget"
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ShardResult:
    run_id: str
    shard_id: int
    status: str  # done | budget
    items: int
    errored: int
    seconds: float
    uncertain: int = 0
    """Items answered UNCERTAIN (outages included)."""
    outage: int = 0
    """Items whose answer depended on a source that got no answer (see verifiers/citations/source_set.py)."""


class ShardWorker:
    """Held by a Ray actor; plain class so it also runs in-process in tests and benchmarks."""

    def __init__(self, build: Callable[[Any], Any], store_uri: str) -> None:
        self._build = build
        self._store = Store(store_uri)
        self._systems: dict[str, Any] = {}

    async def run_shard(self, task: ShardTask, items: pa.Table) -> ShardResult:
        started = time.monotonic()
        directories = cache_directories(task.context)
        for directory in directories:  # answers other nodes paid for in this run (a lost node's too)
            record_touched(directory)
            imported = import_run_answers(self._store, task.run_id, directory)
            for skipped in imported.skipped:
                log.warning("shard %d: answer file skipped: %s", task.shard_id, skipped)
        system = self._systems.get(task.system_key)
        if system is None:
            system = self._systems[task.system_key] = self._build(task.system_spec)
        rows = items.take(list(task.rows)) if task.rows is not None else items.slice(task.start, task.size)
        batch = [Item.from_row(r) for r in rows.to_pylist()]
        # Each answer reaches the run's storage while the shard runs: a killed worker loses only the
        # calls on the wire, and the next attempt (on any node) imports the rest.
        flusher = AnswerFlusher(self._store, posixpath.join(task.run_id, ANSWERS_FOLDER),
                                shard_answers_name(task.shard_id), directories)  # fmt: skip
        with flusher:
            outputs = await system.run(batch, task.context)
        outputs = enforce_one_output_per_item(batch, outputs, task.system_label)
        # What the shard paid for or used goes next to its outputs, before the outputs: a shard file
        # then always has its answers in storage, for any node that redoes or replays the run.
        export_shard_answers(self._store, task.run_id, task.shard_id, directories)
        flusher.discard_parts()  # the shard's answer file holds every batch's answers
        if any(o.error_kind == BUDGET_ERROR_KIND for o in outputs):
            # Not persisted: the shard is redone on resume (its paid answers are in the response cache,
            # and what it paid is in the run's budget ledger, which a resumed run reads back).
            return ShardResult(task.run_id, task.shard_id, "budget", 0, 0, time.monotonic() - started)
        table = table_from_rows([o.to_row(task.run_id, task.system_label, task.shard_id) for o in outputs], OUTPUT_SCHEMA)
        self._store.write_shard(task.run_id, task.shard_id, table)
        errored = sum(o.error is not None for o in outputs)
        uncertain = sum(o.error is None and o.label == "UNCERTAIN" for o in outputs)
        outage = sum(bool((o.detail or {}).get("outage_sources")) for o in outputs)
        return ShardResult(task.run_id, task.shard_id, "done", len(outputs), errored, time.monotonic() - started,
                           uncertain, outage)  # fmt: skip

    def ping(self) -> bool:
        return True


def cache_directories(context: Any) -> list[str]:
    """The response-cache directories a shard's context names (the run's and its services')."""
    services = getattr(context, "services", None)
    found = [getattr(context, "cache_dir", None), getattr(services, "cache_dir", None)]
    return list(dict.fromkeys(d for d in found if d))


def enforce_one_output_per_item(items: list[Item], outputs: list[Output], system: str) -> list[Output]:
    expected = {i.item_id for i in items}
    by_id: dict[str, Output] = {}
    for out in outputs:
        if out.item_id not in expected:
            raise ValueError(f"system '{system}' returned an output for unknown item '{out.item_id}'")
        if out.item_id in by_id:
            raise ValueError(f"system '{system}' returned two outputs for item '{out.item_id}'")
        by_id[out.item_id] = out
    return [
        by_id.get(i.item_id) or Output.failed(i.item_id, f"system '{system}' returned no output for this item", "system")
        for i in items
    ]
