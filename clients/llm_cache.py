"""The gateway's view of the one response cache (`clients/response_cache.py`).

Model answers are stored in the same diskcache store the bibliographic sources use: source = the
model string, digest = `LLMRequest.cache_key()` (model, messages, answer-changing parameters,
tools) combined with the gateway's `variant` (the API base URL and a self-hosted model's weights
fingerprint: two servers both reached as `openai/x` never share answers, new weights never replay
old ones), body = the `LLMResponse` as JSON, stamped with its fetch date. Every paid answer is
written before it is used, so a run interrupted at any point (budget, crash, pre-emption) and
resumed on the same node pays again only for the requests on the wire at the interruption; on
another node, for those and the answers not yet exported (`clients/answer_exchange.py`: at most
0.25 s of them). A run pinned to a snapshot opens the store
`frozen`: a miss raises `CacheMissError` and no network call is made.

Between the nodes of a cluster, answers travel through the run's storage, as they are paid for
and per shard (`clients/answer_exchange.py`). `entries()` lists the model answers with their
`messages_hash`: the fields a recording for `jobs/llm_replay_server.py` needs.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from clients.llm_request import LLMRequest, LLMResponse, messages_hash
from clients.response_cache import CachedResponse, ResponseCache

__all__ = ["LLMCache"]

_CONTENT_TYPE = "application/vnd.scrutineer.llm-response+json"


class LLMCache:
    """Request -> `LLMResponse` over a `ResponseCache` (picklable, process-safe).

    Args:
        directory: the cache directory (shared with the source clients' answers).
        frozen: replay only (a miss raises `CacheMissError`; nothing is written).
    """

    def __init__(self, directory: str | Path, *, frozen: bool = False) -> None:
        self.store = ResponseCache(directory, frozen=frozen)

    @property
    def hits(self) -> int:
        return self.store.hits

    @property
    def misses(self) -> int:
        return self.store.misses

    @staticmethod
    def _readable(request: LLMRequest) -> str:
        return json.dumps(["chat", request.model, messages_hash(request.messages)])

    @staticmethod
    def key(request: LLMRequest, variant: str = "") -> str:
        """The stored key: the request's own key, plus the variant (server, weights) when there is one."""
        base = request.cache_key()
        return base if not variant else hashlib.sha256(f"{base}\0{variant}".encode()).hexdigest()

    def get(self, request: LLMRequest, variant: str = "") -> LLMResponse | None:
        """The stored answer, None, or `CacheMissError` when frozen."""
        stored = self.store.get(request.model, self.key(request, variant), self._readable(request))
        if stored is None:
            return None
        response = LLMResponse.from_json(json.loads(stored.text))
        response.cached = True
        response.attempts = 0
        return response

    def put(self, request: LLMRequest, response: LLMResponse, variant: str = "") -> None:
        body = json.dumps(response.to_json() | {"cached": False}, sort_keys=True)
        stored = CachedResponse(request.model, self._readable(request), 200, _CONTENT_TYPE, body, ResponseCache.now())
        self.store.put(stored, self.key(request, variant))

    def __len__(self) -> int:
        return sum(1 for _ in self.entries())

    def entries(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """(cache key, {model, messages_hash, fetched_at, response}) for every model answer."""
        import diskcache

        with diskcache.Cache(str(self.store.directory)) as raw:
            for key in raw.iterkeys():
                value = raw.get(key)
                if isinstance(value, dict) and value.get("content_type") == _CONTENT_TYPE:
                    _, model, mhash = json.loads(value["request"])
                    yield key, {"model": model, "messages_hash": mhash, "fetched_at": value["fetched_at"],
                                "response": json.loads(value["text"])}  # fmt: skip

    def close(self) -> None:
        self.store.close()
