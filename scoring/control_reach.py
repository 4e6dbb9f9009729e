"""The one rule by which an audit's control refutes a system's figure (AUDIT INVALID, issue 21)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal


def finite(x: Any) -> bool:
    """A number that is neither NaN nor infinite (an undefined metric is stored as NaN)."""
    return isinstance(x, (int, float)) and math.isfinite(x)


def control_reach(control: Mapping[str, Any], own: Mapping[str, Any]) -> tuple[Literal["beats", "reaches"], float] | None:
    """Whether a control's metric row refutes a system's row of the same metric: the control's value is
    above zero and at least the system's 95% CI lower bound (its value when it has no interval).
    Returns how ("beats": above the system's value itself; else "reaches") and the bound used; None
    when the figure stands or either value is undefined."""
    if not finite(control.get("value")) or not finite(own.get("value")):
        return None
    low = own["ci_low"] if finite(own.get("ci_low")) else own["value"]
    if control["value"] <= 0 or control["value"] < low:
        return None
    return ("beats" if control["value"] > own["value"] else "reaches"), low


__all__ = ["control_reach", "finite"]
