"""The paper-injection sub-type registry, read from `corpora/data/paper_subtypes.json`.

Four error types x three severities, two or three sub-types per combination (33, appendix C.2 of
the reviewer-audit paper), plus the ML corpus's substitute for dimensional absurdity
(`corpus_variant = "ml"`). Each sub-type carries its mechanism (`rule`: a rule injector named by
`rule`; `llm`: the LLM proposer), a mechanism block, an eligibility filter and the output schema
every proposal conforms to. This module only types and indexes the data.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

SUBTYPES_PATH = Path(__file__).resolve().parents[1] / "data" / "paper_subtypes.json"
ERROR_TYPES: tuple[str, ...] = ("general", "mathematics", "numerics", "citations")
SEVERITIES: tuple[str, ...] = ("S1", "S2", "S3")
Mechanism = Literal["rule", "llm"]


@dataclass(frozen=True)
class SubType:
    name: str
    error_type: str
    severity: str
    mechanism: Mechanism
    rule: str | None
    """Name of the rule injector (`corpora.papers.injectors.RULES`); None for LLM sub-types."""
    description: str
    """The mechanism block given verbatim to the proposer."""
    eligibility: str
    corpus_variant: str | None = None
    """None: every corpus; "ml": used instead of `variant_of` on ML corpora."""
    variant_of: str | None = None
    stands_in_for: str | None = None
    """A rule stand-in for this LLM sub-type of the same type and severity (issue 21): tried only when no
    sub-type of the combination fills the cell; never drawn itself, never counted among the 2-3."""


@dataclass(frozen=True)
class SubTypeRegistry:
    subtypes: tuple[SubType, ...]
    output_schema: dict[str, Any]

    def get(self, name: str) -> SubType:
        for s in self.subtypes:
            if s.name == name:
                return s
        raise KeyError(f"no paper sub-type '{name}'")

    def for_combination(self, error_type: str, severity: str, variant: str | None = None) -> list[SubType]:
        """Sub-types of one (type, severity) for a corpus variant (None = default corpus)."""
        chosen = [s for s in self.subtypes if s.error_type == error_type and s.severity == severity
                  and s.stands_in_for is None]
        if variant is None:
            return [s for s in chosen if s.corpus_variant is None]
        replaced = {s.variant_of for s in chosen if s.corpus_variant == variant}
        return [s for s in chosen if (s.corpus_variant in (None, variant)) and s.name not in replaced]


    def stand_ins(self, error_type: str, severity: str) -> list[SubType]:
        """Rule stand-ins of one (type, severity): the cell's last resort before it is skipped."""
        return [s for s in self.subtypes if s.error_type == error_type and s.severity == severity
                and s.stands_in_for is not None]


@cache
def paper_subtypes(path: Path = SUBTYPES_PATH) -> SubTypeRegistry:
    """The registry bundled with the project (checked: every combination has 2 or 3 sub-types)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    subtypes = tuple(SubType(**s) for s in data["subtypes"])
    reg = SubTypeRegistry(subtypes, data["output_schema"])
    for t in ERROR_TYPES:
        for sev in SEVERITIES:
            n = len(reg.for_combination(t, sev))
            if not 2 <= n <= 3:
                raise ValueError(f"{path}: {t} x {sev} has {n} sub-types (want 2 or 3)")
    for s in subtypes:
        if s.stands_in_for is not None:
            target = reg.get(s.stands_in_for)
            if s.mechanism != "rule" or (target.error_type, target.severity) != (s.error_type, s.severity):
                raise ValueError(f"{path}: stand-in {s.name} must be a rule of {target.error_type} x {target.severity}")
    return reg
