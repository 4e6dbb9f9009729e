"""scoring room: HALLMARK-exact citation metrics, statistics and reports (see DESIGN.md).

Entry point for a run: `score_citation_outputs(truth, outputs, run_id=..., system=...)` returns a
`CitationScore` (`.summary` with HALLMARK's keys, `.metric_rows()` as METRIC_SCHEMA rows).
"""

from scoring.citation_score import CitationScore, ModeScore, score_citation_outputs, score_entries
from scoring.entry_table import EVAL_MODES, EntryTable

__all__ = [
    "EVAL_MODES",
    "CitationScore",
    "EntryTable",
    "ModeScore",
    "score_citation_outputs",
    "score_entries",
]
