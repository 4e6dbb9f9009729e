"""`doi_only`: does the cited DOI resolve? (HALLMARK's DOI-only baseline, done outage-safe.)

Decision per entry, over the configured sources:

* no DOI field -> UNCERTAIN (nothing to resolve); a DOI field that is not `10.NNNN/...` ->
  HALLUCINATED (fabricated_doi);
* any source returns a record for the DOI -> VALID (the DOI exists), unless the record is plainly
  another work: its title shares under `other_work_title` similarity with the cited title and
  neither is the other's main title -> HALLUCINATED (hybrid_fabrication: a real DOI on a made-up
  or another entry). Set `other_work_title=0` for HALLMARK's pure "does it resolve" baseline;
* no source has it, and an *authoritative* source (default: doi_org, the DOI registry itself)
  answered a definite "not there" -> HALLUCINATED (fabricated_doi). With `closed_world=True` every
  source's "not there" counts (an index declared complete for the corpus, e.g. an experiment);
* no source has it, and an offline index among the sources declares its DOI prefix registry
  complete (`index.evidence`, e.g. built from Crossref's whole data file) while the
  DOI's prefix is not in it -> HALLUCINATED (fabricated_doi, "doi prefix 10.9999 has no registrant
  in the index's sources"); likewise a 10.48550 arXiv DOI beyond its month's id range when the
  index declares arXiv's ranges;
* otherwise UNCERTAIN: an outage, 429 or 5xx never becomes HALLUCINATED (HALLMARK's own baseline
  reads a failed resolution as fabrication); when a source failed, the reason names it and
  `detail["outage_sources"]` lists it (`verifiers.citations.source_set.no_evidence`).

An authoritative "not there" stays decisive even when another source failed: the DOI registry is
the authority on whether a DOI exists.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from clients.source import BibSource
from corpora.citations.normalization import canonical_doi, normalize_text, title_similarity
from index.evidence import sources_evidence
from storage.records import Item, Output
from verifiers.citations.entry import CitationEntry
from verifiers.citations.source_set import (
    CountedSource,
    bind_sources,
    item_failure,
    no_evidence,
    resolve_sources,
)
from verifiers.registry import system
from verifiers.system import RunContext

#: P(label correct) per decision path: a resolving DOI says nothing about the other fields.
CONFIDENCE = {"resolved": 0.70, "absent": 0.90, "malformed": 0.80, "no_doi": 0.50, "no_evidence": 0.50,
              "other_work": 0.80, "unregistered": 0.85}


class DoiOnlyVerifier:
    def __init__(self, sources: Sequence[BibSource], authoritative: Sequence[str] = ("doi_org",),
                 closed_world: bool = False, max_concurrency: int = 8, other_work_title: float = 0.5) -> None:
        self.name = "doi_only"
        self.sources = self.configured_sources = list(sources)
        self.authoritative = set(authoritative)
        self.closed_world = closed_world
        self.max_concurrency = max_concurrency
        self.other_work_title = other_work_title

    async def _one(self, item: Item, limit: asyncio.Semaphore) -> Output:
        if item.load_error:
            return Output.failed(item.item_id, item.load_error, "input")
        entry = CitationEntry.from_item(item)
        raw = entry.fields.get("doi", "").strip()
        if not raw:
            return Output(item.item_id, "UNCERTAIN", CONFIDENCE["no_doi"], "no DOI to resolve",
                          subtests={"doi_resolves": None})
        doi = canonical_doi(raw)
        if doi is None:
            return Output(item.item_id, "HALLUCINATED", CONFIDENCE["malformed"], f"DOI '{raw}' is not 10.NNNN/suffix",
                          predicted_type="fabricated_doi", subtests={"doi_resolves": False})
        counted = [CountedSource(s) for s in self.sources]
        async with limit:
            lookups = list(await asyncio.gather(*(c.doi(doi) for c in counted)))
        common: dict[str, Any] = {
            "api_sources_queried": [c.name for c in counted],
            "api_calls": sum(c.calls for c in counted),
            "detail": {"doi": doi, "lookups": [lk.summary() for lk in lookups]},
        }
        found = [lk for lk in lookups if lk.status == "found"]
        titled = [lk for lk in found if lk.records and lk.records[0].title]
        cited_title = entry.fields.get("title")
        if titled and cited_title and self.other_work_title > 0:
            record = titled[0].records[0]
            similarity = title_similarity(cited_title, record.title)
            short, full = sorted((normalize_text(cited_title), normalize_text(record.title)), key=len)
            if similarity < self.other_work_title and not full.startswith(short + " "):
                return Output(item.item_id, "HALLUCINATED", CONFIDENCE["other_work"],
                              f"DOI {doi} resolves at {titled[0].source} to another work: {record.title!r} "
                              f"(title similarity {similarity:.2f})", predicted_type="hybrid_fabrication",
                              subtests={"doi_resolves": True}, **common)
        if found:
            return Output(item.item_id, "VALID", CONFIDENCE["resolved"], f"DOI {doi} resolves at {found[0].source}",
                          subtests={"doi_resolves": True}, **common)
        registries = sources_evidence(self.sources)
        unregistered = registries.unregistered_doi(doi) if registries is not None else None
        if unregistered:
            common["detail"]["index_evidence"] = registries.summary() if registries is not None else None
            return Output(item.item_id, "HALLUCINATED", CONFIDENCE["unregistered"], f"DOI {doi}: {unregistered}",
                          predicted_type="fabricated_doi", subtests={"doi_resolves": False}, **common)
        errors = [lk for lk in lookups if lk.status == "error"]
        decisive = [lk for lk in lookups if lk.status == "absent" and (self.closed_world or lk.source in self.authoritative)]
        if decisive:
            where = ", ".join(lk.source for lk in decisive)
            return Output(item.item_id, "HALLUCINATED", CONFIDENCE["absent"], f"DOI {doi} does not exist at {where}",
                          predicted_type="fabricated_doi", subtests={"doi_resolves": False}, **common)
        if errors:
            return no_evidence(item.item_id, errors, CONFIDENCE["no_evidence"], subtests={"doi_resolves": None}, **common)
        reason = f"DOI {doi} not in {', '.join(lk.source for lk in lookups)} (not an authoritative 'does not exist')"
        return Output(item.item_id, "UNCERTAIN", CONFIDENCE["no_evidence"], reason,
                      subtests={"doi_resolves": None}, **common)

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        self.sources = bind_sources(self.configured_sources, ctx)  # the run's limiter, cache and guard
        limit = asyncio.Semaphore(self.max_concurrency)
        return list(await asyncio.gather(*(item_failure(i.item_id, self._one(i, limit)) for i in items)))


@system("doi_only", accepts=("citation",), description="resolve the cited DOI; outages and 429/5xx give UNCERTAIN, never HALLUCINATED",
        runtime_args=("max_concurrency", "client_options"))
def build_doi_only(sources: Sequence[str | BibSource] = ("doi_org",), index_path: str | None = None,
                   authoritative: Sequence[str] = ("doi_org",), closed_world: bool = False,
                   client_options: dict[str, Any] | None = None, max_concurrency: int = 8,
                   other_work_title: float = 0.5) -> DoiOnlyVerifier:
    """Resolve the cited DOI. Runtime arguments (recorded, not in run identity): `max_concurrency`,
    `client_options` (timeouts, retries, `base_urls`); everything else changes answers."""
    return DoiOnlyVerifier(resolve_sources(sources, index_path, client_options), authoritative, closed_world,
                           max_concurrency, other_work_title)
