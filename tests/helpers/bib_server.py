"""A local bibliographic-API server on 127.0.0.1 that answers from recorded real responses.

Each source is mounted under its own prefix and answers at the API's real paths below it, so a
client's base URL is `server.base_url("crossref")` = `http://127.0.0.1:<port>/crossref`:

| prefix              | paths                                                              |
|---------------------|--------------------------------------------------------------------|
| `/crossref`         | `/works/{doi}`, `/works?query.bibliographic=&rows=`, other recorded URIs |
| `/openalex`         | `/works/doi:{doi}`, `/works?search=&per-page=`                      |
| `/dblp`             | `/search/publ/api?q=&format=json&h=`                               |
| `/arxiv`            | `/api/query?id_list=` / `?search_query=ti:"..."&max_results=`       |
| `/semantic_scholar` | `/graph/v1/paper/DOI:{doi}`, `/graph/v1/paper/arXiv:{id}`, `/graph/v1/paper/search?query=` |
| `/doi_org`          | `/{doi}` (CSL-JSON)                                                |

What is served (all from `../shared/data/bibsources/`, read in place):

* Crossref: the habanero VCR cassettes replayed by exact URI (gzip bodies decoded), plus a record
  pool of every Crossref work in those cassettes and in RefChecker's crossref cache, answered by
  DOI and by title-token search. Unknown DOIs get Crossref's real 404 (`Resource not found.`).
* DBLP and Semantic Scholar: RefChecker's recorded hits / paper records as record pools (their
  cache keys are hashed queries, so queries are matched by DOI or title tokens, not replayed).
* doi.org: CSL-JSON recorded by habanero's content-negotiation cassettes where present, else
  the Crossref record of that DOI (Crossref's work JSON uses CSL field names); 404 otherwise.
* OpenAlex and arXiv: no recorded responses exist in the shared data (RefChecker's OpenAlex
  cache was not copied), so answers are *synthesized* in the real response shapes from the real
  Crossref records (OpenAlex `Work`) and the Semantic Scholar records with an arXiv id (Atom).
  Each synthesized object carries `"_synthesized_from"`.

Fault injection, per source: `inject(source, Fault("429", retry_after=2))`, `"500"`, `"timeout"`
(`Fault("status", status=403)` for any other status)
(answers after `delay` seconds), `"truncate"` (Content-Length promises more than is sent, then the
connection closes), `"malformed"` (a complete but cut JSON/XML body). `set_rate_limit(source,
limit, window)` enforces a sliding-window limit, answering 429 with `Retry-After`. `stats[source]`
counts requests and statuses.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import math
import os
import re
import threading
import time
from collections import Counter, defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal
from urllib.parse import parse_qsl, quote, unquote, urlsplit
from xml.sax.saxutils import escape

import yaml

from tests.helpers.paths import SHARED_DATA, require_shared_data

BIBSOURCES = SHARED_DATA / "bibsources"
HABANERO = BIBSOURCES / "habanero" / "test" / "cassettes"
REFCHECKER = BIBSOURCES / "refchecker" / "tests" / "fixtures" / "test_cache" / "api_cache"
SOURCES = ("crossref", "openalex", "dblp", "arxiv", "semantic_scholar", "doi_org")

_WORD = re.compile(r"[a-z0-9]+")


def _tokens(text: str | None) -> set[str]:
    return set(_WORD.findall((text or "").lower()))


def _doi(value: str | None) -> str | None:
    if not value:
        return None
    value = re.sub(r"^https?://(dx\.)?doi\.org/", "", value.strip(), flags=re.I)
    return value.lower() or None


@dataclass
class Fault:
    """One injected misbehaviour, consumed by the next request to its source."""

    kind: Literal["429", "500", "timeout", "truncate", "malformed", "status"]
    retry_after: float | None = None
    """Seconds sent in Retry-After with a 429 (None: no header)."""
    delay: float = 5.0
    """Seconds a `timeout` fault waits before answering."""
    status: int = 503
    """HTTP status a `status` fault answers with (401, 403, 400, 503, ...)."""
    body: bytes = b'{"message":"injected"}'
    """Body sent with a `status` or `429` fault."""


@dataclass
class SourceStats:
    requests: int = 0
    statuses: Counter = field(default_factory=Counter)
    faults: Counter = field(default_factory=Counter)
    stamps: list[float] = field(default_factory=list)
    ok_stamps: list[float] = field(default_factory=list)
    """Monotonic times of 2xx answers (for achieved-rate measurements)."""
    answered_stamps: list[float] = field(default_factory=list)
    """Monotonic times of every answer that was not a 429 (a 404 for an unknown DOI is served too)."""
    limited_stamps: list[float] = field(default_factory=list)
    """Monotonic times of 429 answers."""
    paths: Counter = field(default_factory=Counter)
    """Requests per path and query, answered (not 429): a count above one is a request repeated."""
    last_headers: dict[str, str] = field(default_factory=dict)
    last_query: str = ""


@dataclass
class Reply:
    status: int
    body: bytes
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


class RecordPools:
    """The recorded records, indexed by DOI, arXiv id and title tokens."""

    def __init__(self) -> None:
        self.replay: dict[tuple[str, str, str], Reply] = {}
        self.csl: dict[str, bytes] = {}
        self.crossref: dict[str, dict] = {}
        self.dblp: list[dict] = []
        self.s2: list[dict] = []
        self._load_habanero()
        self._load_refchecker()
        self.s2_by_doi = {_doi((p.get("externalIds") or {}).get("DOI")): p for p in self.s2}
        self.s2_by_arxiv = {(p.get("externalIds") or {}).get("ArXiv"): p for p in self.s2}
        self.s2_by_doi.pop(None, None)
        self.s2_by_arxiv.pop(None, None)

    @staticmethod
    def _query_key(query: str) -> str:
        return "&".join(f"{k}={v}" for k, v in sorted(parse_qsl(query, keep_blank_values=True)))

    def _load_habanero(self) -> None:
        for path in sorted(HABANERO.rglob("*.yaml")):
            for it in (yaml.safe_load(path.read_text()) or {}).get("interactions", []):
                req, resp = it["request"], it["response"]
                url = urlsplit(req["uri"])
                service = {"api.crossref.org": "crossref", "doi.org": "doi_org"}.get(url.hostname or "")
                if service is None or req.get("method", "GET") != "GET":
                    continue
                body = resp["body"].get("string", b"")
                body = body.encode() if isinstance(body, str) else body
                headers = {k.lower(): v[0] for k, v in (resp.get("headers") or {}).items() if v}
                if headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                status = resp["status"]["code"]
                ctype = headers.get("content-type", "application/json")
                if status in (301, 302, 303, 307, 308):
                    continue
                key = (service, unquote(url.path), self._query_key(url.query))
                self.replay.setdefault(key, Reply(status, body, ctype))
                if status == 200 and url.path.endswith("vnd.citationstyles.csl+json") and "json" in ctype:
                    doi = _doi(unquote(url.path).split("/works/", 1)[1].split("/transform", 1)[0])
                    self.csl.setdefault(doi, body)
                if status == 200 and ctype.startswith("application/json"):
                    self._harvest_crossref(body)

    def _harvest_crossref(self, body: bytes) -> None:
        try:
            message = json.loads(body).get("message")
        except (ValueError, AttributeError):
            return
        if isinstance(message, dict) and message.get("DOI") and message.get("title") is not None:
            self.crossref.setdefault(_doi(message["DOI"]), message)
        items = message.get("items") if isinstance(message, dict) else None
        for item in items or []:
            if isinstance(item, dict) and item.get("DOI") and item.get("title"):
                self.crossref.setdefault(_doi(item["DOI"]), item)

    def _load_refchecker(self) -> None:
        for name, sink in (("crossref", None), ("dblp", self.dblp), ("semantic_scholar", self.s2)):
            for path in sorted((REFCHECKER / name).glob("*")):
                try:
                    data = json.loads(path.read_text())
                except ValueError:
                    continue
                rows = data if isinstance(data, list) else [data]
                for row in rows:
                    if not isinstance(row, dict):
                        continue
                    if sink is None:
                        if row.get("DOI") and row.get("title"):
                            self.crossref.setdefault(_doi(row["DOI"]), row)
                    else:
                        sink.append(row)
        self.dblp = list({h.get("info", {}).get("key") or id(h): h for h in self.dblp}.values())
        self.s2 = list({p.get("paperId") or id(p): p for p in self.s2}.values())

    @staticmethod
    def search(rows: list[dict], title_of, query: str, limit: int) -> list[dict]:
        q = _tokens(query)
        if not q:
            return []
        scored = []
        for row in rows:
            t = _tokens(title_of(row))
            if t:
                score = len(q & t) / len(q | t)
                if score >= 0.5:
                    scored.append((score, row))
        scored.sort(key=lambda pair: -pair[0])
        return [row for _, row in scored[:limit]]


def _crossref_title(item: dict) -> str | None:
    title = item.get("title")
    return title[0] if isinstance(title, list) and title else title


def openalex_work(item: dict) -> dict[str, Any]:
    """An OpenAlex-shaped `Work` built from a real Crossref record (synthesized)."""
    doi = _doi(item.get("DOI"))
    year = None
    for key in ("published-print", "published-online", "published", "issued"):
        parts = (item.get(key) or {}).get("date-parts") or [[None]]
        if parts[0] and parts[0][0]:
            year = parts[0][0]
            break
    container = item.get("container-title") or []
    return {
        "id": f"https://openalex.org/W{abs(hash(doi)) % 10**10}",
        "doi": f"https://doi.org/{doi}", "title": _crossref_title(item), "display_name": _crossref_title(item),
        "publication_year": year, "type": item.get("type"),
        "authorships": [
            {"author": {"display_name": " ".join(x for x in (a.get("given"), a.get("family")) if x)}}
            for a in item.get("author") or [] if a.get("family")
        ],
        "primary_location": {"source": {"display_name": container[0]} if container else None},
        "_synthesized_from": "crossref",
    }  # fmt: skip


def atom_feed(papers: list[dict]) -> bytes:
    """An arXiv Atom feed built from real Semantic Scholar records with an arXiv id (synthesized)."""
    entries = []
    for p in papers:
        arxiv = p["externalIds"]["ArXiv"]
        authors = "".join(
            f"<author><name>{escape(a['name'])}</name></author>" for a in p.get("authors") or []
        )
        doi = (p.get("externalIds") or {}).get("DOI")
        entries.append(
            f"<entry><id>http://arxiv.org/abs/{arxiv}v1</id>"
            f"<published>{p.get('year') or 2000}-01-01T00:00:00Z</published>"
            f"<title>{escape(p.get('title') or '')}</title>{authors}"
            + (f"<arxiv:doi>{escape(doi)}</arxiv:doi>" if doi else "")
            + '<arxiv:primary_category term="cs.LG"/></entry>'
        )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom" '
        'xmlns:arxiv="http://arxiv.org/schemas/atom" xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/">'
        "<!-- synthesized_from: semantic_scholar -->"
        f"<title>arXiv Query</title><opensearch:totalResults>{len(papers)}</opensearch:totalResults>"
        + "".join(entries) + "</feed>"
    ).encode()  # fmt: skip


def _json(obj: Any, status: int = 200) -> Reply:
    return Reply(status, json.dumps(obj).encode())


_NOT_FOUND = Reply(404, b"Resource not found.", "text/plain")


class Router:
    """Pure request → reply mapping over the record pools."""

    def __init__(self, pools: RecordPools) -> None:
        self.p = pools

    def route(self, service: str, path: str, query: dict[str, str], raw_query: str) -> Reply:
        replay = self.p.replay.get((service, path, RecordPools._query_key(raw_query)))
        if replay is not None and service != "doi_org":  # doi.org answers depend on Accept: see _doi_org
            return replay
        handler = getattr(self, f"_{service}", None)
        return handler(path, query) if handler else Reply(404, b"unknown source", "text/plain")

    def _crossref(self, path: str, q: dict[str, str]) -> Reply:
        if path.startswith("/works/"):
            item = self.p.crossref.get(_doi(path[len("/works/") :]))
            if item is None:
                return _NOT_FOUND
            return _json(
                {"status": "ok", "message-type": "work", "message-version": "1.0.0", "message": item}
            )
        if path == "/works":
            text = q.get("query.bibliographic") or q.get("query.title") or q.get("query") or ""
            rows = int(q.get("rows", 20))
            items = RecordPools.search(list(self.p.crossref.values()), _crossref_title, text, rows)
            return _json({"status": "ok", "message-type": "work-list", "message-version": "1.0.0",
                          "message": {"total-results": len(items), "items": items}})  # fmt: skip
        return Reply(404, b"Resource not found.", "text/plain")

    def _openalex(self, path: str, q: dict[str, str]) -> Reply:
        if path.startswith("/works/doi:"):
            item = self.p.crossref.get(_doi(path[len("/works/doi:") :]))
            return _json(openalex_work(item)) if item else _json({"error": "Not Found"}, 404)
        if path == "/works":
            limit = int(q.get("per-page", 25))
            items = RecordPools.search(
                list(self.p.crossref.values()), _crossref_title, q.get("search", ""), limit
            )
            return _json({"meta": {"count": len(items)}, "results": [openalex_work(i) for i in items]})
        return _json({"error": "Not Found"}, 404)

    def _dblp(self, path: str, q: dict[str, str]) -> Reply:
        if path != "/search/publ/api":
            return Reply(404, b"not found", "text/html")
        text, limit = q.get("q", ""), int(q.get("h", 30))
        doi = _doi(text) if text.startswith("10.") else None
        if doi:
            hits = [h for h in self.p.dblp if _doi(h.get("info", {}).get("doi")) == doi][:limit]
        else:
            hits = RecordPools.search(self.p.dblp, lambda h: h.get("info", {}).get("title"), text, limit)
        return _json({"result": {"query": text, "status": {"@code": "200", "text": "OK"},
                                 "hits": {"@total": str(len(hits)), "@sent": str(len(hits)), "hit": hits}}})  # fmt: skip

    def _semantic_scholar(self, path: str, q: dict[str, str]) -> Reply:
        prefix = "/graph/v1/paper/"
        if path in (prefix + "search", prefix + "search/match"):
            hits = RecordPools.search(
                self.p.s2, lambda p: p.get("title"), q.get("query", ""), int(q.get("limit", 10))
            )
            return _json({"total": len(hits), "offset": 0, "data": hits})
        if path.startswith(prefix + "DOI:"):
            paper = self.p.s2_by_doi.get(_doi(path[len(prefix) + 4 :]))
        elif path.startswith(prefix + "arXiv:"):
            paper = self.p.s2_by_arxiv.get(path[len(prefix) + 6 :])
        else:
            paper = None
        return _json(paper) if paper else _json({"error": "Paper not found"}, 404)

    def _arxiv(self, path: str, q: dict[str, str]) -> Reply:
        if path != "/api/query":
            return Reply(404, b"not found", "text/html")
        with_id = list(self.p.s2_by_arxiv.values())
        limit = int(q.get("max_results", 10))
        if q.get("id_list"):
            ids = set(q["id_list"].split(","))
            papers = [p for p in with_id if p["externalIds"]["ArXiv"] in ids]
        else:
            text = re.sub(r"^(ti|all):", "", q.get("search_query", "")).strip('"')
            papers = RecordPools.search(with_id, lambda p: p.get("title"), text, limit)
        return Reply(200, atom_feed(papers[:limit]), "application/atom+xml; charset=utf-8")

    def _doi_org(self, path: str, q: dict[str, str]) -> Reply:
        doi = _doi(path.lstrip("/"))
        if doi in self.p.csl:
            return Reply(200, self.p.csl[doi], "application/vnd.citationstyles.csl+json")
        item = self.p.crossref.get(doi)
        if item is None:
            return Reply(404, b"<html><body>DOI Not Found</body></html>", "text/html")
        return Reply(200, json.dumps(item).encode(), "application/vnd.citationstyles.csl+json")


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default backlog of 5 stalls concurrent clients for a SYN retry (~1 s)

    def handle_error(self, request, client_address) -> None:  # clients hanging up are expected here
        pass


class BibServer:
    """The running server; use as a context manager or call `stop()`."""

    def __init__(self, pools: RecordPools | None = None, port: int = 0, host: str = "127.0.0.1",
                 priority: int | None = None) -> None:  # fmt: skip
        self.pools = pools or RecordPools()
        self.router = Router(self.pools)
        self.faults: dict[str, deque[Fault]] = defaultdict(deque)
        self.limits: dict[str, tuple[int, float, bool]] = {}
        self._buckets: dict[str, tuple[float, float]] = {}  # source -> (level, stamp) in bucket mode
        self.stats: dict[str, SourceStats] = defaultdict(SourceStats)
        self.extra_headers: dict[str, dict[str, str]] = defaultdict(dict)
        self._windows: dict[str, deque[float]] = defaultdict(deque)
        self._lock = threading.Lock()
        self.host = host
        self._httpd = _QuietServer((host, port), self._handler_class())
        self._httpd.daemon_threads = True
        self.port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._serve, args=(priority,), daemon=True)
        self._thread.start()

    def _serve(self, priority: int | None) -> None:
        if priority is not None:  # this thread's nice value; the handler threads it starts inherit it
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), priority)
        self._httpd.serve_forever()

    def base_url(self, source: str) -> str:
        return f"http://{self.host}:{self.port}/{source}"

    def base_urls(self) -> dict[str, str]:
        return {s: self.base_url(s) for s in SOURCES}

    def inject(self, source: str, *faults: Fault) -> None:
        with self._lock:
            self.faults[source].extend(faults)

    def set_rate_limit(self, source: str, limit: int | None, window: float = 1.0, *, bucket: bool = False) -> None:
        """At most `limit` requests per `window` seconds, 429 + Retry-After beyond: counted over a
        sliding window, or (`bucket=True`) as a token bucket refilling at limit/window and holding
        one window's worth, like the replay server's `--rpm` and most providers."""
        with self._lock:
            if limit is None:
                self.limits.pop(source, None)
            else:
                self.limits[source] = (limit, window, bucket)
            self._windows[source].clear()
            self._buckets[source] = (float(limit or 0), time.monotonic())

    def reset_stats(self) -> None:
        with self._lock:
            self.stats.clear()

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> BibServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _admit(self, source: str) -> tuple[Fault | None, float | None]:
        """(fault to apply, Retry-After if rate-limited), recording the request."""
        now = time.monotonic()
        with self._lock:
            st = self.stats[source]
            st.requests += 1
            st.stamps.append(now)
            if self.faults[source]:
                fault = self.faults[source].popleft()
                st.faults[fault.kind] += 1
                return fault, None
            if source in self.limits and self.limits[source][2]:
                limit, window, _ = self.limits[source]
                level, stamp = self._buckets[source]
                level = min(float(limit), level + (now - stamp) * limit / window)
                if level < 1.0:
                    self._buckets[source] = (level, now)
                    return None, (1.0 - level) * window / limit
                self._buckets[source] = (level - 1.0, now)
            elif source in self.limits:
                limit, window, _ = self.limits[source]
                stamps = self._windows[source]
                while stamps and stamps[0] <= now - window:
                    stamps.popleft()
                if len(stamps) >= limit:
                    return None, max(0.0, stamps[0] + window - now)
                stamps.append(now)
        return None, None

    def _handler_class(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, reply: Reply, source: str, truncate: bool = False) -> None:
                with server._lock:
                    st = server.stats[source]
                    st.statuses[reply.status] += 1
                    now = time.monotonic()
                    if 200 <= reply.status < 300:
                        st.ok_stamps.append(now)
                    if reply.status == 429:
                        st.limited_stamps.append(now)
                    else:
                        st.answered_stamps.append(now)
                        st.paths[self.path] += 1
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                for k, v in {**server.extra_headers.get(source, {}), **reply.headers}.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(reply.body)))
                if truncate:
                    self.send_header("Connection", "close")
                self.end_headers()
                if truncate:
                    self.wfile.write(reply.body[: max(1, len(reply.body) // 2)])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(reply.body)

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                url = urlsplit(self.path)
                path = unquote(url.path)
                source, _, rest = path.lstrip("/").partition("/")
                query = dict(parse_qsl(url.query, keep_blank_values=True))
                fault, retry_after = server._admit(source)
                with server._lock:
                    server.stats[source].last_headers = {k.lower(): v for k, v in self.headers.items()}
                    server.stats[source].last_query = url.query
                if retry_after is not None:
                    ra = str(max(1, math.ceil(retry_after)))
                    return self._send(
                        Reply(429, b'{"message":"rate limited"}', headers={"Retry-After": ra}), source
                    )
                if fault is not None and fault.kind == "429":
                    headers = {} if fault.retry_after is None else {"Retry-After": f"{fault.retry_after:g}"}
                    return self._send(Reply(429, fault.body, headers=headers), source)
                if fault is not None and fault.kind == "status":
                    return self._send(Reply(fault.status, fault.body), source)
                if fault is not None and fault.kind == "500":
                    return self._send(Reply(500, b"Internal Server Error", "text/plain"), source)
                if fault is not None and fault.kind == "timeout":
                    time.sleep(fault.delay)
                reply = server.router.route(source, "/" + rest, query, url.query)
                if fault is not None and fault.kind == "malformed":
                    reply = Reply(
                        reply.status, reply.body[: max(1, len(reply.body) // 2)], reply.content_type
                    )
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self._send(reply, source, truncate=fault is not None and fault.kind == "truncate")

        return Handler


def start_bib_server(port: int = 0, host: str = "127.0.0.1", priority: int | None = None) -> BibServer:
    """Start a server (pools load in about a second) on `host` (the bridge address to serve
    network-namespace hosts). `priority`: the serving threads' nice value (root may go below 0: a
    server standing for a provider on other machines answers, and counts, when requests arrive,
    not when a loaded test machine gets round to it). Its answers are the shared recordings:
    skips the calling test (fails it in CI) when they are absent."""
    require_shared_data()
    return BibServer(port=port, host=host, priority=priority)


def doi_path(doi: str) -> str:
    return quote(doi, safe="/")
