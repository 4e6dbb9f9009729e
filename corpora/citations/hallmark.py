"""Load HALLMARK JSONL splits, full (with labels) or blind (bibtex_key, bibtex_type, fields, raw_bibtex).

The file is read as bytes and decoded line by line, so one bad line costs one item, not the file.
A malformed line (not UTF-8, longer than `MAX_LINE_BYTES`, bad JSON, not an object, missing key,
wrong field types, unknown label, a duplicate key) is reported with its file, line and reason and
kept as an errored item with an id of its own, so the run goes on and the summary says so.
Canary entries (`__canary__*`) are dropped, as HALLMARK's own loader does. A file with no lines
at all is a `ValueError` naming it.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from corpora.loaded_corpus import (
    LoadedCorpus,
    LoadError,
    corpus_file,
    file_version,
    unicode_error,
    unique_item_ids,
)
from storage.records import Item
from storage.schemas import ITEM_SCHEMA, TRUTH_SCHEMA, table_from_rows

TRUTH_LABELS = ("VALID", "HALLUCINATED")
#: A citation entry is a few KiB; a longer line is refused unread rather than held in memory.
MAX_LINE_BYTES = 1 << 20
#: BibTeX fields a JSON number may stand for; every other field must be text (a numeric title is an error).
NUMERIC_FIELDS = frozenset({"year", "volume", "number", "pages", "month", "chapter", "edition"})
#: Optional top-level fields and the JSON types they may have (None: null allowed).
_OPTIONAL_TYPES: dict[str, tuple[type, ...]] = {
    "bibtex_type": (str,),
    "raw_bibtex": (str, type(None)),
    "hallucination_type": (str, type(None)),
    "subtests": (dict, type(None)),
    "generation_method": (str, type(None)),
    "source_conference": (str, type(None)),
    "explanation": (str, type(None)),
}
_BOM = b"\xef\xbb\xbf"


@dataclass
class _Line:
    number: int
    key: str | None
    record: dict[str, Any]
    reason: str | None


def load_hallmark_jsonl(
    path: str | Path, corpus: str | None = None, split: str | None = None, version: str | None = None
) -> LoadedCorpus:
    path = corpus_file(path)
    name = corpus or path.stem
    lines = list(_read_lines(path))
    if not lines:
        raise ValueError(f"{path}: no corpus lines (the file is empty, or holds only blank lines and canaries)")
    ids, duplicates = unique_item_ids(
        [ln.key for ln in lines], [ln.reason is None for ln in lines], [f"{path.name}:{ln.number}" for ln in lines]
    )
    items: list[dict[str, Any]] = []
    truth: list[dict[str, Any]] = []
    errors: list[LoadError] = []
    for i, (ln, item_id) in enumerate(zip(lines, ids, strict=True)):
        reason = ln.reason
        if i in duplicates:
            reason = f"duplicate bibtex_key '{ln.key}' (first on line {lines[duplicates[i]].number})"
        if reason is not None:
            errors.append(LoadError(str(path), ln.number, reason, item_id))
            items.append(Item(item_id, "citation", name, split, {}, str(path), ln.number, f"{path.name}:{ln.number}: {reason}").to_row())
            continue
        record = ln.record
        payload = {"bibtex_type": record.get("bibtex_type"), "fields": record["fields"], "raw_bibtex": record.get("raw_bibtex")}
        items.append(Item(item_id, "citation", name, split, payload, str(path), ln.number).to_row())
        if "label" in record:
            truth.append(_truth_row(item_id, record))
    return LoadedCorpus(
        name=name,
        version=version or file_version(path),
        split=split,
        items=table_from_rows(items, ITEM_SCHEMA),
        truth=table_from_rows(truth, TRUTH_SCHEMA),
        errors=errors,
    )


def _read_lines(path: Path) -> Iterator[_Line]:
    """The non-blank, non-canary lines of `path`, parsed, each with the reason it is unusable (or None)."""
    with path.open("rb") as f:
        number = 0
        while chunk := f.readline(MAX_LINE_BYTES + 1):
            number += 1
            if number == 1 and chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :]
            if len(chunk) > MAX_LINE_BYTES and not chunk.endswith(b"\n"):
                size = len(chunk)
                while chunk and not chunk.endswith(b"\n"):  # skip the rest of the line unread
                    chunk = f.readline(MAX_LINE_BYTES)
                    size += len(chunk.rstrip(b"\n"))
                yield _Line(number, None, {}, f"line too long: {size} bytes, the limit is {MAX_LINE_BYTES}")
                continue
            try:
                text = chunk.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield _Line(number, None, {}, unicode_error(chunk, exc))
                continue
            if not text.strip():
                continue
            record, reason = _parse_line(text)
            key = record.get("bibtex_key")
            key = key if isinstance(key, str) and key.strip() else None
            if key and key.startswith("__canary__"):
                continue
            yield _Line(number, key, record, reason)


def _parse_line(line: str) -> tuple[dict[str, Any], str | None]:
    try:
        record = json.loads(line)
    except json.JSONDecodeError as exc:
        return {}, f"invalid JSON: {exc.msg} at column {exc.colno}"
    except (ValueError, RecursionError) as exc:  # a 5000-digit number, nesting deeper than the parser goes
        return {}, f"invalid JSON: {str(exc)[:200] or type(exc).__name__}"
    if not isinstance(record, dict):
        return {}, f"expected a JSON object, got {type(record).__name__}"
    if "\\ud" in line.lower():  # JSON may escape a lone surrogate (\ud800): not text, no parquet file holds it
        try:
            json.dumps(record, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:
            return {}, "contains an unpaired surrogate escape: not valid Unicode text"
    if not isinstance(record.get("bibtex_key"), str) or not record["bibtex_key"].strip():
        return record, "field 'bibtex_key' is missing or not a string"
    if not isinstance(record.get("fields"), dict):
        return record, "field 'fields' is missing or not an object"
    for k, v in record["fields"].items():
        numeric = k.lower() in NUMERIC_FIELDS and isinstance(v, int) and not isinstance(v, bool)
        if not isinstance(v, str) and not numeric:
            return record, f"field 'fields.{k}' must be text, got {_json_type(v)}"
    for k, types in _OPTIONAL_TYPES.items():
        if k in record and not isinstance(record[k], types):
            return record, f"field '{k}' has the wrong type: {_json_type(record[k])}"
    if "label" in record and record["label"] not in TRUTH_LABELS:
        return record, f"field 'label' must be one of {TRUTH_LABELS}, got {record['label']!r}"
    tier = record.get("difficulty_tier")
    if tier is not None and (isinstance(tier, bool) or tier not in (1, 2, 3)):
        return record, f"field 'difficulty_tier' must be 1, 2 or 3, got {tier!r}"
    return record, None


def _json_type(value: Any) -> str:
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}
    return "null" if value is None else names.get(type(value), type(value).__name__)


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
