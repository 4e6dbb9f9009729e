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
import html
import json
import random
import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from corpora.citations.audit import AuditReport, conflicting_labels
from corpora.citations.normalization import (
    CitationFields,
    author_similarity,
    normalize_text,
    title_similarity,
    venue_similarity,
)
from corpora.citations.normalization import venue_initials as _normalized_initials
from corpora.citations.real_reference import Reference
from corpora.citations.taxonomy import hallmark_taxonomy
from storage.jsonl import read_jsonl

#: The bundled suite built from the bundled real references.
SAMPLE_SUITE_PATH = Path(__file__).resolve().parents[1] / "samples" / "citeintegrity_sample.jsonl"

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
#: The paper's eligibility window on the recorded (print-first) year.
PAPER_YEAR_WINDOW: tuple[int, int] = (2019, 2025)
#: The paper's four keyword-query strata (name -> query), in the paper's order.
PAPER_QUERY_STRATA: dict[str, str] = {
    "Artificial Intelligence": "artificial intelligence machine learning",
    "Climate Sustainability": "climate change sustainability",
    "Public Health": "public health epidemiology",
    "Materials Science": "materials science nanotechnology",
}
OTHER_STRATUM = "Other"
_AND_WORD = re.compile(r"\s+and\s+", re.IGNORECASE)
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
    year_window: tuple[int, int] | None = None
    """Inclusive (first, last) recorded year a record must have; None disables the screen. The paper
    screens 2019-2025 (`PAPER_YEAR_WINDOW`); the bundled sample of classic works keeps None."""


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
class SourceRecord:
    """One candidate source work: its id, stratum and structured citation (deposited family names)."""

    record_id: str
    stratum: str
    citation: StructuredCitation


def source_record(ref: Reference | SourceRecord) -> SourceRecord:
    """A Reference (family names parsed from "Given Family") or an already built SourceRecord."""
    if isinstance(ref, SourceRecord):
        return ref
    return SourceRecord(ref.ref_id, ref.domain, structured(ref))


def query_stratum(title: str | None, venue: str | None, strata: dict[str, str] = PAPER_QUERY_STRATA) -> str:
    """The keyword-query stratum a record answers, from its own title and venue: the query with the
    most of its words present (a word matches a query word sharing its first two thirds, at least
    five letters: "sustainable" meets "sustainability" through "sustainab"); ties go to the earlier
    query; no query word at all: Other. Declared and mechanical, like the paper's keyword strata."""
    words = normalize_text(f"{title or ''} {venue or ''}").split()
    best, best_hits = OTHER_STRATUM, 0
    for name, query in strata.items():
        hits = sum(any(w.startswith(q[: max(5, 2 * len(q) // 3)]) for w in words) for q in query.split())
        if hits > best_hits:
            best, best_hits = name, hits
    return best


def record_from_row(row: dict, stratum: str | None = None) -> SourceRecord | None:
    """A SourceRecord from an index row (`index.readers`: authors as deposited
    {"family", "given"} pairs), keeping the deposited family names ("Martinez Hinarejos" stays
    whole). None when a required field is missing. The stratum defaults to `query_stratum`."""
    families = tuple(a["family"].strip() for a in row.get("authors") or [] if (a.get("family") or "").strip())
    if not (row.get("doi") and row.get("title") and families and row.get("venue") and row.get("year")):
        return None
    citation = StructuredCitation(row["doi"], row["title"], families, int(row["year"]), row["venue"])
    return SourceRecord(row["doi"], stratum or query_stratum(row["title"], row["venue"]), citation)


def records_from_rows(rows: Iterable[dict], limit: int | None = None,
                      year_window: tuple[int, int] | None = None) -> list[SourceRecord]:
    """The snapshot: the first `limit` usable rows (see `record_from_row`; within `year_window`,
    the stand-in for the paper's query date filter), first occurrence of each DOI, in input order."""
    out: list[SourceRecord] = []
    seen: set[str] = set()
    for row in rows:
        rec = record_from_row(row)
        if rec is None or rec.record_id.lower() in seen:
            continue
        if year_window and not year_window[0] <= rec.citation.year <= year_window[1]:
            continue
        seen.add(rec.record_id.lower())
        out.append(rec)
        if limit is not None and len(out) >= limit:
            break
    return out


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


def eligible_records(
    refs: Iterable[Reference | SourceRecord], config: SuiteConfig
) -> tuple[list[SourceRecord], list[tuple[str, str]]]:
    """Screen records in input order; returns (kept, [(record_id, reason)])."""
    kept: list[SourceRecord] = []
    kept_norms: list[str] = []
    excluded: list[tuple[str, str]] = []
    dois: set[str] = set()
    titles: set[str] = set()
    for rec in map(source_record, refs):
        c = rec.citation
        norm = normalize_text(c.title)
        reason = None
        if not (c.doi and c.title and c.authors and c.venue and c.year):
            reason = "missing DOI, title, authors, venue or year"
        elif config.year_window and not config.year_window[0] <= c.year <= config.year_window[1]:
            reason = f"year {c.year} outside {config.year_window[0]}-{config.year_window[1]}"
        elif any(term in c.title.lower() for term in EXCLUDED_TITLE_TERMS):
            reason = "editorial-type title"
        elif not any(len(w) >= 6 for w in _ALPHA_WORD.findall(c.title)):
            reason = "no alphabetic title word of six or more letters"
        elif c.doi.lower() in dois:
            reason = "duplicate DOI"
        elif norm in titles:
            reason = "duplicate normalized title"
        elif config.near_title_cutoff is not None and _any_similar(norm, kept_norms, config.near_title_cutoff):
            reason = f"title similarity >= {config.near_title_cutoff} to an earlier record"
        if reason:
            excluded.append((rec.record_id, reason))
            continue
        kept.append(rec)
        kept_norms.append(norm)
        dois.add(c.doi.lower())
        titles.add(norm)
    return kept, excluded


def _any_similar(norm: str, earlier: list[str], cutoff: float) -> bool:
    """Whether SequenceMatcher similarity to any earlier normalized title reaches the cutoff; the
    length bound and quick_ratio (both upper bounds of ratio) skip most full comparisons."""
    from difflib import SequenceMatcher

    for other in earlier:
        if 2 * min(len(norm), len(other)) < cutoff * (len(norm) + len(other)):
            continue
        m = SequenceMatcher(None, norm, other, autojunk=False)
        if m.quick_ratio() >= cutoff and m.ratio() >= cutoff:
            return True
    return False


def pair_records(records: list[SourceRecord]) -> tuple[list[tuple[str, str, str, float]], list[str]]:
    """Greedy disjoint pairing within strata; returns ([(stratum, a, b, similarity)], unpaired ids)."""
    by_stratum: dict[str, list[SourceRecord]] = defaultdict(list)
    for r in map(source_record, records):
        by_stratum[r.stratum].append(r)
    pairs, unpaired = [], []
    for stratum in sorted(by_stratum):
        members = sorted(by_stratum[stratum], key=lambda r: r.record_id)
        norms = [normalize_text(r.citation.title) for r in members]
        author_sets = [frozenset(normalize_text(f) for f in r.citation.authors) for r in members]
        edges = []
        for i, a in enumerate(members):
            for j in range(i + 1, len(members)):
                if author_sets[i] == author_sets[j]:
                    continue
                similarity = _sequence_similarity(norms[i], norms[j])
                edges.append((-similarity, a.record_id, members[j].record_id))
        edges.sort()
        used: set[str] = set()
        for negative_similarity, a_id, b_id in edges:
            if a_id in used or b_id in used:
                continue
            used.update((a_id, b_id))
            pairs.append((stratum, a_id, b_id, round(-negative_similarity, 6)))
        unpaired.extend(r.record_id for r in members if r.record_id not in used)
    return pairs, unpaired


def _sequence_similarity(a: str, b: str) -> float:
    from corpora.citations.normalization import sequence_similarity

    return sequence_similarity(a, b)


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


_ENTITY = re.compile(r"&(?:#\d+|#x[0-9a-fA-F]+|[A-Za-z][A-Za-z0-9]*);")


def _upper_text(text: str) -> str:
    """Upper-case a field for the formatting variant. Entities are decoded first (upper-casing
    "&apos;" gives "&APOS;", which no longer decodes); a double-encoded one ("&amp;#39;"), whose
    decoding would change the normalized field, is kept and left as it is instead."""
    decoded = html.unescape(text)
    if normalize_text(decoded) == normalize_text(text):
        return _safe_upper(decoded)
    parts = _ENTITY.split(text)
    entities = _ENTITY.findall(text)
    return "".join(_safe_upper(p) + (entities[k] if k < len(entities) else "") for k, p in enumerate(parts))


def _formatting(c: StructuredCitation) -> StructuredCitation:
    title = _upper_text(c.title)
    title = title.replace(": ", " - ") if ": " in title else title.replace(" ", ": ", 1)
    return StructuredCitation(c.doi, title, tuple(_upper_text(a) for a in c.authors), c.year, _upper_text(c.venue))


def venue_initials(venue: str) -> str:
    """The declared venue abbreviation, upper-cased: the initials of the *normalized* venue's
    words, the same function the matcher compares against (`citation_normalization.venue_initials`),
    so "C&amp;EN Global Enterprise" gives "CEGE" on both sides."""
    return _normalized_initials(venue).upper()


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


def build_suite(references: Iterable[Reference | SourceRecord], config: SuiteConfig = SuiteConfig()) -> Suite:
    """Screen, pair, split and expand references (or SourceRecords) into a suite."""
    kept, excluded = eligible_records(references, config)
    raw_pairs, unpaired = pair_records(kept)
    paired = {ref_id for _, a, b, _ in raw_pairs for ref_id in (a, b)}
    records = {r.record_id: r.citation for r in kept if r.record_id in paired}
    strata = {r.record_id: r.stratum for r in kept if r.record_id in paired}
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


def _export_differences(c: StructuredCitation, read: CitationFields) -> list[str]:
    """Fields where what a verifier reads back from the export differs from the citation."""
    out = []
    if (read.doi or "") != (c.doi or "").lower():
        out.append(f"doi {read.doi!r} != {c.doi!r}")
    if normalize_text(read.title) != normalize_text(c.title):
        out.append(f"title {read.title!r} != {c.title!r}")
    if [normalize_text(a) for a in read.authors] != [normalize_text(a) for a in c.authors]:
        out.append(f"family names {list(read.authors)} != {list(c.authors)}")
    if read.year != c.year:
        out.append(f"year {read.year} != {c.year}")
    if normalize_text(read.venue) != normalize_text(c.venue):
        out.append(f"venue {read.venue!r} != {c.venue!r}")
    if read.truncated != c.truncated:
        out.append(f"truncation {read.truncated} != {c.truncated}")
    return out


def audit_suite(suite: Suite) -> AuditReport:
    """The three construction audits, plus the formatting-variant field-agreement assertion, run on
    what is exported (the BibTeX fields verifiers read, parsed back through the project's name and
    field parsing), plus two export checks: every exported instance reads back as its citation
    (`export_round_trip`), and every acceptable variant agrees with its source under the matcher's
    declared rules (`acceptable_fields_agree`: authors 1, year 1, venue 1 incl. initials, title
    normalized-equal except the typo variant)."""
    report = AuditReport({"negatives_differ": [], "no_conflicting_labels": [], "pair_partition": [],
                          "formatting_preserved": [], "export_round_trip": [], "acceptable_fields_agree": []})
    pairs = {p.pair_id: p for p in suite.pairs}
    membership: dict[str, list[str]] = defaultdict(list)
    for p in suite.pairs:
        membership[p.first].append(p.pair_id)
        membership[p.second].append(p.pair_id)
    for ref_id, pair_ids in membership.items():
        if len(pair_ids) != 1:
            report.checks["pair_partition"].append(f"{ref_id} is in {len(pair_ids)} pairs")
    read_back: dict[str, CitationFields] = {}
    for inst in suite.instances:
        read = read_back[inst.instance_id] = CitationFields.from_bibtex_fields(exported_fields(inst.citation))
        differences = _export_differences(inst.citation, read)
        if differences:
            report.checks["export_round_trip"].append(f"{inst.instance_id}: exported reads back with {'; '.join(differences)}")
    sources_read = {rid: CitationFields.from_bibtex_fields(exported_fields(c)) for rid, c in suite.records.items()}
    for inst in suite.instances:
        read = read_back[inst.instance_id]
        source = suite.records.get(inst.source_id)
        pair = pairs.get(inst.pair_id)
        if pair is None or {inst.source_id, inst.donor_id} != {pair.first, pair.second}:
            report.checks["pair_partition"].append(f"{inst.instance_id}: source and donor are not the members of {inst.pair_id}")
        elif inst.partition != pair.partition or inst.stratum != pair.stratum:
            report.checks["pair_partition"].append(f"{inst.instance_id}: in {inst.partition}, its pair in {pair.partition}")
        if source is None:
            report.checks["negatives_differ"].append(f"{inst.instance_id}: unknown source")
            continue
        src = sources_read[inst.source_id]
        if inst.label == "inconsistent" and _read_key(read) == _read_key(src):
            report.checks["negatives_differ"].append(f"{inst.instance_id}: exports the same fields as its source")
        if inst.variant == "formatting" and _read_key(read) != _read_key(src):
            report.checks["formatting_preserved"].append(f"{inst.instance_id}: exported fields differ from the source after normalization")
        if inst.label == "acceptable":
            problems = _acceptable_disagreements(inst.variant, read, source)
            if problems:
                report.checks["acceptable_fields_agree"].append(f"{inst.instance_id}: {'; '.join(problems)}")
    report.checks["no_conflicting_labels"] = conflicting_labels(
        (i.instance_id, _read_key(read_back[i.instance_id]), i.label) for i in suite.instances
    )
    partitions_of = defaultdict(set)
    for inst in suite.instances:
        partitions_of[inst.source_id].add(inst.partition)
        partitions_of[inst.donor_id].add(inst.partition)
    report.checks["pair_partition"] += [f"{r} appears in partitions {sorted(p)}" for r, p in partitions_of.items() if len(p) > 1]
    return report


def _read_key(read: CitationFields) -> tuple:
    """A read-back citation, normalized, as one comparable value."""
    return ((read.doi or ""), normalize_text(read.title), tuple(normalize_text(a) for a in read.authors),
            read.year, normalize_text(read.venue), read.truncated)


def _acceptable_disagreements(variant: str, read: CitationFields, source: StructuredCitation) -> list[str]:
    problems = []
    s_a = author_similarity(read.authors, source.authors, read.truncated)
    if s_a != 1.0:
        problems.append(f"authors score {s_a:.3f} ({list(read.authors)} vs {list(source.authors)})")
    if read.year != source.year:
        problems.append(f"year {read.year} vs {source.year}")
    s_v = venue_similarity(read.venue, source.venue)
    if s_v != 1.0:
        problems.append(f"venue score {s_v:.3f} ({read.venue!r} vs {source.venue!r})")
    if variant != "title_typo" and normalize_text(read.title) != normalize_text(source.title):
        problems.append(f"title {read.title!r} vs {source.title!r}")
    return problems


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
    return [instance_from_dict(row) for _, row in read_jsonl(path)]


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


def bibtex_author_field(authors: Iterable[str], truncated: bool = False) -> str:
    """Family names as a BibTeX author field that parses back to the same family names: each name
    braced ("{Van Gool}", one unit, as BibTeX reads a braced last name), joined by " and ", an
    explicit truncation as " and others"."""
    # a deposited "family" can hold commas or a word "and" (an affiliation, two people): braces keep
    # the commas in, and a braced {and} is not a name separator
    names = ["{" + _AND_WORD.sub(" {and} ", _balanced_braces(a)) + "}" for a in authors]
    return " and ".join(names + (["others"] if truncated else []))


def _balanced_braces(text: str) -> str:
    """Close unclosed braces and open unopened ones (a LaTeX-ish name cut mid-group, "{\\v{Z"),
    so the outer pair stays the outer group and the LaTeX inside still decodes."""
    depth = opened = 0
    for ch in text:
        if ch == "{":
            depth += 1
        elif ch == "}":
            if depth:
                depth -= 1
            else:
                opened += 1
    return "{" * opened + text + "}" * depth


def exported_fields(c: StructuredCitation) -> dict[str, str]:
    """The BibTeX fields a verifier reads for a structured citation."""
    fields = {"title": c.title, "author": bibtex_author_field(c.authors, c.truncated), "year": str(c.year),
              "journal": c.venue}
    if c.doi:
        fields["doi"] = c.doi
    return fields


def hallmark_entries(suite: Suite) -> list[dict]:
    """The suite as HALLMARK-format JSONL objects (acceptable -> VALID, inconsistent -> HALLUCINATED)."""
    taxonomy = hallmark_taxonomy()
    out = []
    for inst in suite.instances:
        c = inst.citation
        fields = exported_fields(c)
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
    "OTHER_STRATUM",
    "PAPER_QUERY_STRATA",
    "PAPER_YEAR_WINDOW",
    "SourceRecord",
    "bibtex_author_field",
    "exported_fields",
    "query_stratum",
    "record_from_row",
    "records_from_rows",
    "source_record",
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
