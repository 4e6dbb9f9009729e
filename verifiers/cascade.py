"""Cascade: cheap stages first, each later stage only on what the earlier ones left undecided
(reference 000, §5.5; HALLMARK's best system is prescreen rules -> offline index -> online sources
-> an LLM on the residue).

`stages` is an ordered list of system specs. Each item goes through the stages in order until one
*decides* it: a VALID or HALLUCINATED answer with confidence at least the stage's `min_confidence`
(default `DEFER_BELOW` = 0.65). Anything else defers to the next stage: UNCERTAIN, an error, or a
weak answer — prescreen's "no rule fired" is VALID at 0.60, which says only that no local check
failed (with it as a deciding first stage, 92 % of dev_public entries never reached a later stage).
The last stage's answer is final whatever its confidence, except UNCERTAIN or an error.

Residual entries (no stage decided) are scored by `mode`: `conservative` keeps them as
abstentions (UNCERTAIN); `aggressive` flags any entry not affirmatively verified as HALLUCINATED
at confidence 0.55. Each output's detail records `stage` (1-based index of the deciding stage),
`decided_by` (its name), `why` (its reason), the `trail` of every stage the item visited (label,
confidence, reason, deferred), and both stances' labels, so either mode can be re-scored from one
run. A budget stop in any stage stops the cascade for that item.

The two-stage form `stage1` / `stage2` (default stage1 `prescreen`) is kept as shorthand for
`stages=[stage1, stage2]`, with the same deferral.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from storage.records import Item, Output
from verifiers.registry import SystemSpec, build_system, system
from verifiers.system import RunContext, System

MODES = ("conservative", "aggressive")
AGGRESSIVE_CONFIDENCE = 0.55
#: answers below this confidence defer to the next stage (prescreen's "no rule fired" is 0.60)
DEFER_BELOW = 0.65
_PROVENANCE = ("model_id", "prompt_hash", "tokens_in", "tokens_out", "cost_usd", "latency_s", "cache_hits",
               "api_calls", "api_sources_queried")


@dataclass
class Stage:
    system: System
    min_confidence: float
    name: str


def _spec(value: dict[str, Any] | str) -> SystemSpec:
    """A system spec from a name or {name, args, label} (also used by `ensemble`)."""
    if isinstance(value, str):
        return SystemSpec(value)
    if "name" not in value:
        raise ValueError(f"cascade stage {value!r} has no 'name'")
    return SystemSpec(value["name"], dict(value.get("args") or {}), value.get("label"))


def _stage_spec(value: dict[str, Any] | str) -> tuple[SystemSpec, float | None]:
    """A stage's spec and its own `min_confidence` (None: the cascade's)."""
    floor = value.get("min_confidence") if isinstance(value, dict) else None
    return _spec(value), None if floor is None else float(floor)


class CascadeVerifier:
    def __init__(self, stages: list[Stage], mode: str = "conservative") -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        if len(stages) < 2:
            raise ValueError("a cascade needs at least two stages")
        self.name = "cascade"
        self.stages, self.mode = stages, mode

    # kept for callers of the two-stage form
    @property
    def stage1(self) -> System:
        return self.stages[0].system

    @property
    def stage2(self) -> System:
        return self.stages[-1].system

    def _decides(self, out: Output, index: int) -> bool:
        if out.error is not None or out.label not in ("VALID", "HALLUCINATED"):
            return False
        last = index == len(self.stages) - 1
        return last or (out.confidence or 0.0) >= self.stages[index].min_confidence

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        trails: dict[str, list[Output]] = {i.item_id: [] for i in items}
        final: dict[str, Output] = {}
        pending = list(items)
        for index, stage in enumerate(self.stages):
            if not pending:
                break
            answers = {o.item_id: o for o in await stage.system.run(pending, ctx)}
            still = []
            for item in pending:
                out = answers[item.item_id]
                trails[item.item_id].append(out)
                if out.error_kind == "budget":
                    final[item.item_id] = out
                elif self._decides(out, index):
                    final[item.item_id] = self._decided(out, index, trails[item.item_id])
                else:
                    still.append(item)
            pending = still
        for item in pending:
            final[item.item_id] = self._residual(trails[item.item_id])
        return [final[i.item_id] for i in items]

    def _trail(self, trail: list[Output]) -> list[dict[str, Any]]:
        return [{"stage": n + 1, "system": self.stages[n].name, "label": o.label, "confidence": o.confidence,
                 "reason": o.reason, "error": o.error} for n, o in enumerate(trail)]

    def _decided(self, out: Output, index: int, trail: list[Output]) -> Output:
        detail = dict(out.detail or {})
        detail.update(stage=index + 1, decided_by=self.stages[index].name, why=out.reason, trail=self._trail(trail),
                      conservative_label=out.label, aggressive_label=out.label)
        if index > 0:
            detail["stage1_reason"] = trail[0].reason
        out.detail = detail
        return out

    def _residual(self, trail: list[Output]) -> Output:
        first, last = trail[0], trail[-1]
        detail = {"stage": len(trail), "decided_by": None, "why": "no stage decided", "residual": True,
                  "trail": self._trail(trail), "stage1_reason": first.reason, "stage2_label": last.label,
                  "stage2_error": last.error, "conservative_label": "UNCERTAIN", "aggressive_label": "HALLUCINATED"}
        provenance = {k: getattr(last, k) for k in _PROVENANCE}
        if self.mode == "aggressive":
            return Output(first.item_id, label="HALLUCINATED", confidence=AGGRESSIVE_CONFIDENCE,
                          reason="not affirmatively verified by any stage", detail=detail, **provenance)
        confidence = last.confidence if last.label == "UNCERTAIN" and last.confidence is not None else 0.5
        reason = last.reason or next((o.reason for o in reversed(trail) if o.reason), None)
        if last.error is not None and first.label == "UNCERTAIN":
            confidence = first.confidence or 0.5
        return Output(first.item_id, label="UNCERTAIN", confidence=confidence, reason=reason, detail=detail,
                      **provenance)


@system("cascade", accepts=("citation",), description="Stages in order (rules, index, online, LLM); each later one only on the undecided")
def build_cascade(stage2: dict[str, Any] | str | None = None, stage1: dict[str, Any] | str = "prescreen",
                  mode: str = "conservative", stages: list[dict[str, Any] | str] | None = None,
                  min_confidence: float | None = None) -> CascadeVerifier:  # fmt: skip
    """`stages=[...]` (each a name or {name, args, min_confidence}); or the two-stage `stage1`/`stage2`."""
    if stages is None:
        if stage2 is None:
            raise ValueError("cascade needs `stages` (a list of systems) or `stage2`")
        specs = [_stage_spec(stage1), _stage_spec(stage2)]
    else:
        if stage2 is not None:
            raise ValueError("give cascade either `stages` or `stage1`/`stage2`, not both")
        specs = [_stage_spec(s) for s in stages]
    default = DEFER_BELOW if min_confidence is None else min_confidence
    built = [Stage(build_system(spec), default if floor is None else floor, spec.label or spec.name)
             for spec, floor in specs]
    return CascadeVerifier(built, mode)
