"""The JSON output contract: parse a model's answer strictly, salvage what can be salvaged,
and count what cannot.

Order of attempts: the whole text as JSON (`strict`); the first fenced ```json block (`fenced`);
the first balanced `{...}` in prose (`embedded`); finally the named fields of a truncated object
read with a pattern (`salvaged`, as HALLMARK's "[Salvaged] label/confidence extracted from
truncated JSON"). Anything else raises `ParseError`: a parse failure is never a verdict, and
`ParseStats` keeps its rate apart per system (reference 000, tables 29-30).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from clients.errors import ParseError

__all__ = ["ParseStats", "ParsedAnswer", "parse_json_answer"]

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)(?:```|$)", re.DOTALL)
_STRING_FIELD = r'"{name}"\s*:\s*"((?:[^"\\]|\\.)*)"'
_NUMBER_FIELD = r'"{name}"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)'
_NULL_FIELD = r'"{name}"\s*:\s*null'


@dataclass(frozen=True)
class ParsedAnswer:
    data: dict[str, Any]
    method: str
    """strict | fenced | embedded | salvaged"""


def _loads_object(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _first_balanced_object(text: str) -> str | None:
    start = text.find("{")
    while start != -1:
        depth, in_string, escaped = 0, False, False
        for i in range(start, len(text)):
            ch = text[i]
            if in_string:
                escaped = ch == "\\" and not escaped
                if ch == '"' and not escaped:
                    in_string = False
                elif ch != "\\":
                    escaped = False
                continue
            if ch == '"':
                in_string = True
            elif ch == "{":
                depth += 1
            elif ch == "}":
                depth -= 1
                if depth == 0:
                    return text[start : i + 1]
        start = text.find("{", start + 1)
    return None


def _salvage(text: str, required: tuple[str, ...], optional: tuple[str, ...]) -> dict[str, Any] | None:
    found: dict[str, Any] = {}
    for name in required + optional:
        string = re.search(_STRING_FIELD.format(name=re.escape(name)), text)
        number = re.search(_NUMBER_FIELD.format(name=re.escape(name)), text)
        null = re.search(_NULL_FIELD.format(name=re.escape(name)), text)
        if string:
            found[name] = json.loads(f'"{string.group(1)}"')
        elif number:
            found[name] = float(number.group(1))
        elif null:
            found[name] = None
    if all(name in found for name in required):
        return found
    return None


def parse_json_answer(
    text: str | None, required: tuple[str, ...] = (), optional: tuple[str, ...] = ()
) -> ParsedAnswer:
    """Read a JSON object from a model's answer; raise `ParseError` when none can be read.

    Args:
        text: the model's message content.
        required: keys the object must have (else the attempt fails and the next is tried);
            salvage reads only these and `optional` from a truncated object.
        optional: keys salvage also picks up when present.
    """
    if not text or not text.strip():
        raise ParseError("empty answer")
    body = text.strip()

    def complete(obj: dict[str, Any] | None) -> bool:
        return obj is not None and all(k in obj for k in required)

    obj = _loads_object(body)
    if complete(obj):
        return ParsedAnswer(obj, "strict")  # type: ignore[arg-type]
    for fenced in _FENCE.findall(body):
        obj = _loads_object(fenced.strip())
        if complete(obj):
            return ParsedAnswer(obj, "fenced")  # type: ignore[arg-type]
    embedded = _first_balanced_object(body)
    if embedded is not None:
        obj = _loads_object(embedded)
        if complete(obj):
            return ParsedAnswer(obj, "embedded")  # type: ignore[arg-type]
    if required:
        salvaged = _salvage(body, required, optional)
        if salvaged is not None:
            return ParsedAnswer(salvaged, "salvaged")
    raise ParseError(f"no JSON object with keys {list(required)} in answer: {body[:120]!r}")


@dataclass
class ParseStats:
    """Counts of parse outcomes for one system (attempted = sum over methods + failed)."""

    methods: dict[str, int] = field(default_factory=dict)
    failed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def record(self, method: str | None) -> None:
        with self._lock:
            if method is None:
                self.failed += 1
            else:
                self.methods[method] = self.methods.get(method, 0) + 1

    @property
    def attempted(self) -> int:
        return self.failed + sum(self.methods.values())

    @property
    def failure_rate(self) -> float:
        return self.failed / self.attempted if self.attempted else float("nan")
