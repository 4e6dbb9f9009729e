"""Cache keys name what changes the answer; the cache survives reopening and round-trips JSONL."""

from __future__ import annotations

import pytest

from clients.errors import CacheMissError
from clients.llm_cache import LLMCache
from clients.llm_request import LLMRequest, LLMResponse, ToolCall

MSG = [{"role": "user", "content": "hello"}]


def test_cache_key_ignores_transport_knobs_but_not_answer_parameters():
    base = LLMRequest("openai/gpt-4o", MSG, {"temperature": 0.0, "seed": 42})
    same = LLMRequest("openai/gpt-4o", MSG, {"seed": 42, "temperature": 0.0, "timeout": 5, "api_key": "sk-x"})
    assert base.cache_key() == same.cache_key()
    different = [
        LLMRequest("openai/gpt-4o-mini", MSG, {"temperature": 0.0, "seed": 42}),
        LLMRequest("openai/gpt-4o", [{"role": "user", "content": "hello!"}], {"temperature": 0.0, "seed": 42}),
        LLMRequest("openai/gpt-4o", MSG, {"temperature": 0.7, "seed": 42}),
        LLMRequest("openai/gpt-4o", MSG, {"temperature": 0.0, "seed": 42},
                   tools=[{"type": "function", "function": {"name": "f"}}]),
    ]
    assert len({base.cache_key(), *(r.cache_key() for r in different)}) == 5


def test_answers_persist_across_reopen_and_export_import(tmp_path):
    request = LLMRequest("openai/gpt-4o", MSG, {"temperature": 0.0})
    answer = LLMResponse("hi", "gpt-4o-2024-08-06", 10, 2, 0.0001, 1.5, "stop",
                         [ToolCall("c1", "search", "{}")], attempts=3)
    cache = LLMCache(tmp_path / "a")
    assert cache.get(request) is None
    cache.put(request, answer)
    cache.close()
    reopened = LLMCache(tmp_path / "a")
    hit = reopened.get(request)
    assert hit is not None and hit.cached and hit.attempts == 0
    assert (hit.text, hit.model_id, hit.tokens_in, hit.cost_usd, hit.tool_calls) == (
        "hi", "gpt-4o-2024-08-06", 10, 0.0001, [ToolCall("c1", "search", "{}")])
    assert len(reopened) == 1


def test_frozen_cache_raises_on_miss_and_writes_nothing(tmp_path):
    frozen = LLMCache(tmp_path / "f", frozen=True)
    request = LLMRequest("openai/gpt-4o", MSG)
    with pytest.raises(CacheMissError):
        frozen.get(request)
    frozen.put(request, LLMResponse("x", "m"))
    assert len(frozen) == 0
