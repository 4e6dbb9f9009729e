"""Read HALLMARK JSONL files into our records: entries -> TRUTH table, predictions -> OUTPUT table.

Two prediction formats are accepted, detected per line:

- HALLMARK `Prediction` lines: `bibtex_key`, `label`, `confidence`, and optionally `reason`,
  `subtest_results`, `api_sources_queried`, `wall_clock_seconds`, `api_calls`, `source`,
  `predicted_type`.
- HALLMARK per-entry dumps: `bibtex_key`, `pred_label`, `pred_confidence`, and optionally
  `pred_type`, `gold_label`, `gold_type`, `difficulty_tier`, `cascade_stage`, `source`, plus
  tool-specific diagnostics under a declared prefix (default `btu_`, bibtex-updater's).

Anything else is rejected: an unknown key, a label outside VALID/HALLUCINATED/UNCERTAIN, a
confidence outside [0, 1], a duplicate key or a line that is not a JSON object raises
`PredictionFileError` naming the file and the 1-based line. Entries whose key starts with
`__canary__` (HALLMARK's canaries) are dropped, as HALLMARK's loader does.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from storage.jsonl import JsonlError, read_jsonl
from storage.schemas import OUTPUT_SCHEMA, TRUTH_SCHEMA, table_from_rows

CANARY_PREFIX = "__canary__"
LABELS = ("VALID", "HALLUCINATED", "UNCERTAIN")
PREDICTION_KEYS = frozenset(
    {"bibtex_key", "label", "confidence", "reason", "subtest_results", "api_sources_queried",
     "wall_clock_seconds", "api_calls", "source", "predicted_type"}
)
PER_ENTRY_KEYS = frozenset(
    {"bibtex_key", "pred_label", "pred_confidence", "pred_type", "gold_label", "gold_type", "difficulty_tier",
     "cascade_stage", "source", "reason"}
)
DEFAULT_EXTRA_PREFIXES: tuple[str, ...] = ("btu_",)
_ENTRY_TRUTH_KEYS = ("bibtex_key", "label", "hallucination_type", "difficulty_tier", "subtests")
_ENTRY_EXTRA_KEYS = ("generation_method", "source", "source_conference", "publication_date", "added_to_benchmark")


class PredictionFileError(ValueError):
    """A prediction or entries file that cannot be scored; the message names file and line."""


@dataclass(frozen=True)
class PredictionFile:
    """Predictions read from one file, as an OUTPUT_SCHEMA table, with what the file said about itself."""

    outputs: pa.Table
    format: str  # "prediction" | "per_entry"
    gold_labels: dict[str, str]  # per-entry files carry the gold label they were scored against
    total_wall_clock_seconds: float
    total_api_calls: int
    api_calls_known: bool = False
    """Whether any line said how many API calls it made (`api_calls`, or `btu_api_sources`, one call a
    source, as HALLMARK counted for bibtex-updater); when none did, mean_api_calls is null, not 0."""
    btu_status: dict[str, int] | None = None
    """bibtex-updater's status histogram (HALLMARK's `_btu_status_histogram`) when the file has `btu_status`."""


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        yield from read_jsonl(path)
    except JsonlError as exc:
        raise PredictionFileError(str(exc)) from None


def read_entries(path: str | Path) -> pa.Table:
    """A HALLMARK split file (entries with ground truth) as a TRUTH_SCHEMA table, file order kept."""
    path = Path(path)
    rows: list[dict[str, Any]] = []
    seen: set[str] = set()
    for lineno, e in _lines(path):
        key = e.get("bibtex_key")
        if not isinstance(key, str) or not key:
            raise PredictionFileError(f"{path}:{lineno}: entry without a bibtex_key")
        if key.startswith(CANARY_PREFIX):
            continue
        if key in seen:
            raise PredictionFileError(f"{path}:{lineno}: duplicate entry {key!r}")
        seen.add(key)
        label = e.get("label")
        if label not in ("VALID", "HALLUCINATED", None):
            raise PredictionFileError(f"{path}:{lineno}: entry {key!r} has label {label!r}")
        hallucinated = label == "HALLUCINATED"
        rows.append(
            dict(
                item_id=key,
                label=label,
                hallucination_type=e.get("hallucination_type") if hallucinated else None,
                difficulty_tier=e.get("difficulty_tier") if hallucinated else None,
                subtests_json=json.dumps(e["subtests"], sort_keys=True) if e.get("subtests") is not None else None,
                extra_json=json.dumps({k: e.get(k) for k in _ENTRY_EXTRA_KEYS if k in e}, sort_keys=True),
            )
        )
    return table_from_rows(rows, TRUTH_SCHEMA)


def read_predictions(
    path: str | Path, *, system: str, run_id: str = "", extra_prefixes: tuple[str, ...] = DEFAULT_EXTRA_PREFIXES
) -> PredictionFile:
    """A HALLMARK prediction file (either format) as an OUTPUT_SCHEMA table."""
    path = Path(path)
    rows: list[dict[str, Any]] = []
    gold: dict[str, str] = {}
    seen: set[str] = set()
    fmt = ""
    wall = 0.0
    calls = 0
    calls_known = False
    btu_status: dict[str, int] = {}
    for lineno, p in _lines(path):
        per_entry = "pred_label" in p or "pred_confidence" in p
        this_fmt = "per_entry" if per_entry else "prediction"
        if fmt and this_fmt != fmt:
            raise PredictionFileError(f"{path}:{lineno}: mixes the {fmt} and {this_fmt} formats")
        fmt = this_fmt
        known = PER_ENTRY_KEYS if per_entry else PREDICTION_KEYS
        unknown = sorted(k for k in p if k not in known and not (per_entry and k.startswith(extra_prefixes)))
        if unknown:
            raise PredictionFileError(
                f"{path}:{lineno}: unknown key(s) {unknown} for the {fmt} format (known: {sorted(known)})"
            )
        key = p.get("bibtex_key")
        if not isinstance(key, str) or not key:
            raise PredictionFileError(f"{path}:{lineno}: prediction without a bibtex_key")
        if key in seen:
            raise PredictionFileError(f"{path}:{lineno}: second prediction for {key!r}")
        seen.add(key)
        label = p.get("pred_label" if per_entry else "label")
        conf = p.get("pred_confidence" if per_entry else "confidence")
        if label not in LABELS:
            raise PredictionFileError(f"{path}:{lineno}: {key!r}: label {label!r} is not one of {LABELS}")
        if isinstance(conf, bool) or not isinstance(conf, int | float) or math.isnan(conf) or not 0 <= conf <= 1:
            raise PredictionFileError(f"{path}:{lineno}: {key!r}: confidence {conf!r} is not a number in [0, 1]")
        if per_entry and p.get("gold_label") is not None:
            gold[key] = p["gold_label"]
        wall += float(p.get("wall_clock_seconds") or 0.0)
        api_calls = p.get("api_calls")
        if api_calls is None and isinstance(p.get("btu_api_sources"), list):
            api_calls = len(p["btu_api_sources"])  # one call per source queried
        if api_calls is not None:
            calls_known = True
            calls += int(api_calls)
        if p.get("btu_status") is not None:
            btu_status[str(p["btu_status"])] = btu_status.get(str(p["btu_status"]), 0) + 1
        sub = p.get("subtest_results")
        rows.append(
            dict(
                run_id=run_id,
                system=system,
                item_id=key,
                shard_id=0,
                label=label,
                confidence=float(conf),
                reason=p.get("reason"),
                predicted_type=p.get("pred_type" if per_entry else "predicted_type"),
                subtests_json=json.dumps(sub, sort_keys=True) if sub else None,
                api_sources_queried=p.get("api_sources_queried") or p.get("btu_api_sources") or [],
                api_calls=api_calls,
                latency_s=p.get("wall_clock_seconds"),
                detail_json=json.dumps({"cascade_stage": p["cascade_stage"]}) if p.get("cascade_stage") else None,
            )
        )
    return PredictionFile(table_from_rows(rows, OUTPUT_SCHEMA), fmt or "prediction", gold, wall, calls, calls_known,
                          dict(sorted(btu_status.items())) if btu_status else None)
