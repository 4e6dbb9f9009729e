"""What every corpus loader returns: blind items and truth as separate tables, plus load errors."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa


@dataclass(frozen=True)
class LoadError:
    """A line or entry that could not be read; it is still audited as an errored item."""

    file: str
    line: int
    reason: str
    item_id: str

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
