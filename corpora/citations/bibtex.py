"""Load BibTeX files (bibtexparser 2) as blind citation items.

Entries become items keyed by their citation key. The file is decoded line by line: an entry
holding a line that is not UTF-8 is kept as an errored item naming that line, never read with
replaced bytes; such a line outside any entry (a comment) is only reported. Blocks bibtexparser
cannot parse, duplicate keys and entries without a key are reported with file, line and reason
and kept as errored items with ids of their own. BibTeX carries no truth, so the truth table is
empty (labels can come from a side file). A file with no entries is a `ValueError` naming it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import bibtexparser
from bibtexparser.model import DuplicateBlockKeyBlock, ParsingFailedBlock

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

_BOM = b"\xef\xbb\xbf"


@dataclass
class _Entry:
    line: int  # 1-based first line
    last: int  # 1-based last line
    key: str | None
    payload: dict[str, Any]
    reason: str | None


def load_bibtex(
    path: str | Path, corpus: str | None = None, split: str | None = None, version: str | None = None
) -> LoadedCorpus:
    path = corpus_file(path)
    name = corpus or path.stem
    text, bad_lines = _decode_lines(path.read_bytes())
    library = bibtexparser.parse_string(text)
    entries: list[_Entry] = []
    for entry in library.entries:
        start = entry.start_line + 1
        key = entry.key.strip() or None
        fields = {k.lower(): str(f.value) for k, f in entry.fields_dict.items()}
        payload = {"bibtex_type": entry.entry_type.lower(), "fields": fields, "raw_bibtex": entry.raw}
        reason = None if key else "entry has no citation key"
        entries.append(_Entry(start, start + entry.raw.count("\n"), key, payload, reason))
    first_line = {e.key: e.line for e in entries if e.key}
    for block in library.failed_blocks:
        start = block.start_line + 1
        if isinstance(block, DuplicateBlockKeyBlock):
            key = block.key.strip()
            reason = (
                f"duplicate citation key '{key}' (first on line {first_line[key]})" if key in first_line else "entry has no citation key"
            )
        elif isinstance(block, ParsingFailedBlock):
            reason = f"unparseable BibTeX block: {_first_line(str(block.error) or block.raw)}"
        else:
            reason = f"{type(block).__name__}: {_first_line(block.raw)}"
        entries.append(_Entry(start, start + block.raw.count("\n"), None, {}, reason))
    entries.sort(key=lambda e: e.line)
    errors: list[LoadError] = []
    covered: set[int] = set()
    for e in entries:
        bad = [n for n in range(e.line, e.last + 1) if n in bad_lines]
        covered.update(bad)
        if bad:
            e.reason, e.payload = f"line {bad[0]} is {bad_lines[bad[0]]}", {}
    for n in sorted(set(bad_lines) - covered):
        errors.append(LoadError(str(path), n, f"{bad_lines[n]} (outside any entry: ignored)"))
    if not entries:
        raise ValueError(f"{path}: no BibTeX entries (the file is empty or holds only comments)")
    ids, duplicates = unique_item_ids(
        [e.key for e in entries], [e.reason is None for e in entries], [f"{path.name}:{e.line}" for e in entries]
    )
    rows = []
    for i, (e, item_id) in enumerate(zip(entries, ids, strict=True)):
        if i in duplicates:  # bibtexparser finds most; keys it tells apart but we do not land here
            e.reason, e.payload = f"duplicate citation key '{e.key}' (first on line {entries[duplicates[i]].line})", {}
        if e.reason is not None:
            errors.append(LoadError(str(path), e.line, e.reason, item_id))
        located = None if e.reason is None else f"{path.name}:{e.line}: {e.reason}"  # outputs name file and line
        rows.append(Item(item_id, "citation", name, split, e.payload, str(path), e.line, located).to_row())
    errors.sort(key=lambda err: err.line)
    return LoadedCorpus(
        name=name,
        version=version or file_version(path),
        split=split,
        items=table_from_rows(rows, ITEM_SCHEMA),
        truth=TRUTH_SCHEMA.empty_table(),
        errors=errors,
    )


def _decode_lines(data: bytes) -> tuple[str, dict[int, str]]:
    """The file's text, decoded per line (bad lines replaced so parsing goes on), and why each bad line is bad."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
    lines, bad = [], {}
    for number, raw in enumerate(data.split(b"\n"), start=1):
        try:
            lines.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            bad[number] = unicode_error(raw, exc)
            lines.append(raw.decode("utf-8", errors="replace"))
    return "\n".join(lines), bad


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else "(empty)"
