"""Paper-audit verdicts read once from a VERDICT_SCHEMA table into typed rows the statistics share.

The contract (issue 7): injection verdicts (`unit_kind = "injection"`, outcome detected | missed |
undecided | unscored) and flag verdicts on clean copies (`unit_kind = "flag"`, outcome confirmed_issue |
false_positive | ambiguous | undecided); `detail_json` carries paper, copy, error type, severity (injections)
or flag type (flags), `escalated` and `unanimous`; `votes_json` the judges' votes with their role.

The paper id falls back to the part of `item_id` before "/copy-" when the detail lacks it, so a
row is never dropped for want of it. Rows of any other unit kind are ignored here (they belong to
other audits). Everything downstream resamples papers, so `paper_index` fixes one paper order
(sorted) for all statistics of a table.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import pyarrow as pa

SEVERITIES = ("S1", "S2", "S3")
ERROR_TYPES = ("general", "mathematics", "numerics", "citations")
PANEL_ROLE = "panel"


@dataclass(frozen=True)
class Vote:
    """One judge's vote on one unit."""

    judge: str
    family: str
    detected: bool | None
    outcome: str | None
    role: str
    confidence: float | None = None


@dataclass(frozen=True)
class InjectionVerdict:
    """Whether one reviewer detected one injected error."""

    system: str
    item_id: str
    unit_id: str
    paper_id: str
    outcome: str  # detected | missed | undecided | unscored
    error_type: str | None
    severity: str | None
    escalated: bool
    unanimous: bool | None
    votes: tuple[Vote, ...] = field(default=())
    visible: bool | None = None
    """Was the changed span in what the reviewer was shown (None: the whole copy / not recorded)?"""
    review_quotes: dict[str, int] | None = None
    """The review's flags by quote specificity (flags, quoted, over_long, token_only; issue 21)."""

    @property
    def scored(self) -> bool:
        """Detected or missed (an errored reviewer's copy is unscored; a verdict judges could not reach is undecided)."""
        return self.outcome in ("detected", "missed")

    @property
    def detected(self) -> bool:
        return self.outcome == "detected"

    def panel_votes(self) -> list[Vote]:
        """First-round panel votes with a yes/no answer."""
        return [v for v in self.votes if v.role == PANEL_ROLE and v.detected is not None]


@dataclass(frozen=True)
class FlagVerdict:
    """The adjudicated outcome of one flag a reviewer raised on a clean copy."""

    system: str
    item_id: str
    unit_id: str
    paper_id: str
    outcome: str  # confirmed_issue | false_positive | ambiguous | undecided
    flag_type: str | None
    votes: tuple[Vote, ...] = field(default=())

    def panel_votes(self) -> list[Vote]:
        """Panel votes with an outcome."""
        return [v for v in self.votes if v.role == PANEL_ROLE and v.outcome is not None]


@dataclass(frozen=True)
class PaperVerdicts:
    """The injection and flag verdicts of one or more runs, with a fixed paper order."""

    injections: list[InjectionVerdict]
    flags: list[FlagVerdict]

    @property
    def papers(self) -> list[str]:
        return sorted({v.paper_id for v in self.injections} | {f.paper_id for f in self.flags})

    @property
    def systems(self) -> list[str]:
        return sorted({v.system for v in self.injections} | {f.system for f in self.flags})

    def paper_index(self) -> dict[str, int]:
        return {p: i for i, p in enumerate(self.papers)}


def _paper_of(item_id: str, detail: dict) -> str:
    pid = detail.get("paper_id")
    if pid:
        return str(pid)
    return item_id.split("/copy-")[0]


def _votes(text: str | None) -> tuple[Vote, ...]:
    if not text:
        return ()
    out = []
    for v in json.loads(text):
        det = v.get("detected")
        conf = v.get("confidence")
        out.append(Vote(judge=str(v.get("judge", "")), family=str(v.get("family") or v.get("judge", "")),
                        detected=None if det is None else bool(det), outcome=v.get("outcome"),
                        role=str(v.get("role") or PANEL_ROLE), confidence=None if conf is None else float(conf)))
    return tuple(out)


def read_paper_verdicts(verdicts: pa.Table) -> PaperVerdicts:
    """Parse a VERDICT_SCHEMA table into injection and flag verdicts."""
    injections: list[InjectionVerdict] = []
    flags: list[FlagVerdict] = []
    for row in verdicts.to_pylist():
        kind = row.get("unit_kind")
        if kind not in ("injection", "flag"):
            continue
        detail = json.loads(row["detail_json"]) if row.get("detail_json") else {}
        votes = _votes(row.get("votes_json"))
        paper = _paper_of(row["item_id"], detail)
        if kind == "injection":
            unanimous = detail.get("unanimous")
            injections.append(InjectionVerdict(
                system=row["system"], item_id=row["item_id"], unit_id=row["unit_id"], paper_id=paper,
                outcome=row.get("outcome") or "unscored", error_type=detail.get("error_type"),
                severity=detail.get("severity"), escalated=bool(detail.get("escalated", False)),
                unanimous=None if unanimous is None else bool(unanimous), votes=votes,
                visible=None if detail.get("visible") is None else bool(detail["visible"]),
                review_quotes=detail.get("review_quotes")))
        else:
            flags.append(FlagVerdict(
                system=row["system"], item_id=row["item_id"], unit_id=row["unit_id"], paper_id=paper,
                outcome=row.get("outcome") or "ambiguous", flag_type=detail.get("flag_type"), votes=votes))
    return PaperVerdicts(injections, flags)
