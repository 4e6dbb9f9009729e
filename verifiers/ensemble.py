"""An ensemble of registered systems: majority or confidence-weighted vote per item.

Every member sees every item. A member's committed vote is turned into P(HALLUCINATED)
(its confidence for HALLUCINATED, one minus it for VALID, 0.5 for UNCERTAIN). `majority`: the
most frequent label among members that answered, UNCERTAIN on a tie; `confidence_weighted`: the
mean P(HALLUCINATED) decides (> 0.5 flags, < 0.5 clears, = 0.5 abstains). Confidence is always
P(ensemble label correct) under the members' mean P(HALLUCINATED) (0.5 for UNCERTAIN). Members
that errored do not vote; if none answered, the item is errored with their reasons. A budget
stop in any member stops the ensemble.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

from storage.records import Item, Output
from verifiers.cascade import _spec
from verifiers.registry import build_system, system
from verifiers.system import RunContext, System

RULES = ("majority", "confidence_weighted")


def p_hallucinated(out: Output) -> float:
    assert out.confidence is not None
    if out.label == "HALLUCINATED":
        return out.confidence
    if out.label == "VALID":
        return 1.0 - out.confidence
    return 0.5


def combine(votes: list[Output], rule: str) -> tuple[str, float]:
    """(label, confidence) of a vote among answered outputs."""
    mean_p = sum(p_hallucinated(v) for v in votes) / len(votes)
    if rule == "majority":
        ranked = Counter(v.label for v in votes).most_common()
        label = ranked[0][0] if len(ranked) == 1 or ranked[0][1] > ranked[1][1] else "UNCERTAIN"
    else:
        label = "HALLUCINATED" if mean_p > 0.5 else "VALID" if mean_p < 0.5 else "UNCERTAIN"
    confidence = {"HALLUCINATED": mean_p, "VALID": 1.0 - mean_p}.get(label or "", 0.5)
    return str(label), confidence


class EnsembleVerifier:
    def __init__(self, members: list[tuple[str, System]], rule: str = "majority") -> None:
        if rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}")
        if not members:
            raise ValueError("an ensemble needs at least one member")
        self.name = "ensemble"
        self.members, self.rule = members, rule

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        results = await asyncio.gather(*(member.run(items, ctx) for _, member in self.members))
        by_member = [{o.item_id: o for o in outs} for outs in results]
        outputs = []
        for item in items:
            outs = [(name, got[item.item_id]) for (name, _), got in zip(self.members, by_member, strict=True)]
            budget = [o for _, o in outs if o.error_kind == "budget"]
            if budget:
                outputs.append(budget[0])
                continue
            votes = [o for _, o in outs if o.error is None]
            detail = {"rule": self.rule, "votes": {n: (o.label, o.confidence) for n, o in outs if o.error is None},
                      "errors": {n: o.error for n, o in outs if o.error is not None}}  # fmt: skip
            totals: dict[str, Any] = {
                "tokens_in": sum(o.tokens_in or 0 for _, o in outs), "tokens_out": sum(o.tokens_out or 0 for _, o in outs),
                "cost_usd": sum(o.cost_usd or 0.0 for _, o in outs), "api_calls": sum(o.api_calls for _, o in outs),
                "cache_hits": sum(o.cache_hits for _, o in outs),
                "api_sources_queried": sorted({s for _, o in outs for s in o.api_sources_queried}),
            }  # fmt: skip
            if not votes:
                reasons = "; ".join(f"{n}: {o.error}" for n, o in outs)
                outputs.append(Output(item.item_id, error=f"no member answered ({reasons})", error_kind="system",
                                      detail=detail, **totals))  # fmt: skip
                continue
            label, confidence = combine(votes, self.rule)
            outputs.append(Output(item.item_id, label=label, confidence=confidence, detail=detail,
                                  reason=f"{self.rule} vote of {len(votes)}/{len(outs)} members", **totals))  # fmt: skip
        return outputs


@system("ensemble", description="Majority or confidence-weighted vote over registered systems")
def build_ensemble(members: list[dict[str, Any] | str], rule: str = "majority") -> EnsembleVerifier:
    specs = [_spec(m) for m in members]
    return EnsembleVerifier([(s.display_name, build_system(s)) for s in specs], rule)
