"""The `System` protocol: anything under test that turns blind items into outputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from storage.records import Item, Output


@dataclass(frozen=True)
class RunContext:
    """What a system may know about the run it is part of (never the truth)."""

    run_id: str
    """Identity of the run: corpus@version, system@config-hash, snapshot."""
    snapshot: str
    """Snapshot date (YYYY-MM-DD); systems with time-dependent checks use it as 'today'."""
    cache_dir: str | None = None
    """Local directory for response caches; None disables caching."""
    services: dict[str, Any] = field(default_factory=dict)
    """Named handles the run shares across workers (rate limiter, checker service, ...)."""


@runtime_checkable
class System(Protocol):
    """A system under test. `run` returns exactly one Output per input item, in any order;
    an item it cannot judge gets an Output with `error` set, never a default label."""

    name: str

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]: ...
