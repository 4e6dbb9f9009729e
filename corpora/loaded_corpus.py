"""What every corpus loader returns: blind items and truth as separate tables, plus load errors.

Item ids are unique within a corpus by construction (`unique_item_ids`) and `LoadedCorpus` checks
it: two items with one id would make a shard return two outputs for that id and fail every attempt.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa


@dataclass(frozen=True)
class LoadError:
    """A line or entry that could not be read; it is still audited as an errored item.

    `item_id` is None for a problem that lost no item (bad bytes in a comment, a refused path).
    """

    file: str
    line: int
    reason: str
    item_id: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass
class LoadedCorpus:
    name: str
    version: str
    split: str | None
    items: pa.Table
    truth: pa.Table
    errors: list[LoadError] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    """What the loader reports about the corpus beside its rows (paper audits: `corpus_report`, issue 21)."""

    def __post_init__(self) -> None:
        repeated = [i for i, n in Counter(self.items.column("item_id").to_pylist()).items() if n > 1]
        if repeated:
            raise ValueError(f"corpus '{self.name}': item ids must be unique, repeated: {sorted(repeated)[:10]}")

    @property
    def num_items(self) -> int:
        return self.items.num_rows


def file_version(path: Path) -> str:
    """A corpus version that changes whenever the file does: the first 12 hex of its SHA-256."""
    return hashlib.sha256(path.read_bytes()).hexdigest()[:12]


def corpus_file(path: str | Path) -> Path:
    """The corpus file a loader reads, or a clear error naming it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"corpus file not found: {path}")
    return path


def unique_item_ids(
    keys: Sequence[str | None], readable: Sequence[bool], synthetic: Sequence[str]
) -> tuple[list[str], dict[int, int]]:
    """One id per entry of a corpus file, no two alike, and the duplicates found.

    Readable entries claim their key in file order; a later readable entry whose key is taken is
    a duplicate (returned as {index: index of the first}) and must be loaded as an errored item.
    Unreadable entries and duplicates then get their key when nobody claimed it, else their
    synthetic id (`file:line`), suffixed `#2`, `#3`... when a real key already has that spelling.
    Readable keys are claimed first so that a good entry never loses its id to a bad one.
    """
    ids: list[str | None] = [None] * len(keys)
    owner: dict[str, int] = {}
    duplicates: dict[int, int] = {}
    for i, (key, ok) in enumerate(zip(keys, readable, strict=True)):
        if ok and key is not None:
            if key in owner:
                duplicates[i] = owner[key]
            else:
                owner[key] = i
                ids[i] = key
    for i, key in enumerate(keys):
        if ids[i] is not None:
            continue
        candidate = key if key is not None and key not in owner else synthetic[i]
        n, unique = 1, candidate
        while unique in owner:
            n += 1
            unique = f"{candidate}#{n}"
        owner[unique] = i
        ids[i] = unique
    return [i for i in ids if i is not None], duplicates


def unicode_error(data: bytes, exc: UnicodeDecodeError) -> str:
    """Why `data` is not UTF-8, pointing at the first bad byte (1-based column)."""
    return f"not UTF-8: byte 0x{data[exc.start]:02x} at column {exc.start + 1} cannot be decoded ({exc.reason})"
