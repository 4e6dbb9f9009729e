"""scoring room: HALLMARK-exact citation metrics, statistics and reports (see DESIGN.md).

Entry point for a run: `score_citation_outputs(truth, outputs, run_id=..., system=...)` returns a
`CitationScore` (`.summary` with HALLMARK's keys, `.metric_rows()` as METRIC_SCHEMA rows).
`recompute_run(store_uri, run_id)` rebuilds a stored run's `CitationScore` from its records alone.
"""

from scoring.citations.entry_table import EVAL_MODES, EntryTable
from scoring.citations.score import CitationScore, ModeScore, score_citation_outputs, score_entries
from scoring.citations.stored_run import StoredScores, recompute_run, stored_scores

__all__ = [
    "EVAL_MODES",
    "CitationScore",
    "EntryTable",
    "ModeScore",
    "StoredScores",
    "recompute_run",
    "score_citation_outputs",
    "score_entries",
    "stored_scores",
]
