"""CiteIntegrity-style verification suite (reference 003): source-donor pairs, ten variants each.

A structured citation is `(d, t, A, y, v, e)`: optional DOI, title, family names, year, venue and
an explicit author-list truncation flag. From real references that have all of these:

1. eligibility: DOI, title, family names, venue and year present; editorial-type titles out; the
   title has an alphabetic word of six or more letters; duplicate DOIs and normalized titles
   removed in input order, and a title at or above `near_title_cutoff` similarity to an earlier
   one removed;
2. pairing: within each stratum (the reference's domain) all pairs with different normalized
   author sets, ranked by decreasing title similarity (ties by ids), taken greedily so every
   record is in at most one pair; unpaired records are excluded;
3. splitting: pairs shuffled within each stratum with the seed; the first floor(0.6 m) train,
   the next floor(0.2 m) validation, the rest test. Both directions and all variants of a pair
   stay in its partition;
4. variants: each work is the source once (its pair partner is the donor) and yields five
   acceptable variants (exact, formatting, short, doi_omitted, title_typo) and five inconsistent
   ones (doi_swap, author_swap, year_shift, title_substitution, composite_splice);
5. audits: every negative differs from its source, no identical input carries opposite labels,
   source and donor of every instance are the two members of one pair in one partition (plus:
   every formatting variant normalizes to its source).
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from corpora.citation_audit import AuditReport, conflicting_labels
from corpora.citation_normalization import normalize_text, title_similarity
from corpora.real_reference import Reference
from corpora.taxonomy import hallmark_taxonomy

#: The bundled suite built from the bundled real references.
SAMPLE_SUITE_PATH = Path(__file__).resolve().parent / "samples" / "citeintegrity_sample.jsonl"

ACCEPTABLE_VARIANTS: tuple[str, ...] = ("exact", "formatting", "short", "doi_omitted", "title_typo")
INCONSISTENT_VARIANTS: tuple[str, ...] = ("doi_swap", "author_swap", "year_shift", "title_substitution", "composite_splice")
PARTITIONS: tuple[str, ...] = ("train", "validation", "test")
EXCLUDED_TITLE_TERMS: tuple[str, ...] = (
    "editorial", "call for papers", "editor announcement", "foreword", "erratum", "corrigendum", "retraction",
)
#: HALLMARK type closest to each inconsistent variant (None: HALLMARK has no wrong-year-only type).
HALLMARK_TYPE_OF_VARIANT: dict[str, str | None] = {
    "doi_swap": "hybrid_fabrication",
    "author_swap": "swapped_authors",
    "year_shift": None,
    "title_substitution": "chimeric_title",
    "composite_splice": "merged_citation",
}
_ALPHA_WORD = re.compile(r"[^\W\d_]+")

Label = Literal["acceptable", "inconsistent"]


@dataclass(frozen=True)
class SuiteConfig:
    """How a suite is built; recorded with it."""

    seed: int = 20260921
    """Seed of the within-stratum pair shuffle."""
    train_fraction: float = 0.6
    validation_fraction: float = 0.2
    near_title_cutoff: float | None = 0.95
    """Drop a record whose title is this similar to an earlier one; None disables the rule."""
    year_shift: int = 3
    """Years added by the year_shift variant."""


@dataclass(frozen=True)
class StructuredCitation:
    """(d, t, A, y, v, e)."""

    doi: str | None
    title: str
    authors: tuple[str, ...]
    """Family names."""
    year: int
    venue: str
    truncated: bool = False
    """Explicit 'et al.': the list holds only the first len(authors) family names."""

    def normalized(self) -> tuple:
        """Every field normalized (DOI lower-cased): equal for two renderings of one citation."""
        return (
            (self.doi or "").lower(),
            normalize_text(self.title),
            tuple(normalize_text(a) for a in self.authors),
            self.year,
            normalize_text(self.venue),
            self.truncated,
        )


@dataclass(frozen=True)
class SourcePair:
    """Two works paired as each other's donor."""

    pair_id: str
    stratum: str
    first: str
    second: str
    title_similarity: float
    partition: str


@dataclass(frozen=True)
class SuiteInstance:
    """One labelled structured citation built from a source and its donor."""

    instance_id: str
    pair_id: str
    partition: str
    stratum: str
    source_id: str
    donor_id: str
    variant: str
    label: Label
    citation: StructuredCitation

    @property
    def z(self) -> int:
        """1 acceptable, 0 inconsistent."""
        return 1 if self.label == "acceptable" else 0


@dataclass(frozen=True)
class Suite:
    """A built suite: the source records, pairs, instances and what was excluded and why."""

    config: SuiteConfig
    records: dict[str, StructuredCitation]
    strata: dict[str, str]
    pairs: tuple[SourcePair, ...]
    instances: tuple[SuiteInstance, ...]
    excluded: tuple[tuple[str, str], ...]
    """(ref_id, reason) for every reference left out."""


# ---- construction -------------------------------------------------------------------------------


def structured(ref: Reference) -> StructuredCitation:
    """The source representation of a reference."""
    return StructuredCitation(ref.doi, ref.title, ref.family_names, ref.year, ref.venue or "")


def eligible_records(refs: Iterable[Reference], config: SuiteConfig) -> tuple[list[Reference], list[tuple[str, str]]]:
    """Screen references in input order; returns (kept, [(ref_id, reason)])."""
    kept: list[Reference] = []
    excluded: list[tuple[str, str]] = []
    dois: set[str] = set()
    titles: set[str] = set()
    for ref in refs:
        norm = normalize_text(ref.title)
        reason = None
        if not (ref.doi and ref.title and ref.authors and ref.venue and ref.year):
            reason = "missing DOI, title, authors, venue or year"
        elif any(term in ref.title.lower() for term in EXCLUDED_TITLE_TERMS):
            reason = "editorial-type title"
        elif not any(len(w) >= 6 for w in _ALPHA_WORD.findall(ref.title)):
            reason = "no alphabetic title word of six or more letters"
        elif ref.doi.lower() in dois:
            reason = "duplicate DOI"
        elif norm in titles:
            reason = "duplicate normalized title"
        elif config.near_title_cutoff is not None and any(
            title_similarity(ref.title, k.title) >= config.near_title_cutoff for k in kept
        ):
            reason = f"title similarity >= {config.near_title_cutoff} to an earlier record"
        if reason:
            excluded.append((ref.ref_id, reason))
            continue
        kept.append(ref)
        dois.add(ref.doi.lower())
        titles.add(norm)
    return kept, excluded


def pair_records(records: list[Reference]) -> tuple[list[tuple[str, str, str, float]], list[str]]:
    """Greedy disjoint pairing within strata; returns ([(stratum, a, b, similarity)], unpaired ids)."""
    by_stratum: dict[str, list[Reference]] = defaultdict(list)
    for r in records:
        by_stratum[r.domain].append(r)
    pairs, unpaired = [], []
    for stratum in sorted(by_stratum):
        members = sorted(by_stratum[stratum], key=lambda r: r.ref_id)
        edges = []
        for i, a in enumerate(members):
            for b in members[i + 1 :]:
                if {normalize_text(f) for f in a.family_names} == {normalize_text(f) for f in b.family_names}:
                    continue
                edges.append((-title_similarity(a.title, b.title), a.ref_id, b.ref_id))
        edges.sort()
        used: set[str] = set()
        for negative_similarity, a_id, b_id in edges:
            if a_id in used or b_id in used:
                continue
            used.update((a_id, b_id))
            pairs.append((stratum, a_id, b_id, round(-negative_similarity, 6)))
        unpaired.extend(r.ref_id for r in members if r.ref_id not in used)
    return pairs, unpaired


def split_pairs(pairs: list[tuple[str, str, str, float]], config: SuiteConfig) -> list[SourcePair]:
    """Assign partitions: shuffle within each stratum with the seed, then cut at 60 % and 80 %."""
    rng = random.Random(config.seed)
    by_stratum: dict[str, list[tuple[str, str, str, float]]] = defaultdict(list)
    for p in pairs:
        by_stratum[p[0]].append(p)
    out = []
    for stratum in sorted(by_stratum):
        group = sorted(by_stratum[stratum], key=lambda p: (p[1], p[2]))
        rng.shuffle(group)
        m = len(group)
        n_train, n_val = int(config.train_fraction * m), int(config.validation_fraction * m)
        for i, (_, a, b, sim) in enumerate(group):
            partition = "train" if i < n_train else "validation" if i < n_train + n_val else "test"
            out.append(SourcePair(f"{stratum}:{a}~{b}", stratum, a, b, sim, partition))
    return out


def _safe_upper(text: str) -> str:
    """Upper-case each character whose normalized form does not change (no Turkish-i accidents)."""
    return "".join(c.upper() if normalize_text(c.upper()) == normalize_text(c) else c for c in text)


def _formatting(c: StructuredCitation) -> StructuredCitation:
    title = _safe_upper(c.title)
    title = title.replace(": ", " - ") if ": " in title else title.replace(" ", ": ", 1)
    return StructuredCitation(c.doi, title, tuple(_safe_upper(a) for a in c.authors), c.year, _safe_upper(c.venue))


def venue_initials(venue: str) -> str:
    """The declared venue abbreviation: the initial letters of the venue's words."""
    return "".join(w[0].upper() for w in _ALPHA_WORD.findall(venue))


def title_typo(title: str) -> str:
    """Delete the middle character of the longest alphabetic word of >= 6 letters (earliest on ties)."""
    words = [m for m in _ALPHA_WORD.finditer(title) if len(m.group()) >= 6]
    if not words:
        raise ValueError(f"title has no alphabetic word of six or more letters: {title!r}")
    longest = max(words, key=lambda m: (len(m.group()), -m.start()))
    cut = longest.start() + len(longest.group()) // 2
    return title[:cut] + title[cut + 1 :]


def variants(source: StructuredCitation, donor: StructuredCitation, year_shift: int = 3) -> list[tuple[str, Label, StructuredCitation]]:
    """The ten (variant, label, citation) instances of one source with its donor."""
    s, d = source, donor
    return [
        ("exact", "acceptable", s),
        ("formatting", "acceptable", _formatting(s)),
        ("short", "acceptable", StructuredCitation(s.doi, s.title, s.authors[:1], s.year, venue_initials(s.venue), True)),
        ("doi_omitted", "acceptable", StructuredCitation(None, normalize_text(s.title), s.authors, s.year, s.venue)),
        ("title_typo", "acceptable", StructuredCitation(None, title_typo(s.title), s.authors, s.year, s.venue)),
        ("doi_swap", "inconsistent", StructuredCitation(d.doi, s.title, s.authors, s.year, s.venue)),
        ("author_swap", "inconsistent", StructuredCitation(s.doi, s.title, d.authors, s.year, s.venue)),
        ("year_shift", "inconsistent", StructuredCitation(s.doi, s.title, s.authors, s.year + year_shift, s.venue)),
        ("title_substitution", "inconsistent", StructuredCitation(s.doi, d.title, s.authors, s.year, s.venue)),
        ("composite_splice", "inconsistent", StructuredCitation(d.doi, s.title, d.authors, d.year, d.venue)),
    ]


def build_suite(references: Iterable[Reference], config: SuiteConfig = SuiteConfig()) -> Suite:
    """Screen, pair, split and expand references into a suite."""
    kept, excluded = eligible_records(references, config)
    raw_pairs, unpaired = pair_records(kept)
    paired = {ref_id for _, a, b, _ in raw_pairs for ref_id in (a, b)}
    records = {r.ref_id: structured(r) for r in kept if r.ref_id in paired}
    strata = {r.ref_id: r.domain for r in kept if r.ref_id in paired}
    excluded += [(ref_id, "unpaired in its stratum") for ref_id in unpaired]
    pairs = split_pairs(raw_pairs, config)
    instances = []
    for pair in pairs:
        for source_id, donor_id in ((pair.first, pair.second), (pair.second, pair.first)):
            for variant, label, citation in variants(records[source_id], records[donor_id], config.year_shift):
                instances.append(
                    SuiteInstance(
                        f"{source_id}/{variant}", pair.pair_id, pair.partition, pair.stratum,
                        source_id, donor_id, variant, label, citation,
                    )
                )
    return Suite(config, records, strata, tuple(pairs), tuple(instances), tuple(excluded))


# ---- audits -------------------------------------------------------------------------------------


def audit_suite(suite: Suite) -> AuditReport:
    """The three construction audits, plus the formatting-variant field-agreement assertion."""
    report = AuditReport({"negatives_differ": [], "no_conflicting_labels": [], "pair_partition": [], "formatting_preserved": []})
    pairs = {p.pair_id: p for p in suite.pairs}
    membership: dict[str, list[str]] = defaultdict(list)
    for p in suite.pairs:
        membership[p.first].append(p.pair_id)
        membership[p.second].append(p.pair_id)
    for ref_id, pair_ids in membership.items():
        if len(pair_ids) != 1:
            report.checks["pair_partition"].append(f"{ref_id} is in {len(pair_ids)} pairs")
    for inst in suite.instances:
        source = suite.records.get(inst.source_id)
        pair = pairs.get(inst.pair_id)
        if pair is None or {inst.source_id, inst.donor_id} != {pair.first, pair.second}:
            report.checks["pair_partition"].append(f"{inst.instance_id}: source and donor are not the members of {inst.pair_id}")
        elif inst.partition != pair.partition or inst.stratum != pair.stratum:
            report.checks["pair_partition"].append(f"{inst.instance_id}: in {inst.partition}, its pair in {pair.partition}")
        if source is None:
            report.checks["negatives_differ"].append(f"{inst.instance_id}: unknown source")
            continue
        if inst.label == "inconsistent" and inst.citation == source:
            report.checks["negatives_differ"].append(f"{inst.instance_id}: identical to its source")
        if inst.variant == "formatting" and inst.citation.normalized() != source.normalized():
            report.checks["formatting_preserved"].append(f"{inst.instance_id}: fields differ from the source after normalization")
    report.checks["no_conflicting_labels"] = conflicting_labels(
        (i.instance_id, i.citation, i.label) for i in suite.instances
    )
    partitions_of = defaultdict(set)
    for inst in suite.instances:
        partitions_of[inst.source_id].add(inst.partition)
        partitions_of[inst.donor_id].add(inst.partition)
    report.checks["pair_partition"] += [f"{r} appears in partitions {sorted(p)}" for r, p in partitions_of.items() if len(p) > 1]
    return report


# ---- files --------------------------------------------------------------------------------------


def instance_to_dict(inst: SuiteInstance) -> dict:
    """One JSONL object of a suite file."""
    row = asdict(inst)
    row["citation"]["authors"] = list(inst.citation.authors)
    row["z"] = inst.z
    return row


def instance_from_dict(row: dict) -> SuiteInstance:
    """Inverse of instance_to_dict."""
    c = row["citation"]
    citation = StructuredCitation(c["doi"], c["title"], tuple(c["authors"]), int(c["year"]), c["venue"], bool(c["truncated"]))
    return SuiteInstance(
        row["instance_id"], row["pair_id"], row["partition"], row["stratum"], row["source_id"],
        row["donor_id"], row["variant"], row["label"], citation,
    )


def suite_jsonl(suite: Suite) -> str:
    """The JSONL text of a suite's instances (pairs and partitions are on every line)."""
    return "".join(json.dumps(instance_to_dict(i), ensure_ascii=False) + "\n" for i in suite.instances)


def load_suite_instances(path: str | Path) -> list[SuiteInstance]:
    """Read the instances of a suite file."""
    with open(path, encoding="utf-8") as f:
        return [instance_from_dict(json.loads(line)) for line in f if line.strip()]


def suite_from_instances(instances: list[SuiteInstance], config: SuiteConfig = SuiteConfig()) -> Suite:
    """Rebuild a Suite (records, pairs) from stored instances alone, so a suite file can be audited."""
    records = {i.source_id: i.citation for i in instances if i.variant == "exact"}
    pairs: dict[str, SourcePair] = {}
    for i in instances:
        if i.pair_id not in pairs:
            first, second = sorted((i.source_id, i.donor_id))
            pairs[i.pair_id] = SourcePair(i.pair_id, i.stratum, first, second, title_similarity(
                records.get(first, i.citation).title, records.get(second, i.citation).title), i.partition)
    strata = {i.source_id: i.stratum for i in instances}
    return Suite(config, records, strata, tuple(pairs.values()), tuple(instances), ())


def hallmark_entries(suite: Suite) -> list[dict]:
    """The suite as HALLMARK-format JSONL objects (acceptable -> VALID, inconsistent -> HALLUCINATED)."""
    taxonomy = hallmark_taxonomy()
    out = []
    for inst in suite.instances:
        c = inst.citation
        authors = " and ".join(c.authors) + (" and others" if c.truncated else "")
        fields = {"title": c.title, "author": authors, "year": str(c.year), "journal": c.venue}
        if c.doi:
            fields["doi"] = c.doi
        type_name = HALLMARK_TYPE_OF_VARIANT.get(inst.variant) if inst.label == "inconsistent" else None
        out.append(
            {
                "bibtex_key": hashlib.sha256(inst.instance_id.encode()).hexdigest()[:12],
                "bibtex_type": "article",
                "fields": fields,
                "label": "VALID" if inst.label == "acceptable" else "HALLUCINATED",
                "hallucination_type": type_name,
                "difficulty_tier": taxonomy[type_name].tier if type_name else None,
                "explanation": f"CiteIntegrity {inst.variant} variant of {inst.source_id} (donor {inst.donor_id})",
                "generation_method": "citeintegrity",
                "source_conference": None,
                "source": f"citeintegrity:{inst.partition}",
                "publication_date": f"{c.year}-01-01",
                "added_to_benchmark": None,
                "subtests": None,
                "raw_bibtex": None,
                "schema_version": "1.0",
            }
        )
    return out


__all__ = [
    "ACCEPTABLE_VARIANTS",
    "HALLMARK_TYPE_OF_VARIANT",
    "INCONSISTENT_VARIANTS",
    "PARTITIONS",
    "SAMPLE_SUITE_PATH",
    "SourcePair",
    "StructuredCitation",
    "Suite",
    "SuiteConfig",
    "SuiteInstance",
    "audit_suite",
    "build_suite",
    "eligible_records",
    "hallmark_entries",
    "instance_from_dict",
    "instance_to_dict",
    "load_suite_instances",
    "pair_records",
    "split_pairs",
    "suite_from_instances",
    "suite_jsonl",
    "title_typo",
    "variants",
    "venue_initials",
]
