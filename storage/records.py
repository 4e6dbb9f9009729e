"""Python views of the records in `schemas.py`, for code that builds or reads one row at a time."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from storage.redaction import redact_text

Label = Literal["VALID", "HALLUCINATED", "UNCERTAIN"]
LABELS: tuple[str, ...] = ("VALID", "HALLUCINATED", "UNCERTAIN")
ErrorKind = Literal["input", "provider", "parse", "outage", "system", "budget"]


@dataclass(frozen=True)
class Item:
    """One unit a system audits, blind: no truth travels with it."""

    item_id: str
    kind: str
    corpus: str
    split: str | None
    payload: dict[str, Any]
    source: str | None = None
    source_line: int | None = None
    load_error: str | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Item:
        payload = json.loads(row["payload_json"]) if row.get("payload_json") else {}
        return cls(
            item_id=row["item_id"],
            kind=row["kind"],
            corpus=row["corpus"],
            split=row.get("split"),
            payload=payload,
            source=row.get("source"),
            source_line=row.get("source_line"),
            load_error=row.get("load_error"),
        )

    def to_row(self) -> dict[str, Any]:
        row = asdict(self)
        row["payload_json"] = json.dumps(row.pop("payload"), sort_keys=True, ensure_ascii=False)
        return row


@dataclass
class Output:
    """What a system said about one item. `error` set means no verdict, never a default label."""

    item_id: str
    label: str | None = None
    confidence: float | None = None
    reason: str | None = None
    predicted_type: str | None = None
    subtests: dict[str, Any] | None = None
    detail: dict[str, Any] | None = None
    api_sources_queried: list[str] = field(default_factory=list)
    api_calls: int = 0
    model_id: str | None = None
    prompt_hash: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None
    latency_s: float | None = None
    cache_hits: int = 0
    error: str | None = None
    error_kind: str | None = None

    def __post_init__(self) -> None:
        if self.error is None and self.label is None and self.detail is not None:
            return  # a review: its findings are flags in `detail`, it carries no label
        if self.error is None:
            if self.label not in LABELS:
                raise ValueError(f"item {self.item_id}: label must be one of {LABELS}, got {self.label!r}")
            if self.confidence is None or not 0.0 <= self.confidence <= 1.0:
                raise ValueError(f"item {self.item_id}: confidence must be in [0, 1], got {self.confidence!r}")
        elif self.label is not None:
            raise ValueError(f"item {self.item_id}: an errored output carries no label")

    @classmethod
    def failed(cls, item_id: str, error: str, kind: str = "system") -> Output:
        return cls(item_id=item_id, error=error, error_kind=kind)

    def to_row(self, run_id: str, system: str, shard_id: int) -> dict[str, Any]:
        row = asdict(self)
        # An error or reason may quote a URL with credentials (an exception naming api_base).
        row["error"], row["reason"] = redact_text(row["error"]), redact_text(row["reason"])
        row["subtests_json"] = _dumps(row.pop("subtests"))
        row["detail_json"] = _dumps(row.pop("detail"))
        row.update(run_id=run_id, system=system, shard_id=shard_id)
        return row


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)
