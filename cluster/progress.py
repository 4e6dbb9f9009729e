"""Progress of a long run: items done, rate, ETA, shard counts, printed at most every few seconds.

Uncertain and outage counts show as shards finish, so a run whose lookups all fail says so at
once, not in the summary.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(
        self, total_items: int, total_shards: int, skipped_items: int = 0, skipped_shards: int = 0,
        every_s: float = 2.0, stream: TextIO | None = None,
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
        self._start = time.monotonic()
        self._last_print = 0.0
        self._last_printed: tuple | None = None
        self._every = every_s
        self._stream = stream or sys.stdout

    def shard_done(self, items: int, errored: int, uncertain: int = 0, outage: int = 0) -> None:
        self.done_items += items
        self.done_shards += 1
        self.errored_items += errored
        self.uncertain_items += uncertain
        self.outage_items += outage
        self.maybe_print()

    def shard_failed(self) -> None:
        self.failed_shards += 1
        self.maybe_print(force=True)

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self._start
        return (self.done_items - self._skipped_items) / elapsed if elapsed > 0 else 0.0

    @property
    def all_resumed(self) -> bool:
        return self.total_shards > 0 and self._skipped_shards == self.total_shards

    def line(self) -> str:
        if self.all_resumed:
            return f"[progress] all {self.total_shards} shards already done (resumed): {self.total_items} items"
        pct = 100.0 * self.done_items / self.total_items if self.total_items else 100.0
        remaining = self.total_items - self.done_items
        eta = "0s" if remaining <= 0 else f"{remaining / self.rate:.0f}s" if self.rate > 0 else "?"
        return (
            f"[progress] {self.done_items}/{self.total_items} items ({pct:.0f}%) · {self.rate:.1f} items/s · "
            f"ETA {eta} · shards {self.done_shards}/{self.total_shards} · failed shards {self.failed_shards} · "
            f"errored items {self.errored_items} · uncertain {self.uncertain_items} · outage {self.outage_items}"
        )

    def _state(self) -> tuple:
        return (self.done_items, self.failed_shards, self.errored_items, self.uncertain_items, self.outage_items)

    def maybe_print(self, force: bool = False) -> None:
        """At most every `every_s` when work finished since the last line; a heartbeat every 15 x that.
        A forced line that would repeat the last one word for word is not printed again."""
        now = time.monotonic()
        since = now - self._last_print
        changed = self._state() != self._last_printed
        due = changed if force else (changed and since >= self._every) or since >= 15 * self._every
        if due:
            self._last_print, self._last_printed = now, self._state()
            print(self.line(), file=self._stream, flush=True)
