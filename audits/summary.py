"""What a finished run reports: every system's stored status and scores, rendered as the
leaderboard (the scoring and writing are each audit's: audits/citations.py, audits/papers.py;
the writing itself is storage/run_publication.py's).

Every number here is computed from the records in the store (outputs + truth), so the same
summary can be rebuilt later from storage alone.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from storage.outages import outage_mask
from storage.redaction import redact_text
from storage.run_publication import (
    SystemSummary,
    decided_share,
)

LEADERBOARD_METRICS = ("detection_rate", "false_positive_rate", "f1_hallucination", "mcc")
PAPER_LEADERBOARD_METRICS = ("detection_rate", "natural_detection_rate", "false_positive_rate")
"""Injected-error detection, natural-error (errata) detection, false positives on clean copies."""
_HEADERS = {"detection_rate": "DR", "natural_detection_rate": "natDR", "false_positive_rate": "FPR",
            "f1_hallucination": "F1", "mcc": "MCC"}


@dataclass
class RunSummary:
    systems: list[SystemSummary] = field(default_factory=list)
    leaderboard_uri: str | None = None
    report_uris: list[str] = field(default_factory=list)
    tracking_uri: str | None = None
    elapsed_s: float = 0.0
    columns: tuple[str, ...] = LEADERBOARD_METRICS
    title: str | None = None
    """The table's heading for a kind with its own columns (a plug-in's); None: the built-in ones'."""

    @property
    def errored_items(self) -> int:
        return sum(s.errored for s in self.systems)

    @property
    def withheld(self) -> bool:
        return any(not s.published for s in self.systems)

    @property
    def audit_invalid_reasons(self) -> list[str]:
        """Every system's AUDIT INVALID reasons, each once (issue 21)."""
        return list(dict.fromkeys(r for s in self.systems for r in s.validity.reasons))

    @property
    def labelled(self) -> bool:
        return any(s.scores.get("labelled") for s in self.systems) or not self.systems

    def render(self) -> str:
        """The console summary; URLs in it (storage, tracking) lose their userinfo and secret queries.
        An invalid audit says so above everything else (issue 21)."""
        return redact_text(self._banner() + self._render())

    def _banner(self) -> str:
        reasons = self.audit_invalid_reasons
        if not reasons:
            return ""
        rule = "!" * 100
        return "\n".join(["", rule, "AUDIT INVALID: the controls say these figures must not be published "
                           "(the report says why):", *(f"  - {r}" for r in reasons), rule])

    def _render(self) -> str:
        if self.columns == LEADERBOARD_METRICS and not self.labelled:
            return self._render_unlabelled()
        if self.columns == LEADERBOARD_METRICS:
            title = "Leaderboard (HALLMARK conventions: UNCERTAIN outside the confusion matrix, missing = VALID)"
            counts = (("scored", "num_scored"), ("errored", "num_errors"), ("unparsed", "num_parse_failures"),
                      ("uncertain", "num_uncertain"))  # fmt: skip
        elif self.title is not None:  # a plug-in kind's own columns
            title, counts = self.title, (("scored", "num_scored"), ("errored", "num_errors"))
        else:
            title = "Paper audit: detection rate of injected errors, false-positive rate of flags on clean copies"
            counts = (("injected", "num_injections"), ("natural", "num_natural_errata"), ("flags", "num_flags_adjudicated"),
                      ("undecided", "num_undecided"), ("unscored", "num_unscored"), ("errored", "num_errors"))  # fmt: skip
        with_coverage = self.columns == LEADERBOARD_METRICS
        head = f"{'system':<20} " + " ".join(f"{_HEADERS.get(m, m):>7}" for m in self.columns)
        head += f" {'coverage':>8}" if with_coverage else ""
        head += " " + " ".join(f"{label:>9}" for label, _ in counts) + "  status"
        lines = ["", title, head]
        ranked = sorted(self.systems, key=lambda s: (s.scored, _sort_key(s.scores.get(self.columns[-1]))), reverse=True)
        for s in ranked:
            cells = " ".join(f"{_fmt(s.scores.get(m) if s.published and s.scored else None):>7}" for m in self.columns)
            if with_coverage:  # share decided next to DR/FPR: DR 1.000 at coverage 5.0% is not a good system
                cells += f" {_pct(decided_share(s.scores) if s.scored else None):>8}"
            tallies = " ".join(f"{s.scores.get(key) or 0:>9}" for _, key in counts)
            lines.append(f"{s.system:<20} {cells} {tallies}  {s.status}")
        lines += self._footer()
        return "\n".join(lines)

    def _render_unlabelled(self) -> str:
        """No labels: no metric applies; say what each system said."""
        lines = ["", "No labels in this corpus: metrics not applicable. What each system said:",
                 f"{'system':<20} {'VALID':>7} {'HALLUC.':>7} {'UNCERT.':>7} {'errored':>7} {'coverage':>8}  status"]
        for s in sorted(self.systems, key=lambda s: not s.scored):
            said = (s.scores.get("outputs") or {}).get("labels") or {}
            cells = " ".join(f"{said.get(k, 0):>7}" for k in ("VALID", "HALLUCINATED", "UNCERTAIN"))
            lines.append(f"{s.system:<20} {cells} {s.errored:>7} {_pct(decided_share(s.scores)):>8}  {s.status}")
        lines += self._footer()
        return "\n".join(lines)

    def _footer(self) -> list[str]:
        lines = []
        for s in self.systems:
            if not s.scored:
                lines.append(f"FAILED: {s.system}: every output errored, not scored; first error: {s.first_error}")
        for s in self.systems:
            if s.outage_items:
                verdict = ("published by override (--allow-incomplete)" if s.published
                           else "scores withheld; submit the same run again to retry just those items")  # fmt: skip
                lines.append(f"INCOMPLETE: {s.system}: {s.outage_items} answers depended on an unavailable source; {verdict}")
        lines.append("")
        lines.append(f"finished in {self.elapsed_s:.1f}s; wrote:")
        for s in self.systems:
            lines.append(f"  {s.system}: outputs {s.outputs_uri}" + (f" (MLflow run {s.mlflow_run_id})" if s.mlflow_run_id else ""))
        if self.leaderboard_uri:
            lines.append(f"  leaderboard: {self.leaderboard_uri}")
        for uri in self.report_uris:
            lines.append(f"  report: {uri}")
        if self.tracking_uri:
            lines.append(f"  MLflow: {self.tracking_uri}  (open with: mlflow ui --backend-store-uri {self.tracking_uri})")
        return lines


def count_outage_answers(outputs: pa.Table) -> int:
    """Answers that depended on a source or model provider that was down (`detail["outage_sources"]`,
    see storage/outages.py): never verdicts; while any is left the run's scores are withheld."""
    return sum(outage_mask(outputs))


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.3f}"


def _pct(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "n/a"
    return f"{value:.1%}"


def _sort_key(value: Any) -> float:
    return -2.0 if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)
