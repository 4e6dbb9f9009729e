"""Load BibTeX files (bibtexparser 2) as blind citation items.

Entries become items keyed by their citation key; blocks bibtexparser cannot parse, duplicate
keys and entries without a key are reported with file, line and reason and kept as errored items.
BibTeX carries no truth, so the truth table is empty (labels can come from a side file).
"""

from __future__ import annotations

from pathlib import Path

import bibtexparser
from bibtexparser.model import DuplicateBlockKeyBlock, ParsingFailedBlock

from corpora.loaded_corpus import LoadedCorpus, LoadError, corpus_file, file_version
from storage.records import Item
from storage.schemas import ITEM_SCHEMA, TRUTH_SCHEMA, table_from_rows


def load_bibtex(
    path: str | Path, corpus: str | None = None, split: str | None = None, version: str | None = None
) -> LoadedCorpus:
    path = corpus_file(path)
    name = corpus or path.stem
    library = bibtexparser.parse_string(path.read_text(encoding="utf-8", errors="replace"))
    rows, errors = [], []
    for entry in library.entries:
        fields = {k.lower(): str(f.value) for k, f in entry.fields_dict.items()}
        payload = {"bibtex_type": entry.entry_type.lower(), "fields": fields, "raw_bibtex": entry.raw}
        rows.append((entry.start_line + 1, Item(entry.key, "citation", name, split, payload, str(path), entry.start_line + 1)))
    for block in library.failed_blocks:
        line = block.start_line + 1
        if isinstance(block, DuplicateBlockKeyBlock):
            reason = f"duplicate citation key '{block.key}'"
        elif isinstance(block, ParsingFailedBlock):
            reason = f"unparseable BibTeX block: {_first_line(str(block.error) or block.raw)}"
        else:
            reason = f"{type(block).__name__}: {_first_line(block.raw)}"
        item_id = f"{path.name}:{line}"
        errors.append(LoadError(str(path), line, reason, item_id))
        rows.append((line, Item(item_id, "citation", name, split, {}, str(path), line, reason)))
    rows.sort(key=lambda r: r[0])
    return LoadedCorpus(
        name=name,
        version=version or file_version(path),
        split=split,
        items=table_from_rows([item.to_row() for _, item in rows], ITEM_SCHEMA),
        truth=TRUTH_SCHEMA.empty_table(),
        errors=errors,
    )


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0][:200] if text.strip() else "(empty)"
