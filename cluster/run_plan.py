"""Turn (config, corpus, system specs) into runs in the store and the shard tasks that fill them.

Each system gets its own run, identified by (corpus@version, system@config-hash, snapshot); its
manifest (a typed `storage.run_record.RunManifest`) records what the run is, so a later
submission of the same config resumes it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from cluster.outage_retry import plan_outage_retries
from cluster.run_config import RunConfig
from cluster.shards import ShardTask, plan_ranges
from storage.code_revision import current_revision
from storage.records import SystemSpec
from storage.redaction import redact
from storage.run_id import make_run_id
from storage.run_record import RECORD_VERSION, ManifestCorpus, ManifestSystem, RunManifest, answer_packages
from storage.schemas import SCHEMA_VERSION
from storage.store import Store

if TYPE_CHECKING:
    import pyarrow as pa

    from storage.run_lease import RunLease


class PlannedCorpus(Protocol):
    """What the planner reads of a loaded corpus (`corpora.loaded_corpus.LoadedCorpus`)."""

    @property
    def name(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def split(self) -> str | None: ...
    @property
    def num_items(self) -> int: ...
    @property
    def errors(self) -> list[Any]: ...
    @property
    def items(self) -> pa.Table: ...
    @property
    def truth(self) -> pa.Table: ...


@dataclass(frozen=True)
class PlannedRun:
    run_id: str
    system_label: str
    spec: SystemSpec
    manifest: dict[str, Any]
    """The manifest as stored (this plan's, or the one a resumed run started with)."""

    @property
    def record(self) -> RunManifest:
        return RunManifest.from_stored(self.manifest, f"{self.run_id}/manifest.json")


@dataclass(frozen=True)
class RunPlan:
    runs: list[PlannedRun]
    tasks: list[ShardTask]
    store: Store
    lease: RunLease | None = None
    """The driver's lease on these runs: the runner confirms it and fences shard writes with it."""


def run_id_of(config: RunConfig, corpus: PlannedCorpus, spec: SystemSpec) -> str:
    # the registry name, not the label: renaming a configuration resumes it (the label is recorded)
    return make_run_id(corpus.name, corpus.version, spec.name, spec.config_hash(), config.snapshot)


def resume_conflicts(config: RunConfig, corpus: PlannedCorpus, specs: list[SystemSpec]) -> list[str]:
    """Stored runs this config would resume but cannot, read from their manifests before any
    cluster starts: a run's shards are ranges of one shard size, so resuming needs the same one."""
    store = Store(config.storage)
    problems = []
    for spec in specs:
        run_id = run_id_of(config, corpus, spec)
        stored = store.read_json(run_id, "manifest.json")
        if stored is not None and stored.get("shard_size") != config.shard_size:
            problems.append(
                f"run {run_id} in {store.uri} was started with shard_size {stored.get('shard_size')}, not "
                f"{config.shard_size}: resume it with --shard-size {stored.get('shard_size')}, or start a separate "
                "run with another --snapshot or --storage"
            )
    return problems


def planned_run_ids(config: RunConfig, corpus: PlannedCorpus, specs: list[SystemSpec]) -> list[str]:
    """The run ids `plan_run` will open, known before anything is written (the run lease needs them)."""
    run_ids = [run_id_of(config, corpus, s) for s in specs]
    seen: dict[str, str] = {}
    for spec, run_id in zip(specs, run_ids, strict=True):
        if run_id in seen:
            raise ValueError(f"systems '{seen[run_id]}' and '{spec.display_name}' are one run ({run_id}): they differ "
                             "only in label or runtime arguments, which do not change answers; drop one")
        seen[run_id] = spec.display_name
    return run_ids


def _warn_if_index_changed(run_id: str, stored: dict[str, Any], current: dict[str, Any]) -> None:
    """A resumed run whose index file changed mixes answers of two indexes: say so (it still resumes)."""
    before = ((stored.get("provenance") or {}).get("index") or {}).get("sha256")
    now = ((current.get("provenance") or {}).get("index") or {}).get("sha256")
    if before and now and before != now:
        print(f"[index] warning: run {run_id} started with index sha256 {before[:12]}, the file is now {now[:12]}; "
              "finished shards keep the old answers (use another --snapshot or --storage for a clean run)", flush=True)


def plan_run(config: RunConfig, corpus: PlannedCorpus, specs: list[SystemSpec], make_context: Callable[[str], Any],
             lease: RunLease | None = None) -> RunPlan:  # fmt: skip
    store = Store(config.storage)
    revision = current_revision()
    packages = answer_packages()  # versions of the dependencies that change answers (storage/run_record.py)
    runs, tasks = [], []
    ranges = plan_ranges(corpus.num_items, config.shard_size)
    # what the loader reports beside its rows (inputs it could not load, say), stored only when it reports something
    summary = {"summary": corpus.summary} if getattr(corpus, "summary", None) else {}
    for spec, run_id in zip(specs, planned_run_ids(config, corpus, specs), strict=True):
        record = RunManifest(
            run_id=run_id,
            schema_version=SCHEMA_VERSION,
            corpus=ManifestCorpus(name=corpus.name, version=corpus.version, split=corpus.split, path=config.corpus.path,
                                  items=corpus.num_items, unreadable=len(corpus.errors), **summary),
            system=ManifestSystem(**spec.to_dict(), config_hash=spec.config_hash()),
            snapshot=config.snapshot,
            shard_size=config.shard_size,
            num_shards=len(ranges),
            code_revision=revision.label,
            record_version=RECORD_VERSION,
            code=revision.to_dict(),
            packages=packages,
            config=config.model_dump(),
            provenance=spec.provenance(),
        )  # fmt: skip
        manifest = redact(record.to_stored())
        stored = store.open_run(run_id, manifest)
        _warn_if_index_changed(run_id, stored, manifest)
        if stored.get("shard_size") != config.shard_size:
            raise ValueError(
                f"run {run_id} was started with shard_size {stored.get('shard_size')}; resume it with the same shard size"
            )
        if store.read_table(run_id, "items") is None:
            store.write_table(run_id, "items", corpus.items)
            store.write_table(run_id, "truth", corpus.truth)
        runs.append(PlannedRun(run_id, spec.display_name, spec, stored))
        context = make_context(run_id)
        tasks.extend(
            ShardTask(run_id, spec.display_name, spec.config_hash(), spec, context, shard_id, start, stop)
            for shard_id, start, stop in ranges
        )
        tasks.extend(  # items whose stored answer was an outage: retried, superseding those rows
            ShardTask(run_id, spec.display_name, spec.config_hash(), spec, context, shard_id, rows[0], rows[-1] + 1, rows)
            for shard_id, rows in plan_outage_retries(store, run_id, corpus.items, config.shard_size, len(ranges))
        )
    return RunPlan(runs, tasks, store, lease)
