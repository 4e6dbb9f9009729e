"""Bibliographic sources as the citation verifiers see them: resolved by name, counted, and every
lookup turned into typed evidence (`Lookup`), so an outage can never read as "not found".

A verifier is configured with `sources=[...]`: "offline_index" (needs `index_path`) or the name of
an online client in `clients/` (crossref, openalex, dblp, arxiv, semantic_scholar, doi_org).
An online name resolves to an `OnlineSource` placeholder; `bind_sources(sources, ctx)` at the start
of each `run` turns it into the client bound to the run's services (`RunServices.bib_source`: the
cluster limiter at the source's polite rate, the snapshot-scoped response cache, the run's outage
guard), the way `gateway_from_context` does for models. Without run services (an isolated test)
it is built from the system's own `client_options`.
Tests and benchmarks may pass `BibSource` objects directly.

Evidence semantics, from the one classification `clients.errors.is_outage` (the same as for
models): a record is "found"; `None` / `[]` / `NotFoundError` is "absent" (a definite no from that
source); an outage (`SourceOutageError`, retries exhausted on 429 / 5xx, timeouts, truncated
transfers) is "error", which only ever yields UNCERTAIN downstream. Two failures are not evidence
at all and are raised instead:

* `AuthError` (401 / 403: a missing or wrong key) is raised as it is: no item of the run can be
  answered by that source, so the run stops (cluster/runner.py) and run_corpus.py exits 2 naming it;
* a frozen-cache miss (a replayed snapshot that holds no answer) is "skipped": the source was not
  asked, so it is no evidence either way (UNCERTAIN when nothing else answers), and no outage;
* anything else (an unreadable body, a refused request, a bug in an adapter:
  `KeyError`, `TypeError`, ...) is a `SourceFailure`: the item is errored with the reason and its
  traceback summarised (`item_failure`), never UNCERTAIN-by-outage, so a resume does not repeat it.

Outage semantics: when a verifier's answer for an item depends on a lookup that got no answer
(status "error"), the verifier returns
`no_evidence(...)`: UNCERTAIN, the reason naming every failed lookup, and
`detail["outage_sources"]` listing the sources. The run summary counts outputs carrying that key
to mark the run incomplete, so the key is present only when a source really failed.
"""

from __future__ import annotations

import traceback
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from clients.bib_record import BibRecord
from clients.errors import AuthError, CacheMissError, ClientError, NotFoundError, ParseError, is_outage
from clients.source import BibSource
from storage.records import Output
from storage.redaction import redact_text

if TYPE_CHECKING:
    from clients.lent_services import RunServices

__all__ = ["CountedSource", "Lookup", "OnlineSource", "SourceFailure", "bind_sources", "item_failure", "no_evidence",
           "outage_sources", "resolve_sources"]

Status = Literal["found", "absent", "error", "skipped"]
T = TypeVar("T")


@dataclass
class Lookup:
    """One question to one source and what came back."""

    source: str
    kind: Literal["doi", "arxiv", "title"]
    status: Status
    records: list[BibRecord] = field(default_factory=list)
    reason: str | None = None

    def summary(self) -> dict[str, Any]:
        return {"source": self.source, "kind": self.kind, "status": self.status, "n": len(self.records),
                "reason": self.reason}


def _reason(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None)
    return reason if isinstance(reason, str) else f"{type(exc).__name__}: {exc}"


TRACEBACK_FRAMES = 3
"""Innermost frames named in a `SourceFailure`'s reason: where the adapter broke."""


class SourceFailure(Exception):
    """A lookup that failed for a reason that is neither "not there" nor an outage: an unreadable
    body, a refused request or a bug. It is about the item, not the source's
    availability: the item is errored (`item_failure`), and a resumed run keeps it."""

    def __init__(self, source: str, kind: str, exc: BaseException) -> None:
        frames = traceback.extract_tb(exc.__traceback__)[-TRACEBACK_FRAMES:]
        where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in reversed(frames))
        self.source, self.kind = source, kind
        self.error_kind = "parse" if isinstance(exc, ParseError) else "provider" if isinstance(exc, ClientError) else "system"
        text = f"{source} {kind} lookup failed: {_reason(exc)}" + (f" (at {where})" if where else "")
        self.reason = redact_text(text) or text  # an adapter's message may echo a key
        super().__init__(self.reason)


async def item_failure(item_id: str, work: Awaitable[Output]) -> Output:
    """`work`'s output, or the errored output of the item when a lookup raised `SourceFailure`."""
    try:
        return await work
    except SourceFailure as failure:
        return Output.failed(item_id, failure.reason, failure.error_kind)


class CountedSource:
    """Wraps a `BibSource`: counts the calls actually made and turns answers into `Lookup`s."""

    def __init__(self, source: BibSource) -> None:
        self.source = source
        self.name: str = getattr(source, "name", type(source).__name__)
        self.calls = 0

    async def _ask(self, kind: Literal["doi", "arxiv", "title"], call: Callable[[], Awaitable[T]]) -> Lookup:
        self.calls += 1
        try:
            answer: Any = await call()
        except AuthError:
            raise  # no item can be answered with these credentials: the run stops, naming the source
        except NotFoundError as exc:
            return Lookup(self.name, kind, "absent", reason=_reason(exc))
        except CacheMissError as exc:  # a replay holds no answer: the source was not asked, no evidence either way
            return Lookup(self.name, kind, "skipped", reason=_reason(exc))
        except Exception as exc:  # an outage is no answer; anything else is the item's error, never a "no"
            if is_outage(exc):
                return Lookup(self.name, kind, "error", reason=_reason(exc))
            raise SourceFailure(self.name, kind, exc) from exc
        records = [r for r in (answer if isinstance(answer, list) else [answer]) if r is not None]
        return Lookup(self.name, kind, "found" if records else "absent", records)

    async def doi(self, doi: str) -> Lookup:
        if not getattr(self.source, "can_lookup_doi", True):
            return Lookup(self.name, "doi", "skipped", reason="source cannot look up DOIs")
        return await self._ask("doi", lambda: self.source.lookup_doi(doi))

    async def arxiv(self, arxiv_id: str) -> Lookup:
        lookup = getattr(self.source, "lookup_arxiv", None)
        if lookup is None:
            return Lookup(self.name, "arxiv", "skipped", reason="source has no arXiv lookup")
        return await self._ask("arxiv", lambda: lookup(arxiv_id))

    async def title(self, title: str, limit: int = 5) -> Lookup:
        if not getattr(self.source, "can_search_title", True):
            return Lookup(self.name, "title", "skipped", reason="source cannot search titles")
        return await self._ask("title", lambda: self.source.search_title(title, limit))


def outage_sources(lookups: Iterable[Lookup]) -> list[str]:
    """Names of the sources whose lookups got no answer, once each, in order."""
    return list(dict.fromkeys(lk.source for lk in lookups if lk.status == "error"))


def no_evidence(item_id: str, lookups: Iterable[Lookup], confidence: float, *,
                detail: dict[str, Any] | None = None, **fields: Any) -> Output:  # fmt: skip
    """The UNCERTAIN output of an item whose answer depended on the failed ones among `lookups`:
    the reason names each failure, `detail["outage_sources"]` the sources (see the module notes).
    `fields` are the other `Output` fields (subtests, api_sources_queried, api_calls, ...)."""
    failed = [lk for lk in lookups if lk.status == "error"]
    if not failed:
        raise ValueError(f"item {item_id}: no_evidence needs at least one failed lookup")
    reasons = dict.fromkeys(f"{lk.source} {lk.kind} lookup: {lk.reason or 'error'}" for lk in failed)
    return Output(item_id, "UNCERTAIN", confidence, "no evidence: " + "; ".join(reasons), predicted_type=None,
                  detail={**(detail or {}), "outage_sources": outage_sources(failed)}, **fields)  # fmt: skip


@dataclass
class OnlineSource:
    """An online source by name, not yet bound to a run (see `bind_sources`)."""

    name: str
    base_url: str | None = None
    http: Any = None
    """The system's own `clients.http.HttpOptions` (None: the run's, or the defaults)."""

    def bind(self, services: RunServices) -> BibSource:
        """The client for this run, bound to its services (limiter, cache, outage guard)."""
        return services.bib_source(self.name, self.base_url, self.http)


def _online(name: str, options: dict[str, Any]) -> OnlineSource:
    """`client_options` may carry `http_options` (a `clients.http.HttpOptions`, or a dict of its plain
    fields such as timeout / mailto) and `base_urls` ({source name: URL}, e.g. a 127.0.0.1 replay
    server). Both are runtime settings: they never change what a source answers."""
    from clients.http import HttpOptions
    from clients.source_catalog import SOURCE_CLASSES

    if name not in SOURCE_CLASSES:
        raise KeyError(f"unknown source {name!r}; known: {', '.join(sorted(SOURCE_CLASSES))}, offline_index")
    http = options.get("http_options")
    if isinstance(http, dict):
        http = HttpOptions(**http)
    return OnlineSource(name, (options.get("base_urls") or {}).get(name), http)


def bind_sources(sources: Sequence[BibSource], ctx: Any) -> list[BibSource]:
    """The sources a system uses in this run: `OnlineSource`s bound to `ctx.services`."""
    services = getattr(ctx, "services", None)
    return [s.bind(services) if isinstance(s, OnlineSource) else s for s in sources]


def resolve_sources(sources: Sequence[str | BibSource], index_path: str | None = None,
                    client_options: dict[str, Any] | None = None) -> list[BibSource]:
    """Sources for the configured names: the offline index opened, online names as `OnlineSource`
    (bound per run by `bind_sources`), objects passed through."""
    resolved: list[BibSource] = []
    for source in sources:
        if not isinstance(source, str):
            resolved.append(source)
        elif source == "offline_index":
            if not index_path:
                raise ValueError("source 'offline_index' needs index_path=...")
            from index.offline_index import open_index

            resolved.append(open_index(index_path))
        else:
            resolved.append(_online(source, dict(client_options or {})))
    if not resolved:
        raise ValueError("a citation verifier needs at least one source")
    return resolved
