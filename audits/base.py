"""The `Audit` protocol: what every audit kind does with a run, step by step.

    build_corpus -> run_systems -> adjudicate -> score -> publish

Typed hand-offs between the steps: a `LoadedCorpus` (blind items + truth), a `RunOutcome` (the
shards the systems filled, from cluster/runner.py), `Verdicts` (per run id; empty where labels
are compared at scoring time), the kind's own scores (computed only, nothing written), and a
`RunSummary` (what was stored and tracked, rendered as the leaderboard). `jobs/run_corpus.py`
wires these steps for whichever audit the config names; nothing there depends on the kind.
"""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

import pyarrow as pa

if TYPE_CHECKING:
    from audits.summary import RunSummary
    from clients.lent_services import RunServices
    from cluster.run_config import RunConfig
    from cluster.run_plan import RunPlan
    from cluster.runner import RunOutcome
    from corpora.loaded_corpus import LoadedCorpus
    from storage.run_publication import Submission

Verdicts = dict[str, pa.Table]
"""VERDICT_SCHEMA tables by run id (plus kind-specific keys such as "controls")."""

ScoresT = TypeVar("ScoresT")


@dataclass
class AuditContext:
    """A run after its systems ran: what adjudication, scoring and publishing work from."""

    config: RunConfig
    corpus: LoadedCorpus
    plan: RunPlan
    outcome: RunOutcome
    services: RunServices
    cache_dir: str
    tracking_uri: str | None
    submission: Submission | None
    work_dir: Path
    """A scratch folder for the report before it is stored (removed after the run)."""
    started: float
    """time.monotonic() when the submission started."""

    @property
    def failed(self) -> dict[tuple[str, int], str]:
        return self.outcome.failed


@runtime_checkable
class Audit(Protocol[ScoresT]):
    """One audit kind. Implementations: audits/citations.py, audits/papers.py."""

    name: ClassVar[str]
    corpus_needs_cluster: ClassVar[bool]
    """True when building the corpus runs on Ray and shares the run's services (paper injection);
    False when it is read from a file, before storage or the cluster are touched."""

    def build_corpus(self, config: RunConfig, services: RunServices | None) -> LoadedCorpus:
        """The run's items and truth (errors kept on the corpus, never silently dropped)."""
        ...

    def run_systems(self, config: RunConfig, corpus: LoadedCorpus, plan: RunPlan) -> RunOutcome:
        """Every planned shard through the systems on Ray; outputs land in the store."""
        ...

    def adjudicate(self, ctx: AuditContext) -> Verdicts:
        """Stored outputs -> verdicts (empty when scoring compares labels itself)."""
        ...

    def score(self, ctx: AuditContext, verdicts: Verdicts) -> ScoresT:
        """Compute every system's statistics from stored records; writes nothing."""
        ...

    def publish(self, ctx: AuditContext, verdicts: Verdicts, scores: ScoresT, elapsed_s: float) -> RunSummary:
        """Store metrics, scores and the report, track the runs in MLflow, mark them finished."""
        ...


class ShardedAudit:
    """What every audit kind shares: its systems run as shard tasks on the Ray worker pool."""

    def run_systems(self, config: RunConfig, corpus: LoadedCorpus, plan: RunPlan) -> RunOutcome:
        from cluster.runner import PoolConfig, run_shard_tasks
        from verifiers import build_system

        return run_shard_tasks(
            plan.tasks,
            corpus.items,
            build=functools.partial(build_system, plugins=tuple(config.plugins)),
            store_uri=config.storage,
            pool=PoolConfig(workers=config.workers, cpus_per_worker=config.cpus_per_worker,
                            max_attempts=config.max_attempts),
            lease=plan.lease,
        )  # fmt: skip


class BudgetStopped(Exception):
    """The run's one budget refused requests while adjudicating: nothing is scored or stored from
    verdicts that miss votes; submitting the same run again replays what was paid."""


def finish_run(audit: Audit[Any], ctx: AuditContext) -> RunSummary:
    """The steps after the systems ran: adjudicate -> score -> publish."""
    from cluster.services_builder import budget_refused

    verdicts = audit.adjudicate(ctx)
    if refused := budget_refused(ctx.services):
        raise BudgetStopped(f"stopped while adjudicating: {refused}")
    elapsed_s = time.monotonic() - ctx.started  # the summary's time: the work, before the writing
    scores = audit.score(ctx, verdicts)
    return audit.publish(ctx, verdicts, scores, elapsed_s)


__all__ = ["Audit", "AuditContext", "BudgetStopped", "ShardedAudit", "Verdicts", "finish_run"]
