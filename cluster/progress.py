"""Progress of a long run: items done, rate, ETA, shard counts, printed at most every few seconds."""

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
        self._skipped_items = skipped_items
        self._start = time.monotonic()
        self._last_print = 0.0
        self._last_printed_done = -1
        self._every = every_s
        self._stream = stream or sys.stdout

    def shard_done(self, items: int, errored: int) -> None:
        self.done_items += items
        self.done_shards += 1
        self.errored_items += errored
        self.maybe_print()

    def shard_failed(self) -> None:
        self.failed_shards += 1
        self.maybe_print(force=True)

    @property
    def rate(self) -> float:
        elapsed = time.monotonic() - self._start
        return (self.done_items - self._skipped_items) / elapsed if elapsed > 0 else 0.0

    def line(self) -> str:
        pct = 100.0 * self.done_items / self.total_items if self.total_items else 100.0
        remaining = self.total_items - self.done_items
        eta = f"{remaining / self.rate:.0f}s" if self.rate > 0 else "?"
        return (
            f"[progress] {self.done_items}/{self.total_items} items ({pct:.0f}%) · {self.rate:.1f} items/s · "
            f"ETA {eta} · shards {self.done_shards}/{self.total_shards} · failed shards {self.failed_shards} · "
            f"errored items {self.errored_items}"
        )

    def maybe_print(self, force: bool = False) -> None:
        """At most every `every_s` when work finished since the last line; a heartbeat every 15 x that."""
        now = time.monotonic()
        since = now - self._last_print
        changed = self.done_items != self._last_printed_done
        if force or (changed and since >= self._every) or since >= 15 * self._every:
            self._last_print, self._last_printed_done = now, self.done_items
            print(self.line(), file=self._stream, flush=True)
