"""The review-hallucination taxonomy (HalluPeer §3), read from its data file and extensible.

The bundled file `corpora/reviews/data/taxonomy.toml` holds the nine anchors and the nodes the
paper names; a user file of the same format adds nodes (and may set an anchor's injection hints),
e.g. `review_taxonomy(extra=["my_leaves.toml"])`. Every problem is a `TaxonomyError` naming the
file and the entry: unknown keys, a path whose parent is missing, an anchor that is not one of the
nine, a duplicate node name, an empty description, an unknown rule injector or aspect.

Leaf names are unique across the tree, so a truth record's `(anchor, leaf)` determines the path.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from corpora.reviews.aspects import ASPECTS
from corpora.reviews.records import ANCHORS
from corpora.reviews.rule_injectors import RULE_INJECTORS

TAXONOMY_PATH = Path(__file__).resolve().parent / "data" / "taxonomy.toml"
RULE_INJECTOR_NAMES = tuple(RULE_INJECTORS)  # the registry is the one list of names

_ANCHOR_KEYS = {"name", "description", "rule_injector", "avoid_aspects", "edits_hedges"}
_NODE_KEYS = {"path", "description", "source", "aliases"}


class TaxonomyError(ValueError):
    """A taxonomy file that cannot be used, with the file and entry named."""


@dataclass(frozen=True)
class TaxonomyNode:
    """One node below an anchor: its path from the anchor (anchor first) and its instruction."""

    path: tuple[str, ...]
    description: str
    source: str = ""
    aliases: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.path[-1]

    @property
    def anchor(self) -> str:
        return self.path[0]


@dataclass(frozen=True)
class AnchorSpec:
    """A depth-1 anchor with its definition (HalluPeer table 5) and injection hints."""

    name: str
    description: str
    rule_injector: str | None = None
    avoid_aspects: tuple[str, ...] = ()
    edits_hedges: bool = False
    """Whether an injection may edit the reviewer's own hedged or speculative clauses (Hyperbole and
    Overgeneralization inflate or drop a hedge); for the other anchors such a clause says nothing
    about the paper, so an edit there is no hallucination (corpora/reviews/clauses.py)."""


@dataclass(frozen=True)
class ReviewTaxonomy:
    name: str
    version: str
    anchors: tuple[AnchorSpec, ...]
    nodes: tuple[TaxonomyNode, ...]
    sources: tuple[str, ...] = field(default=())
    """The files it was read from, bundled file first."""

    def anchor(self, name: str) -> AnchorSpec:
        for a in self.anchors:
            if a.name == name:
                return a
        raise KeyError(f"unknown anchor '{name}'; known: {', '.join(a.name for a in self.anchors)}")

    def children(self, path: tuple[str, ...]) -> tuple[TaxonomyNode, ...]:
        return tuple(n for n in self.nodes if n.path[:-1] == path)

    def leaves(self, anchor: str) -> tuple[TaxonomyNode, ...]:
        """Leaf descendants of an anchor, in file order (empty when the anchor has no children:
        then the anchor itself is the leaf and a truth record's leaf is None)."""
        self.anchor(anchor)
        return tuple(n for n in self.nodes if n.anchor == anchor and not self.children(n.path))

    def node(self, name: str) -> TaxonomyNode:
        """A node by name or alias."""
        for n in self.nodes:
            if n.name == name or name in n.aliases:
                return n
        raise KeyError(f"unknown taxonomy node '{name}'")

    def path_of(self, anchor: str, leaf: str | None) -> tuple[str, ...]:
        """The type path of a truth record: (anchor,) or the leaf's full path."""
        if leaf is None:
            self.anchor(anchor)
            return (anchor,)
        node = self.node(leaf)
        if node.anchor != anchor:
            raise KeyError(f"leaf '{leaf}' is under '{node.anchor}', not '{anchor}'")
        return node.path

    def instruction(self, anchor: str, leaf: str | None) -> str:
        """The operational instruction delta_v for an injection of this type."""
        return self.anchor(anchor).description if leaf is None else self.node(leaf).description


def _read(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        raise TaxonomyError(f"{path}: taxonomy file not found") from None
    except tomllib.TOMLDecodeError as exc:
        raise TaxonomyError(f"{path}: not valid TOML: {exc}") from None


def _check_keys(where: str, row: dict[str, Any], allowed: set[str], required: set[str]) -> None:
    unknown = set(row) - allowed
    if unknown:
        raise TaxonomyError(f"{where}: unknown keys {sorted(unknown)} (allowed: {sorted(allowed)})")
    missing = required - set(row)
    if missing:
        raise TaxonomyError(f"{where}: missing keys {sorted(missing)}")


def _anchor(where: str, row: dict[str, Any]) -> AnchorSpec:
    _check_keys(where, row, _ANCHOR_KEYS, {"name"})
    name = row["name"]
    if name not in ANCHORS:
        raise TaxonomyError(f"{where}: anchor '{name}' is not one of the nine HalluPeer anchors {list(ANCHORS)}")
    rule = row.get("rule_injector")
    if rule is not None and rule not in RULE_INJECTOR_NAMES:
        raise TaxonomyError(f"{where}: rule_injector '{rule}' unknown (known: {list(RULE_INJECTOR_NAMES)})")
    avoid = tuple(row.get("avoid_aspects", ()))
    bad = [a for a in avoid if a not in ASPECTS]
    if bad:
        raise TaxonomyError(f"{where}: avoid_aspects {bad} unknown (known: {list(ASPECTS)})")
    hedges = row.get("edits_hedges", False)
    if not isinstance(hedges, bool):
        raise TaxonomyError(f"{where}: edits_hedges must be true or false, got {hedges!r}")
    return AnchorSpec(name, str(row.get("description", "")).strip(), rule, avoid, hedges)


def _node(where: str, row: dict[str, Any]) -> TaxonomyNode:
    _check_keys(where, row, _NODE_KEYS, {"path", "description"})
    path = row["path"]
    if not isinstance(path, list) or len(path) < 2 or not all(isinstance(p, str) and p.strip() for p in path):
        raise TaxonomyError(f"{where}: path must list the anchor and at least one node name, got {path!r}")
    if path[0] not in ANCHORS:
        raise TaxonomyError(f"{where}: path starts with '{path[0]}', not one of the nine anchors {list(ANCHORS)}")
    description = str(row["description"]).strip()
    if not description:
        raise TaxonomyError(f"{where}: node '{path[-1]}' has an empty description (it is the injection instruction)")
    return TaxonomyNode(tuple(path), description, str(row.get("source", "")), tuple(row.get("aliases", ())))


def _merge(files: list[Path]) -> ReviewTaxonomy:
    anchors: dict[str, AnchorSpec] = {}
    nodes: list[TaxonomyNode] = []
    names: dict[str, str] = {}
    name = version = ""
    for k, path in enumerate(files):
        raw = _read(path)
        unknown = set(raw) - {"name", "version", "anchor", "node"}
        if unknown:
            raise TaxonomyError(f"{path}: unknown top-level keys {sorted(unknown)}")
        if k == 0:
            name, version = str(raw.get("name", "")), str(raw.get("version", ""))
        else:
            version = f"{version}+{path.stem}"
        for i, row in enumerate(raw.get("anchor", []), 1):
            spec = _anchor(f"{path}: [[anchor]] #{i}", row)
            if spec.name in anchors:  # a user file refines hints; the definition stays unless given
                old = anchors[spec.name]
                spec = AnchorSpec(spec.name, spec.description or old.description,
                                  spec.rule_injector if "rule_injector" in row else old.rule_injector,
                                  spec.avoid_aspects if "avoid_aspects" in row else old.avoid_aspects,
                                  spec.edits_hedges if "edits_hedges" in row else old.edits_hedges)  # fmt: skip
            anchors[spec.name] = spec
        for i, row in enumerate(raw.get("node", []), 1):
            where = f"{path}: [[node]] #{i}"
            node = _node(where, row)
            parent = node.path[:-1]
            if len(parent) > 1 and not any(n.path == parent for n in nodes):
                raise TaxonomyError(f"{where}: parent {' > '.join(parent)} is not defined before '{node.name}'")
            for label in (node.name, *node.aliases):
                if label in names or label in ANCHORS:
                    raise TaxonomyError(f"{where}: node name '{label}' already used ({names.get(label, 'anchor')})")
                names[label] = where
            nodes.append(node)
    missing = [a for a in ANCHORS if a not in anchors]
    if missing:
        raise TaxonomyError(f"{files[0]}: anchors {missing} are not defined")
    empty = [a for a in ANCHORS if not anchors[a].description]
    if empty:
        raise TaxonomyError(f"{files[0]}: anchors {empty} have no description")
    ordered = tuple(anchors[a] for a in ANCHORS)
    return ReviewTaxonomy(name, version, ordered, tuple(nodes), tuple(str(p) for p in files))


def load_review_taxonomy(path: str | Path = TAXONOMY_PATH, extra: list[str | Path] | tuple = ()) -> ReviewTaxonomy:
    """Read a taxonomy file and any extension files (applied in order)."""
    return _merge([Path(path), *(Path(p) for p in extra)])


@cache
def review_taxonomy() -> ReviewTaxonomy:
    """The bundled taxonomy (read once)."""
    return load_review_taxonomy()


__all__ = [
    "RULE_INJECTOR_NAMES",
    "TAXONOMY_PATH",
    "AnchorSpec",
    "ReviewTaxonomy",
    "TaxonomyError",
    "TaxonomyNode",
    "load_review_taxonomy",
    "review_taxonomy",
]
