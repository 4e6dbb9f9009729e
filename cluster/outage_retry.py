"""Retry shards: on resume, re-run exactly the items whose stored answer was an outage.

A source or provider outage leaves an item UNCERTAIN with `detail["outage_sources"]`
(storage/outages.py); its shard is finished, so resume alone would never ask again. When a run is
planned, the items whose current answer (`Store.read_outputs`, last attempt wins) is an outage
answer are grouped into retry shards of at most `shard_size` rows. Their ids follow the run's
regular shards: the lowest ids at or above `num_shards` with no shard file yet, so a retry shard
that failed (no file, a `failed/` record) is planned again under the same id and its success
clears that record. A retry shard's rows then supersede the outage rows; finished non-outage
answers are never recomputed nor paid again.
"""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa

from storage.outages import outage_item_ids
from storage.store import Store


def outage_retry_rows(store: Store, run_id: str, items: pa.Table, shard_size: int) -> list[tuple[int, ...]]:
    """Row numbers of `items` to retry, in item-table order, chunked by `shard_size`."""
    down = set(outage_item_ids(store.read_outputs(run_id)))
    if not down:
        return []
    rows = [row for row, item in enumerate(items.column("item_id").to_pylist()) if item in down]
    return [tuple(rows[i : i + shard_size]) for i in range(0, len(rows), shard_size)]


def retry_shard_ids(finished: set[int], num_shards: int) -> Iterator[int]:
    """Free shard ids for retry shards: from `num_shards` up, skipping ids that have a shard file."""
    shard_id = num_shards
    while True:
        if shard_id not in finished:
            yield shard_id
        shard_id += 1


def plan_outage_retries(store: Store, run_id: str, items: pa.Table, shard_size: int,
                        num_shards: int) -> list[tuple[int, tuple[int, ...]]]:  # fmt: skip
    """(shard_id, rows) of every retry shard this submission of the run must run."""
    chunks = outage_retry_rows(store, run_id, items, shard_size)
    if not chunks:
        return []
    ids = retry_shard_ids(store.finished_shards(run_id), num_shards)
    planned = [(next(ids), rows) for rows in chunks]
    retried = sum(len(rows) for rows in chunks)
    print(f"[resume] {retried} items answered during an outage: retrying them in {len(planned)} retry shards", flush=True)
    return planned
