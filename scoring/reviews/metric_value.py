"""One review-audit number: value or `None` with the reason it is undefined, support and interval."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class MetricValue:
    """A metric of one stratum. `value is None` exactly when it is undefined (then `reason` says why);
    an undefined value is never reported as 0."""

    metric: str
    value: float | None
    n: int
    """Units the metric is computed over (reviews, sentences, tokens or spans, as the metric says)."""
    reason: str | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    stratum: str = "all"

    def row(self, run_id: str, system: str) -> dict[str, Any]:
        """A METRIC_SCHEMA row (undefined: NaN with n = 0, as every other audit writes it)."""
        if self.value is None:
            return {"run_id": run_id, "system": system, "metric": self.metric, "stratum": self.stratum,
                    "eval_mode": None, "value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0}  # fmt: skip
        nan = math.nan
        return {"run_id": run_id, "system": system, "metric": self.metric, "stratum": self.stratum, "eval_mode": None,
                "value": self.value, "ci_low": nan if self.ci_low is None else self.ci_low,
                "ci_high": nan if self.ci_high is None else self.ci_high, "n": self.n}  # fmt: skip
