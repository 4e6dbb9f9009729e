"""Rebuild a stored run's scores from its records alone: `recompute_run(store_uri, run_id)`.

DESIGN: "Every number a report prints can be recomputed from stored records." A run's store
holds everything scoring needs: the Output shards (`Store.read_outputs`), the truth table
(`tables/truth.parquet`), the manifest (system label, eval mode and bootstrap size from the run
config) and `scores.json` (which bootstrap size and seed the stored numbers used, so a run
resumed with other settings is rebuilt as it was scored). Nothing is read from the corpus file,
the systems or MLflow.

`recompute_run` returns the `CitationScore`; `stored_scores` reads back what the run stored, so a
caller (or an audit) can diff the two: `metric_rows()` against the `metrics` table and `summary`
against `scores.json`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from scoring.citations.score import CitationScore, score_citation_outputs
from scoring.report_context import report_context  # noqa: F401  (re-exported: callers import it from here)
from storage.store import Store


@dataclass(frozen=True)
class StoredScores:
    """What a finished run stored about its scores (None where the run has not been scored yet)."""

    metrics: pa.Table | None
    summary: dict[str, Any] | None


def _store(store: str | Store) -> Store:
    return store if isinstance(store, Store) else Store(store)


def recompute_run(
    store: str | Store, run_id: str, *, eval_mode: str | None = None, bootstrap: int | None = None,
    seed: int | None = None,
) -> CitationScore:
    """Score run `run_id` again from the records in `store` (a URI or a `Store`).

    Args:
        store: the run store's root URI (local path or `s3://...`), or an open `Store`.
        run_id: the run to rebuild.
        eval_mode: defaults to the run config's eval mode.
        bootstrap: resamples; defaults to what `scores.json` records, else the run config's.
        seed: bootstrap seed; defaults to what `scores.json` records, else 42.

    Raises:
        FileNotFoundError: the run has no manifest or no truth table.
    """
    st = _store(store)
    manifest = st.read_json(run_id, "manifest.json")
    if manifest is None:
        raise FileNotFoundError(f"run {run_id!r}: no manifest.json under {st.uri}")
    truth = st.read_table(run_id, "truth")
    if truth is None:
        raise FileNotFoundError(f"run {run_id!r}: no truth table under {st.uri}")
    stored = st.read_json(run_id, "scores.json") or {}
    config = manifest.get("config") or {}
    system = manifest.get("system") or {}
    if bootstrap is None:
        bootstrap = stored.get("bootstrap_resamples", config.get("bootstrap", 0))
    if seed is None:
        seed = stored.get("bootstrap_seed") or 42
    return score_citation_outputs(
        truth, st.read_outputs(run_id), run_id=run_id, system=system.get("label") or system.get("name") or "",
        eval_mode=eval_mode or config.get("eval_mode", "conservative"), bootstrap=int(bootstrap), seed=int(seed),
    )


def stored_scores(store: str | Store, run_id: str) -> StoredScores:
    """The `metrics` table and `scores.json` the run stored."""
    st = _store(store)
    return StoredScores(st.read_table(run_id, "metrics"), st.read_json(run_id, "scores.json"))


