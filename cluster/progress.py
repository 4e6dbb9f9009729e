"""Progress of a long run: items done, rate, ETA, shard counts, printed at most every few seconds.

Uncertain and outage counts show as shards finish, so a run whose lookups all fail says so at
once, not in the summary.

The rate's clock starts when the first shard finishes, not when the run starts: until then the
time is Ray's start-up (workers, actors, imports), which says nothing about how fast items go
(a 12 s run once showed a first ETA of 562 s). Until a rate is measured, rate and ETA say
"estimating". Early on the rate leans high (the first wave of shards finishes together) and
settles as shards finish.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO


class Progress:
    def __init__(
        self, total_items: int, total_shards: int, skipped_items: int = 0, skipped_shards: int = 0,
        every_s: float = 2.0, stream: TextIO | None = None, clock: Callable[[], float] = time.monotonic,
    ) -> None:  # fmt: skip
        self.total_items = total_items
        self.total_shards = total_shards
        self.done_items = skipped_items
        self.done_shards = skipped_shards
        self.failed_shards = 0
        self.errored_items = 0
        self.uncertain_items = 0
        self.outage_items = 0
        self._skipped_items = skipped_items
        self._skipped_shards = skipped_shards
        self._clock = clock
        # set by the first shard finished here: (when, items done by then)
        self._rate_origin: tuple[float, int] | None = None
        self._last_print = float("-inf")  # the first line is due at once
        self._last_printed: tuple | None = None
        self._every = every_s
        self._stream = stream or sys.stdout

    def shard_done(self, items: int, errored: int, uncertain: int = 0, outage: int = 0) -> None:
        now = self._clock()
        self.done_items += items
        self.done_shards += 1
        self.errored_items += errored
        self.uncertain_items += uncertain
        self.outage_items += outage
        if self._rate_origin is None:
            self._rate_origin = (now, self.done_items)
        self.maybe_print()

    def shard_failed(self) -> None:
        self.failed_shards += 1
        self.maybe_print(force=True)

    @property
    def rate(self) -> float | None:
        """Items per second since the first shard finished; None until that is measurable."""
        if self._rate_origin is None:
            return None
        since, items_then = self._rate_origin
        elapsed, items = self._clock() - since, self.done_items - items_then
        return items / elapsed if elapsed > 0 and items > 0 else None

    @property
    def all_resumed(self) -> bool:
        return self.total_shards > 0 and self._skipped_shards == self.total_shards

    def line(self) -> str:
        if self.all_resumed:
            return f"[progress] all {self.total_shards} shards already done (resumed): {self.total_items} items"
        pct = 100.0 * self.done_items / self.total_items if self.total_items else 100.0
        remaining = self.total_items - self.done_items
        rate = self.rate
        speed = "rate estimating" if rate is None else f"{rate:.1f} items/s"
        eta = "0s" if remaining <= 0 else "estimating" if rate is None else f"{remaining / rate:.0f}s"
        return (
            f"[progress] {self.done_items}/{self.total_items} items ({pct:.0f}%) · {speed} · "
            f"ETA {eta} · shards {self.done_shards}/{self.total_shards} · failed shards {self.failed_shards} · "
            f"errored items {self.errored_items} · uncertain {self.uncertain_items} · outage {self.outage_items}"
        )

    def _state(self) -> tuple:
        return (self.done_items, self.failed_shards, self.errored_items, self.uncertain_items, self.outage_items)

    def maybe_print(self, force: bool = False) -> None:
        """At most every `every_s` when work finished since the last line; a heartbeat every 15 x that.
        A forced line that would repeat the last one word for word is not printed again."""
        now = self._clock()
        since = now - self._last_print
        changed = self._state() != self._last_printed
        due = changed if force else (changed and since >= self._every) or since >= 15 * self._every
        if due:
            self._last_print, self._last_printed = now, self._state()
            print(self.line(), file=self._stream, flush=True)
