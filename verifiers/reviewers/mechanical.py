"""The mechanical paper reviewer: rule-extracted statements run through the checkers, no model.

For each copy, `verifiers.reviewers.statements.extract_statements` finds the checkable statements
(equation chains, redefinitions, series, table totals, percentages, abstract-body numbers,
repeated constants); a display equation goes as `math.statement` with the paper's own macros
(`\\newcommand`/`\\def` read from its .tex files), so only a parse the checker is sure of can be
refuted; each goes to the checkers — in this worker through the sandboxed
`checkers.IsolatedRunner` (time and memory limits per check), or to the checker service when a
`checker_url` is given. Every refuted check becomes a flag quoting the passages it rests on, with
the check input and its result under `check`; the review text lists the flags and a count of
outcomes (`check_outcomes`, and per kind `outcomes_by_kind`), so a reader sees how much was
checkable. Only `refuted` flags (`inconclusive`, `skipped` and `error` never do). A copy with
nothing checkable is a review with no flags, not an error.

The checker service is a provider like the others: when it is unavailable after the retry
policy (connection refused, timeouts, 5xx, 429; `clients.errors.is_outage`) the copy is
UNCERTAIN-by-outage (`detail["outage_sources"] = ["checkers"]`, storage/outages.py), so the run
is incomplete and a resubmission reviews it again; any other checker failure (a refused
request, an unreadable reply) is an errored `provider` output.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from typing import Any

from clients.checker_client import OUTAGE_SOURCE, CheckRequest, HttpCheckerClient
from clients.errors import ClientError, is_outage
from storage.outages import OUTAGE_KEY
from storage.records import Item, Output, PaperReview
from verifiers.llm_batch import OUTAGE_CONFIDENCE
from verifiers.registry import package, system
from verifiers.reviewers.statements import Statement, extract_statements
from verifiers.system import RunContext

__all__ = ["MechanicalReviewer", "review_copy"]


def flag_of(item_id: str, n: int, statement: Statement, result: dict[str, Any]) -> dict[str, Any]:
    first = statement.quotes[0]
    return {
        "flag_id": f"{item_id}/f{n}",
        "quote": first.text,
        "location": first.location,
        "type": statement.error_type,
        "description": f"{statement.description} ({result.get('reason', '')})",
        "check": {"kind": statement.kind, "payload": statement.payload, "result": result,
                  "quotes": [{"file": q.file, "start": q.start, "end": q.end, "text": q.text}
                             for q in statement.quotes]},
    }  # fmt: skip


def review_copy(item_id: str, statements: list[Statement], results: list[dict[str, Any]]) -> dict[str, Any]:
    """The review detail of one copy from its statements and their check results."""
    flags = [flag_of(item_id, n, s, r) for n, (s, r) in
             enumerate(((s, r) for s, r in zip(statements, results, strict=True) if r["outcome"] == "refuted"), 1)]  # fmt: skip
    outcomes = Counter(r["outcome"] for r in results)
    by_kind: dict[str, Counter[str]] = {}
    for s, r in zip(statements, results, strict=True):
        by_kind.setdefault(s.kind, Counter())[r["outcome"]] += 1
    lines = [f"Mechanical review: {len(statements)} checkable statements; "
             + ", ".join(f"{k} {v}" for k, v in sorted(outcomes.items()))]  # fmt: skip
    lines += [f"- [{f['type']}] {f['description']} Quote: \"{f['quote'].strip()}\"" for f in flags]
    return PaperReview(review_text="\n".join(lines), prompt_style="mechanical", flags=flags,
                       check_outcomes=dict(outcomes), statements=len(statements),
                       outcomes_by_kind={k: dict(sorted(c.items())) for k, c in sorted(by_kind.items())}).to_detail()  # fmt: skip


class MechanicalReviewer:
    """Extract, check, flag what is refuted. `checker_url` switches to the checker service."""

    def __init__(self, checker_url: str | None = None, workers: int = 1, timeout_s: float = 10.0,
                 name: str = "paper_reviewer_mechanical") -> None:  # fmt: skip
        self.name, self.checker_url, self.workers, self.timeout_s = name, checker_url, workers, timeout_s
        self._runner: Any = None

    def runner(self) -> Any:
        if self._runner is None:
            from checkers import IsolatedRunner, Limits

            self._runner = IsolatedRunner(workers=self.workers, limits=Limits(timeout_s=self.timeout_s))
        return self._runner

    async def check_all(self, statements: list[Statement]) -> list[dict[str, Any]]:
        if not statements:
            return []
        if self.checker_url:
            client = HttpCheckerClient(self.checker_url, timeout_s=max(60.0, self.timeout_s * len(statements)))
            replies = await client.check_many([CheckRequest(s.kind, s.payload) for s in statements])
            return [{k: getattr(r, k) for k in ("kind", "outcome", "reason", "engine", "evidence", "severity")}
                    for r in replies]  # fmt: skip
        runner = self.runner()
        slots = asyncio.Semaphore(self.workers)

        async def one(s: Statement) -> dict[str, Any]:
            async with slots:
                return (await asyncio.to_thread(runner.run, s.kind, s.payload)).to_dict()

        return list(await asyncio.gather(*(one(s) for s in statements)))

    async def review(self, item: Item) -> Output:
        files = item.payload.get("files") or {}
        if item.load_error or not files:
            return Output.failed(item.item_id, item.load_error or "paper copy has no files", "input")
        started = time.monotonic()
        statements = extract_statements(files, item.payload.get("main_file"))
        try:
            results = await self.check_all(statements)
        except ClientError as exc:
            if is_outage(exc):  # not an answer about this copy: retried on resubmission, never scored
                return Output(item.item_id, "UNCERTAIN", OUTAGE_CONFIDENCE,
                              f"no review: checker service unavailable: {exc.reason}",
                              detail={OUTAGE_KEY: [OUTAGE_SOURCE]}, latency_s=time.monotonic() - started)  # fmt: skip
            return Output.failed(item.item_id, f"checker service: {exc.reason}", "provider")
        return Output(item.item_id, detail=review_copy(item.item_id, statements, results),
                      api_calls=len(statements) if self.checker_url else 0,
                      latency_s=time.monotonic() - started)  # fmt: skip

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        outputs = []
        for item in items:  # the checker pool is the parallelism; copies go one after another
            try:
                outputs.append(await self.review(item))
            except Exception as exc:  # a rule that breaks on one copy must not lose the shard
                outputs.append(Output.failed(item.item_id, f"{type(exc).__name__}: {exc}", "system"))
        return outputs

    def close(self) -> None:
        if self._runner is not None:
            self._runner.close()
            self._runner = None


@system("paper_reviewer_mechanical", accepts=("paper_copy",), requires=[package("sympy"), package("pint")],
        description="mechanical paper reviewer: rule-extracted statements checked by the checkers",
        runtime_args=("checker_url", "workers", "timeout_s"))  # fmt: skip
def build_paper_reviewer_mechanical(checker_url: str | None = None, workers: int = 1,
                                    timeout_s: float = 10.0) -> MechanicalReviewer:  # fmt: skip
    return MechanicalReviewer(checker_url=checker_url, workers=workers, timeout_s=timeout_s)
