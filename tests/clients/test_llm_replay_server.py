"""jobs/llm_replay_server.py as a real HTTP server: recordings, rate limit, injected faults."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

import pytest

from clients.llm_request import messages_hash
from tests.helpers.replay_server import replay_server, server_stats

pytestmark = pytest.mark.integration  # a replay server subprocess


def post_chat(url: str, messages: list[dict[str, Any]]) -> tuple[int, dict[str, Any], dict[str, str]]:
    body = json.dumps({"model": "x", "messages": messages}).encode()
    request = urllib.request.Request(f"{url}/v1/chat/completions", body, {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), dict(exc.headers)


MESSAGES = [{"role": "user", "content": "is this citation real?"}]


def test_recorded_answer_is_served_by_messages_hash_with_usage_and_model(tmp_path):
    recording = {"messages_hash": messages_hash(MESSAGES),
                 "response": {"text": '{"label": "VALID"}', "model_id": "google/gemini-2.5-pro", "tokens_out": 7}}
    with replay_server(recordings=[recording], tmp=tmp_path) as url:
        status, body, _ = post_chat(url, MESSAGES)
        assert status == 200
        assert body["model"] == "google/gemini-2.5-pro"
        assert body["choices"][0]["message"]["content"] == '{"label": "VALID"}'
        assert body["usage"]["completion_tokens"] == 7
        status, body, _ = post_chat(url, [{"role": "user", "content": "something else"}])
        assert status == 404 and "no recording" in body["error"]["message"]
        assert server_stats(url)["ok"] == 1 and server_stats(url)["unmatched"] == 1


def test_fault_schedule_applies_to_the_first_attempts_of_each_request(tmp_path):
    with replay_server("--fault-schedule", "429,500,truncated", "--retry-after", "7",
                       "--default-content", '{"label": "HALLUCINATED", "confidence": 0.9}') as url:
        status, body, headers = post_chat(url, MESSAGES)
        assert status == 429 and headers["Retry-After"] == "7"
        assert post_chat(url, MESSAGES)[0] == 500
        status, body, _ = post_chat(url, MESSAGES)
        assert status == 200 and body["choices"][0]["finish_reason"] == "length"
        assert body["choices"][0]["message"]["content"] == '{"label": "HALLUCINATE'
        status, body, _ = post_chat(url, MESSAGES)
        assert body["choices"][0]["message"]["content"].endswith("0.9}")
        # a different request starts its own schedule
        assert post_chat(url, [{"role": "user", "content": "another"}])[0] == 429


def test_rate_limit_answers_429_with_retry_after_when_the_bucket_is_empty():
    with replay_server("--rpm", "60", "--default-content", "{}") as url:
        assert post_chat(url, MESSAGES)[0] == 200
        status, _, headers = post_chat(url, MESSAGES)
        assert status == 429
        assert 0.5 < float(headers["Retry-After"]) <= 1.0
        time.sleep(float(headers["Retry-After"]) + 0.05)
        assert post_chat(url, MESSAGES)[0] == 200
        assert server_stats(url)["rate_limited"] == 1


def test_rule_lines_script_a_tool_dialogue(tmp_path):
    rules = [{"match": {"last_role": "tool"}, "response": {"text": "done"}},
             {"match": {"contains": "cite"}, "response": {"text": None, "tool_calls": [
                 {"id": "c1", "name": "search_x", "arguments": "{}"}]}}]
    with replay_server(recordings=rules, tmp=tmp_path) as url:
        _, body, _ = post_chat(url, [{"role": "user", "content": "please cite"}])
        assert body["choices"][0]["finish_reason"] == "tool_calls"
        assert body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "search_x"
        _, body, _ = post_chat(url, [{"role": "tool", "content": "[]", "tool_call_id": "c1"}])
        assert body["choices"][0]["message"]["content"] == "done"
