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
import math
import threading
import tomllib
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from ray import serve

from checkers.fair_scheduler import HANDLE_CLIENT, ClientId, FairScheduler, QueueWaitExceeded
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
