"""Run shard tasks on a pool of Ray worker actors, resumably.

Finished shards (a shard file in the store) are skipped. A worker that dies is replaced and its
shard retried; a shard that raised is retried; after `max_attempts` the shard is recorded as
failed in the store and reported, never dropped. A retried shard waits a jittered exponential
backoff while the others proceed. A storage outage (a worker's write found storage down) pauses
the run: no attempt is counted, the driver probes storage with a growing wait and resumes. When a system reports its budget exhausted the
runner stops handing out shards, lets the running ones finish and returns, resumable. A shard that
raised `clients.errors.AuthError` (a source refused the run's credentials) stops the run the same
way, with no retry and nothing recorded failed: `RunOutcome.auth_refused` names the source, and a
run with the key fixed resumes it.

With a run lease (`storage/run_lease.py`) the driver confirms it before handing out any shard, and
its workers' shard writes are fenced by it (`storage/store.py`). Once another driver took the run
over (this one was frozen, or cut off from storage, past the lease's TTL) nothing more is handed
out; the shards in flight run to their end (the answers they paid for are exported for the new
owner) but their shard files are refused, and the outcome names the new owner (`lease_lost`).
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa
import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

from clients.errors import AuthError
from clients.retry import backoff_seconds
from cluster.progress import Progress
from cluster.shard_worker import ShardResult, ShardWorker
from cluster.shards import ShardTask
from storage.filesystem import StorageUnavailableError, is_remote, probe_storage, remove_stale_temp_files
from storage.store import LeasedStoreUri, LeaseLostError, Store

if TYPE_CHECKING:
    from storage.run_lease import RunLease


E = TypeVar("E", bound=BaseException)


@dataclass(frozen=True)
class PoolConfig:
    """Resources of the worker pool (none of this changes a run's identity or answers)."""

    workers: int = 2
    """Number of worker actors."""
    cpus_per_worker: float = 1.0
    """Ray CPUs each worker reserves."""
    gpus_per_worker: float = 0.0
    """Ray GPUs each worker reserves (self-hosted models)."""
    max_attempts: int = 3
    """Tries per shard (worker deaths and exceptions) before it is recorded as failed."""
    progress_every_s: float = 2.0
    """Seconds between progress lines."""
    retry_base_s: float = 1.0
    """Ceiling of a failed shard's first backoff, seconds; doubles per attempt (full jitter)."""
    retry_max_s: float = 60.0
    """Largest backoff ceiling for a failed shard, seconds."""
    storage_probe_base_s: float = 2.0
    """First wait before probing storage again during an outage, seconds; doubles per probe."""
    storage_probe_max_s: float = 60.0
    """Longest wait between storage probes, seconds."""
    storage_wait_s: float = 1800.0
    """How long a storage outage may last before the run stops (resumable)."""


@dataclass
class RunOutcome:
    done: list[ShardResult] = field(default_factory=list)
    skipped: int = 0
    failed: dict[tuple[str, int], str] = field(default_factory=dict)
    stopped_by_budget: bool = False
    worker_replacements: int = 0
    stopped_by_storage: bool = False
    storage_pauses: int = 0
    unrecorded: dict[tuple[str, int], str] = field(default_factory=dict)
    """Failed shards whose failure record storage would not take (listed at the end)."""
    lease_lost: str | None = None
    """Set when another driver took the run over mid-run: which run, and who holds it now."""
    discarded: list[tuple[str, int]] = field(default_factory=list)
    """Shards that ran after the lease was lost and whose writes were refused (the new owner's now)."""
    auth_refused: str | None = None
    """Set when a source refused the run's credentials (401 / 403): its reason, naming the source."""

    @property
    def complete(self) -> bool:
        return (not self.failed and not self.stopped_by_budget and not self.stopped_by_storage and not self.lease_lost
                and not self.auth_refused)  # fmt: skip

    @property
    def stopped(self) -> bool:
        """No more shards are handed out (the ones in flight finish)."""
        return bool(self.stopped_by_budget or self.lease_lost or self.auth_refused)


def run_shard_tasks(
    tasks: list[ShardTask],
    items: pa.Table,
    *,
    build: Callable[[Any], Any],
    store_uri: str,
    pool: PoolConfig,
    on_shard_done: Callable[[ShardResult], None] | None = None,
    lease: RunLease | None = None,
) -> RunOutcome:
    owner = lease.owner if lease is not None else None
    store = Store(store_uri, lease_owner=owner)  # failure records fenced like the workers' shards
    store_uri = store.uri  # absolute: workers resolve it in their own working directory
    worker_uri = LeasedStoreUri(store_uri, owner) if owner else store_uri
    outcome = RunOutcome()
    run_ids = sorted({t.run_id for t in tasks})
    _clean_temp_files(store, run_ids)
    finished = {run_id: store.finished_shards(run_id) for run_id in run_ids}
    pending = deque(t for t in tasks if t.shard_id not in finished[t.run_id])
    outcome.skipped = len(tasks) - len(pending)
    # A retry shard re-runs items of finished shards (their outage answers): those items count once in
    # the total and as not yet done, so a resumed run's progress never passes 100 %.
    regular = [t for t in tasks if t.rows is None]
    retry_items = sum(t.size for t in tasks if t.rows is not None and t.shard_id not in finished[t.run_id])
    skipped_items = sum(t.size for t in regular if t.shard_id in finished[t.run_id]) - retry_items
    progress = Progress(sum(t.size for t in regular), len(tasks), skipped_items, outcome.skipped, pool.progress_every_s)
    if outcome.skipped:
        print(f"[resume] {outcome.skipped} of {len(tasks)} shards already finished; skipping them", flush=True)
    if not pending:
        progress.maybe_print(force=True)
        return outcome

    wanted = min(pool.workers, len(pending))
    size, note = fit_pool(wanted, pool, ray.available_resources())
    if note:
        print(f"[pool] {note}", flush=True)
    items_ref = ray.put(items)
    actor_cls = ray.remote(num_cpus=pool.cpus_per_worker, num_gpus=pool.gpus_per_worker, max_restarts=0)(ShardWorker)
    workers = [actor_cls.remote(build, worker_uri) for _ in range(size)]
    try:  # a worker that cannot even start (e.g. our packages not importable there) fails the run at once
        ray.get([w.ping.remote() for w in workers], timeout=300)
    except (RayActorError, ActorDiedError, ray.exceptions.GetTimeoutError) as exc:
        raise WorkerStartError(f"worker actors could not start: {_first_line(exc)}") from exc
    idle = deque(range(len(workers)))
    retries = _Retries(pool, store, outcome, progress)
    outage = _StorageOutage(store_uri, pool)
    in_flight: dict[ray.ObjectRef, tuple[int, ShardTask]] = {}

    def lose_lease(lost: LeaseLostError) -> None:
        if outcome.lease_lost is None:
            outcome.lease_lost = str(lost)
            print(f"[lease] LOST: {lost}; handing out no more shards, discarding the writes of the "
                  f"{len(in_flight)} in flight", flush=True)  # fmt: skip

    def lease_confirmed() -> bool:
        """Still this driver's run? Checked before any shard is handed out."""
        if lease is None:
            return True
        if outcome.lease_lost is not None:
            return False
        try:
            lease.confirm()
        except LeaseLostError as lost:
            lose_lease(lost)
            return False
        except Exception as exc:  # the lease could not be renewed: storage is down, pause until it is back
            outage.start(f"the run lease could not be renewed: {type(exc).__name__}: {_first_line(exc)}")
            return False
        return True

    def submit() -> None:
        if outcome.stopped or outage.active or outage.gave_up:
            return
        if pending and idle and not lease_confirmed():
            return
        now = time.monotonic()
        for task in list(pending):  # a shard still in its backoff waits; the others go ahead
            if not idle:
                break
            if retries.not_before.get(_key(task), 0.0) > now:
                continue
            pending.remove(task)
            slot = idle.popleft()
            in_flight[workers[slot].run_shard.remote(task, items_ref)] = (slot, task)

    submit()
    while in_flight or (pending and not outcome.stopped and not outage.gave_up):
        if lease is not None and lease.lost and outcome.lease_lost is None:
            lease_confirmed()  # the heartbeat saw the loss first: stop now, not at the next hand-out
        if outage.active and outage.due():
            if outage.probe():
                retries.record_unrecorded()
            elif outage.gave_up:
                continue
        # paused: nothing is handed out, so the next event is the next probe, not a ready shard
        next_shard = float("inf") if outage.active else retries.seconds_to_next(pending)
        wait_s = min(pool.progress_every_s, outage.seconds_to_probe(), next_shard)
        if not in_flight:
            time.sleep(max(wait_s, 0.05))
            progress.maybe_print()
            submit()
            continue
        ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=max(wait_s, 0.05))
        if not ready:
            progress.maybe_print()
            submit()
            continue
        ref = ready[0]
        slot, task = in_flight.pop(ref)
        try:
            result: ShardResult = ray.get(ref)
        except (RayActorError, ActorDiedError, ActorUnavailableError) as exc:
            ray.kill(workers[slot], no_restart=True)
            workers[slot] = actor_cls.remote(build, store_uri)  # replace the dead worker
            outcome.worker_replacements += 1
            retries.retry_or_fail(task, f"worker died: {type(exc).__name__}: {_first_line(exc)}", pending)
        except Exception as exc:
            lost, down, refused = _cause(exc, LeaseLostError), _storage_unavailable(exc), _cause(exc, AuthError)
            if refused is not None:  # the same credentials fail every shard: stop, record nothing failed
                pending.appendleft(task)
                if outcome.auth_refused is None:
                    outcome.auth_refused = refused.reason
                    print(f"[auth] stopped: {refused.reason}; handing out no more shards", flush=True)
            elif lost is not None:  # its shard file was refused: the run is another driver's now
                outcome.discarded.append(_key(task))
                lose_lease(lost)
            elif down is not None:  # not the shard's fault: it waits for storage, its attempt uncounted
                pending.appendleft(task)
                outage.start(_first_line(down))
            else:  # the system raised: retry the shard after a backoff
                retries.retry_or_fail(task, f"{type(exc).__name__}: {_first_line(exc)}", pending)
        else:
            if result.status == "budget":
                outcome.stopped_by_budget = True
                pending.appendleft(task)
            else:
                outcome.done.append(result)
                progress.shard_done(result.items, result.errored, result.uncertain, result.outage)
                if on_shard_done:
                    on_shard_done(result)
        idle.append(slot)
        submit()
    for worker in workers:
        ray.kill(worker, no_restart=True)
    if outcome.lease_lost is None:  # otherwise the new owner retries them; this driver may not write
        retries.record_unrecorded(final=True)
    progress.maybe_print(force=True)
    outcome.storage_pauses = outage.pauses
    if outage.gave_up:
        outcome.stopped_by_storage = True
        left = sum(t.size for t in pending)
        print(f"[storage] still unavailable after {pool.storage_wait_s:.0f}s: stopped with {len(pending)} shards "
              f"({left} items) left; submit the same run again to resume", flush=True)  # fmt: skip
    if outcome.lease_lost:
        print(f"[lease] stopped: {outcome.lease_lost}; {len(outcome.discarded)} shards' writes discarded, "
              f"{len(pending)} shards left to the new owner", flush=True)  # fmt: skip
    if outcome.stopped_by_budget:
        left = sum(t.size for t in pending)
        print(f"[budget] stopped: {len(pending)} shards ({left} items) left; submit the same run again to resume", flush=True)
    return outcome


class WorkerStartError(RuntimeError):
    """The pool could not start: a setup problem, not a shard's."""


def fit_pool(wanted: int, pool: PoolConfig, free: dict[str, float]) -> tuple[int, str | None]:
    """How many workers the cluster can place now, and a note when that is fewer than asked.

    An actor Ray cannot place waits silently for resources that never come; sizing the pool
    to what is free makes that known at once. None fit: `WorkerStartError` naming asked vs free."""
    cpus, gpus = free.get("CPU", 0.0), free.get("GPU", 0.0)
    fits = wanted
    if pool.cpus_per_worker > 0:
        fits = min(fits, int(cpus // pool.cpus_per_worker + 1e-9))
    if pool.gpus_per_worker > 0:
        fits = min(fits, int(gpus // pool.gpus_per_worker + 1e-9))
    asked = f"{wanted} worker{'s' if wanted > 1 else ''} x {pool.cpus_per_worker:g} CPU" + (
        f" + {pool.gpus_per_worker:g} GPU" if pool.gpus_per_worker else ""
    )
    have = f"{cpus:g} CPU" + (f" and {gpus:g} GPU" if pool.gpus_per_worker else "") + " free in the Ray cluster"
    if fits < 1:
        raise WorkerStartError(
            f"no worker can be placed: asked {asked}, {have}. Lower cpus_per_worker (e.g. 0.25 for I/O-bound "
            "systems) or gpus_per_worker, or add nodes"
        )
    if fits < wanted:
        return fits, (
            f"asked {asked}, {have}: running {fits} worker{'s' if fits > 1 else ''} "
            f"(pass --workers {fits} to silence this, or set cpus_per_worker lower for I/O-bound systems)"
        )
    return wanted, None


def _key(task: ShardTask) -> tuple[str, int]:
    return (task.run_id, task.shard_id)


class _Retries:
    """Shard attempts, their backoff (jittered exponential, clients/retry.py's policy) and failure records."""

    def __init__(self, pool: PoolConfig, store: Store, outcome: RunOutcome, progress: Progress) -> None:
        self.pool, self.store, self.outcome, self.progress = pool, store, outcome, progress
        self.attempts: dict[tuple[str, int], int] = {}
        self.not_before: dict[tuple[str, int], float] = {}
        self._unrecorded: dict[tuple[str, int], tuple[str, str, int]] = {}

    def retry_or_fail(self, task: ShardTask, error: str, pending: deque) -> None:
        key = _key(task)
        self.attempts[key] = self.attempts.get(key, 1) + 1
        attempt = self.attempts[key]
        if attempt <= self.pool.max_attempts:
            wait = backoff_seconds(attempt - 1, None, base_wait=self.pool.retry_base_s, max_wait=self.pool.retry_max_s,
                                   retry_after_cap=0.0)  # fmt: skip
            self.not_before[key] = time.monotonic() + wait
            print(f"[retry] {task.system_label} shard {task.shard_id} (attempt {attempt}/{self.pool.max_attempts}) "
                  f"in {wait:.1f}s: {error}", flush=True)  # fmt: skip
            pending.append(task)
            return
        self.outcome.failed[key] = error
        print(f"[failed] {task.system_label} shard {task.shard_id} after {self.pool.max_attempts} attempts: {error}", flush=True)
        self.progress.shard_failed()
        self._unrecorded[key] = (task.system_label, error, attempt - 1)
        self.record_unrecorded()

    def seconds_to_next(self, pending: deque) -> float:
        now = time.monotonic()
        waits = [self.not_before.get(_key(t), 0.0) - now for t in pending]
        return max(min(waits), 0.0) if waits else float("inf")

    def record_unrecorded(self, final: bool = False) -> None:
        """Write each failed shard's record; one storage cannot take now is tried again later
        (the driver never dies of it) and, if it never can, listed at the end."""
        for key, (label, error, attempts) in list(self._unrecorded.items()):
            try:
                self.store.mark_shard_failed(key[0], key[1], error, attempts)
            except Exception as exc:  # storage down: keep it, say so
                if final:
                    self.outcome.unrecorded[key] = error
                    print(f"[failed] {label} shard {key[1]} failed but could not be recorded in storage "
                          f"({type(exc).__name__}: {_first_line(exc)}); it is retried when the run is submitted again",
                          flush=True)  # fmt: skip
                continue
            del self._unrecorded[key]


class _StorageOutage:
    """A storage outage pauses the whole run: no shard is handed out, the driver probes storage
    with a growing, jittered wait and resumes when a probe write succeeds."""

    def __init__(self, store_uri: str, pool: PoolConfig) -> None:
        self.store_uri, self.pool = store_uri, pool
        self.active = False
        self.gave_up = False
        self.pauses = 0
        self._probes = 0
        self._since = 0.0
        self._next = 0.0

    def start(self, reason: str) -> None:
        if self.active:
            return
        self.active, self.pauses, self._probes, self._since = True, self.pauses + 1, 0, time.monotonic()
        wait = self._schedule()
        print(f"[storage] unavailable: {reason}; pausing, retrying in {wait:.0f}s", flush=True)

    def due(self) -> bool:
        return time.monotonic() >= self._next

    def seconds_to_probe(self) -> float:
        return max(self._next - time.monotonic(), 0.0) if self.active else float("inf")

    def probe(self) -> bool:
        """True when storage answers again (the run resumes)."""
        try:
            probe_storage(self.store_uri)
        except Exception as exc:
            if time.monotonic() - self._since >= self.pool.storage_wait_s:
                self.active, self.gave_up = False, True
                return False
            wait = self._schedule()
            print(f"[storage] still unavailable: {_first_line(exc)}; retrying in {wait:.0f}s", flush=True)
            return False
        self.active = False
        print(f"[storage] available again after {time.monotonic() - self._since:.0f}s; resuming", flush=True)
        return True

    def _schedule(self) -> float:
        self._probes += 1
        ceiling = min(self.pool.storage_probe_max_s, self.pool.storage_probe_base_s * 2 ** (self._probes - 1))
        wait = ceiling / 2 + backoff_seconds(1, None, base_wait=ceiling / 2, max_wait=ceiling / 2, retry_after_cap=0.0)
        self._next = time.monotonic() + wait
        return wait


def _storage_unavailable(exc: BaseException) -> StorageUnavailableError | None:
    """The storage outage behind a worker's error (Ray wraps it; the cause may be a few links down)."""
    return _cause(exc, StorageUnavailableError)


def _cause(exc: BaseException | None, kind: type[E]) -> E | None:
    """The innermost `kind` in a worker error's cause chain (a RayTaskError posing as its cause
    renders as a whole traceback)."""
    found = None
    for _ in range(5):
        if exc is None:
            break
        if isinstance(exc, kind):
            found = exc
        exc = getattr(exc, "cause", None) or exc.__cause__
    return found


def _clean_temp_files(store: Store, run_ids: list[str]) -> None:
    """Temp files of workers killed mid-write (local stores only: an S3 write is one PUT)."""
    if is_remote(store.uri):
        return
    removed = sum(remove_stale_temp_files(store.path(r, sub)) for r in run_ids for sub in ("", "shards", "failed", "tables", "answers"))
    if removed:
        print(f"[storage] removed {removed} leftover temp files of killed workers", flush=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1][:300] if text else ""
