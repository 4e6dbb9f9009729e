"""The checkers as a Ray Serve application: HTTP (JSON in, JSON out) and deployment handles.

One deployment, `CheckerService`, dispatches requests by kind to the registered check functions,
each run in the replica's `IsolatedRunner` (time and memory limits). Requests are batched with
`@serve.batch`; a batch fans out over the replica's worker processes. Replica count, autoscaling,
batch size and wait, workers, limits and the HTTP address all come from `ServiceConfig` (a
`[checkers]` TOML table); HTTP binds 127.0.0.1 unless the config says otherwise.

HTTP, under `route_prefix` (default `/checkers`): `POST /` with one request object -> one result
object, or a list -> a list; `GET /kinds` -> {kind: input format}; `GET /health`. A request is
`{"kind": "math.equality", "payload": {...}}` or the flat `{"kind": ..., **payload}`. Handle:
`serve.get_app_handle(app_name).check.remote(request)`, `.check_many.remote([...])`, `.stats.remote()`.

Abuse limits (all in `ServiceConfig`): a POST body over `max_body_bytes` or a list over
`max_checks_per_request` is answered 413 with a JSON message naming the limit; JSON nested deeper
than `max_json_depth` is answered 400. One request holds at most `max_request_share` of the
replica's workers at a time, so a list of slow checks cannot starve a concurrent simple check.
Between clients (the `X-API-Key` or `Authorization` header if sent, else the peer address;
`X-Forwarded-For` is not trusted) the `FairScheduler` gives a freed worker to the client with the
fewest running checks, and one client holds at most `max_client_share` of the workers, so a flood
of one client delays another's check by at most one running check. A check that waits over
`max_queue_wait_s` for a worker gets its HTTP request answered 429 with `Retry-After` (the per-check
time limit, rounded up) and a JSON body naming the limit. Handle callers share one identity and
are never refused. A client that disconnects cancels its checks: Serve cancels the handler, the
running checks' worker processes are killed and replaced, and the queued ones never start.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import itertools
import math
import threading
import time
import tomllib
from collections import deque
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ray import serve

from checkers.registry import registered, request_parts
from checkers.request_limits import RequestRejected, parse_body
from checkers.result import CheckInputError, CheckResult
from checkers.sandbox import IsolatedRunner, Limits
from checkers.wolfram_engine import engine_note


@dataclass(frozen=True)
class Autoscaling:
    """Serve autoscaling bounds (used instead of a fixed replica count when set)."""

    min_replicas: int = 1
    """Fewest replicas kept running."""
    max_replicas: int = 2
    """Most replicas started under load."""
    target_ongoing_requests: float = 4.0
    """Ongoing requests per replica the autoscaler aims for."""


@dataclass(frozen=True)
class ServiceConfig:
    """Everything that shapes the running service; read from a `[checkers]` TOML table."""

    host: str = "127.0.0.1"
    """HTTP bind address. Loopback by default; expose deliberately."""
    port: int = 8000
    """HTTP port of the Serve proxy."""
    app_name: str = "checkers"
    """Serve application name (what `serve.get_app_handle` takes)."""
    route_prefix: str = "/checkers"
    """HTTP path prefix of the application."""
    num_replicas: int = 1
    """Fixed replica count (ignored when `autoscaling` is set)."""
    autoscaling: Autoscaling | None = None
    """Autoscaling bounds, or None for a fixed count."""
    max_batch_size: int = 8
    """Most requests one `@serve.batch` call gathers."""
    batch_wait_timeout_s: float = 0.01
    """How long a batch waits to fill."""
    workers_per_replica: int = 2
    """Isolated worker processes per replica (checks run in parallel up to this)."""
    timeout_s: float = 10.0
    """Wall-clock limit of one check."""
    memory_mb: int = 1024
    """Address-space limit of one worker process."""
    num_cpus: float = 1.0
    """CPUs reserved per replica in Ray."""
    max_ongoing_requests: int = 64
    """Requests a replica accepts at once."""
    max_checks_per_request: int = 64
    """Longest list one request may carry (longer: HTTP 413)."""
    max_body_bytes: int = 256 * 1024
    """Largest POST body in bytes (larger: HTTP 413)."""
    max_json_depth: int = 32
    """Deepest nesting of lists/objects in a request body (deeper: HTTP 400)."""
    max_request_share: float = 0.5
    """Fraction of the replica's workers one request may hold at once (at least one worker)."""
    max_client_share: float = 0.5
    """Fraction of the replica's workers one client (API key, else address) may hold at once (at least one)."""
    max_queue_wait_s: float = 30.0
    """Longest a check waits for a worker before its HTTP request is answered 429 with Retry-After."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Unknown keys found in the table (kept so a typo is visible, never used)."""

    @classmethod
    def from_mapping(cls, raw: dict[str, Any]) -> ServiceConfig:
        known = {f.name for f in fields(cls)} - {"extra", "autoscaling"}
        values = {k: v for k, v in raw.items() if k in known}
        auto = raw.get("autoscaling")
        extra = {k: v for k, v in raw.items() if k not in known and k != "autoscaling"}
        return cls(**values, autoscaling=Autoscaling(**auto) if isinstance(auto, dict) else None, extra=extra)

    @classmethod
    def from_toml(cls, path: str | Path, table: str = "checkers") -> ServiceConfig:
        data = tomllib.loads(Path(path).read_text())
        return cls.from_mapping(data.get(table, {}))

    def limits(self) -> Limits:
        return Limits(timeout_s=self.timeout_s, memory_mb=self.memory_mb)


class QueueWaitExceeded(RequestRejected):
    """A check waited longer than `max_queue_wait_s` for a worker: answered 429 with Retry-After."""

    def __init__(self, waited_s: float, limit_s: float, retry_after_s: int) -> None:
        super().__init__(429, f"waited {waited_s:.1f}s for a worker, over the limit of {limit_s:g}s "
                              f"(max_queue_wait_s); retry after {retry_after_s}s")  # fmt: skip
        self.limit = "max_queue_wait_s"
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class ClientId:
    """Who a check belongs to, for fairness: the API key if one was sent, else the peer address.

    Keys are not authenticated, so a client could mint one per request; `address` keeps such a
    client's requests together when the scheduler decides whose turn it is. The key is held only
    as a short hash, so it never reaches stats or logs."""

    address: str
    key_hash: str | None = None

    @property
    def name(self) -> str:
        return f"key:{self.key_hash}" if self.key_hash else f"addr:{self.address}"

    @classmethod
    def from_headers(cls, address: str, headers: Any) -> ClientId:
        key = headers.get("x-api-key") or headers.get("authorization")
        if not key:
            return cls(address)
        return cls(address, hashlib.sha256(key.encode("utf-8", "surrogateescape")).hexdigest()[:16])


HANDLE_CLIENT = ClientId("handle")
"""Callers through a deployment handle (inside the cluster) share one identity."""


@dataclass
class _ClientState:
    running: int = 0
    waiting: deque[tuple[int, asyncio.Future[None]]] = field(default_factory=deque)


class FairScheduler:
    """Worker slots shared fairly between clients: `slots` in all, at most `per_client` per client.

    A slot that frees goes to the waiting client with the fewest running checks from its address,
    then the fewest of its own, then the one that asked first. A client's surplus checks therefore
    wait behind its own, never in front of another client's; a flood of one client cannot hold
    a newcomer back by more than one running check. A check that waits longer than `max_wait`
    is refused (`QueueWaitExceeded`) so a flood sheds load instead of growing a queue."""

    def __init__(self, slots: int, per_client: int, retry_after_s: int) -> None:
        self.slots = slots
        self.free = slots
        self.per_client = per_client
        self.retry_after_s = retry_after_s
        self.rejected = 0
        self._clients: dict[ClientId, _ClientState] = {}
        self._sequence = itertools.count()

    def _running_at(self, address: str) -> int:
        return sum(state.running for client, state in self._clients.items() if client.address == address)

    def _dispatch(self) -> None:
        while self.free > 0:
            ready = [(self._running_at(c.address), s.running, s.waiting[0][0], c)
                     for c, s in self._clients.items() if s.waiting and s.running < self.per_client]  # fmt: skip
            if not ready:
                return
            client = min(ready, key=lambda row: row[:3])[3]
            state = self._clients[client]
            _, granted = state.waiting.popleft()
            granted.set_result(None)
            state.running += 1
            self.free -= 1

    def _forget_if_idle(self, client: ClientId) -> None:
        state = self._clients.get(client)
        if state is not None and state.running == 0 and not state.waiting:
            del self._clients[client]  # bounded state however many identities a client invents

    def release(self, client: ClientId) -> None:
        self._clients[client].running -= 1
        self.free += 1
        self._forget_if_idle(client)
        self._dispatch()

    async def acquire(self, client: ClientId, max_wait: float | None) -> None:
        """Wait for a slot; QueueWaitExceeded after `max_wait` seconds (None: wait as long as it takes)."""
        state = self._clients.setdefault(client, _ClientState())
        entry = (next(self._sequence), asyncio.get_running_loop().create_future())
        state.waiting.append(entry)
        self._dispatch()
        granted = entry[1]
        started = time.monotonic()
        try:
            await asyncio.wait([granted], timeout=max_wait)
        except asyncio.CancelledError:
            self._give_up(client, entry)
            raise
        if not granted.done():
            self._give_up(client, entry)
            self.rejected += 1
            raise QueueWaitExceeded(time.monotonic() - started, max_wait or 0.0, self.retry_after_s)

    def _give_up(self, client: ClientId, entry: tuple[int, asyncio.Future[None]]) -> None:
        """Leave the queue; a slot granted in the meantime is handed on."""
        state = self._clients[client]
        if entry[1].done():
            self.release(client)
            return
        entry[1].cancel()
        state.waiting.remove(entry)
        self._forget_if_idle(client)

    @contextlib.asynccontextmanager
    async def slot(self, client: ClientId, max_wait: float | None) -> AsyncIterator[None]:
        await self.acquire(client, max_wait)
        try:
            yield
        finally:
            self.release(client)

    def snapshot(self) -> dict[str, Any]:
        """Counts only: /health is unauthenticated, so no addresses or key hashes."""
        return {"free": self.free, "clients": len(self._clients),
                "waiting": sum(len(s.waiting) for s in self._clients.values())}  # fmt: skip


@serve.deployment(name="CheckerService")
class CheckerService:
    """Dispatches check requests by kind to isolated workers, in batches."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.config = ServiceConfig.from_mapping(config)
        self.runner = IsolatedRunner(self.config.workers_per_replica, self.config.limits())
        workers = max(1, self.config.workers_per_replica)
        # One extra thread so a cancelled check's thread (killing its worker) never delays the next.
        self.pool = ThreadPoolExecutor(max_workers=workers + 1)
        self.per_request = max(1, int(workers * self.config.max_request_share))
        # Retry-After: the longest one running check can hold a worker.
        self.scheduler = FairScheduler(workers, max(1, int(workers * self.config.max_client_share)),
                                       retry_after_s=max(1, math.ceil(self.config.timeout_s)))  # fmt: skip
        self.kinds_doc = {kind: spec.doc for kind, spec in registered().items()}
        self.check_batch.set_max_batch_size(self.config.max_batch_size)
        self.check_batch.set_batch_wait_timeout_s(self.config.batch_wait_timeout_s)
        self.batch_sizes: deque[int] = deque(maxlen=1000)

    def _run_one(self, request: Any, cancel: threading.Event) -> dict[str, Any]:
        try:
            kind, payload = request_parts(request)
        except CheckInputError as exc:
            kind = (
                request.get("kind")
                if isinstance(request, dict) and isinstance(request.get("kind"), str)
                else "?"
            )
            return CheckResult(kind, "error", str(exc)).to_dict()
        return self.runner.run(kind, payload, cancel=cancel).to_dict()

    @serve.batch(max_batch_size=8, batch_wait_timeout_s=0.01)
    async def check_batch(self, requests: list[Any]) -> list[Any]:
        """Admission in batches (sizes kept for `stats`); each check then runs in its caller's task,
        so a caller that is cancelled cancels exactly its own checks, and one slow check never
        holds back the rest of its batch."""
        self.batch_sizes.append(len(requests))
        return requests

    async def _run_fair(self, client: ClientId, request: Any, max_wait: float | None,
                        own: asyncio.Semaphore | None = None) -> dict[str, Any]:  # fmt: skip
        # Batched first, then held to the list's own share: a share taken before batching would let
        # only that many checks of a list reach the batcher at once (batches of one).
        request = await self.check_batch(request)
        async with own or contextlib.nullcontext(), self.scheduler.slot(client, max_wait):
            cancel = threading.Event()
            running = asyncio.get_running_loop().run_in_executor(self.pool, self._run_one, request, cancel)
            try:
                return await asyncio.shield(running)
            except asyncio.CancelledError:
                cancel.set()  # the runner kills the worker process and starts a fresh one
                await asyncio.wait([running], timeout=10)
                raise

    def _check_length(self, requests: list[Any]) -> None:
        limit = self.config.max_checks_per_request
        if len(requests) > limit:
            raise RequestRejected(413, f"{len(requests)} checks in one request; the limit is {limit} "
                                       "(max_checks_per_request)")  # fmt: skip

    async def check(self, request: Any, client: ClientId = HANDLE_CLIENT,
                    max_wait_s: float | None = None) -> dict[str, Any]:  # fmt: skip
        """One request -> one result dict. Handle callers wait as long as it takes (no 429)."""
        return await self._run_fair(client, request, max_wait_s)

    async def check_many(self, requests: list[Any], client: ClientId = HANDLE_CLIENT,
                         max_wait_s: float | None = None) -> list[dict[str, Any]]:  # fmt: skip
        """A list of requests -> results in the same order (RequestRejected over the length limit).

        The list's surplus checks wait on its own share (not counted as queue wait); one that then
        waits over `max_wait_s` for a worker fails the whole list and cancels the rest."""
        self._check_length(requests)
        own = asyncio.Semaphore(self.per_request)

        async def one(request: Any) -> dict[str, Any]:
            return await self._run_fair(client, request, max_wait_s, own)

        tasks = [asyncio.ensure_future(one(r)) for r in requests]
        try:
            return list(await asyncio.gather(*tasks))
        finally:
            for task in tasks:  # a refused or cancelled list stops its other checks
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def kinds(self) -> dict[str, str]:
        return self.kinds_doc

    async def stats(self) -> dict[str, Any]:
        """This replica's settings and what it has seen (batch sizes of the last 1000 batches)."""
        return {"max_batch_size": self.config.max_batch_size, "workers": self.config.workers_per_replica,
                "timeout_s": self.config.timeout_s, "memory_mb": self.config.memory_mb,
                "largest_batch": max(self.batch_sizes, default=0), "batches": len(self.batch_sizes),
                "replaced_workers": self.runner.replaced, "cancelled_checks": self.runner.cancelled,
                "worker_pids": self.runner.pids, "per_request_workers": self.per_request,
                "per_client_workers": self.scheduler.per_client, "max_queue_wait_s": self.config.max_queue_wait_s,
                "queue_wait_rejections": self.scheduler.rejected, "scheduler": self.scheduler.snapshot(),
                "engine": engine_note()}  # fmt: skip

    async def __call__(self, http_request) -> Any:
        from starlette.responses import JSONResponse

        path = http_request.url.path.rstrip("/")
        if http_request.method == "GET":
            if path.endswith("/kinds"):
                return JSONResponse(self.kinds_doc)
            if path.endswith("/health"):
                return JSONResponse({"ok": True, **await self.stats()})
            return JSONResponse({"error": "GET /kinds or /health; POST checks as JSON"}, status_code=404)
        client = ClientId.from_headers(http_request.client.host if http_request.client else "unknown",
                                      http_request.headers)  # fmt: skip
        max_wait = self.config.max_queue_wait_s
        try:
            body = parse_body(await self._read_body(http_request), self.config.max_json_depth)
            if isinstance(body, list):
                self._check_length(body)
                return JSONResponse(await self.check_many(body, client, max_wait))
            return JSONResponse(await self.check(body, client, max_wait))
        except QueueWaitExceeded as exc:
            return JSONResponse({"error": str(exc), "limit": exc.limit, "retry_after_s": exc.retry_after_s},
                                status_code=429, headers={"Retry-After": str(exc.retry_after_s)})  # fmt: skip
        except RequestRejected as exc:
            return JSONResponse({"error": str(exc)}, status_code=exc.status)

    async def _read_body(self, http_request) -> bytes:
        """The POST body, refused (413) as soon as it passes `max_body_bytes`, never read whole first."""
        limit = self.config.max_body_bytes
        message = f"request body larger than {limit} bytes (max_body_bytes)"
        declared = http_request.headers.get("content-length")
        if declared and declared.isdigit() and int(declared) > limit:
            raise RequestRejected(413, message)
        chunks, size = [], 0
        async for chunk in http_request.stream():
            size += len(chunk)
            if size > limit:
                raise RequestRejected(413, message)
            chunks.append(chunk)
        return b"".join(chunks)

    def __del__(self) -> None:
        runner = getattr(self, "runner", None)
        if runner is not None:
            runner.close()


def build_app(config: ServiceConfig) -> serve.Application:
    """The Serve application for `config` (replicas or autoscaling, CPUs, request limits)."""
    options: dict[str, Any] = {
        "ray_actor_options": {"num_cpus": config.num_cpus},
        "max_ongoing_requests": config.max_ongoing_requests,
    }
    if config.autoscaling is not None:
        options["autoscaling_config"] = asdict(config.autoscaling)
    else:
        options["num_replicas"] = config.num_replicas
    plain = {k: v for k, v in asdict(config).items() if k != "autoscaling"}
    plain["autoscaling"] = asdict(config.autoscaling) if config.autoscaling else None
    return CheckerService.options(**options).bind(plain)


def start(config: ServiceConfig, blocking: bool = False):
    """Start Serve's HTTP proxy on config.host:config.port and deploy; returns the app handle.

    Ray must already be initialised (`ray.init(address=...)`)."""
    serve.start(http_options={"host": config.host, "port": config.port})
    return serve.run(
        build_app(config), name=config.app_name, route_prefix=config.route_prefix, blocking=blocking
    )
