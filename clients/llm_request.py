"""What the LLM gateway is asked and what it answers: `LLMRequest`, `LLMResponse`, their hashes.

The cache key names exactly what changes the answer (model, messages, sampling parameters,
tools), never transport knobs (timeouts, retries, api keys, rate limits) — as inspect_ai's
`_cache_key`. `prompt_hash` hashes a prompt *template* (not the filled prompt) so outputs record
which wording produced them.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["ANSWER_PARAMS", "LLMRequest", "LLMResponse", "ToolCall", "messages_hash", "prompt_hash"]

ANSWER_PARAMS: tuple[str, ...] = (
    "temperature", "top_p", "seed", "max_tokens", "max_completion_tokens", "stop",
    "response_format", "tool_choice", "n", "presence_penalty", "frequency_penalty",
)  # fmt: skip
"""Request parameters that can change an answer; any other parameter is dropped from the key."""


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)


def messages_hash(messages: list[dict[str, Any]]) -> str:
    """Hash of a message list alone (the replay server matches recordings on it)."""
    return hashlib.sha256(_canonical(messages).encode()).hexdigest()


def prompt_hash(template: str) -> str:
    """Short hash of a prompt template, recorded on every output."""
    return hashlib.sha256(template.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class LLMRequest:
    """One chat completion request, provider-neutral."""

    model: str
    """litellm model string (`openai/gpt-4o`, `openrouter/google/gemini-2.5-pro`, `llamacpp/<name>` ...)."""
    messages: list[dict[str, Any]]
    """OpenAI-style chat messages."""
    params: dict[str, Any] = field(default_factory=dict)
    """Sampling parameters (temperature, seed, max_tokens ...); only `ANSWER_PARAMS` enter the key."""
    tools: list[dict[str, Any]] | None = None
    """OpenAI-style tool (function) definitions, if the model may call tools."""

    def answer_params(self) -> dict[str, Any]:
        return {k: v for k, v in sorted(self.params.items()) if k in ANSWER_PARAMS and v is not None}

    def cache_key(self) -> str:
        """sha256 over model, messages, answer-changing parameters and tools."""
        body = {"v": 1, "model": self.model, "messages": self.messages, "params": self.answer_params(),
                "tools": self.tools}  # fmt: skip
        return hashlib.sha256(_canonical(body).encode()).hexdigest()


@dataclass(frozen=True)
class ToolCall:
    """A function call the model asked for."""

    id: str
    name: str
    arguments: str
    """JSON text as the model wrote it (may be malformed; the caller parses)."""


@dataclass
class LLMResponse:
    """A model's answer plus the provenance every Output records."""

    text: str | None
    model_id: str | None
    """Model id the provider returned (not the one requested)."""
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float | None = None
    """Price of the call at the bundled price map; None when the model has no listed price."""
    latency_s: float = 0.0
    finish_reason: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    cached: bool = False
    """Served from the response cache (nothing paid, no network call)."""
    attempts: int = 1
    """Network attempts the answer took (retries included); 0 when cached."""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LLMResponse:
        data = dict(data)
        data["tool_calls"] = [ToolCall(**t) for t in data.get("tool_calls") or []]
        return cls(**data)

    def assistant_message(self) -> dict[str, Any]:
        """The answer as a message to append to a conversation (tool-use loops)."""
        message: dict[str, Any] = {"role": "assistant", "content": self.text}
        if self.tool_calls:
            message["tool_calls"] = [
                {"id": t.id, "type": "function", "function": {"name": t.name, "arguments": t.arguments}}
                for t in self.tool_calls
            ]
        return message
