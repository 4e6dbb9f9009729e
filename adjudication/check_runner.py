"""Where adjudication runs mechanical checks: in this process's sandbox pool, or the service.

`LocalChecks` runs `checkers.IsolatedRunner` (a time and memory limit per check) in a thread;
`ServiceChecks` sends the check to the checker service (`clients.checker_client`). Both answer a
plain result dict (the `CheckResult` fields); a service that cannot be reached is an
`inconclusive` result naming the failure, so one outage never decides a flag.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from clients.checker_client import CheckRequest, HttpCheckerClient
from clients.errors import ClientError

__all__ = ["CheckRunner", "LocalChecks", "ServiceChecks"]


class CheckRunner(Protocol):
    async def run(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]: ...


class LocalChecks:
    def __init__(self, workers: int = 1, timeout_s: float = 10.0) -> None:
        self.workers, self.timeout_s = workers, timeout_s
        self._runner: Any = None
        self._slots = asyncio.Semaphore(workers)

    async def run(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        if self._runner is None:
            from checkers import IsolatedRunner, Limits

            self._runner = IsolatedRunner(workers=self.workers, limits=Limits(timeout_s=self.timeout_s))
        async with self._slots:
            return (await asyncio.to_thread(self._runner.run, kind, payload)).to_dict()

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None


class ServiceChecks:
    def __init__(self, base_url: str) -> None:
        self.client = HttpCheckerClient(base_url)

    async def run(self, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            reply = await self.client.check(CheckRequest(kind, payload))
        except ClientError as exc:
            return {"kind": kind, "outcome": "inconclusive", "reason": f"checker service: {exc.reason}"}
        return {k: getattr(reply, k) for k in ("kind", "outcome", "reason", "engine", "evidence", "severity")}

    def close(self) -> None:
        return None
