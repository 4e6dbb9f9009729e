"""The HTTP checker client against the service's request limits: long lists go in chunks, and a
refusal carries the service's message naming the limit."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from clients.checker_client import CheckRequest, HttpCheckerClient
from clients.errors import BadRequestError


def test_long_lists_are_sent_in_chunks_under_the_limit():
    sizes: list[int] = []

    def answer(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        sizes.append(len(body))
        if len(body) > 64:
            return httpx.Response(413, json={"error": "too many"})
        return httpx.Response(200, json=[{"kind": r["kind"], "outcome": "confirmed", "reason": str(r["payload"]["i"])}
                                         for r in body])  # fmt: skip

    client = HttpCheckerClient("http://checkers.test/checkers", transport=httpx.MockTransport(answer))
    replies = asyncio.run(client.check_many([CheckRequest("math.equality", {"i": i}) for i in range(150)]))
    assert sizes == [64, 64, 22]
    assert [r.reason for r in replies] == [str(i) for i in range(150)]


def test_a_refusal_names_the_limit():
    def refuse(request: httpx.Request) -> httpx.Response:
        return httpx.Response(413, json={"error": "request body larger than 262144 bytes (max_body_bytes)"})

    client = HttpCheckerClient("http://checkers.test/checkers", transport=httpx.MockTransport(refuse))
    with pytest.raises(BadRequestError, match=r"max_body_bytes") as caught:
        asyncio.run(client.check(CheckRequest("math.equality", {"lhs": "x", "rhs": "x"})))
    assert caught.value.status == 413
