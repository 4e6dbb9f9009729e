"""Split a run's items into shards: contiguous ranges of the item table, the unit of work and of resume.

A *retry shard* (`cluster/outage_retry.py`) instead lists the rows it re-runs (`rows`): the items
whose stored answer was an outage, numbered after the run's regular shards."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ShardTask:
    """One shard of one system's run. `system_spec` and `context` are opaque here: the worker's
    builder turns the spec into a system and hands the context to `system.run`."""

    run_id: str
    system_label: str
    system_key: str  # config hash: a worker builds each system once and reuses it
    system_spec: Any
    context: Any
    shard_id: int
    start: int
    stop: int
    rows: tuple[int, ...] | None = None
    """Rows of the item table a retry shard re-runs (None: the range start..stop)."""

    @property
    def size(self) -> int:
        return len(self.rows) if self.rows is not None else self.stop - self.start


def plan_ranges(num_items: int, shard_size: int) -> list[tuple[int, int, int]]:
    """(shard_id, start, stop) for every shard; shard ids are stable for a given shard size."""
    if shard_size < 1:
        raise ValueError(f"shard_size must be >= 1, got {shard_size}")
    return [(i, start, min(start + shard_size, num_items)) for i, start in enumerate(range(0, num_items, shard_size))]
