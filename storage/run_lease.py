"""One driver owns a run at a time: a lease object `<run_id>/lease.json` in the run's store.

Without it two drivers submitted on one run id each did every shard and paid every LLM request
with a full budget each. The lease is a small JSON record (owner = host + pid + random token,
acquired_at, heartbeat_at, expires_at) created with an atomic create-if-absent and renewed, taken
over and released with compare-and-swap writes (`Store.create_if_absent` / `replace_if_unchanged`
/ `delete_if_unchanged`: conditional PutObject/DeleteObject on S3, an flock on local disk).

A heartbeat thread renews it every `ttl_s / 6` seconds. A driver that dies without releasing
(SIGKILL, a lost node) leaves a lease that expires after `ttl_s` (default 60 s, env
`SCRUTINEER_LEASE_TTL_S`); an expired lease, or one whose process is gone from this very host,
may be taken over, and the takeover is reported. Expiry compares wall clocks of the two hosts, so
clock skew between driver hosts shortens or lengthens the grace period by that skew. The
same-host check (`os.kill(pid, 0)`) assumes one pid namespace per host name; containers that
share a host name but not a pid namespace should keep distinct host names.

On S3 the lease needs conditional writes (If-None-Match on PutObject, If-Match on PutObject and
DeleteObject: AWS S3 since 2024, moto 5.2); a service without them fails with a clear error
rather than a weaker lease. Locally it needs a filesystem with working flock (not every NFS).

A job opens one run per system; `RunLease` holds all of them or none: when one is taken, the
ones already acquired are released before reporting the owner.

A driver can lose its lease while it runs: frozen (SIGSTOP, a VM paused, a GC storm) or cut off from
storage for longer than the TTL, its heartbeat stops, the lease expires and another driver takes
it over. `confirm()` is how the driver learns it before handing out work: it raises
`LeaseLostError` naming the new owner once a renewal failed its compare-and-swap, and renews at once
when the last renewal is older than `ttl_s / 3` (a driver back from a freeze never trusts a lease it
has not renewed since). Writes of shard files and failure records are fenced by `owner`
(`storage/store.py`), so a worker of a driver that lost the run cannot land a shard after the takeover.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from storage.store import LEASE_FILE, LeaseLostError, Store

__all__ = ["LeaseHeld", "LeaseLostError", "LeaseRecord", "RunLease", "lease_ttl_from_env"]

TTL_ENV = "SCRUTINEER_LEASE_TTL_S"
DEFAULT_TTL_S = 60.0


def lease_ttl_from_env() -> float:
    """The lease TTL in seconds: `SCRUTINEER_LEASE_TTL_S`, else 60."""
    raw = os.environ.get(TTL_ENV)
    if not raw:
        return DEFAULT_TTL_S
    try:
        ttl = float(raw)
    except ValueError:
        raise ValueError(f"{TTL_ENV}={raw!r} is not a number of seconds") from None
    if ttl <= 0:
        raise ValueError(f"{TTL_ENV}={raw!r} must be > 0 seconds")
    return ttl


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")  # seconds would expire a lease early


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


@dataclass(frozen=True)
class LeaseRecord:
    """What `<run_id>/lease.json` holds (times are ISO-8601 UTC)."""

    run_id: str
    owner: str
    """host:pid:token, unique per driver process and lease object."""
    host: str
    pid: int
    acquired_at: str
    heartbeat_at: str
    expires_at: str
    ttl_s: float

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), indent=2, sort_keys=True).encode()

    @classmethod
    def from_bytes(cls, data: bytes) -> LeaseRecord:
        raw = json.loads(data)
        return cls(**{k: raw[k] for k in cls.__dataclass_fields__})

    def expired(self, now: float) -> bool:
        return now >= _epoch(self.expires_at)

    def describe(self) -> str:
        return (f"host {self.host}, pid {self.pid}, running it since {self.acquired_at} "
                f"(lease expires {self.expires_at} unless renewed; owner {self.owner})")  # fmt: skip


class LeaseHeld(RuntimeError):
    """Another live driver owns a run; the message names it and what to do."""

    def __init__(self, holder: LeaseRecord) -> None:
        self.holder = holder
        super().__init__(
            f"run {holder.run_id} is owned by another driver: {holder.describe()}. "
            "Wait for that driver to finish (or for its lease to expire if it died), pass --wait-for-lease "
            "to wait here until the run is free, or run under another --snapshot or --storage."
        )


class RunLease:
    """Ownership of a job's runs, held from `acquire()` to `release()`.

    Args:
        store: the runs' store.
        run_ids: every run the job opens (one per system).
        ttl_s: seconds a lease lives without a heartbeat (default: `lease_ttl_from_env()`).
        heartbeat_s: seconds between renewals (default `ttl_s / 6`).
        log: where takeover, waiting and lost-lease notices go.
    """

    def __init__(self, store: Store, run_ids: list[str], *, ttl_s: float | None = None,
                 heartbeat_s: float | None = None, log: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.store = store
        self.run_ids = sorted(set(run_ids))  # one order for every driver
        self.ttl_s = lease_ttl_from_env() if ttl_s is None else ttl_s
        self.heartbeat_s = heartbeat_s or self.ttl_s / 6
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.owner = f"{self.host}:{self.pid}:{secrets.token_hex(4)}"
        self.log = log or (lambda line: print(line, flush=True))
        self.takeovers: list[str] = []
        """One line per lease taken over from a dead or expired driver."""
        self.lost: list[str] = []
        """Runs whose lease another driver took while this one held it (a stalled heartbeat)."""
        self.lost_to: dict[str, str] = {}
        """For each lost run, who holds it now (as `LeaseRecord.describe` says)."""
        self._versions: dict[str, str] = {}
        self._acquired_at = ""
        self._lock = threading.Lock()
        self._renew_lock = threading.Lock()  # one renewal at a time: two racing CAS writes would look like a loss
        self._renewed_at = 0.0  # time.monotonic() when the last full renewal started
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- acquire -------------------------------------------------------------------------------
    def acquire(
        self, *, wait: bool = False, poll_s: float | None = None, timeout_s: float | None = None
    ) -> None:
        """Own every run or raise `LeaseHeld` (after waiting, when `wait`) holding none of them."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        announced: str | None = None
        while True:
            try:
                self._acquire_all()
                break
            except LeaseHeld as held:
                if not wait or (deadline is not None and time.monotonic() >= deadline):
                    raise
                if announced != held.holder.owner:
                    self.log(f"[lease] waiting: {held}")
                    announced = held.holder.owner
                left = max(0.1, _epoch(held.holder.expires_at) - time.time())
                time.sleep(min(poll_s or min(5.0, self.ttl_s / 4), left))
        self._renewed_at = time.monotonic()
        self._stop.clear()
        self._thread = threading.Thread(target=self._heartbeat, name="run-lease-heartbeat", daemon=True)
        self._thread.start()

    def _acquire_all(self) -> None:
        self._acquired_at = _iso(time.time())
        got: list[str] = []
        try:
            for run_id in self.run_ids:
                self._acquire_one(run_id)
                got.append(run_id)
        except BaseException:
            for run_id in got:  # all or none
                self._release_one(run_id)
            raise

    def _acquire_one(self, run_id: str) -> None:
        path = self._path(run_id)
        for _ in range(5):  # each miss means another driver wrote in between: look again
            version = self.store.create_if_absent(path, self._record(run_id).to_bytes())
            if version is not None:
                with self._lock:
                    self._versions[run_id] = version
                return
            current = self.store.read_versioned(path)
            if current is None:
                continue  # released in between
            data, seen = current
            try:
                holder = LeaseRecord.from_bytes(data)
            except (ValueError, KeyError, TypeError):
                holder, why = None, "was unreadable"
            else:
                why = self._stale_reason(holder)
                if why is None:
                    raise LeaseHeld(holder)
            version = self.store.replace_if_unchanged(path, self._record(run_id).to_bytes(), seen)
            if version is not None:
                with self._lock:
                    self._versions[run_id] = version
                who = holder.describe() if holder else "an unknown owner"
                line = f"[lease] run {run_id}: took over from {who}: its lease {why}"
                self.takeovers.append(line)
                self.log(line)
                return
        raise RuntimeError(f"run {run_id}: the lease at {path} kept changing under this driver; try again")

    def _stale_reason(self, holder: LeaseRecord) -> str | None:
        now = time.time()
        if holder.expired(now):
            return f"expired at {holder.expires_at}"
        if holder.host == self.host and holder.pid != self.pid and not _pid_alive(holder.pid):
            return f"was held by pid {holder.pid}, which is no longer running on this host"
        return None

    def _record(self, run_id: str) -> LeaseRecord:
        now = time.time()
        return LeaseRecord(run_id, self.owner, self.host, self.pid, self._acquired_at or _iso(now), _iso(now),
                           _iso(now + self.ttl_s), self.ttl_s)  # fmt: skip

    def _path(self, run_id: str) -> str:
        return self.store.path(run_id, LEASE_FILE)

    # -- hold ----------------------------------------------------------------------------------
    def renew(self) -> None:
        """Push every held lease's expiry `ttl_s` ahead (the heartbeat does this)."""
        with self._renew_lock:
            started = time.monotonic()
            with self._lock:
                held = dict(self._versions)
            for run_id, version in held.items():
                new = self.store.replace_if_unchanged(
                    self._path(run_id), self._record(run_id).to_bytes(), version
                )
                with self._lock:
                    if run_id not in self._versions:
                        continue  # released meanwhile
                    if new is not None:
                        self._versions[run_id] = new
                        continue
                    del self._versions[run_id]
                other = self._holder(run_id)
                self.lost_to[run_id] = other
                self.lost.append(run_id)
                self.log(f"[lease] LOST run {run_id}: another driver took it over ({other}); "
                         "this driver's heartbeat stalled")  # fmt: skip
            self._renewed_at = started

    def confirm(self) -> None:
        """Return only while this driver still owns every run: raise `LeaseLostError` naming the new
        owner once one was taken over. A lease not renewed for `ttl_s / 3` (a freeze, a storage
        outage) is renewed here first; a storage error doing so is raised as is (the run pauses)."""
        if not self.lost and time.monotonic() - self._renewed_at > self.ttl_s / 3:
            self.renew()
        if self.lost:
            run_id = self.lost[0]
            raise LeaseLostError(run_id, self.lost_to.get(run_id, "another driver"))

    def _holder(self, run_id: str) -> str:
        """Who holds a run's lease now, as well as the stored record tells."""
        try:
            current = self.store.read_versioned(self._path(run_id))
        except Exception as exc:  # storage down right now: the loss itself is certain (the CAS failed)
            return f"another driver (the lease could not be read: {type(exc).__name__})"
        if current is None:
            return "nobody (the lease was deleted)"
        try:
            return LeaseRecord.from_bytes(current[0]).describe()
        except (ValueError, KeyError, TypeError):
            return "an unreadable lease record"

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            try:
                self.renew()
            except Exception as exc:  # a store hiccup: the next beat retries well within the TTL
                self.log(f"[lease] heartbeat failed, retrying: {type(exc).__name__}: {exc}")

    # -- release -------------------------------------------------------------------------------
    def release(self) -> None:
        """Give up every held lease (idempotent)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=self.heartbeat_s + 5)
        for run_id in list(self._versions):
            self._release_one(run_id)

    def _release_one(self, run_id: str) -> None:
        with self._lock:
            version = self._versions.pop(run_id, None)
        if version is not None:
            try:
                self.store.delete_if_unchanged(self._path(run_id), version)
            except Exception as exc:  # it expires on its own
                self.log(
                    f"[lease] could not release run {run_id} ({type(exc).__name__}: {exc}); it expires in {self.ttl_s:.0f} s"
                )

    def release_at_exit(self) -> None:
        """Release when the process exits: normally, on an exception, on Ctrl-C, and on SIGTERM
        (turned into SystemExit so `finally` blocks run). A SIGKILLed driver's lease expires."""
        atexit.register(self.release)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _exit_on_sigterm)

    def __enter__(self) -> RunLease:
        if not self._versions:
            self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _exit_on_sigterm(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True
