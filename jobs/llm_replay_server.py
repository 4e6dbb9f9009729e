"""An OpenAI-compatible chat-completions server that replays recorded model answers.

A project tool, not a test stub: point any litellm model string at it (`openai/<anything>` with
`api_base=http://127.0.0.1:<port>/v1`) to replay a dated snapshot offline, or to rehearse how
the gateway behaves under a provider's limits and faults.

Recordings are JSON lines `{"messages_hash": ..., "response": {"text", "model_id", "tokens_in",
"tokens_out", "finish_reason", "tool_calls"}}` (other keys are kept for readers; a line holding only
`{"note": ...}` says where the answers come from) — the fields `LLMCache.entries()` gives for each
cached answer, so a run's cache can be written out as a recording. A request is matched on the sha256 of its canonical `messages`;
else on a rule line `{"match": {"contains": ..., "last_role": ...}, "response": ...}` (first rule
whose conditions all hold for the last message: lets a recording script a tool-use dialogue);
unmatched requests get `--default-content` or a 404.

It can enforce a requests-per-minute limit (token bucket, 429 with Retry-After past it) and
inject faults: a schedule applied to the first attempts of every distinct request
(`--fault-schedule 429,500` = first attempt 429, second 500, third answered), or per-request
probabilities with a seed (`--fault-rate truncated=0.1,malformed=0.05`), or a fixed share of
the distinct prompts that fails on every attempt (`--fault-prompts 500=0.5`: half the prompts,
chosen by their hash, always get a 500 — an outage of part of a provider). Fault kinds: `429`
(Retry-After), `quota` (429 insufficient_quota), `500`, `timeout` (answers after
`--timeout-delay` seconds, if the client still waits), `cut_body` (HTTP 200 whose JSON body stops
halfway: the connection closes before Content-Length), `truncated` (JSON content cut,
finish_reason=length), `malformed` (prose instead of JSON). `POST /faults` with
`{"fault_schedule": [...], "fault_rate": {...}, "fault_prompts": {...}}` replaces the fault
settings of a running server (an outage that ends); `GET /stats` reports what was served,
including `paid_twice`: prompts that got a complete answer more than once; `GET /stats/times`
the wall-clock times of answers and of rate-limit 429s (achieved rate over a window) and the
prompts paid more than once.

    python -m jobs.llm_replay_server serve --recording rec.jsonl --port 8399 --rpm 600
    python -m jobs.llm_replay_server hallmark --predictions preds.jsonl --items blind.jsonl --out rec.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repository root, as every job

from clients.llm_request import messages_hash  # noqa: E402
from storage.jsonl import read_jsonl

FAULT_KINDS = ("429", "quota", "500", "timeout", "cut_body", "truncated", "malformed")


@dataclass
class ReplayConfig:
    rpm: float | None = None
    """Requests per minute enforced (None: unlimited)."""
    burst_seconds: float = 1.0
    """Bucket capacity in seconds of the rate (at least one request)."""
    retry_after: float = 1.0
    """Retry-After sent with injected 429s (a rate-limit 429 says when the bucket refills)."""
    fault_schedule: list[str] = field(default_factory=list)
    fault_rate: dict[str, float] = field(default_factory=dict)
    fault_prompts: dict[str, float] = field(default_factory=dict)
    """Share of distinct prompts (by hash) that get this fault on every attempt."""
    seed: int = 0
    timeout_delay: float = 30.0
    latency: float = 0.0
    """Seconds every answer takes (a model's think time)."""
    model_id: str = "replay"
    default_content: str | None = None


class ReplayState:
    """Recordings, the rate bucket, fault counters and statistics (one per server)."""

    def __init__(self, config: ReplayConfig, recordings: dict[str, dict[str, Any]],
                 rules: list[tuple[dict[str, Any], dict[str, Any]]] | None = None) -> None:  # fmt: skip
        self.config = config
        self.recordings = recordings
        self.rules = rules or []
        self.attempts: Counter[str] = Counter()
        self.rng = random.Random(config.seed)
        self.stats: Counter[str] = Counter()
        self.tried: set[str] = set()
        """Distinct prompts received (kept when the fault settings change)."""
        self.paid: Counter[str] = Counter()
        """Complete answers sent per prompt (messages hash): what a provider would bill."""
        self.ok_times: list[float] = []
        """Wall-clock times of complete answers (`GET /stats/times`: achieved rate over a window)."""
        self.limited_times: list[float] = []
        """Wall-clock times of rate-limit 429s (the `--rpm` bucket; injected 429s not included)."""
        self.first_ok: float | None = None
        self.last_ok: float | None = None
        rate = (config.rpm or 0) / 60.0
        self.capacity = max(1.0, rate * config.burst_seconds)
        self.level = self.capacity
        self.stamp = time.monotonic()

    def take_token(self) -> float | None:
        """None when a request may pass; else seconds until one token is available."""
        if not self.config.rpm:
            return None
        rate = self.config.rpm / 60.0
        now = time.monotonic()
        self.level = min(self.capacity, self.level + (now - self.stamp) * rate)
        self.stamp = now
        if self.level >= 1.0:
            self.level -= 1.0
            return None
        return (1.0 - self.level) / rate

    def fault_for(self, key: str) -> str | None:
        self.attempts[key] += 1
        self.tried.add(key)
        n = self.attempts[key]
        point = int(key[:8], 16) / 16**8  # where this prompt falls in [0, 1): stable across runs
        for kind, share in sorted(self.config.fault_prompts.items()):
            if point < share:
                return kind
            point -= share
        if n <= len(self.config.fault_schedule):
            return self.config.fault_schedule[n - 1]
        for kind, p in sorted(self.config.fault_rate.items()):
            if self.rng.random() < p:
                return kind
        return None

    def lookup(self, key: str, messages: list[dict[str, Any]]) -> dict[str, Any] | None:
        if key in self.recordings:
            return self.recordings[key]
        last = messages[-1] if messages else {}
        for match, answer in self.rules:
            if "last_role" in match and last.get("role") != match["last_role"]:
                continue
            if "contains" in match and match["contains"] not in str(last.get("content") or ""):
                continue
            return answer
        return None

    def snapshot(self) -> dict[str, Any]:
        ok = self.stats["ok"]
        span = (self.last_ok - self.first_ok) if ok > 1 and self.first_ok and self.last_ok else None
        return {**self.stats, "ok_per_second": (ok - 1) / span if span else None,
                "distinct_requests": len(self.attempts), "prompts_tried": len(self.tried), "answered_prompts": len(self.paid),
                "paid_twice": sum(1 for n in self.paid.values() if n > 1)}  # fmt: skip

    def set_faults(self, settings: dict[str, Any]) -> None:
        """Replace the fault settings (keys absent from `settings` become empty)."""
        schedule = [str(k) for k in settings.get("fault_schedule") or []]
        rate = {str(k): float(v) for k, v in (settings.get("fault_rate") or {}).items()}
        prompts = {str(k): float(v) for k, v in (settings.get("fault_prompts") or {}).items()}
        if unknown := sorted({*schedule, *rate, *prompts} - set(FAULT_KINDS)):
            raise ValueError(f"unknown fault kinds {unknown} (known: {', '.join(FAULT_KINDS)})")
        self.config.fault_schedule, self.config.fault_rate, self.config.fault_prompts = schedule, rate, prompts
        self.attempts.clear()


def _completion(state: ReplayState, request: dict[str, Any], answer: dict[str, Any], fault: str | None) -> dict[str, Any]:
    text = answer.get("text")
    finish = answer.get("finish_reason") or "stop"
    if fault == "truncated" and text:
        text, finish = text[: max(1, len(text) // 2)], "length"
    elif fault == "malformed":
        text = "Sure! Here is my verdict: label VALID, confidence high (I think)."
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if answer.get("tool_calls"):
        message["tool_calls"] = [
            {"id": t["id"], "type": "function", "function": {"name": t["name"], "arguments": t["arguments"]}}
            for t in answer["tool_calls"]
        ]
        finish = "tool_calls"
    prompt_chars = sum(len(str(m.get("content") or "")) for m in request.get("messages", []))
    tokens_in = answer.get("tokens_in") or prompt_chars // 4
    tokens_out = answer.get("tokens_out") or len(text or "") // 4
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": answer.get("model_id") or state.config.model_id,
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out, "total_tokens": tokens_in + tokens_out},
    }


async def _cut_body(request: Any, completion: dict[str, Any]) -> Any:
    """A 200 whose body stops halfway: Content-Length promises the whole JSON, the connection closes
    after half of it (a proxy or provider dying mid-transfer)."""
    from aiohttp import web

    data = json.dumps(completion).encode()
    response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
    response.content_length = len(data)
    await response.prepare(request)
    await response.write(data[: len(data) // 2])
    if request.transport is not None:
        request.transport.close()
    return response


def _error(status: int, message: str, kind: str, headers: dict[str, str] | None = None) -> Any:
    from aiohttp import web

    body = {"error": {"message": message, "type": kind, "code": kind}}
    return web.json_response(body, status=status, headers=headers)


def build_app(state: ReplayState) -> Any:
    from aiohttp import web

    async def chat(request: web.Request) -> web.StreamResponse:
        state.stats["requests"] += 1
        try:
            body = await request.json()
        except json.JSONDecodeError:
            state.stats["bad_request"] += 1
            return _error(400, "request body is not JSON", "invalid_request_error")
        wait = state.take_token()
        if wait is not None:
            state.stats["rate_limited"] += 1
            state.limited_times.append(time.time())
            return _error(429, "rate limit exceeded", "rate_limit_exceeded", {"Retry-After": f"{wait:.3f}"})
        key = messages_hash(body.get("messages", []))
        fault = state.fault_for(key)
        if fault == "429":
            state.stats["fault_429"] += 1
            return _error(429, "rate limit exceeded", "rate_limit_exceeded",
                          {"Retry-After": f"{state.config.retry_after:g}"})  # fmt: skip
        if fault == "quota":
            state.stats["fault_quota"] += 1
            return _error(429, "You exceeded your current quota (insufficient_quota)", "insufficient_quota")
        if fault == "500":
            state.stats["fault_500"] += 1
            return _error(500, "internal server error", "server_error")
        if fault == "timeout":
            state.stats["fault_timeout"] += 1
            await asyncio.sleep(state.config.timeout_delay)
            if request.transport is None or request.transport.is_closing():
                state.stats["abandoned"] += 1  # the client gave up: nothing delivered, nothing billed
                return web.Response(status=499)
        answer = state.lookup(key, body.get("messages", []))
        if answer is None and state.config.default_content is not None:
            answer = {"text": state.config.default_content}
        if answer is None:
            state.stats["unmatched"] += 1
            return _error(404, f"no recording for messages {key[:12]}", "not_found")
        if state.config.latency:
            await asyncio.sleep(state.config.latency)
        if fault == "cut_body":
            state.stats["fault_cut_body"] += 1
            return await _cut_body(request, _completion(state, body, answer, None))
        if fault in ("truncated", "malformed"):
            state.stats[f"fault_{fault}"] += 1
        state.stats["ok"] += 1
        state.paid[key] += 1
        state.ok_times.append(time.time())
        now = time.monotonic()
        state.first_ok = state.first_ok or now
        state.last_ok = now
        return web.json_response(_completion(state, body, answer, fault))

    async def models(_: web.Request) -> web.StreamResponse:
        return web.json_response({"object": "list", "data": [{"id": state.config.model_id, "object": "model"}]})

    async def stats(_: web.Request) -> web.StreamResponse:
        return web.json_response(state.snapshot())

    async def times(_: web.Request) -> web.StreamResponse:
        return web.json_response({"ok": state.ok_times, "rate_limited": state.limited_times,
                                  "paid_twice_prompts": sorted(k for k, n in state.paid.items() if n > 1)})  # fmt: skip

    async def faults(request: web.Request) -> web.StreamResponse:
        try:
            state.set_faults(await request.json())
        except (json.JSONDecodeError, ValueError, TypeError, AttributeError) as exc:
            return _error(400, f"bad fault settings: {exc}", "invalid_request_error")
        return web.json_response({"fault_schedule": state.config.fault_schedule, "fault_rate": state.config.fault_rate,
                                  "fault_prompts": state.config.fault_prompts})  # fmt: skip

    async def reset(_: web.Request) -> web.StreamResponse:
        state.stats.clear()
        state.paid.clear()
        state.tried.clear()
        state.attempts.clear()
        state.ok_times.clear()
        state.limited_times.clear()
        state.first_ok = state.last_ok = None
        return web.json_response({"reset": True})

    app = web.Application(client_max_size=64 * 2**20)
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_post("/chat/completions", chat)
    app.router.add_get("/v1/models", models)
    app.router.add_get("/stats", stats)
    app.router.add_get("/stats/times", times)
    app.router.add_post("/stats/reset", reset)
    app.router.add_post("/faults", faults)
    return app


def load_recordings(paths: list[str]) -> tuple[dict[str, dict[str, Any]], list[tuple[dict[str, Any], dict[str, Any]]]]:
    """Hash-keyed answers and rule lines, from recording files, in file order."""
    recordings: dict[str, dict[str, Any]] = {}
    rules: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for path in paths:
        for line, entry in read_jsonl(path):
            if "match" in entry:
                rules.append((entry["match"], entry["response"]))
            elif "messages_hash" in entry:
                recordings[entry["messages_hash"]] = entry["response"]
            elif set(entry) != {"note"}:  # a `{"note": ...}` line says where the answers come from
                raise ValueError(f"{path}:{line}: neither 'messages_hash' nor 'match' (nor a lone 'note')")
    return recordings, rules


def hallmark_answer(prediction: dict[str, Any]) -> dict[str, Any]:
    """A released HALLMARK prediction as the answer text the model gave, as closely as the
    release tells: clean JSON; a truncated object where HALLMARK salvaged label/confidence; prose
    without JSON where HALLMARK recorded a parse-error fallback."""
    reason = prediction.get("reason") or ""
    verdict = {"label": prediction["label"], "confidence": prediction["confidence"],
               "predicted_hallucination_type": prediction.get("predicted_type"), "reason": reason}  # fmt: skip
    if reason.startswith("[Error fallback]"):
        return {"text": "I need to check this citation carefully. The title looks", "finish_reason": "length"}
    text = json.dumps(verdict)
    if reason.startswith("[Salvaged]"):
        cut = text.index('"reason"') + len('"reason": "') + 12
        return {"text": "```json\n" + text[:cut], "finish_reason": "length"}
    return {"text": text, "finish_reason": "stop"}


def build_hallmark_recording(predictions: str, items: str, out: str, model_id: str, variant: str = "default") -> int:
    """Write a recording that answers `llm_zero_shot`'s prompt for every entry of `items` (a
    HALLMARK JSONL split) with the released per-entry prediction for it."""
    from storage.records import Item
    from verifiers.citations.llm_zero_shot import build_messages

    preds = {p["bibtex_key"]: p for _, p in read_jsonl(predictions) if p}
    count = 0
    with open(out, "w", encoding="utf-8") as dst:
        for _, row in read_jsonl(items):
            prediction = preds.get(row["bibtex_key"])
            if prediction is None:
                continue
            payload = {"bibtex_type": row.get("bibtex_type"), "fields": row["fields"], "raw_bibtex": row.get("raw_bibtex")}
            item = Item(row["bibtex_key"], "citation", "hallmark", None, payload)
            answer = hallmark_answer(prediction) | {"model_id": model_id}
            dst.write(json.dumps({"messages_hash": messages_hash(build_messages(item, variant)), "response": answer}) + "\n")
            count += 1
    return count


def _parse_rates(text: str | None) -> dict[str, float]:
    rates: dict[str, float] = {}
    for part in filter(None, (text or "").split(",")):
        kind, _, value = part.partition("=")
        if kind not in FAULT_KINDS:
            raise SystemExit(f"unknown fault kind '{kind}' (known: {', '.join(FAULT_KINDS)})")
        rates[kind] = float(value)
    return rates


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve recordings over HTTP")
    serve.add_argument("--recording", action="append", default=[])
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8399)
    serve.add_argument("--rpm", type=float)
    serve.add_argument("--burst-seconds", type=float, default=1.0)
    serve.add_argument("--retry-after", type=float, default=1.0)
    serve.add_argument("--fault-schedule", default="")
    serve.add_argument("--fault-rate", default="")
    serve.add_argument("--fault-prompts", default="", help="share of prompts failing on every attempt, e.g. 500=0.5")
    serve.add_argument("--seed", type=int, default=0)
    serve.add_argument("--timeout-delay", type=float, default=30.0)
    serve.add_argument("--latency", type=float, default=0.0)
    serve.add_argument("--model-id", default="replay")
    serve.add_argument("--default-content")
    hallmark = sub.add_parser("hallmark", help="build a recording from HALLMARK per-entry predictions")
    hallmark.add_argument("--predictions", required=True)
    hallmark.add_argument("--items", required=True)
    hallmark.add_argument("--out", required=True)
    hallmark.add_argument("--model-id", default="replay")
    hallmark.add_argument("--variant", default="default")
    args = parser.parse_args(argv)
    if args.command == "hallmark":
        n = build_hallmark_recording(args.predictions, args.items, args.out, args.model_id, args.variant)
        print(f"wrote {n} recorded answers to {args.out}")
        return
    schedule = [s for s in args.fault_schedule.split(",") if s]
    if unknown := [s for s in schedule if s not in FAULT_KINDS]:
        raise SystemExit(f"unknown fault kinds {unknown} (known: {', '.join(FAULT_KINDS)})")
    config = ReplayConfig(rpm=args.rpm, burst_seconds=args.burst_seconds, retry_after=args.retry_after,
                          fault_schedule=schedule, fault_rate=_parse_rates(args.fault_rate),
                          fault_prompts=_parse_rates(args.fault_prompts), seed=args.seed,
                          timeout_delay=args.timeout_delay, latency=args.latency, model_id=args.model_id,
                          default_content=args.default_content)  # fmt: skip
    from aiohttp import web

    state = ReplayState(config, *load_recordings(args.recording))
    print(f"replay server on http://{args.host}:{args.port}/v1 ({len(state.recordings)} recordings)", flush=True)
    web.run_app(build_app(state), host=args.host, port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
