"""Run shard tasks on a pool of Ray worker actors, resumably.

Finished shards (a shard file in the store) are skipped. A worker that dies is replaced and its
shard retried; a shard that raised is retried; after `max_attempts` the shard is recorded as
failed in the store and reported, never dropped. When a system reports its budget exhausted the
runner stops handing out shards, lets the running ones finish and returns, resumable.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import ray
from ray.exceptions import ActorDiedError, ActorUnavailableError, RayActorError

from cluster.progress import Progress
from cluster.shard_worker import ShardResult, ShardWorker
from cluster.shards import ShardTask
from storage.store import Store


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


@dataclass
class RunOutcome:
    done: list[ShardResult] = field(default_factory=list)
    skipped: int = 0
    failed: dict[tuple[str, int], str] = field(default_factory=dict)
    stopped_by_budget: bool = False
    worker_replacements: int = 0

    @property
    def complete(self) -> bool:
        return not self.failed and not self.stopped_by_budget


def run_shard_tasks(
    tasks: list[ShardTask],
    items: pa.Table,
    *,
    build: Callable[[Any], Any],
    store_uri: str,
    pool: PoolConfig,
    on_shard_done: Callable[[ShardResult], None] | None = None,
) -> RunOutcome:
    store = Store(store_uri)
    store_uri = store.uri  # absolute: workers resolve it in their own working directory
    outcome = RunOutcome()
    finished = {run_id: store.finished_shards(run_id) for run_id in {t.run_id for t in tasks}}
    pending = deque(t for t in tasks if t.shard_id not in finished[t.run_id])
    outcome.skipped = len(tasks) - len(pending)
    skipped_items = sum(t.size for t in tasks if t.shard_id in finished[t.run_id])
    progress = Progress(sum(t.size for t in tasks), len(tasks), skipped_items, outcome.skipped, pool.progress_every_s)
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
    workers = [actor_cls.remote(build, store_uri) for _ in range(size)]
    try:  # a worker that cannot even start (e.g. our packages not importable there) fails the run at once
        ray.get([w.ping.remote() for w in workers], timeout=300)
    except (RayActorError, ActorDiedError, ray.exceptions.GetTimeoutError) as exc:
        raise WorkerStartError(f"worker actors could not start: {_first_line(exc)}") from exc
    idle = deque(range(len(workers)))
    attempts: dict[tuple[str, int], int] = {}
    in_flight: dict[ray.ObjectRef, tuple[int, ShardTask]] = {}

    def submit() -> None:
        while idle and pending and not outcome.stopped_by_budget:
            slot, task = idle.popleft(), pending.popleft()
            in_flight[workers[slot].run_shard.remote(task, items_ref)] = (slot, task)

    submit()
    while in_flight:
        ready, _ = ray.wait(list(in_flight), num_returns=1, timeout=pool.progress_every_s)
        if not ready:
            progress.maybe_print()
            continue
        ref = ready[0]
        slot, task = in_flight.pop(ref)
        try:
            result: ShardResult = ray.get(ref)
        except (RayActorError, ActorDiedError, ActorUnavailableError) as exc:
            ray.kill(workers[slot], no_restart=True)
            workers[slot] = actor_cls.remote(build, store_uri)  # replace the dead worker
            outcome.worker_replacements += 1
            _retry_or_fail(task, f"worker died: {type(exc).__name__}: {_first_line(exc)}", attempts, pending, store, outcome, pool, progress)
        except Exception as exc:  # the system raised: retry the shard
            _retry_or_fail(task, f"{type(exc).__name__}: {_first_line(exc)}", attempts, pending, store, outcome, pool, progress)
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
    progress.maybe_print(force=True)
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


def _retry_or_fail(task, error, attempts, pending, store, outcome, pool, progress) -> None:
    key = (task.run_id, task.shard_id)
    attempts[key] = attempts.get(key, 1) + 1
    if attempts[key] <= pool.max_attempts:
        print(f"[retry] {task.system_label} shard {task.shard_id} (attempt {attempts[key]}/{pool.max_attempts}): {error}", flush=True)
        pending.append(task)
    else:
        store.mark_shard_failed(task.run_id, task.shard_id, error, attempts[key] - 1)
        outcome.failed[key] = error
        print(f"[failed] {task.system_label} shard {task.shard_id} after {pool.max_attempts} attempts: {error}", flush=True)
        progress.shard_failed()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[-1][:300] if text else ""
