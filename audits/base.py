"""The `Audit` protocol: what every audit kind does with a run, step by step.

    build_corpus -> run_systems -> adjudicate -> score -> publish

Typed hand-offs between the steps: a `LoadedCorpus` (blind items + truth), a `RunOutcome` (the
shards the systems filled, from cluster/runner.py), `Verdicts` (per run id; empty where labels
are compared at scoring time), the kind's own scores (computed only, nothing written), and a
`RunSummary` (what was stored and tracked, rendered as the leaderboard). `jobs/run_corpus.py`
wires these steps for whichever audit the config names; nothing there depends on the kind.

An audit kind is a plug-in: besides the steps it declares
- `sections`: its own tables of the run config (`[papers]`, `[reviews]`, ...), each an
  `AuditSection` model that marks its identity fields and resolves its relative paths against the
  config file; `configure(audit, config)` validates them (and refuses any other table);
- `item_kinds`: the kinds of item its corpus holds (storage `Item.kind`): a system that declares it
  reads other kinds is refused before Ray starts (`verifiers.registry.SystemEntry.kind_problem`);
- `identity(config)`: what of its sections identifies the run (the run key of its shared budget,
  ledger and outage guard: `cluster.services_builder.run_key`).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeVar, runtime_checkable

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo

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
SectionT = TypeVar("SectionT", bound="AuditSection")


class AuditSection(BaseModel):
    """One table of a run config that belongs to an audit kind (`[papers]`, `[reviews]`, ...).

    Closed (an unknown field is an error naming it). `identity_fields` names the fields that change
    what is audited (they enter the run key); None means every field. Relative paths are resolved
    in the model's own `mode="before"` validators with `config_relative`, against the config file's
    folder given as validation context."""

    model_config = ConfigDict(extra="forbid")
    identity_fields: ClassVar[tuple[str, ...] | None] = None

    def identity(self) -> dict[str, Any]:
        include = None if self.identity_fields is None else set(self.identity_fields)
        return self.model_dump(mode="json", include=include)


def config_relative(value: Any, info: ValidationInfo, *, expand_vars: bool = False) -> Any:
    """A path as written in a config file, resolved against the file's folder (validation context
    `config_dir`; without one, as given). `expand_vars`: "$SCRUTINEER_SHARED_DATA/..." first."""
    if not isinstance(value, str):
        return value  # the field's own type check names it
    given = os.path.expandvars(value) if expand_vars else value
    base = (info.context or {}).get("config_dir")
    if base is None or Path(given).is_absolute():
        return given
    return str((Path(base) / given).resolve())


def section(config: RunConfig, name: str, model: type[SectionT]) -> SectionT:
    """The config's `[name]` section as `model`: the typed one `configure` left, else validated
    from the raw table (paths relative to the config file it was read from), else the defaults."""
    value = config.sections.get(name)
    if isinstance(value, model):
        return value
    return model.model_validate(value or {}, context={"config_dir": _config_dir(config)})


def _config_dir(config: RunConfig) -> str | None:
    return str(Path(config.source).parent) if config.source else None


def configure(audit: Audit[Any], config: RunConfig) -> RunConfig:
    """The config with the audit's own sections validated by its models (relative paths resolved
    against the config file), every one present (defaults where not given). A table the audit does
    not use is an error naming it; a stored manifest (.json) may carry the sections of the layout it
    was written with, which are dropped."""
    from cluster.run_config import ConfigError, describe

    where = config.source or "config"
    config_dir = _config_dir(config)
    typed: dict[str, Any] = {}
    for name, value in config.sections.items():
        if name in audit.sections or config.recorded:
            continue
        if not isinstance(value, dict):
            raise ConfigError(f"{where}: field '{name}': Extra inputs are not permitted")
        uses = ", ".join(f"[{s}]" for s in audit.sections) or "none"
        raise ConfigError(f"{where}: section [{name}] is not used by audit '{audit.name}' (its sections: {uses})")
    for name, model in audit.sections.items():
        value = config.sections.get(name)
        try:
            typed[name] = value if isinstance(value, model) else model.model_validate(
                value or {}, context={"config_dir": config_dir})  # fmt: skip
        except ValidationError as exc:
            raise ConfigError(f"{where}: {describe(exc, within=name)}") from exc
    data = {k: v for k, v in config if k not in config.sections} | typed  # common fields, then the audit's
    configured = type(config).model_construct(config.model_fields_set | set(typed), **data)
    configured._source, configured._recorded = config._source, config._recorded
    return configured


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
    """One audit kind. Implementations: audits/citations.py, audits/papers.py, audits/reviews.py."""

    name: ClassVar[str]
    corpus_needs_cluster: ClassVar[bool]
    """True when building the corpus runs on Ray and shares the run's services (paper injection);
    False when it is read from a file, before storage or the cluster are touched."""
    sections: ClassVar[Mapping[str, type[AuditSection]]]
    """Its own tables of the run config, by name (validated by `configure`)."""
    item_kinds: ClassVar[tuple[str, ...]]
    """The kinds of item its corpus holds (storage `Item.kind`): systems must read them."""

    def identity(self, config: RunConfig) -> tuple[Any, ...]:
        """What of its own sections identifies the run (hashed into the run key with the corpus,
        snapshot and systems)."""
        ...

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
    """What every audit kind shares: its systems run as shard tasks on the Ray worker pool; its
    identity is each section's identity fields."""

    sections: ClassVar[Mapping[str, type[AuditSection]]] = {}

    def identity(self, config: RunConfig) -> tuple[Any, ...]:
        return ({name: section(config, name, model).identity() for name, model in self.sections.items()},)

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


LEGACY_IDENTITY: tuple[Any, ...] = (
    [],  # [papers] paths
    7,  # [papers] seed
    {"path": None, "truth": None, "format": "auto", "track": "injected", "seed": 0, "copies": 1,
     "min_injections": 1, "max_injections": 2, "anchors": None, "injector_model": None,
     "injector_api_base": None, "unanswered": "exclude"},  # the whole [reviews] section
)  # fmt: skip
"""The identity every run key carried while RunConfig held the sections of all three built-in kinds
(papers paths and seed, the reviews section), as defaults. The built-in audits put their own values
in their slots and keep these in the others, so the run keys of existing runs (their budgets,
ledgers and outage guards) stay the same; a new kind uses `ShardedAudit.identity`."""

__all__ = ["LEGACY_IDENTITY", "Audit", "AuditContext", "AuditSection", "BudgetStopped", "ShardedAudit", "Verdicts",
           "config_relative", "configure", "finish_run", "section"]
