"""Outage answers in stored outputs, and which stored row is an item's answer.

An item whose answer depended on a source or provider that was down is stored as UNCERTAIN with
`detail["outage_sources"]` listing what was down (`bib:crossref`-style source names, or
`llm:<model>` for a model provider). Such a row is not a verdict: the run stays incomplete, its
scores are withheld (unless overridden) and a resumed run retries the item in a *retry shard*
whose row supersedes the outage row. Shard files keep every attempt (the audit trail); readers
see one row per item, the one from the highest shard id (retry shards are numbered after the
run's regular shards, so the latest attempt wins).
"""

from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

OUTAGE_KEY = "outage_sources"
"""The `Output.detail` key that marks an outage answer (a non-empty list of source names)."""


def outage_sources(detail: dict[str, Any] | str | None) -> list[str]:
    """The sources an answer's detail (a dict, or the stored `detail_json`) names as down; [] for
    an answer that did not depend on an outage."""
    if isinstance(detail, str):
        try:
            detail = json.loads(detail)
        except json.JSONDecodeError:
            return []
    if not isinstance(detail, dict):
        return []
    sources = detail.get(OUTAGE_KEY)
    return [str(s) for s in sources] if isinstance(sources, list) else []


def outage_mask(outputs: pa.Table) -> list[bool]:
    """Per row of an Output table: is it an outage answer?"""
    if "detail_json" not in outputs.column_names:
        return [False] * outputs.num_rows
    return [bool(outage_sources(d)) for d in outputs.column("detail_json").to_pylist()]


def outage_item_ids(outputs: pa.Table) -> list[str]:
    """Item ids whose (current) answer is an outage answer, in table order."""
    ids = outputs.column("item_id").to_pylist()
    return [item for item, down in zip(ids, outage_mask(outputs), strict=True) if down]


def latest_per_item(outputs: pa.Table) -> pa.Table:
    """One row per item: the last row of each item in table order (the caller orders rows by shard
    id, so a retry shard's answer supersedes the outage row it replaces). Item order is kept as
    first seen, so a run without retries reads back unchanged."""
    if outputs.num_rows == 0:
        return outputs
    ids = outputs.column("item_id").to_pylist()
    last: dict[str, int] = {}
    for row, item in enumerate(ids):
        last[item] = row
    if len(last) == len(ids):
        return outputs
    keep = [last[item] for item in dict.fromkeys(ids)]
    return outputs.take(pa.array(keep, pa.int64()))


def count_rows_per_item(outputs: pa.Table) -> int:
    """How many items have more than one row (0 for any table `latest_per_item` returned)."""
    if outputs.num_rows == 0:
        return 0
    counts = pc.value_counts(outputs.column("item_id"))
    return sum(1 for c in counts.field("counts").to_pylist() if c > 1)
