"""What a system said, without truth: `census_of(outputs)`.

Scores need labels; a census does not. It counts one system's outputs by label (VALID,
HALLUCINATED, UNCERTAIN), errors by kind with the first error message, predicted types, and the
per-field diagnoses the outputs carry (`subtests_json`: e.g. `doi_resolves`, `year_plausible`,
counted as pass / fail / not checked). It is the whole report of a run on an unlabelled corpus
(a .bib file, a blind split), and the test for a system that produced nothing but errors, which
is reported as failed and never scored.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

LABELS = ("VALID", "HALLUCINATED", "UNCERTAIN")


@dataclass(frozen=True)
class OutputCensus:
    """Counts over one system's outputs (see module docstring)."""

    system: str
    num_items: int  # items the corpus has (the denominator of `decided_share`)
    num_outputs: int
    labels: dict[str, int]
    num_errors: int  # outputs with `error` set, parse failures included
    errors_by_kind: dict[str, int]
    first_error: str | None
    predicted_types: dict[str, int] = field(default_factory=dict)
    subtests: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def decided(self) -> int:
        return self.labels.get("VALID", 0) + self.labels.get("HALLUCINATED", 0)

    @property
    def decided_share(self) -> float | None:
        """Share of the corpus's items with a definite VALID/HALLUCINATED verdict."""
        return self.decided / self.num_items if self.num_items else None

    @property
    def failed(self) -> bool:
        """Nothing but errors (or no output at all) for a non-empty corpus: the system failed."""
        return self.num_items > 0 and self.num_outputs == self.num_errors

    def as_dict(self) -> dict[str, Any]:
        return {
            "num_items": self.num_items, "num_outputs": self.num_outputs, "labels": dict(self.labels),
            "num_decided": self.decided, "decided_share": self.decided_share, "num_errors": self.num_errors,
            "errors_by_kind": dict(self.errors_by_kind), "first_error": self.first_error,
            "predicted_types": dict(self.predicted_types), "subtests": {k: dict(v) for k, v in self.subtests.items()},
        }  # fmt: skip


def census_of(outputs: pa.Table, *, system: str, num_items: int | None = None,
              first_failure: str | None = None) -> OutputCensus:  # fmt: skip
    """Count `outputs` (OUTPUT_SCHEMA rows of one system).

    Args:
        outputs: the system's outputs.
        system: its label.
        num_items: the corpus's item count (default: the number of outputs).
        first_failure: an error to report when no output carries one (e.g. a failed shard's).
    """
    cols = outputs.select([c for c in ("label", "error", "error_kind", "predicted_type", "subtests_json")
                           if c in outputs.column_names]).to_pydict()  # fmt: skip
    n = outputs.num_rows
    errors = cols.get("error") or [None] * n
    kinds = cols.get("error_kind") or [None] * n
    labels: Counter[str] = Counter()
    by_kind: Counter[str] = Counter()
    types: Counter[str] = Counter()
    subtests: dict[str, Counter[str]] = {}
    first_error = None
    for i in range(n):
        if errors[i] is not None:
            by_kind[kinds[i] or "unknown"] += 1
            first_error = first_error or errors[i]
            continue
        labels[(cols.get("label") or [None] * n)[i] or "none"] += 1
        ptype = (cols.get("predicted_type") or [None] * n)[i]
        if ptype:
            types[ptype] += 1
        for name, value in _subtests((cols.get("subtests_json") or [None] * n)[i]).items():
            outcome = "pass" if value is True else "fail" if value is False else "not checked"
            subtests.setdefault(name, Counter())[outcome] += 1
    return OutputCensus(
        system=system, num_items=n if num_items is None else num_items, num_outputs=n,
        labels={k: labels.get(k, 0) for k in LABELS} | {k: v for k, v in labels.items() if k not in LABELS},
        num_errors=sum(by_kind.values()), errors_by_kind=dict(sorted(by_kind.items())),
        first_error=first_error or first_failure, predicted_types=dict(types.most_common()),
        subtests={k: dict(sorted(v.items())) for k, v in sorted(subtests.items())},
    )  # fmt: skip


def _subtests(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}
