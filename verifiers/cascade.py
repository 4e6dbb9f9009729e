"""Two-stage cascade: a rule verifier first, an LLM only on its UNCERTAIN residue (reference 000,
§5.5).

Stage 1 (default `prescreen`; HALLMARK used bibtex-updater) answers every entry; only the entries
it labels UNCERTAIN go to stage 2 (an LLM system such as `llm_agentic` or `llm_zero_shot`).
Residual entries — stage 2 still UNCERTAIN, or stage 2 could not answer (parse or provider
error) — are scored by `mode`: `conservative` keeps them as abstentions (stage 1's UNCERTAIN);
`aggressive` flags any entry not affirmatively verified by either stage as HALLUCINATED at
confidence 0.55. Each output's detail records the stage that decided and both stances' labels, so
either mode can be re-scored from one run. A budget stop in stage 2 stops the cascade.
"""

from __future__ import annotations

from typing import Any

from storage.records import Item, Output
from verifiers.registry import SystemSpec, build_system, system
from verifiers.system import RunContext, System

MODES = ("conservative", "aggressive")
AGGRESSIVE_CONFIDENCE = 0.55


def _spec(value: dict[str, Any] | str) -> SystemSpec:
    if isinstance(value, str):
        return SystemSpec(value)
    return SystemSpec(value["name"], dict(value.get("args") or {}), value.get("label"))


class CascadeVerifier:
    def __init__(self, stage1: System, stage2: System, mode: str = "conservative") -> None:
        if mode not in MODES:
            raise ValueError(f"mode must be one of {MODES}")
        self.name = "cascade"
        self.stage1, self.stage2, self.mode = stage1, stage2, mode

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        first = {o.item_id: o for o in await self.stage1.run(items, ctx)}
        residue = [i for i in items if first[i.item_id].label == "UNCERTAIN"]
        second = {o.item_id: o for o in await self.stage2.run(residue, ctx)} if residue else {}
        outputs = []
        for item in items:
            one = first[item.item_id]
            if item.item_id not in second:
                outputs.append(self._decided(one, 1, None))
                continue
            two = second[item.item_id]
            if two.error_kind == "budget":
                outputs.append(two)
            elif two.error is None and two.label in ("VALID", "HALLUCINATED"):
                outputs.append(self._decided(two, 2, one))
            else:
                outputs.append(self._residual(one, two))
        return outputs

    def _decided(self, out: Output, stage: int, stage1: Output | None) -> Output:
        detail = dict(out.detail or {})
        detail.update(stage=stage, conservative_label=out.label, aggressive_label=out.label)
        if stage1 is not None:
            detail["stage1_reason"] = stage1.reason
        out.detail = detail
        return out

    def _residual(self, one: Output, two: Output) -> Output:
        detail = {"stage": 2, "residual": True, "stage1_reason": one.reason, "stage2_label": two.label,
                  "stage2_error": two.error, "conservative_label": "UNCERTAIN", "aggressive_label": "HALLUCINATED"}  # fmt: skip
        provenance = {k: getattr(two, k) for k in ("model_id", "prompt_hash", "tokens_in", "tokens_out", "cost_usd",
                                                   "latency_s", "cache_hits", "api_calls", "api_sources_queried")}  # fmt: skip
        if self.mode == "aggressive":
            return Output(one.item_id, label="HALLUCINATED", confidence=AGGRESSIVE_CONFIDENCE,
                          reason="not affirmatively verified by either stage", detail=detail, **provenance)  # fmt: skip
        return Output(one.item_id, label="UNCERTAIN", confidence=two.confidence if two.label == "UNCERTAIN" else one.confidence,
                      reason=two.reason or one.reason, detail=detail, **provenance)  # fmt: skip


@system("cascade", description="Rule verifier first, an LLM on its UNCERTAIN residue (conservative/aggressive)")
def build_cascade(stage2: dict[str, Any] | str, stage1: dict[str, Any] | str = "prescreen",
                  mode: str = "conservative") -> CascadeVerifier:  # fmt: skip
    return CascadeVerifier(build_system(_spec(stage1)), build_system(_spec(stage2)), mode)
