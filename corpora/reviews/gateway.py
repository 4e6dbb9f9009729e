"""What the review corpus needs from a model: anything with `async complete(messages, params)`
returning an object with `.text`, as `clients.llm_gateway.LLMGateway` does. Corpora never imports
clients (DESIGN.md); jobs/ builds the gateway and passes it in.
"""

from __future__ import annotations

import json
import re
from typing import Any, Protocol


class CompletionResponse(Protocol):
    text: str | None


class CompletionGateway(Protocol):
    async def complete(self, messages: list[dict[str, Any]], params: dict[str, Any] | None = None) -> CompletionResponse: ...


_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.S)


def first_json_object(text: str | None) -> dict[str, Any] | None:
    """The first JSON object in a model answer (whole text, a fenced block, or embedded), else None."""
    if not text:
        return None
    candidates = [text.strip(), *(m.group(1).strip() for m in _FENCE.finditer(text))]
    start = text.find("{")
    if start != -1:
        end = text.rfind("}")
        if end > start:
            candidates.append(text[start : end + 1])
    for c in candidates:
        try:
            value = json.loads(c)
        except (json.JSONDecodeError, ValueError):
            continue
        if isinstance(value, dict):
            return value
    return None


__all__ = ["CompletionGateway", "CompletionResponse", "first_json_object"]
