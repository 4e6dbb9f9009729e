"""A run as configured: TOML file -> `RunConfig`, CLI flags override single fields.

`RunConfig` holds what every run has (the audit's name, corpus, systems, storage, tracking,
snapshot, resources, models, plugins). The tables of one audit kind (the paper audit's, the review
audit's, a plug-in's own) are kept here as raw data: the audit the config names owns
their typed models, validates them and resolves their relative paths (`audits.base.configure`),
so nothing in this file knows an audit kind.

Nothing here changes a run's identity except the corpus, the systems (name + args), the
snapshot and the identity fields of the audit's own sections; workers, shard size and attempts
are resources.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator

from cluster.services_builder import LLMConfig

REPO_ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO_ROOT / "corpora" / "samples" / "citations_sample.jsonl"
#: The real works the sample corpus cites, indexed in memory: the default run's field_match checks
#: each entry against them offline. Relative to the repository (the Ray working_dir), so a run's
#: identity does not depend on where the checkout lives.
SAMPLE_INDEX = "corpora/samples/real_references.jsonl"


class CorpusConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    path: str = Field(str(DEFAULT_CORPUS), description="Corpus file (HALLMARK JSONL or .bib); relative to the config file")
    format: str = Field("auto", description="hallmark | bibtex | auto (by extension)")
    name: str | None = Field(None, description="Corpus name in run ids and reports (default: file stem)")
    split: str | None = Field(None, description="Split name recorded on items")


class SystemConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Registered system name (see --list-systems)")
    args: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of the system's factory")
    label: str | None = Field(None, description="Name in reports, to tell two configurations of one system apart")


class RunConfig(BaseModel):
    # Extra top-level tables are the audit's own sections, kept raw here and validated by the audit
    # (`audits.base.configure`), which refuses a section it does not use and any unknown field.
    model_config = ConfigDict(extra="allow")
    # Any kind registered in audits/AUDITS (checked there, with the known kinds named): a new audit
    # kind is a module and a registry line, not an edit here.
    audit: str = Field(
        "citations", description="The audit kind: a name in audits.AUDITS, built in or registered by a plug-in"
    )
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    systems: list[SystemConfig] = Field(
        default_factory=lambda: [
            SystemConfig(name="prescreen"),
            SystemConfig(name="field_match", args={"sources": ["offline_index"], "index_path": SAMPLE_INDEX}),
            SystemConfig(name="always_valid"),
        ],
        description="Systems to run over the corpus",
    )
    storage: str = Field("./runs", description="Where outputs go: a path, file:// or s3://bucket/prefix")
    tracking_uri: str | None = Field(
        None, description="MLflow tracking URI (default: sqlite file under ./mlruns); 'none' disables tracking"
    )
    experiment: str = Field("scrutineer/{corpus}", description="MLflow experiment name; {corpus} becomes the corpus name")
    snapshot: str = Field(
        default_factory=lambda: dt.datetime.now(dt.UTC).date().isoformat(),
        description="Snapshot date (YYYY-MM-DD): part of the run identity; the same snapshot resumes",
    )
    workers: int = Field(2, ge=1, description="Ray worker actors")
    shard_size: int = Field(25, ge=1, description="Items per shard (unit of work and of resume)")
    max_attempts: int = Field(3, ge=1, description="Tries per shard before it is recorded as failed")
    cpus_per_worker: float = Field(1.0, gt=0, description="Ray CPUs reserved per worker")
    eval_mode: Literal["conservative", "aggressive", "both"] = Field(
        "conservative", description="conservative | aggressive | both"
    )
    bootstrap: int = Field(1000, ge=0, description="Bootstrap resamples for confidence intervals (0: none)")
    plugins: list[str] = Field(default_factory=list, description="Modules to import that register more systems or audit kinds")
    llm: LLMConfig = Field(default_factory=LLMConfig, description="Response cache, rate limits, budget, self-hosted models")
    allow_incomplete: bool = Field(
        False, description="Publish scores even when a source outage left answers UNCERTAIN (the result says so)"
    )
    ray_address: str | None = Field(None, description="Ray cluster address (default: RAY_ADDRESS or a local Ray)")
    _source: str | None = PrivateAttr(None)
    _recorded: bool = PrivateAttr(False)

    @property
    def source(self) -> str | None:
        """The file this config was read from (errors name it; an audit's relative paths resolve against it)."""
        return self._source

    @property
    def recorded(self) -> bool:
        """Read from a stored run's manifest (.json): it may carry sections of the layout it was written with."""
        return self._recorded

    @property
    def sections(self) -> dict[str, Any]:
        """The audit's own sections: raw tables as read, or the audit's typed models once configured."""
        return dict(self.model_extra or {})

    @field_validator("snapshot")
    @classmethod
    def _snapshot_is_a_date(cls, value: str) -> str:
        # Part of every run id and storage path: only a real calendar date (no '../', no times).
        if not _DATE.fullmatch(value):
            raise ValueError(f"snapshot must be a date YYYY-MM-DD, got {value!r}")
        try:
            dt.date.fromisoformat(value)
        except ValueError:
            raise ValueError(f"snapshot {value!r} is not a real date") from None
        return value


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def load_config(path: str | Path | None) -> RunConfig:
    """Read a TOML (or JSON) run config; relative corpus paths are taken relative to the config file.
    The audit's own sections stay raw: `audits.base.configure` validates them and resolves their paths."""
    if path is None:
        return RunConfig()
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    try:
        # .json: a stored run's config as written in its manifest (jobs/drift.py replays it)
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON: {exc}") from exc
    corpus_path = data.get("corpus", {}).get("path")
    if corpus_path and not Path(corpus_path).is_absolute() and not corpus_path.startswith(("s3://", "file://")):
        candidate = (path.parent / corpus_path).resolve()
        data["corpus"]["path"] = str(candidate if candidate.exists() else Path(corpus_path).resolve())
    try:
        config = RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {describe(exc)}") from exc
    config._source, config._recorded = str(path), path.suffix == ".json"
    return config


def override(config: RunConfig, **fields: Any) -> RunConfig:
    """Apply CLI flags (None means 'not given') on top of a config."""
    data = config.model_dump()
    for name, value in fields.items():
        if value is None:
            continue
        if name.startswith("corpus_"):
            data["corpus"][name.removeprefix("corpus_")] = value
        else:
            data[name] = value
    try:
        updated = RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"command-line options: {describe(exc)}") from exc
    updated._source, updated._recorded = config._source, config._recorded
    return updated


class ConfigError(ValueError):
    pass


def describe(exc: ValidationError, within: str | None = None) -> str:
    """Each error as `field 'a.b': message`; `within` prefixes the section the model was validated for."""
    prefix = (within,) if within else ()
    return "; ".join(f"field '{'.'.join(str(p) for p in (*prefix, *e['loc']))}': {e['msg']}" for e in exc.errors())

