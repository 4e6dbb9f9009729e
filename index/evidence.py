"""Evidence an offline index gives besides "found a close record", built from the same dumps.

Three registries, collected while `index.build.write_index` streams the dump records and stored
in the index's Parquet footer (key `EVIDENCE_METADATA_KEY`, JSON), so the file that answers a run
carries them and its hash covers them:

* `doi_prefixes`: every DOI prefix (`10.NNNN`) seen. Crossref's public data file holds every
  Crossref DOI, so with it a cited DOI whose prefix no registrant in the dumps owns is fabricated
  (a made-up `10.99999/...`). DataCite DOIs (Zenodo `10.5281`, arXiv's `10.48550`) are not in
  Crossref: arXiv's snapshot adds `10.48550`; other agencies only through a dump that has them
  (OpenAlex).
* `venues`: every venue name and abbreviation seen, as `venue_name_key` (normalised, edition
  numbers, years and "proceedings of the" dropped: "Proceedings of the 60th Annual Meeting of
  the ACL (Volume 1)" and "Annual Meeting of the ACL" are one venue). A cited venue that is no
  known venue (neither in the dumps nor in the project's alias table, `venue_key`) is nonexistent.
* `arxiv_max`: the highest arXiv sequence number seen per month (`YYMM` for new-style ids,
  `archive/YYMM` for old ones). An id beyond its month's highest number, a new-style id before
  April 2007 (when the scheme began), a 5-digit number before 2015 or an old-style id after
  March 2007 is fabricated. A month after the dump's last month is unknown, not fabricated.

A registry is *evidence* only when the index declares it complete (`covers`): the builder's
user says so (`jobs/build_index.py --covers doi_prefixes venues arxiv_ids`), and the build checks
it from its own provenance (`registry_gaps`): a registry may be declared only when the inputs
include a dump that can hold it whole (`COMPLETE_INPUTS`: Crossref's data file or OpenAlex's
snapshot for DOI prefixes, whole DBLP or ACL Anthology dumps for venues, arXiv's snapshot for
arXiv ids) with at least as many records as such a dump has ever had; a few hundred BibTeX
records, or a sample in DBLP's format, cannot say that a prefix or venue does not exist. An
index that does not declare a kind never yields a verdict from it, however much it collected.
A declaration forced past the check (`--force-covers`) is recorded (`forced`, with what was
missing) and named in every finding it gives and in every output's `index_evidence`.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from corpora.citations.normalization import normalize_text, venue_key, venue_name_key, venue_name_keys  # noqa: F401 (venue_name_key re-exported)
from storage.bib_identifiers import canonical_arxiv_id, canonical_doi

EVIDENCE_METADATA_KEY = "scrutineer_evidence"
KINDS = ("doi_prefixes", "venues", "arxiv_ids")
ARXIV_DOI_PREFIX = "10.48550"
_NEW_ID = re.compile(r"^(\d{2})(\d{2})\.(\d{4,5})$")
_OLD_ID = re.compile(r"^([a-z\-]+(?:\.[a-z]{2})?)/(\d{2})(\d{2})(\d{3})$")
#: dump formats that can hold each registry whole, with the fewest records a whole dump of that format
#: has held since 2019 (well under today's: Crossref ~150 M, OpenAlex ~250 M, DBLP ~7 M, ACL Anthology
#: ~100 k, arXiv ~2.4 M), so a sample in the right format is not taken for the whole
COMPLETE_INPUTS: dict[str, dict[str, int]] = {
    "doi_prefixes": {"crossref": 50_000_000, "openalex": 100_000_000},
    "venues": {"dblp": 3_000_000, "acl_anthology": 40_000},
    "arxiv_ids": {"arxiv": 1_000_000},
}


class IncompleteRegistries(ValueError):
    """Registries declared complete whose inputs cannot hold them whole; `gaps` says what is missing."""

    def __init__(self, gaps: dict[str, str]) -> None:
        self.gaps = gaps
        super().__init__("cannot declare " + "; ".join(f"{kind} complete: {why}" for kind, why in gaps.items())
                         + " (--force-covers declares them anyway, named in every verdict they give)")


def registry_gaps(covers: Sequence[str], sources: Sequence[dict[str, Any]]) -> dict[str, str]:
    """For each kind in `covers` that `sources` (the build's provenance: `format`, and
    `records_read` once read) cannot hold whole, what is missing. Records are summed per format
    (a dump given in several folders); without `records_read` only the formats are checked."""
    read: dict[str, int | None] = {}
    for source in sources:
        fmt, count = source.get("format") or "", source.get("records_read")
        read[fmt] = None if count is None or read.get(fmt, 0) is None else read.get(fmt, 0) + int(count)
    gaps = {}
    for kind in covers:
        needed = COMPLETE_INPUTS.get(kind, {})
        whole = [fmt for fmt, least in needed.items() if fmt in read and (read[fmt] is None or read[fmt] >= least)]
        if whole:
            continue
        wanted = " or ".join(f"a whole {fmt} dump (>= {least:,} records)" for fmt, least in needed.items())
        given = ", ".join(f"{fmt} ({n:,} records)" if n is not None else fmt for fmt, n in read.items()) or "none"
        gaps[kind] = f"needs {wanted}; the inputs are {given}"
    return gaps


def doi_prefix(doi: str | None) -> str | None:
    canonical = canonical_doi(doi)
    return canonical.split("/", 1)[0] if canonical else None


def _month_key(arxiv_id: str) -> tuple[str, int, int] | None:
    """(month key, yymm as a sortable int yyyymm, sequence number) of an arXiv id; None if malformed."""
    new = _NEW_ID.match(arxiv_id)
    if new:
        yy, mm, seq = new.groups()
        return f"{yy}{mm}", _yyyymm(yy, mm), int(seq)
    old = _OLD_ID.match(arxiv_id)
    if old:
        archive, yy, mm, seq = old.groups()
        return f"{archive}/{yy}{mm}", _yyyymm(yy, mm), int(seq)
    return None


def _yyyymm(yy: str, mm: str) -> int:
    return (1900 if int(yy) >= 91 else 2000) * 100 + int(yy) * 100 + int(mm)


@dataclass
class IndexEvidence:
    """The registries of one index and which of them it declares complete."""

    doi_prefixes: set[str] = field(default_factory=set)
    venues: set[str] = field(default_factory=set)
    arxiv_max: dict[str, int] = field(default_factory=dict)
    covers: tuple[str, ...] = ()
    last_month: int = 0
    """The latest arXiv month (yyyymm) seen: later months are unknown, not fabricated."""
    forced: dict[str, str] = field(default_factory=dict)
    """Kinds declared complete past `registry_gaps` (`--force-covers`), with what their inputs lack."""
    _seen_venues: set[str] = field(default_factory=set, repr=False, compare=False)

    # -- building -------------------------------------------------------------------------------
    def observe(self, row: dict[str, Any]) -> None:
        """Add one dump record (an index row: its DOI already canonical, `10.NNNN/...`)."""
        doi = row.get("doi")
        prefix = doi.split("/", 1)[0] if doi and doi.startswith("10.") else doi_prefix(doi)
        if prefix:
            self.doi_prefixes.add(prefix)
        for venue in (row.get("venue"), row.get("venue_short")):
            if venue and venue not in self._seen_venues:
                # dumps repeat a few thousand venue strings millions of times: normalise each once
                if len(self._seen_venues) > 500_000:
                    self._seen_venues.clear()
                self._seen_venues.add(venue)
                self.venues |= venue_name_keys(venue)
        arxiv = canonical_arxiv_id(row.get("arxiv_id"))
        if arxiv:
            if row.get("origin") == "arxiv":
                self.doi_prefixes.add(ARXIV_DOI_PREFIX)  # every arXiv paper has a DataCite DOI 10.48550/arXiv.<id>
            month = _month_key(arxiv)
            if month:
                key, yyyymm, seq = month
                if seq > self.arxiv_max.get(key, 0):
                    self.arxiv_max[key] = seq
                self.last_month = max(self.last_month, yyyymm)

    def to_json(self) -> str:
        return json.dumps({"covers": list(self.covers), "doi_prefixes": sorted(self.doi_prefixes),
                           "venues": sorted(self.venues), "arxiv_max": dict(sorted(self.arxiv_max.items())),
                           "last_month": self.last_month, "forced": self.forced})  # fmt: skip

    @classmethod
    def from_json(cls, text: str | bytes) -> IndexEvidence:
        data = json.loads(text)
        unknown = set(data.get("covers") or ()) - set(KINDS)
        if unknown:
            raise ValueError(f"index evidence declares unknown kinds {sorted(unknown)}; known: {', '.join(KINDS)}")
        return cls(set(data.get("doi_prefixes") or ()), set(data.get("venues") or ()),
                   {k: int(v) for k, v in (data.get("arxiv_max") or {}).items()}, tuple(data.get("covers") or ()),
                   int(data.get("last_month") or 0), dict(data.get("forced") or {}))

    def summary(self) -> dict[str, Any]:
        """Sizes, for provenance and logs (the registries themselves can be large)."""
        summary: dict[str, Any] = {"covers": list(self.covers), "doi_prefixes": len(self.doi_prefixes),
                                   "venues": len(self.venues), "arxiv_months": len(self.arxiv_max)}
        if self.forced:
            summary["forced"] = dict(self.forced)
        return summary

    def _forced_note(self, kind: str) -> str:
        """What a finding from a registry forced past the completeness check says about it."""
        why = self.forced.get(kind)
        return f" [{kind} declared complete by --force-covers, though its inputs are not whole: {why}]" if why else ""

    # -- verdicts -------------------------------------------------------------------------------
    def unregistered_doi(self, doi: str | None) -> str | None:
        """Why `doi` is fabricated by the prefix registry (or by arXiv's id ranges for a 10.48550
        arXiv DOI), or None when the evidence cannot tell or is not declared."""
        prefix = doi_prefix(doi)
        if prefix is None:
            return None
        if prefix == ARXIV_DOI_PREFIX:
            arxiv = canonical_arxiv_id(doi)
            return self.impossible_arxiv_id(arxiv) if arxiv else None
        if "doi_prefixes" in self.covers and prefix not in self.doi_prefixes:
            return f"doi prefix {prefix} has no registrant in the index's sources" + self._forced_note("doi_prefixes")
        return None

    def impossible_arxiv_id(self, arxiv_id: str | None) -> str | None:
        """Why an arXiv id cannot exist, or None (a plausible id, an unknown month, no declaration)."""
        if "arxiv_ids" not in self.covers or not arxiv_id:
            return None
        month = _month_key(arxiv_id)
        if month is None:
            return None
        key, yyyymm, seq = month
        mm = yyyymm % 100
        if not 1 <= mm <= 12:
            return f"arXiv id {arxiv_id} names month {mm:02d}"
        if "/" in key:
            if yyyymm > 200703:
                return f"arXiv id {arxiv_id} has the old scheme, which ended in March 2007"
        else:
            if yyyymm < 200704:
                return f"arXiv id {arxiv_id} predates arXiv's YYMM.NNNN scheme (April 2007)"
            digits = len(arxiv_id.split(".", 1)[1])
            if digits != (5 if yyyymm >= 201501 else 4):
                return f"arXiv id {arxiv_id} has {digits} digits; ids of {key} have {5 if yyyymm >= 201501 else 4}"
        if yyyymm > self.last_month:
            return None  # newer than the dump: cannot tell
        highest = self.arxiv_max.get(key)
        if highest is not None and seq > highest:
            return (f"arXiv id {arxiv_id} is beyond month {key}'s last id ({highest}) in the index's sources"
                    + self._forced_note("arxiv_ids"))
        return None

    def unknown_venue(self, venue: str | None) -> str | None:
        """Why `venue` does not exist, or None (known, empty, or venues not declared)."""
        if "venues" not in self.covers or not normalize_text(venue):
            return None
        keys = venue_name_keys(venue)
        if not keys or venue_key(venue) is not None or keys & self.venues:
            return None
        return (f"venue '{venue}' is in no source of the index (no known venue name or abbreviation)"
                + self._forced_note("venues"))


def merge(evidences: Iterable[IndexEvidence]) -> IndexEvidence | None:
    """One view of several indexes' evidence: registries united, a kind covered when any index
    covers it (a complete registry stays complete when more names are added)."""
    items = list(evidences)
    if not items:
        return None
    if len(items) == 1:
        return items[0]
    out = IndexEvidence(covers=tuple(sorted({k for e in items for k in e.covers})))
    for e in items:
        out.doi_prefixes |= e.doi_prefixes
        out.venues |= e.venues
        for key, seq in e.arxiv_max.items():
            out.arxiv_max[key] = max(seq, out.arxiv_max.get(key, 0))
        out.last_month = max(out.last_month, e.last_month)
        out.forced.update(e.forced)
    return out


def evidence_of(source: Any) -> IndexEvidence | None:
    """The evidence an offline-index source carries (Parquet footer, or attached by `index_table`),
    None for an online source or an index built without it. Parsed once per index object."""
    cached = getattr(source, "_scrutineer_evidence", False)
    if cached is not False:
        return cached
    table = getattr(source, "table", None)
    metadata = (table.schema.metadata or {}) if table is not None else {}
    raw = metadata.get(EVIDENCE_METADATA_KEY.encode())
    evidence = IndexEvidence.from_json(raw) if raw else None
    with contextlib.suppress(AttributeError):  # an object without a __dict__ is parsed every time
        source._scrutineer_evidence = evidence
    return evidence


def sources_evidence(sources: Sequence[Any]) -> IndexEvidence | None:
    """The declared evidence of every offline index among `sources`, merged; None when none declares any."""
    found = [e for e in (evidence_of(s) for s in sources) if e is not None and e.covers]
    return merge(found)
