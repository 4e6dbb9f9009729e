"""The `System` protocol: anything under test that turns blind items into outputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from storage.records import Item, Output

if TYPE_CHECKING:
    from clients.lent_services import RunServices


@dataclass(frozen=True)
class RunContext:
    """What a system may know about the run it is part of (never the truth)."""

    run_id: str
    """Identity of the run: corpus@version, system@config-hash, snapshot."""
    snapshot: str
    """Snapshot date (YYYY-MM-DD); systems with time-dependent checks use it as 'today'."""
    cache_dir: str | None = None
    """Local directory for response caches; None disables caching."""
    services: RunServices = None  # type: ignore[assignment]  # filled in __post_init__
    """What the run shares across workers: a `clients.lent_services.RunServices` (limiter, response
    cache, outage guard, budget, sources); by default (an isolated run) one with none of them."""

    def __post_init__(self) -> None:
        if self.services is None:
            from clients.lent_services import RunServices

            object.__setattr__(self, "services", RunServices(run_key=self.run_id, snapshot=self.snapshot))


@runtime_checkable
class System(Protocol):
    """A system under test. `run` returns exactly one Output per input item, in any order;
    an item it cannot judge gets an Output with `error` set, never a default label."""

    name: str

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]: ...
