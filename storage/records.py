"""Python views of the records in `schemas.py`, for code that builds or reads one row at a time,
and the typed records that cross rooms: `SystemSpec` (a system as configured), `PaperReview` (the
detail of a paper reviewer's output), read from an output with `Output.detail_as(Model)`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, TypeVar, get_args

from pydantic import BaseModel, ConfigDict

from storage.redaction import redact_text

Label = Literal["VALID", "HALLUCINATED", "UNCERTAIN"]
LABELS: tuple[str, ...] = get_args(Label)
ErrorKind = Literal["input", "provider", "parse", "outage", "system", "budget"]
ERROR_KINDS: tuple[str, ...] = get_args(ErrorKind)

DetailModel = TypeVar("DetailModel", bound=BaseModel)


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
    label: Label | None = None
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
    error_kind: ErrorKind | None = None

    def __post_init__(self) -> None:
        if self.error_kind is not None and self.error_kind not in ERROR_KINDS:
            raise ValueError(f"item {self.item_id}: error_kind must be one of {ERROR_KINDS}, got {self.error_kind!r}")
        if self.label is not None and self.label not in LABELS:
            raise ValueError(f"item {self.item_id}: label must be one of {LABELS}, got {self.label!r}")
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
    def failed(cls, item_id: str, error: str, kind: ErrorKind = "system") -> Output:
        return cls(item_id=item_id, error=error, error_kind=kind)

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Output:
        """An output from a stored row (`OUTPUT_SCHEMA` columns; the run's own columns are dropped)."""
        names = {f for f in cls.__dataclass_fields__ if f not in ("subtests", "detail")}
        values = {k: v for k, v in row.items() if k in names and v is not None}
        return cls(**values, subtests=_loads(row.get("subtests_json")), detail=_loads(row.get("detail_json")))

    def detail_as(self, model: type[DetailModel]) -> DetailModel:
        """A typed view of `detail`; raises pydantic's ValidationError naming the item and field."""
        try:
            return model.model_validate(self.detail or {})
        except ValueError as exc:
            raise ValueError(f"item {self.item_id}: detail is not a {model.__name__}: {exc}") from exc

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


def _loads(value: str | None) -> Any:
    return None if value is None else json.loads(value)


@dataclass(frozen=True)
class SystemSpec:
    """A system as configured: registry name plus factory arguments. `label` tells two
    configurations of one family apart in reports (defaults to the name).

    The data only: which arguments are runtime ones (left out of run identity) and what answered
    besides the arguments are the registry's knowledge (`verifiers.registry.SystemSpec` fills
    `runtime_arg_names` and `provenance`)."""

    name: str
    args: dict[str, Any] = field(default_factory=dict)
    label: str | None = None

    @property
    def display_name(self) -> str:
        return self.label or self.name

    def runtime_arg_names(self) -> Collection[str]:
        """Arguments that do not change answers (none known here)."""
        return ()

    def unhashed_defaults(self) -> dict[str, Any]:
        """Arguments left out of the hash when written at this value (none known here)."""
        return {}

    def config_hash(self) -> str:
        """Hash of what changes the answers: the name and the arguments, less `runtime_arg_names()`
        (not the label either), so raising concurrency or renaming resumes the run. An argument
        added to a system after runs were recorded is left out when written at its default
        (`unhashed_defaults()`), so writing the default explicitly keeps the run id."""
        runtime = set(self.runtime_arg_names())
        quiet = self.unhashed_defaults()
        args = {k: v for k, v in self.args.items() if k not in runtime and not (k in quiet and quiet[k] == v)}
        canonical = json.dumps({"name": self.name, "args": args}, sort_keys=True, default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()[:12]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "args": self.args, "label": self.label}

    def provenance(self) -> dict[str, Any]:
        """What answered besides the arguments (none known here)."""
        return {}


PromptStyle = Literal["free_form", "concise_structured", "structured", "mechanical", "imported", "control"]
"""How a paper review was made: an LLM prompt, the mechanical reviewer, an imported file, a control."""

QUOTE_MAX_CHARS = 400
"""Longest flag quote that locates an error (about three sentences); a longer one points everywhere
(issue 21: applied by `adjudication.papers.quote_match`, quoted by the paper report)."""
QUOTE_MIN_CHARS = 8
"""Fewest non-space characters of a flag quote that locates an error; a shorter one is a bare token."""
CALIBRATION_MAX_CREDIT = 0.05
"""A judge crediting more than this share of one control's injections is uncalibrated (issue 21:
applied by `adjudication.papers.calibration`, quoted by the paper report)."""


class PaperReview(BaseModel):
    """The detail of a paper reviewer's output: the review, how it was made and its flags (each a
    quote, location, type and description). Reviewers add their own keys (`flags_from`,
    `shown_spans`, check outcomes, ...): kept, after these three, in the order given."""

    model_config = ConfigDict(extra="allow")

    review_text: str
    prompt_style: PromptStyle
    flags: list[dict[str, Any]]

    def to_detail(self) -> dict[str, Any]:
        """The detail as stored: these three keys, then the reviewer's own in the order given."""
        return self.model_dump()

    @property
    def shown_spans(self) -> list[dict[str, Any]] | None:
        """The source ranges the reviewer was shown; None: it saw the whole copy (or did not say)."""
        spans = (self.model_extra or {}).get("shown_spans")
        return spans if isinstance(spans, list) else None

    @property
    def found_nothing(self) -> bool:
        """No flag, and nothing a judge could read: a mechanical review's findings are its flags."""
        return not self.flags and (self.prompt_style == "mechanical" or not self.review_text.strip())
