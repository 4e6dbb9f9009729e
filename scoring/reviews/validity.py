"""AUDIT INVALID for the review audit: what its two controls say about each detector's figures.

The controls are the registered systems `review_null` (flags nothing) and `review_flag_all`
(flags, types and quotes everything). The paper audit's rule (scoring/papers/metrics.py) carried
over to review metrics:

1. `review_null` scores above zero on any checked metric: the scoring awards detections to a system
   that said nothing, so every figure of the run is suspect.
2. `review_flag_all` reaches a detector's checked metric within its interval: the control's value is
   above zero and at least the detector's 95% CI lower bound (its value when it has no interval).
   That figure is then not distinguishable from what flagging everything earns; above the detector's
   value itself the control is said to beat it.

Recall is not checked (flagging everything has perfect recall by construction), nor MCC (a
constant predictor has none).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from scoring.control_reach import control_reach, finite

ControlKind = Literal["null", "flag_all"]

CONTROL_SYSTEMS: dict[str, ControlKind] = {"review_null": "null", "review_flag_all": "flag_all"}
"""Registered system name -> the control it is."""

CHECKED_METRICS: dict[str, tuple[str, ...]] = {
    "injected": ("review_f1", "sentence_f1", "sentence_precision", "type_macro_f1", "token_f1", "type_oracle_macro_f1"),
    "natural": ("segment_precision", "segment_f1"),
}
"""Per track, the metrics a detector must win against the controls."""


def review_invalid_reasons(rows: Sequence[Mapping[str, Any]], controls: Mapping[str, ControlKind], *,
                           track: str, system: str | None = None) -> list[str]:  # fmt: skip
    """Why the review audit (or, with `system`, that detector's figures) is invalid; empty when valid.

    `rows`: METRIC_SCHEMA rows of every detector of the run (stratum `all` is read); `controls`:
    the systems' labels that are controls, with their kind."""
    checked = CHECKED_METRICS.get(track, ())
    table: dict[tuple[str, str], Mapping[str, Any]] = {
        (r["system"], r["metric"]): r for r in rows if r["stratum"] == "all" and r["metric"] in checked}
    reasons = []
    for label, kind in controls.items():
        if kind != "null":
            continue
        scored = [m for m in checked if finite((table.get((label, m)) or {}).get("value")) and table[(label, m)]["value"] > 0]
        if scored:
            reasons.append(f"AUDIT INVALID: the null control {label} (flags nothing) scores above zero on "
                           f"{', '.join(scored)} ({track} track): the scoring awards detections to nothing.")  # fmt: skip
    detectors = sorted({s for s, _ in table if s not in controls}) if system is None else [system]
    for label, kind in controls.items():
        if kind != "flag_all":
            continue
        for detector in detectors:
            if detector in controls:
                continue
            for metric in checked:
                own, control = table.get((detector, metric)), table.get((label, metric))
                if own is None or control is None or (reach := control_reach(control, own)) is None:
                    continue
                how, low = reach
                reasons.append(f"AUDIT INVALID: the flag_all control {label} ({metric} {control['value']:.3f}, "
                               f"n = {control.get('n', '?')}) {how} detector {detector}'s {metric} "
                               f"{own['value']:.3f} [95% CI low {low:.3f}] ({track} track): that figure is not "
                               "above what flagging everything earns.")  # fmt: skip
    return reasons


__all__ = ["CHECKED_METRICS", "CONTROL_SYSTEMS", "ControlKind", "review_invalid_reasons"]
