"""Load HALLMARK JSONL splits, full (with labels) or blind (bibtex_key, bibtex_type, fields, raw_bibtex).

A malformed line (bad JSON, missing key, wrong field types, unknown label) is reported with its
file, line and reason and kept as an errored item, so the run goes on and the summary says so.
Canary entries (`__canary__*`) are dropped, as HALLMARK's own loader does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from corpora.loaded_corpus import LoadedCorpus, LoadError, corpus_file, file_version
from storage.records import Item
from storage.schemas import ITEM_SCHEMA, TRUTH_SCHEMA, table_from_rows

TRUTH_LABELS = ("VALID", "HALLUCINATED")


def load_hallmark_jsonl(
    path: str | Path, corpus: str | None = None, split: str | None = None, version: str | None = None
) -> LoadedCorpus:
    path = corpus_file(path)
    name = corpus or path.stem
    items: list[dict[str, Any]] = []
    truth: list[dict[str, Any]] = []
    errors: list[LoadError] = []
    seen: set[str] = set()
    with path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            record, reason = _parse_line(line)
            key = record.get("bibtex_key") if isinstance(record, dict) else None
            key = key if isinstance(key, str) and key.strip() else None
            if key and key.startswith("__canary__"):
                continue
            if reason is None and key in seen:
                reason = f"duplicate bibtex_key '{key}'"
            item_id = key if key and key not in seen else f"{path.name}:{number}"
            if reason is not None:
                errors.append(LoadError(str(path), number, reason, item_id))
                items.append(Item(item_id, "citation", name, split, {}, str(path), number, reason).to_row())
                continue
            seen.add(key)
            payload = {"bibtex_type": record.get("bibtex_type"), "fields": record["fields"], "raw_bibtex": record.get("raw_bibtex")}
            items.append(Item(key, "citation", name, split, payload, str(path), number).to_row())
            if "label" in record:
                truth.append(_truth_row(key, record))
    return LoadedCorpus(
        name=name,
        version=version or file_version(path),
        split=split,
        items=table_from_rows(items, ITEM_SCHEMA),
        truth=table_from_rows(truth, TRUTH_SCHEMA),
        errors=errors,
    )


def _parse_line(line: str) -> tuple[dict[str, Any], str | None]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return {}, f"invalid JSON: {exc.msg} at column {exc.colno}"
    if not isinstance(record, dict):
        return {}, f"expected a JSON object, got {type(record).__name__}"
    if not isinstance(record.get("bibtex_key"), str) or not record["bibtex_key"].strip():
        return record, "field 'bibtex_key' is missing or not a string"
    if not isinstance(record.get("fields"), dict):
        return record, "field 'fields' is missing or not an object"
    bad = [k for k, v in record["fields"].items() if not isinstance(v, str | int)]
    if bad:
        return record, f"field 'fields' has non-text values for {bad}"
    if "label" in record and record["label"] not in TRUTH_LABELS:
        return record, f"field 'label' must be one of {TRUTH_LABELS}, got {record['label']!r}"
    tier = record.get("difficulty_tier")
    if tier is not None and tier not in (1, 2, 3):
        return record, f"field 'difficulty_tier' must be 1, 2 or 3, got {tier!r}"
    return record, None


def _truth_row(key: str, record: dict[str, Any]) -> dict[str, Any]:
    extra = {k: record[k] for k in ("generation_method", "source_conference", "explanation") if k in record}
    return {
        "item_id": key,
        "label": record["label"],
        "hallucination_type": record.get("hallucination_type"),
        "difficulty_tier": record.get("difficulty_tier"),
        "subtests_json": json.dumps(record.get("subtests"), sort_keys=True) if record.get("subtests") else None,
        "extra_json": json.dumps(extra, sort_keys=True, ensure_ascii=False) if extra else None,
    }
