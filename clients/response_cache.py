"""The response cache: raw responses keyed by source + request, stamped with their fetch date.

Stores what the server sent (status, content type, body text), not parsed records, so a parser
fix re-reads old responses and a dated snapshot replays byte for byte. Definite answers are
cached (2xx and 404); transient failures never are.

The key names what changes the answer (source, method, path, query, the Accept header) and
nothing else: API keys, mailto and timeouts are left out, so a snapshot taken with one key replays
with another. `frozen=True` pins a run to the cache as it is: a miss raises `CacheMissError` and no
network call is made; nothing is written.

`scope` is the snapshot policy of source answers: a run's cache is opened with
`scope="snapshot:<date>"`, which enters every key, so a run with a new snapshot date asks the
sources again while a resumed (or repeated) run of the same snapshot asks nothing. Replaying another
date is naming that date as the scope (`[llm] replay_snapshot`). `scope=None` (LLM answers) keys by
request alone.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import diskcache

from clients.errors import CacheMissError
from clients.process_state import PROCESS_STATE

__all__ = ["CachedResponse", "ResponseCache", "drain_touched", "drain_written", "record_touched", "record_written",
           "request_key", "stop_recording_written", "wait_written", "wake_written"]

# Stored keys this process read (hits) or wrote, per recorded cache directory: what a finished shard
# exports to the run's storage (`clients/answer_exchange.py`), so exporting costs the shard's own
# entries only. Only directories a shard worker asked for are recorded (a driver's never grow).
_TOUCHED_LOCK = threading.Lock()


# Stored keys this process wrote (paid answers), in order, per watched cache directory: what an
# `AnswerFlusher` (`clients/answer_exchange.py`) exports while a shard or a driver phase runs, so a
# killed process loses only the calls still on the wire. The condition wakes the flusher.
_WRITTEN_CHANGED = threading.Condition(threading.Lock())


def _touch(directory: Path, key: str, *, written: bool = False) -> None:
    name = os.path.abspath(directory)
    with _TOUCHED_LOCK:
        keys = PROCESS_STATE.touched_keys.get(name)
        if keys is not None:
            keys.add(key)
    if written:
        with _WRITTEN_CHANGED:
            pending = PROCESS_STATE.written_keys.get(name)
            if pending is not None:
                pending.append(key)
                _WRITTEN_CHANGED.notify_all()


def record_touched(directory: str | Path) -> None:
    """Start recording the keys this process touches in `directory` (no-op when already on)."""
    with _TOUCHED_LOCK:
        PROCESS_STATE.touched_keys.setdefault(os.path.abspath(directory), set())


def drain_touched(directory: str | Path) -> set[str]:
    """The stored keys touched in `directory` since the last drain (recording goes on when it was on)."""
    with _TOUCHED_LOCK:
        key = os.path.abspath(directory)
        keys = PROCESS_STATE.touched_keys.get(key, set())
        if key in PROCESS_STATE.touched_keys:
            PROCESS_STATE.touched_keys[key] = set()
        return keys


def record_written(directory: str | Path) -> None:
    """Start keeping the keys this process writes in `directory` (one watcher per directory)."""
    with _WRITTEN_CHANGED:
        name = os.path.abspath(directory)
        if name in PROCESS_STATE.written_keys:
            raise RuntimeError(f"the answers written to {name} are already being exported")
        PROCESS_STATE.written_keys[name] = []


def stop_recording_written(directory: str | Path) -> None:
    with _WRITTEN_CHANGED:
        PROCESS_STATE.written_keys.pop(os.path.abspath(directory), None)
        _WRITTEN_CHANGED.notify_all()


def drain_written(directory: str | Path) -> list[str]:
    """The keys written in `directory` since the last drain, in order (recording goes on)."""
    with _WRITTEN_CHANGED:
        name = os.path.abspath(directory)
        keys = PROCESS_STATE.written_keys.get(name, [])
        if name in PROCESS_STATE.written_keys:
            PROCESS_STATE.written_keys[name] = []
        return keys


def wait_written(directories: list[str], at_least: int, timeout: float, stop: threading.Event) -> int:
    """Wait until `at_least` keys written in `directories` are pending, `stop` is set (see
    `wake_written`) or `timeout` seconds pass; returns how many are pending."""
    names = [os.path.abspath(d) for d in directories]

    def pending() -> int:
        return sum(len(PROCESS_STATE.written_keys.get(n, ())) for n in names)

    with _WRITTEN_CHANGED:
        _WRITTEN_CHANGED.wait_for(lambda: pending() >= at_least or stop.is_set(), timeout)
        return pending()


def wake_written() -> None:
    """Wake every `wait_written` (to see its stop event)."""
    with _WRITTEN_CHANGED:
        _WRITTEN_CHANGED.notify_all()


@dataclass(frozen=True)
class CachedResponse:
    """One stored answer."""

    source: str
    """Source name (`crossref`, ...)."""
    request: str
    """Method, path and the answer-relevant query, as keyed (no secrets)."""
    status: int
    """HTTP status (2xx or 404)."""
    content_type: str
    """The response's Content-Type."""
    text: str
    """The body as text."""
    fetched_at: str
    """UTC ISO-8601 time the response was fetched from the network."""


def request_key(source: str, method: str, path: str, params: dict[str, Any] | None = None,
                accept: str | None = None) -> tuple[str, str]:  # fmt: skip
    """(digest, readable request) for a request; params are sorted, None values dropped."""
    query = sorted((str(k), str(v)) for k, v in (params or {}).items() if v is not None)
    readable = json.dumps([method.upper(), path, query, accept or ""], ensure_ascii=False)
    digest = hashlib.sha256(f"{source}\0{readable}".encode()).hexdigest()
    return digest, readable


class ResponseCache:
    """A diskcache-backed response store.

    Args:
        directory: where the cache lives (a run's snapshot directory).
        frozen: replay only; a miss is a `CacheMissError`, and nothing is written.
        scope: snapshot policy entering every key (`snapshot:<date>`); None: request alone.
    """

    def __init__(self, directory: str | Path, *, frozen: bool = False, scope: str | None = None) -> None:
        self.directory = Path(directory)
        self.frozen = frozen
        self.scope = scope
        self._cache = diskcache.Cache(str(self.directory))
        self.hits = 0
        self.misses = 0

    def scoped(self, digest: str) -> str:
        """The stored key of a request digest under this cache's scope."""
        return digest if self.scope is None else hashlib.sha256(f"{self.scope}\0{digest}".encode()).hexdigest()

    def get(self, source: str, digest: str, readable: str) -> CachedResponse | None:
        """The stored answer, or None (or `CacheMissError` when frozen)."""
        key = self.scoped(digest)
        value = self._cache.get(key)
        if value is None:
            self.misses += 1
            if self.frozen:
                raise CacheMissError(f"not in frozen cache: {readable}", source=source)
            return None
        self.hits += 1
        _touch(self.directory, key)
        return CachedResponse(**value)

    def put(self, response: CachedResponse, digest: str) -> None:
        """Store an answer (ignored when frozen)."""
        if not self.frozen:
            key = self.scoped(digest)
            self._cache.set(key, asdict(response))  # committed before anyone hears of it
            _touch(self.directory, key, written=True)

    @staticmethod
    def now() -> str:
        return datetime.now(UTC).isoformat(timespec="seconds")

    def __len__(self) -> int:
        return len(self._cache)

    def close(self) -> None:
        self._cache.close()

    def __getstate__(self) -> dict[str, Any]:
        return {"directory": str(self.directory), "frozen": self.frozen, "scope": self.scope}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["directory"], frozen=state["frozen"], scope=state.get("scope"))
