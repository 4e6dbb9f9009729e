"""The outage guard: a source whose recent error rate passes a threshold is marked unavailable.

Every finished lookup (after retries) is recorded as ok (any definite answer, 404 included) or
failed (transient errors, rate limits that outlived the retries, unreadable bodies). When, within
the sliding window, at least `min_events` lookups happened and the failed fraction reaches
`threshold`, the source is marked down: further lookups raise `SourceOutageError` at once (no
network call) until `cooldown_seconds` pass; then it is probed again with a fresh window.

Consequences the guard records for the run (`OutageReport`): which sources went down, when, at
what error rate, and how many lookups were refused. A run that saw any outage is *incomplete*;
`OutageReport.publishable(override)` says whether scores may be published (never without an
explicit override, and then the note says so). Predictions that depended on a refused lookup are
UNCERTAIN with `SourceOutageError.reason` as the reason: that part is the verifier's job.

Scope: one guard per process (each Ray worker keeps its own); the run merges worker reports with
`OutageReport.merge`.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass, field

from clients.errors import SourceOutageError

__all__ = ["OutageEvent", "OutageGuard", "OutageReport"]


@dataclass(frozen=True)
class OutageEvent:
    """A source marked down."""

    source: str
    at: float
    """Unix time the source was marked down."""
    error_rate: float
    window_events: int
    last_error: str


@dataclass
class OutageReport:
    """What the run must know: sources down, lookups refused, and whether it may publish."""

    events: list[OutageEvent] = field(default_factory=list)
    refused: dict[str, int] = field(default_factory=dict)
    """Lookups refused per source because it was marked down."""

    @property
    def incomplete(self) -> bool:
        return bool(self.events or any(self.refused.values()))

    def publishable(self, override: bool = False) -> tuple[bool, str]:
        """(may publish, note). An incomplete run publishes only when overridden, and says so."""
        if not self.incomplete:
            return True, "complete: no source outage"
        down = ", ".join(sorted({e.source for e in self.events} | set(self.refused)))
        refused = sum(self.refused.values())
        if override:
            return (
                True,
                f"INCOMPLETE (published by override): sources down: {down}; {refused} lookups refused",
            )
        return False, f"incomplete: sources down: {down}; {refused} lookups refused; not published"

    @staticmethod
    def merge(reports: list[OutageReport]) -> OutageReport:
        merged = OutageReport()
        for report in reports:
            merged.events.extend(report.events)
            for source, n in report.refused.items():
                merged.refused[source] = merged.refused.get(source, 0) + n
        merged.events.sort(key=lambda e: e.at)
        return merged

    def to_dict(self) -> dict:
        return {
            "incomplete": self.incomplete,
            "events": [e.__dict__ for e in self.events],
            "refused": dict(self.refused),
        }


@dataclass
class _SourceWindow:
    outcomes: deque = field(default_factory=deque)  # (monotonic time, ok)
    down_until: float = 0.0
    last_error: str = ""


class OutageGuard:
    """Sliding-window error-rate breaker per source.

    Args:
        window_seconds: how far back outcomes count.
        threshold: failed fraction at which a source is marked down.
        min_events: fewest outcomes in the window before any decision.
        cooldown_seconds: how long a source stays down before it is probed again.
    """

    def __init__(self, window_seconds: float = 60.0, threshold: float = 0.5, min_events: int = 5,
                 cooldown_seconds: float = 120.0) -> None:  # fmt: skip
        self.window_seconds = window_seconds
        self.threshold = threshold
        self.min_events = min_events
        self.cooldown_seconds = cooldown_seconds
        self._windows: dict[str, _SourceWindow] = {}
        self._report = OutageReport()
        self._lock = threading.Lock()

    def __getstate__(self) -> dict:
        """Ships settings and history (e.g. to a Ray worker); the lock is per process."""
        with self._lock:
            return {k: v for k, v in self.__dict__.items() if k != "_lock"}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()

    def _window(self, source: str) -> _SourceWindow:
        return self._windows.setdefault(source, _SourceWindow())

    def is_down(self, source: str, now: float | None = None) -> bool:
        now = time.monotonic() if now is None else now
        with self._lock:
            return self._window(source).down_until > now

    def check(self, source: str, now: float | None = None) -> None:
        """Raise `SourceOutageError` (and count the refusal) when the source is marked down."""
        now = time.monotonic() if now is None else now
        with self._lock:
            window = self._window(source)
            if window.down_until > now:
                self._report.refused[source] = self._report.refused.get(source, 0) + 1
                raise SourceOutageError(
                    f"marked unavailable by the outage guard (last error: {window.last_error})",
                    source=source,
                )

    def record(self, source: str, ok: bool, error: str = "", now: float | None = None) -> None:
        """Record one finished lookup."""
        now = time.monotonic() if now is None else now
        with self._lock:
            window = self._window(source)
            window.outcomes.append((now, ok))
            if not ok:
                window.last_error = error
            while window.outcomes and window.outcomes[0][0] < now - self.window_seconds:
                window.outcomes.popleft()
            n = len(window.outcomes)
            failed = sum(1 for _, good in window.outcomes if not good)
            if window.down_until <= now and n >= self.min_events and failed / n >= self.threshold:
                window.down_until = now + self.cooldown_seconds
                window.outcomes.clear()
                self._report.events.append(OutageEvent(source, time.time(), failed / n, n, window.last_error))

    def error_rate(self, source: str) -> float:
        with self._lock:
            outcomes = self._window(source).outcomes
            return sum(1 for _, ok in outcomes if not ok) / len(outcomes) if outcomes else 0.0

    def report(self) -> OutageReport:
        """A copy of what happened so far."""
        with self._lock:
            return OutageReport(list(self._report.events), dict(self._report.refused))
