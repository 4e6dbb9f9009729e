"""HALLMARK's zero-shot LLM citation verifier (reference 000, §5.1 and appendix B.2.3-B.2.4).

One user message with HALLMARK's verification prompt (verbatim), no system prompt, no JSON mode;
temperature 0, seed 42 and a 1024-token completion budget by default, all recorded on every
output. The answer is read with the JSON contract of `clients/llm_json.py`: strict, fenced,
embedded, then salvaged label/confidence from a truncated object. Where HALLMARK fell back to
UNCERTAIN@0.5 on a parse failure, this system returns `Output.failed(..., "parse")`: a parse
failure is counted apart and is never a verdict. Confidence is P(predicted label is correct).

`prompt_variant="cutoff_aware"` appends the appendix-F.2 addendum verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from clients.errors import ClientError, ParseError
from clients.llm_gateway import LLMGateway
from clients.llm_json import ParseStats, parse_json_answer
from clients.llm_request import LLMResponse, prompt_hash
from storage.records import LABELS, Item, Output
from verifiers.citations.entry import CitationEntry
from verifiers.llm_batch import gateway_from_context, provider_failure, run_batch
from verifiers.registry import package, system
from verifiers.system import RunContext

HALLUCINATION_TYPES: tuple[str, ...] = (
    "fabricated_doi", "nonexistent_venue", "placeholder_authors", "future_date", "chimeric_title",
    "wrong_venue", "swapped_authors", "preprint_as_published", "hybrid_fabrication", "near_miss_title",
    "plausible_fabrication", "merged_citation", "partial_author_list", "arxiv_version_mismatch",
)  # fmt: skip

VERIFICATION_PROMPT = """You are a citation verification expert. Analyze the following BibTeX entry and determine if it is a VALID real publication or a HALLUCINATED (fabricated) citation.

BibTeX entry:
```bibtex
{bibtex}
```

Consider:
1. Is the title plausible and does it match known work by these authors?
2. Are the authors real researchers in this field?
3. Is the venue (journal/conference) real?
4. Does the year make sense?
5. If a DOI is present, does it look properly formatted?

When the entry is HALLUCINATED, classify the hallucination mode using exactly one of:
`fabricated_doi`, `nonexistent_venue`, `placeholder_authors`, `future_date`,
`chimeric_title`, `wrong_venue`, `swapped_authors`, `preprint_as_published`,
`hybrid_fabrication`, `near_miss_title`, `plausible_fabrication`,
`merged_citation`, `partial_author_list`, `arxiv_version_mismatch`.

Brief definitions:
- `fabricated_doi`: DOI does not resolve / is invented.
- `nonexistent_venue`: venue/journal does not exist.
- `placeholder_authors`: authors are placeholders ("Author1", "et al." alone, etc.).
- `future_date`: year is in the future relative to publication.
- `chimeric_title`: title combines fragments from multiple real works.
- `wrong_venue`: real paper but cited at wrong venue.
- `swapped_authors`: authors swapped or mismatched against the real paper.
- `preprint_as_published`: arXiv preprint cited as published in a venue.
- `hybrid_fabrication`: real DOI but other metadata (authors/title) doesn't match the DOI target.
- `near_miss_title`: title differs from a real paper by small but meaningful edits.
- `plausible_fabrication`: entirely fabricated yet plausible-sounding paper.
- `merged_citation`: metadata combined from two real papers.
- `partial_author_list`: real paper but author list is incomplete.
- `arxiv_version_mismatch`: arXiv version cited as a different version (or as published).

Respond with JSON only:
{{
  "label": "VALID" or "HALLUCINATED" or "UNCERTAIN",
  "confidence": 0.0 to 1.0,
  "predicted_hallucination_type": "<one of the 14 types above, or null>",
  "reason": "brief explanation"
}}

`predicted_hallucination_type` MUST be null when label is VALID or UNCERTAIN."""

CUTOFF_ADDENDUM = """

Note: your training data has a knowledge cutoff. If the citation could
post-date your training data, or if you cannot recall the paper with
confidence, respond with UNCERTAIN rather than HALLUCINATED or VALID.
Do not guess."""

PROMPT_VARIANTS = {"default": VERIFICATION_PROMPT, "cutoff_aware": VERIFICATION_PROMPT + CUTOFF_ADDENDUM}


def render_bibtex(entry: CitationEntry) -> str:
    """The entry as BibTeX: the raw text when the item carries it, else rebuilt from its fields in
    name order (item payloads are stored with sorted keys, so this is the order every reader sees)."""
    if entry.raw_bibtex:
        return entry.raw_bibtex
    lines = [f"@{entry.bibtex_type}{{{entry.key},"]
    lines += [f"  {name} = {{{value}}}," for name, value in sorted(entry.fields.items())]
    lines.append("}")
    return "\n".join(lines)


def build_messages(item: Item, variant: str = "default") -> list[dict[str, Any]]:
    """The single user message HALLMARK sends for one entry."""
    template = PROMPT_VARIANTS[variant]
    return [{"role": "user", "content": template.format(bibtex=render_bibtex(CitationEntry.from_item(item)))}]


@dataclass(frozen=True)
class Verdict:
    label: str
    confidence: float
    predicted_type: str | None
    reason: str | None
    parse_method: str


def read_verdict(text: str | None) -> Verdict:
    """Parse and validate an answer; raise `ParseError` when it is not a usable verdict."""
    parsed = parse_json_answer(text, required=("label", "confidence"),
                               optional=("predicted_hallucination_type", "reason"))  # fmt: skip
    label = str(parsed.data["label"]).strip().upper()
    if label not in LABELS:
        raise ParseError(f"label {parsed.data['label']!r} is not one of {LABELS}")
    try:
        confidence = float(parsed.data["confidence"])
    except (TypeError, ValueError) as exc:
        raise ParseError(f"confidence {parsed.data['confidence']!r} is not a number") from exc
    if not 0.0 <= confidence <= 1.0:
        raise ParseError(f"confidence {confidence} outside [0, 1]")
    ptype = parsed.data.get("predicted_hallucination_type")
    ptype = ptype if label == "HALLUCINATED" and ptype in HALLUCINATION_TYPES else None
    reason = parsed.data.get("reason")
    return Verdict(label, confidence, ptype, None if reason is None else str(reason), parsed.method)


def provenance(response: LLMResponse, template_hash: str) -> dict[str, Any]:
    """Output fields every LLM system records from one gateway answer."""
    return {
        "model_id": response.model_id,
        "prompt_hash": template_hash,
        "tokens_in": response.tokens_in,
        "tokens_out": response.tokens_out,
        "cost_usd": response.cost_usd,
        "latency_s": response.latency_s,
        "cache_hits": int(response.cached),
    }


class LLMZeroShotVerifier:
    """Zero-shot LLM verifier; one gateway per worker, built from the run context on first use."""

    def __init__(self, model: str, *, api_base: str | None = None, api_key_env: str | None = None,
                 prompt_variant: str = "default", temperature: float | None = 0.0, seed: int | None = 42,
                 max_tokens: int = 1024, price_override: tuple[float, float] | None = None,
                 name: str = "llm_zero_shot") -> None:  # fmt: skip
        if prompt_variant not in PROMPT_VARIANTS:
            raise ValueError(f"prompt_variant must be one of {sorted(PROMPT_VARIANTS)}")
        self.name = name
        self.model, self.api_base, self.api_key_env = model, api_base, api_key_env
        self.prompt_variant = prompt_variant
        self.params = {"temperature": temperature, "seed": seed, "max_tokens": max_tokens}
        self.params = {k: v for k, v in self.params.items() if v is not None}
        self.price_override = tuple(price_override) if price_override else None
        self.template_hash = prompt_hash(PROMPT_VARIANTS[prompt_variant])
        self.parse_stats = ParseStats()
        self._gateway: LLMGateway | None = None

    def gateway(self, ctx: RunContext) -> LLMGateway:
        if self._gateway is None:
            self._gateway = gateway_from_context(ctx, self.model, api_base=self.api_base, api_key_env=self.api_key_env,
                                                 price_override=self.price_override)  # fmt: skip
        return self._gateway

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        gateway = self.gateway(ctx)
        return await run_batch(items, gateway, lambda item: self.verify(item, gateway))

    async def verify(self, item: Item, gateway: LLMGateway) -> Output:
        """One item; raises only `BudgetExhausted` (the caller stops the batch)."""
        if item.load_error:
            return Output.failed(item.item_id, item.load_error, "input")
        try:
            response = await gateway.complete(build_messages(item, self.prompt_variant), self.params)
        except ClientError as exc:  # an outage is UNCERTAIN-by-outage (retried on resume), else errored
            return provider_failure(item.item_id, exc, self.model, detail={"prompt_variant": self.prompt_variant},
                                    api_sources_queried=[self.model], api_calls=1, prompt_hash=self.template_hash)  # fmt: skip
        prov = provenance(response, self.template_hash)
        detail = {"prompt_variant": self.prompt_variant, "finish_reason": response.finish_reason,
                  "attempts": response.attempts, **self.params}  # fmt: skip
        common = {"api_sources_queried": [self.model], "api_calls": 1, **prov}
        try:
            verdict = read_verdict(response.text)
        except ParseError as exc:
            self.parse_stats.record(None)
            return Output(item.item_id, error=f"parse: {exc.message}", error_kind="parse",
                          detail=detail | {"raw_answer": (response.text or "")[:500]}, **common)  # fmt: skip
        self.parse_stats.record(verdict.parse_method)
        return Output(item.item_id, label=verdict.label, confidence=verdict.confidence, reason=verdict.reason,
                      predicted_type=verdict.predicted_type, detail=detail | {"parse_method": verdict.parse_method},
                      **common)  # fmt: skip

    def estimate(self, items: list[Item]) -> tuple[float | None, int]:
        """(USD, tokens) the items would cost uncached: the preflight estimate of remaining work."""
        from clients.llm_backend import estimate_tokens
        from clients.llm_cost import price_for
        from clients.llm_request import LLMRequest

        price = price_for(self.model, self.price_override)
        usd, tokens = 0.0, 0
        for item in items:
            tin, tout = estimate_tokens(LLMRequest(self.model, build_messages(item, self.prompt_variant), self.params))
            tokens += tin + tout
            usd += price.cost(tin, tout) if price else 0.0
        return (usd if price else None), tokens


@system("llm_zero_shot", accepts=("citation",), requires=[package("litellm")],
        description="HALLMARK zero-shot LLM verifier through the gateway (any litellm model or self/<backend>)",
        runtime_args=("api_key_env", "price_override"))  # fmt: skip
def build_llm_zero_shot(model: str, api_base: str | None = None, api_key_env: str | None = None,
                        prompt_variant: str = "default", temperature: float | None = 0.0, seed: int | None = 42,
                        max_tokens: int = 1024, price_override: list[float] | None = None) -> LLMZeroShotVerifier:  # fmt: skip
    return LLMZeroShotVerifier(model, api_base=api_base, api_key_env=api_key_env, prompt_variant=prompt_variant,
                               temperature=temperature, seed=seed, max_tokens=max_tokens,
                               price_override=tuple(price_override) if price_override else None)  # fmt: skip
