"""The gateway's response cache: diskcache on local disk, keyed by `LLMRequest.cache_key()`.

Every paid answer is written before it is used, so a run interrupted at any point (budget,
crash, pre-emption) never pays for the same request twice when resumed. A run pinned to a
snapshot replays from the cache with zero network calls (`replay_only`: a miss raises
`CacheMissError`). `export_jsonl` / `import_jsonl` move a cache to and from the run's storage
(or to `jobs/llm_replay_server.py`, which serves the same lines as recordings).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clients.llm_request import LLMRequest, LLMResponse, messages_hash

__all__ = ["ResponseCache"]


class ResponseCache:
    """Durable request -> response map. Thread- and process-safe (diskcache uses sqlite)."""

    def __init__(self, directory: str | Path) -> None:
        import diskcache

        self.directory = Path(directory)
        self._cache = diskcache.Cache(str(self.directory), size_limit=2**40, eviction_policy="none")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, request: LLMRequest) -> LLMResponse | None:
        entry = self._cache.get(request.cache_key())
        with self._lock:
            if entry is None:
                self.misses += 1
                return None
            self.hits += 1
        response = LLMResponse.from_json(entry["response"])
        response.cached = True
        response.attempts = 0
        return response

    def put(self, request: LLMRequest, response: LLMResponse) -> None:
        stored = response.to_json() | {"cached": False}
        entry = {"model": request.model, "messages_hash": messages_hash(request.messages), "response": stored}
        self._cache.set(request.cache_key(), entry)

    def __len__(self) -> int:
        return len(self._cache)

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        for key in self._cache.iterkeys():
            entry = self._cache.get(key)
            if entry is not None:
                yield key, entry

    def export_jsonl(self, path: str | Path) -> int:
        """Write every entry as one JSON line (`key`, `model`, `messages_hash`, `response`)."""
        count = 0
        with open(path, "w", encoding="utf-8") as out:
            for key, entry in self.entries():
                out.write(json.dumps({"key": key, **entry}, sort_keys=True) + "\n")
                count += 1
        return count

    def import_jsonl(self, path: str | Path) -> int:
        """Load lines written by `export_jsonl` (existing keys are overwritten with the same answer)."""
        count = 0
        with open(path, encoding="utf-8") as lines:
            for line in lines:
                if line.strip():
                    entry = json.loads(line)
                    self._cache.set(entry.pop("key"), entry)
                    count += 1
        return count

    def close(self) -> None:
        self._cache.close()
