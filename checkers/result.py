"""The one record every check returns: an outcome out of six, with the evidence behind it.

Outcomes (reference 002, appendix A.2): `confirmed` (the statement holds), `refuted` (it does
not, with a counterexample or a computed value as evidence), `inconclusive` (the engine could not
decide, or a time or memory limit was hit), `error` (the input could not be read: bad syntax,
rejected tokens, missing fields), `skipped` (nothing to check, e.g. no units declared) and
`unavailable` (the engine needed is not installed here). Evidence is plain JSON data.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal

Outcome = Literal["confirmed", "refuted", "inconclusive", "error", "skipped", "unavailable"]
OUTCOMES: tuple[str, ...] = ("confirmed", "refuted", "inconclusive", "error", "skipped", "unavailable")
Severity = Literal["low", "medium", "high"]


@dataclass(frozen=True)
class CheckResult:
    """What one check concluded."""

    kind: str
    """The check kind that ran (registry name, e.g. `math.equality`, `numerics.ratio`)."""
    outcome: Outcome
    """One of the six outcomes."""
    reason: str = ""
    """One sentence a reader can act on."""
    engine: str = "python"
    """What decided it: `sympy`, `wolframscript`, `pint` or `python`."""
    evidence: dict[str, Any] = field(default_factory=dict)
    """Residual, counterexample point, dimensions found, computed vs printed value (JSON data)."""
    severity: Severity | None = None
    """For a refuted numerics check: the fixed rule's severity from kind and size of the discrepancy."""
    elapsed_s: float | None = None
    """Wall-clock seconds the check took, set by the runner."""

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES}, got {self.outcome!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CheckResult:
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in names})


class CheckInputError(ValueError):
    """The input of a check is malformed or rejected; the check answers `error`."""
