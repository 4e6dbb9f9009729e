"""Judge calibration against the controls (issue 21).

A judge that says "detected" whatever it reads (a sycophant that copies its evidence from the
review passes the evidence check) would make every reviewer perfect. The controls are reviews
that find nothing real (`adjudication.papers.controls`), so every judge of the panel also
adjudicates them first: a judge whose vetted "detected" votes credit a control on more than
`CALIBRATION_MAX_CREDIT` of that control's injections is uncalibrated. Its votes on every review
are then recorded with role `uncalibrated` and never counted (`DetectionMatcher.uncalibrated`);
the report lists each judge's credit per control and which were excluded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from storage.records import CALIBRATION_MAX_CREDIT

__all__ = ["CALIBRATION_MAX_CREDIT", "JudgeCalibration", "judge_calibration", "uncalibrated_judges"]

_JUDGED_ROLES = ("panel", "escalation", "uncalibrated")


@dataclass
class JudgeCalibration:
    """One judge's "detected" votes on each control's injections."""

    judge: str
    credited: dict[str, int] = field(default_factory=dict)
    """control system -> injections this judge voted detected (evidence vetted)."""
    injections: dict[str, int] = field(default_factory=dict)
    """control system -> all injection verdicts of that control."""

    def rate(self, control: str) -> float:
        n = self.injections.get(control, 0)
        return self.credited.get(control, 0) / n if n else 0.0

    @property
    def reasons(self) -> list[str]:
        return [f"judge {self.judge} credited {c} on {self.credited[c]} of {self.injections[c]} injections "
                f"({self.rate(c):.1%} > {CALIBRATION_MAX_CREDIT:.0%})"
                for c in sorted(self.credited) if self.rate(c) > CALIBRATION_MAX_CREDIT]  # fmt: skip

    @property
    def calibrated(self) -> bool:
        return not self.reasons


def judge_calibration(control_verdicts: Iterable[dict[str, Any]]) -> dict[str, JudgeCalibration]:
    """Per judge that voted on a control's injection: its credit of each control."""
    rows = [r for r in control_verdicts if r.get("unit_kind") == "injection"]
    totals: dict[str, int] = {}
    for r in rows:
        totals[r["system"]] = totals.get(r["system"], 0) + 1
    out: dict[str, JudgeCalibration] = {}
    for r in rows:
        votes = [v for v in json.loads(r.get("votes_json") or "[]") if v.get("role") in _JUDGED_ROLES and v.get("judge")]
        for judge in sorted({v["judge"] for v in votes}):  # a panel judge that also escalated counts once
            cal = out.setdefault(judge, JudgeCalibration(judge, injections=dict(totals)))
            said_yes = any(v["judge"] == judge and v.get("detected") is True for v in votes)
            cal.credited[r["system"]] = cal.credited.get(r["system"], 0) + said_yes
    return out


def uncalibrated_judges(control_verdicts: Iterable[dict[str, Any]]) -> frozenset[str]:
    return frozenset(j for j, cal in judge_calibration(control_verdicts).items() if not cal.calibrated)
