"""An LLM judge bound to a role, and the votes it casts (reference 002, §2.4).

A `JudgeSpec` is what a config names (model string, family, optional `api_base`/`api_key_env`,
sampling parameters); `Judge` asks it through the one LLM gateway (cache, budget, limiter,
retries) and reads the answer with the strict JSON contract of `clients/llm_json.py`. A judge
that errors or answers unreadably casts an abstaining vote (`detected`/`outcome` None, reason
says why): it is recorded, never counted as a verdict. A request the run's budget refuses abstains
the same way (the other requests in flight finish and are cached); the refusal is counted on the
run's `BudgetClient`, and the driver then stores no verdicts and stops the run (exit 4) so that
a resubmission adjudicates again from the cache (`cluster/services_builder.py: budget_refused`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from clients.errors import ClientError, ParseError
from clients.llm_budget import BudgetExhausted
from clients.llm_gateway import LLMGateway, LLMServices
from clients.llm_json import parse_json_answer

__all__ = ["Judge", "JudgeSpec", "vote"]


@dataclass(frozen=True)
class JudgeSpec:
    """One judge as configured."""

    model: str
    """Gateway model string (litellm name or `self/<backend>`)."""
    family: str = ""
    """Model family (anthropic, openai, google, meta, ...): what cross-family panels and the
    self-preference statistics group on. Defaults to the provider prefix of `model`."""
    api_base: str | None = None
    api_key_env: str | None = None
    params: dict[str, Any] = field(default_factory=lambda: {
        "temperature": 0.0, "seed": 42, "max_tokens": 1024,
        # Judges answer one JSON object: ask for JSON mode (llama.cpp constrains it by grammar).
        "response_format": {"type": "json_object"},
    })  # fmt: skip

    @property
    def family_name(self) -> str:
        return self.family or self.model.split("/")[0]

    @classmethod
    def parse(cls, value: JudgeSpec | str | dict[str, Any]) -> JudgeSpec:
        if isinstance(value, JudgeSpec):
            return value
        if isinstance(value, str):
            return cls(model=value)
        return cls(**value)


def vote(judge: str, family: str, role: str, *, detected: bool | None = None, outcome: str | None = None,
         confidence: float | None = None, evidence: str | None = None, reason: str | None = None) -> dict[str, Any]:  # fmt: skip
    """One entry of a Verdict's `votes_json` (the contract's vote shape)."""
    return {"judge": judge, "family": family, "detected": detected, "outcome": outcome, "confidence": confidence,
            "evidence": evidence, "reason": reason, "role": role}  # fmt: skip


def _confidence(value: Any) -> float | None:
    try:
        c = float(value)
    except (TypeError, ValueError):
        return None
    return c if 0.0 <= c <= 1.0 else None


def _boolean(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "detected"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("false", "no", "missed", "not_detected"):
        return False
    return None


class Judge:
    """A judge with its gateway (built once, on first use)."""

    def __init__(self, spec: JudgeSpec, services: LLMServices | None = None, cache_dir: str | None = None) -> None:
        self.spec = spec
        self.gateway = LLMGateway(spec.model, services or LLMServices(), api_base=spec.api_base,
                                  api_key_env=spec.api_key_env, cache_dir=cache_dir)  # fmt: skip

    async def ask(self, prompt: str, required: tuple[str, ...], optional: tuple[str, ...] = ()) -> dict[str, Any]:
        """The parsed JSON answer; raises `ParseError` / `ClientError`."""
        response = await self.gateway.complete([{"role": "user", "content": prompt}], self.spec.params)
        return parse_json_answer(response.text, required=required, optional=optional).data

    async def detection_vote(self, prompt: str, role: str) -> dict[str, Any]:
        """{detected, confidence, evidence, reason} as a vote; abstains on error or parse failure."""
        name, family = self.spec.model, self.spec.family_name
        try:
            data = await self.ask(prompt, ("detected", "confidence"), ("evidence", "matching_evidence", "reason"))
        except (ClientError, ParseError, BudgetExhausted) as exc:
            # A budget refusal abstains too (requests in flight still finish and are cached); the
            # driver sees the refusal on the run's budget and stores no verdicts (exit 4, resume).
            return vote(name, family, role, reason=f"no verdict: {exc}")
        detected = _boolean(data.get("detected"))
        return vote(name, family, role, detected=detected, confidence=_confidence(data.get("confidence")),
                    evidence=data.get("evidence") or data.get("matching_evidence"),
                    reason=data.get("reason") if detected is not None else f"unreadable detected={data.get('detected')!r}")  # fmt: skip

    async def outcome_vote(self, prompt: str, role: str, outcomes: tuple[str, ...]) -> dict[str, Any]:
        """{outcome, confidence, reason} as a vote; abstains on error, parse failure or unknown outcome."""
        name, family = self.spec.model, self.spec.family_name
        try:
            data = await self.ask(prompt, ("outcome",), ("confidence", "reason", "evidence"))
        except (ClientError, ParseError, BudgetExhausted) as exc:
            return vote(name, family, role, reason=f"no verdict: {exc}")
        outcome = str(data.get("outcome") or "").strip().lower()
        if outcome not in outcomes:
            return vote(name, family, role, reason=f"unknown outcome {data.get('outcome')!r}")
        return vote(name, family, role, outcome=outcome, confidence=_confidence(data.get("confidence")),
                    evidence=data.get("evidence"), reason=data.get("reason"))  # fmt: skip
