"""Run checks in isolated worker processes with a wall-clock and a memory limit.

sympy can hang or exhaust memory on hostile or merely unlucky input (`10^{10^{10}}`, deep nesting,
huge sums). Each check therefore runs in a pre-started worker process (a fresh interpreter, not a
fork, so it is safe inside threaded hosts such as a Ray Serve replica) whose address space is
capped with `RLIMIT_AS`. The parent waits at most `timeout_s`; on timeout the worker is killed and replaced,
and the check answers `inconclusive` with the reason. A worker that dies (memory, signal) is
replaced the same way. Workers are `python -m checkers.sandbox_worker` subprocesses speaking
JSON lines (no pickles, no re-import of the host's `__main__`); they exit when their stdin closes
(parent gone), and a CPU-time cap ends one orphaned mid-check.

`IsolatedRunner.run(kind, payload)` is thread-safe: calls wait for a free worker.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from checkers.result import CheckResult


@dataclass(frozen=True)
class Limits:
    """Per-check limits."""

    timeout_s: float = 10.0
    """Wall-clock seconds one check may take before it is killed (inconclusive)."""
    memory_mb: int = 1024
    """Address-space cap of a worker process in MiB (RLIMIT_AS)."""


class _Worker:
    """One `python -m checkers.sandbox_worker` process, spoken to in JSON lines."""

    def __init__(self, limits: Limits) -> None:
        root = str(Path(__file__).resolve().parents[1])
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p),
        }
        self.process = subprocess.Popen(
            [sys.executable, "-m", "checkers.sandbox_worker", str(limits.memory_mb), str(2 * limits.timeout_s + 5)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            text=True, env=env, cwd=root,
        )  # fmt: skip
        self.ready = False

    def readable(self, timeout: float, cancel: threading.Event | None = None) -> bool:
        """Whether an answer arrived within `timeout`; waits in short slices so that a set
        `cancel` event (the caller went away) stops the wait within ~50 ms."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            step = left if cancel is None else min(left, 0.05)
            ready, _, _ = select.select([self.process.stdout], [], [], max(step, 0))
            if ready:
                return True
            if left <= step or (cancel is not None and cancel.is_set()):
                return False

    def read(self) -> dict[str, Any] | None:
        line = self.process.stdout.readline()
        return json.loads(line) if line else None

    def wait_ready(self, timeout: float, cancel: threading.Event | None = None) -> bool:
        if not self.ready and self.readable(timeout, cancel):
            answer = self.read()
            self.ready = bool(answer and answer.get("ready"))
        return self.ready

    def send(self, kind: str, payload: Any) -> None:
        self.process.stdin.write(json.dumps({"kind": kind, "payload": payload}) + "\n")
        self.process.stdin.flush()

    def kill(self) -> None:
        with contextlib.suppress(Exception):
            self.process.kill()
            self.process.wait(timeout=5)
        for stream in (self.process.stdin, self.process.stdout):
            with contextlib.suppress(Exception):
                stream.close()


class IsolatedRunner:
    """A pool of worker processes running checks under `Limits`."""

    def __init__(
        self, workers: int = 2, limits: Limits | None = None, startup_timeout_s: float = 60.0
    ) -> None:
        self.limits = limits or Limits()
        self.startup_timeout_s = startup_timeout_s
        self._idle: queue.Queue[_Worker] = queue.Queue()
        self._all: list[_Worker] = []
        self._lock = threading.Lock()
        self._closed = False
        for _ in range(max(1, workers)):
            self._add()
        self.replaced = 0
        """How many workers were killed or died and were replaced (for tests and metrics)."""
        self.cancelled = 0
        """How many running checks were cancelled (their worker killed and replaced)."""

    def _add(self) -> None:
        worker = _Worker(self.limits)
        with self._lock:
            self._all.append(worker)
        self._idle.put(worker)

    def _replace(self, worker: _Worker) -> None:
        worker.kill()
        with self._lock:
            if worker in self._all:
                self._all.remove(worker)
            self.replaced += 1
        if not self._closed:
            self._add()

    def run(self, kind: str, payload: dict[str, Any], timeout_s: float | None = None,
            cancel: threading.Event | None = None) -> CheckResult:  # fmt: skip
        """Run one check in a worker; never raises for a check that hangs, explodes or crashes.

        Setting `cancel` (from another thread: the caller went away) kills the worker running the
        check and replaces it, so abandoned work stops holding a worker; the result says `cancelled`."""
        timeout = self.limits.timeout_s if timeout_s is None else min(timeout_s, self.limits.timeout_s)
        worker = self._idle.get()
        start = time.perf_counter()
        try:
            if cancel is not None and cancel.is_set():
                self._idle.put(worker)
                return CheckResult(kind, "skipped", "cancelled before it started")
            if not worker.wait_ready(self.startup_timeout_s, cancel):
                self._replace(worker)
                if cancel is not None and cancel.is_set():
                    return CheckResult(kind, "skipped", "cancelled; worker killed and replaced")
                return CheckResult(kind, "inconclusive", "checker worker failed to start")
            try:
                worker.send(kind, payload)
            except (TypeError, ValueError) as exc:
                self._idle.put(worker)
                return CheckResult(kind, "error", f"payload is not JSON data: {type(exc).__name__}")
            except OSError:
                self._replace(worker)
                return CheckResult(kind, "inconclusive", "checker process is gone; replaced")
            if not worker.readable(timeout, cancel):
                self._replace(worker)
                if cancel is not None and cancel.is_set():
                    self.cancelled += 1
                    return CheckResult(kind, "skipped", "cancelled; worker killed and replaced",
                                       elapsed_s=round(time.perf_counter() - start, 6))  # fmt: skip
                return CheckResult(kind, "inconclusive", f"wall-clock limit of {timeout:g}s hit; check killed",
                                   elapsed_s=round(time.perf_counter() - start, 6))  # fmt: skip
            answer = worker.read()
            if answer is None or "outcome" not in answer:
                code = worker.process.poll()
                self._replace(worker)
                return CheckResult(kind, "inconclusive",
                                   f"checker process died (exit {code}); memory limit {self.limits.memory_mb} MiB?",
                                   elapsed_s=round(time.perf_counter() - start, 6))  # fmt: skip
            result = CheckResult.from_dict(answer)
            if result.outcome == "inconclusive" and "memory" in result.reason:
                self._replace(worker)  # a process that ran out of memory is not trusted again
            else:
                self._idle.put(worker)
            return result
        except BaseException:
            self._replace(worker)
            raise

    def close(self) -> None:
        self._closed = True
        with self._lock:
            workers, self._all = list(self._all), []
        for worker in workers:
            worker.kill()

    def __enter__(self) -> IsolatedRunner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pids(self) -> list[int]:
        with self._lock:
            return [w.process.pid for w in self._all]
