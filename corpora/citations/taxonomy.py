"""The HALLMARK hallucination taxonomy, read from its data file.

The 14 types, their difficulty tier, their expected sub-test signature (HALLMARK table 1: True =
expected pass, False = expected fail, None = not applicable or varies by entry), a description,
whether the type is a stress-test type, and the named folds (groups of types a scorer may leave
out or count as negatives) live in `corpora/data/hallmark_taxonomy.json`; this module only types
and indexes them. Nothing here knows how a type is generated: see `citation_perturbation`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Literal

#: The data file of the HALLMARK taxonomy bundled with the project.
TAXONOMY_PATH = Path(__file__).resolve().parents[1] / "data" / "hallmark_taxonomy.json"

#: Sub-test keys, in the order HALLMARK files write them.
SUBTEST_KEYS: tuple[str, ...] = (
    "doi_resolves",
    "title_exists",
    "authors_match",
    "fields_complete",
    "cross_db_agreement",
    "venue_correct",
)

Tier = Literal[1, 2, 3]


@dataclass(frozen=True)
class HallucinationType:
    """One type of the taxonomy."""

    name: str
    """Canonical name as written in HALLMARK files (`hallucination_type`)."""
    tier: Tier
    """Difficulty tier: 1 easy, 2 medium, 3 hard."""
    description: str
    """One-line description (HALLMARK table 1)."""
    signature: MappingProxyType
    """Expected sub-test outcome per key of SUBTEST_KEYS: True, False, or None (varies / n.a.)."""
    stress_test: bool
    """A theoretically motivated type without real-world instances (HALLMARK's stress_test split)."""
    aliases: tuple[str, ...]
    """Other names the type goes by (e.g. `author_mismatch` for `swapped_authors`)."""
    perturbation: str
    """How the generator makes an instance of the type, in words."""


@dataclass(frozen=True)
class Taxonomy:
    """The whole taxonomy: types by name, plus named folds."""

    name: str
    types: tuple[HallucinationType, ...]
    folds: MappingProxyType
    """Fold name -> tuple of type names."""

    def __getitem__(self, name: str) -> HallucinationType:
        """The type called `name` or one of its aliases; KeyError naming the known types otherwise."""
        for t in self.types:
            if name == t.name or name in t.aliases:
                return t
        raise KeyError(f"unknown hallucination type '{name}'; known: {', '.join(self.names)}")

    def __contains__(self, name: object) -> bool:
        return any(name == t.name or name in t.aliases for t in self.types)

    @property
    def names(self) -> tuple[str, ...]:
        """Canonical type names in table order."""
        return tuple(t.name for t in self.types)

    def by_tier(self, tier: int) -> tuple[HallucinationType, ...]:
        """The types of one tier, in table order."""
        return tuple(t for t in self.types if t.tier == tier)

    def tier_of(self, name: str) -> Tier:
        """The tier of a type (by name or alias)."""
        return self[name].tier

    def fold(self, fold: str) -> tuple[str, ...]:
        """The type names of a named fold (`real_work`, `neurips_2026`)."""
        try:
            return self.folds[fold]
        except KeyError:
            raise KeyError(f"unknown fold '{fold}'; known: {', '.join(self.folds)}") from None


def _parse(raw: dict) -> Taxonomy:
    types = []
    for row in raw["types"]:
        signature = row["signature"]
        if set(signature) != set(SUBTEST_KEYS):
            raise ValueError(f"type {row['name']}: signature keys {sorted(signature)} != {sorted(SUBTEST_KEYS)}")
        if row["tier"] not in (1, 2, 3):
            raise ValueError(f"type {row['name']}: tier {row['tier']} is not 1, 2 or 3")
        types.append(
            HallucinationType(
                name=row["name"],
                tier=row["tier"],
                description=row["description"],
                signature=MappingProxyType({k: signature[k] for k in SUBTEST_KEYS}),
                stress_test=bool(row["stress_test"]),
                aliases=tuple(row.get("aliases", ())),
                perturbation=row["perturbation"],
            )
        )
    names = [t.name for t in types]
    if len(set(names)) != len(names):
        raise ValueError("duplicate type names in taxonomy")
    folds = {}
    for fold, spec in raw.get("folds", {}).items():
        unknown = set(spec["types"]) - set(names)
        if unknown:
            raise ValueError(f"fold {fold}: unknown types {sorted(unknown)}")
        folds[fold] = tuple(spec["types"])
    return Taxonomy(name=raw["name"], types=tuple(types), folds=MappingProxyType(folds))


def load_taxonomy(path: str | Path = TAXONOMY_PATH) -> Taxonomy:
    """Read and validate a taxonomy data file."""
    with open(path, encoding="utf-8") as f:
        return _parse(json.load(f))


@cache
def hallmark_taxonomy() -> Taxonomy:
    """The bundled HALLMARK taxonomy (read once)."""
    return load_taxonomy(TAXONOMY_PATH)


__all__ = ["SUBTEST_KEYS", "TAXONOMY_PATH", "HallucinationType", "Taxonomy", "hallmark_taxonomy", "load_taxonomy"]
