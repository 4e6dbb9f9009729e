"""Read the blind payload of a citation item (HALLMARK `fields`) the same way in every verifier."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from storage.records import Item

_AND = re.compile(r"\s+and\s+", re.IGNORECASE)


@dataclass(frozen=True)
class CitationEntry:
    key: str
    bibtex_type: str
    fields: dict[str, str]
    raw_bibtex: str | None

    @classmethod
    def from_item(cls, item: Item) -> CitationEntry:
        payload: dict[str, Any] = item.payload
        fields = {str(k).lower(): str(v) for k, v in (payload.get("fields") or {}).items() if v is not None}
        return cls(item.item_id, str(payload.get("bibtex_type") or "misc").lower(), fields, payload.get("raw_bibtex"))

    @property
    def authors(self) -> list[str]:
        raw = self.fields.get("author", "").strip()
        return [a.strip() for a in _AND.split(raw) if a.strip()] if raw else []

    @property
    def venue(self) -> str | None:
        for name in ("booktitle", "journal", "venue", "publisher", "howpublished"):
            if self.fields.get(name):
                return self.fields[name]
        return None
