"""METRIC_SCHEMA rows of the paper-audit statistics: one constructor, NaN with n = 0 when empty.

Stratum strings join `key=value` parts with "|" (`"type=numerics|severity=S2"`, `"all"` for none).
Statistics about a pair of reviewers put `"<a> vs <b>"` in the system column; statistics pooled
over reviewers (judge agreement, trend over pooled reviewers, neighbour coupling) use `"all"`.
"""

from __future__ import annotations

import math
from typing import Any

ALL = "all"


def stratum(**parts: str | None) -> str:
    """`stratum(type="numerics", severity="S2")` -> "type=numerics|severity=S2"; no parts -> "all"."""
    kept = [f"{k}={v}" for k, v in parts.items() if v is not None]
    return "|".join(kept) if kept else ALL


def metric_row(run_id: str, system: str, metric: str, stratum_: str, value: float,
               ci: tuple[float, float] = (math.nan, math.nan), n: int = 0) -> dict[str, Any]:
    """One METRIC_SCHEMA row; a non-finite value is NaN with n = 0 and no interval."""
    value = float(value)
    if not math.isfinite(value):
        return {"run_id": run_id, "system": system, "metric": metric, "stratum": stratum_, "eval_mode": None,
                "value": math.nan, "ci_low": math.nan, "ci_high": math.nan, "n": 0}
    return {"run_id": run_id, "system": system, "metric": metric, "stratum": stratum_, "eval_mode": None,
            "value": value, "ci_low": float(ci[0]), "ci_high": float(ci[1]), "n": int(n)}
