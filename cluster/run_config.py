"""A run as configured: TOML file -> `RunConfig`, CLI flags override single fields.

Nothing here changes a run's identity except the corpus, the systems (name + args) and the
snapshot; workers, shard size and attempts are resources.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

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


class PapersConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    paths: list[str] = Field(default_factory=list, description="LaTeX project folders, one paper each; relative to the config file")
    seed: int = Field(7, description="Seed of the injection schedule and draws")
    variant: str | None = Field(None, description="Sub-type registry variant (e.g. 'ml')")
    check_compile: bool = Field(True, description="Compile injected copies when a TeX engine is installed")
    proposer_model: str | None = Field(None, description="Gateway model for LLM-proposed injections (None: rule injections only)")
    proposer_api_base: str | None = Field(None, description="API base for the proposer model")
    errata_repos: list[str | dict[str, Any]] = Field(
        default_factory=list,
        description="Natural-error track: paper git repositories whose history holds errata; each a path or "
                    "{repo, folder, main_file, paper_id, max_copies, rev} (corpora/papers/errata.py); relative to the config file",
    )  # fmt: skip


class ReviewsConfig(BaseModel):
    """The review-hallucination audit's corpus (audit = "reviews"; audits/reviews.py)."""

    model_config = ConfigDict(extra="forbid")
    path: str | None = Field(None, description="Review file (ReviewCritique, generic JSONL or OpenReview export); relative to the config file")
    truth: str | None = Field(None, description="A corpus built by jobs/build_review_corpus.py: path = its items.jsonl, "
                              "truth = its truth.jsonl (used as built: no injection here); relative to the config file")
    format: Literal["auto", "reviewcritique", "generic", "jsonl", "openreview"] = Field(
        "auto", description="reviewcritique | generic (= jsonl) | openreview | auto (by content)")
    track: Literal["injected", "natural"] = Field(
        "injected", description="injected: 1 clean + `copies` injected copies per review (Tasks 1-3); "
                                "natural: the reviews with their own labels (ReviewCritique segment track)")
    seed: int = Field(0, description="Seed of the injection schedule")
    copies: int = Field(1, ge=0, description="Injected copies per review (injected track)")
    min_injections: int = Field(1, ge=1, description="Fewest injections in an injected copy")
    max_injections: int = Field(2, ge=1, description="Most injections in an injected copy")
    anchors: list[str] | None = Field(None, description="Anchors to inject (default: every anchor some injector can make)")
    injector_model: str | None = Field(None, description="Gateway model for the LLM injector (None: rule injectors only)")
    injector_api_base: str | None = Field(None, description="API base for the injector model")
    unanswered: Literal["exclude", "negative"] = Field(
        "exclude", description="Reviews a detector did not answer: left out of a task's denominator, or counted as negatives")


class AdjudicationConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    panel: list[str | dict[str, Any]] = Field(default_factory=list, description="Judge models for detection matching (cross-family)")
    escalation: str | dict[str, Any] | None = Field(None, description="Judge given the full paper on a split or unsure panel")
    low_confidence: float = Field(0.7, description="A panel majority below this mean confidence escalates")
    fp_panel: list[str | dict[str, Any]] | None = Field(None, description="General false-positive panel (default: panel)")
    checker_url: str | None = Field(None, description="Checker service URL (default: local sandboxed checks)")
    cited_texts_dir: str | None = Field(None, description="Folder of <bibkey>.txt with cited works' text")


class SystemConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(description="Registered system name (see --list-systems)")
    args: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of the system's factory")
    label: str | None = Field(None, description="Name in reports, to tell two configurations of one system apart")


class RunConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    # Any kind registered in audits/AUDITS (checked there, with the known kinds named): a new audit
    # kind is a module and a registry line, not an edit here.
    audit: str = Field(
        "citations", description="citations: verifiers over a citation corpus; paper_audit: reviewers over injected "
        "papers; reviews: hallucination detectors over peer reviews"
    )
    corpus: CorpusConfig = Field(default_factory=CorpusConfig)
    papers: PapersConfig = Field(default_factory=PapersConfig, description="Papers to inject errors into (paper_audit)")
    reviews: ReviewsConfig = Field(default_factory=ReviewsConfig, description="Review corpus and track (reviews)")
    adjudication: AdjudicationConfig = Field(default_factory=AdjudicationConfig, description="Judges and checkers (paper_audit)")
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
    plugins: list[str] = Field(default_factory=list, description="Modules to import that register more systems")
    llm: LLMConfig = Field(default_factory=LLMConfig, description="Response cache, rate limits, budget, self-hosted models")
    allow_incomplete: bool = Field(
        False, description="Publish scores even when a source outage left answers UNCERTAIN (the result says so)"
    )
    ray_address: str | None = Field(None, description="Ray cluster address (default: RAY_ADDRESS or a local Ray)")

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
    """Read a TOML (or JSON) run config; relative corpus paths are taken relative to the config file."""
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
    papers = data.get("papers", {})
    if papers.get("paths"):
        papers["paths"] = [str(p if Path(p).is_absolute() else (path.parent / p).resolve()) for p in papers["paths"]]
    if papers.get("errata_repos"):  # natural-error repositories, like paper folders, are relative to the config
        def here(p: str) -> str:
            return str(p if Path(p).is_absolute() else (path.parent / p).resolve())

        papers["errata_repos"] = [here(e) if isinstance(e, str) else ({**e, "repo": here(e["repo"])} if isinstance(
            e, dict) and isinstance(e.get("repo"), str) else e) for e in papers["errata_repos"]]
    reviews = data.get("reviews", {})
    for key in ("path", "truth"):
        if isinstance(reviews, dict) and isinstance(reviews.get(key), str):
            # "$SCRUTINEER_SHARED_DATA/hallupeer/...": the shared benchmark data wherever it lives
            given = os.path.expandvars(reviews[key])
            reviews[key] = given if Path(given).is_absolute() else str((path.parent / given).resolve())
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{path}: {_describe(exc)}") from exc


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
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"command-line options: {_describe(exc)}") from exc


class ConfigError(ValueError):
    pass


def _describe(exc: ValidationError) -> str:
    return "; ".join(f"field '{'.'.join(str(p) for p in e['loc'])}': {e['msg']}" for e in exc.errors())

