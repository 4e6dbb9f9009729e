"""A soft time budget for one engine call inside a check (e.g. one `sympy.limit`).

Uses SIGALRM, so it only acts in a process's main thread (the sandbox workers run checks there);
elsewhere it is a no-op and the outer wall-clock limit of the sandbox is the only bound. The hard
limit that keeps a service alive is always the sandbox's, never this one.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class BudgetExceeded(Exception):
    """The engine call ran past its soft budget."""


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def _raise(signum, frame):
        raise BudgetExceeded(f"engine call exceeded {seconds}s")

    previous = signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
