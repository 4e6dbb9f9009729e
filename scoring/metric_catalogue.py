"""What a metric is, apart from how it is computed: `MetricDef`.

One entry per metric says everything the readers of a score need: the key in metric rows,
scores.json and MLflow (`name`), the short column header and glossary line of reports (`label`,
`glossary`), which way is better, the key its confidence interval has in scores.json (`ci_key`,
HALLMARK's names), and why it is null when its denominator is empty (`undefined`). A kind keeps
its metrics in one `Registry[MetricDef]` (citations: `scoring/citations/metric_catalogue.py`);
scoring, reports, MLflow (through the metric rows) and the HALLMARK key map read it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

#: A metric computed for many resamples at once: `compute(inputs)` -> one value per resample.
BatchMetric = Callable[[Any], np.ndarray]


@dataclass(frozen=True)
class MetricDef:
    name: str
    """The key in metric rows, summaries (scores.json) and MLflow."""
    label: str
    """The short header a report's table shows (e.g. DR)."""
    higher_is_better: bool
    glossary: str = ""
    """The report glossary's line for `label` (empty: not in the glossary)."""
    ci_key: str | None = None
    """The key of its bootstrap interval in scores.json (None: no interval key)."""
    undefined: str = "undefined: zero denominator"
    """Why the number is null when it cannot be computed (scores.json `null_reasons`)."""
    leaderboard: bool = False
    """A column of the report's leaderboard."""
    hallmark: bool = False
    """HALLMARK's EvaluationResult writes it under `name` (the key-for-key HALLMARK view keeps it)."""
    compute: BatchMetric | None = None
    """For a metric added after the built-in ones: its values per resample from the kind's batch
    inputs (citations: `scoring.citations.metrics.BatchInputs`); None for built-ins, which the
    kind computes together."""
    support: Callable[..., int] | None = None
    """For an added metric: its denominator, the rows' `n`, from the kind's scored entries
    (citations: `(EntryTable, ModeView)`; default: entries in the confusion matrix)."""


__all__ = ["BatchMetric", "MetricDef"]
