"""Single-model paper reviewers (reference 002, §2.1 and appendix H) through the LLM gateway.

Three prompt styles, one system family (`@system("paper_reviewer_llm")`, the style an argument):

* `free_form` — the one-sentence referee prompt of §2.1, verbatim; the review is prose, and its
  flags are read from it with `flags_from_text` (one flag per bulleted or numbered point, with
  the first quoted passage as its quote).
* `concise_structured` — the appendix-H control: names the four error types with one example
  each and asks for the issues as a JSON list after the report.
* `structured` — our own written operating instructions (the 978-line Skepthical prompt is not
  public): a coverage checklist per error type, verbatim quotes required, the same JSON list.

Every output is a review (label None) with `detail = {review_text, prompt_style, flags}` per the
paper-audit contract; a JSON list that cannot be read falls back to `flags_from_text`, and the
parse method is recorded. A copy the model cannot be asked about is `Output.failed`.
"""

from __future__ import annotations

import re
from typing import Any

from clients.errors import ClientError, ParseError
from clients.llm_gateway import LLMGateway
from clients.llm_json import parse_json_answer
from clients.llm_request import prompt_hash
from corpora.papers.latex_paper import ReadingText, reading_order_text
from storage.records import Item, Output, PaperReview
from verifiers.llm_batch import gateway_from_context, provider_failure, run_batch
from verifiers.registry import package, system
from verifiers.system import RunContext

__all__ = ["ERROR_TYPES", "PROMPTS", "PaperReviewerLLM", "flags_from_text", "normalize_flags", "paper_text"]

ERROR_TYPES: tuple[str, ...] = ("general", "mathematics", "numerics", "citations")

FREE_FORM = "Write a referee report for this scientific paper as if you were a journal referee."

_FLAG_FORMAT = """
After the report, list every issue you raise as JSON in a fenced block:
```json
{"issues": [{"quote": "<verbatim passage from the paper, at least a few words>",
             "location": "<section, equation or table, if known>",
             "type": "general | mathematics | numerics | citations",
             "description": "<what is wrong, one or two sentences>"}]}
```
Use an empty list when you find no issue."""

CONCISE_STRUCTURED = """Write a referee report for this scientific paper as if you were a journal referee.
Examine the paper for four kinds of error and report each one you find:
1. Citations: a claim attributed to a cited work that the cited work does not support, e.g. a
   cited result quoted with the wrong value or the opposite conclusion.
2. Numerics: numbers that are inconsistent with each other, e.g. a value in the abstract that
   differs from the body, table entries that do not add up to the stated total, percentages
   that cannot be right.
3. Mathematics: equations that are wrong, e.g. a flipped sign, a wrong coefficient or exponent,
   a summation bound that changed, or terms with inconsistent dimensions.
4. General: logical or cross-section inconsistencies, e.g. methods that contradict the results,
   conclusions the evidence does not support, references to figures or results that do not exist.
Quote the exact passage for every issue.""" + _FLAG_FORMAT

STRUCTURED = """You are a meticulous journal referee. Audit the paper below in four passes and then
write your report.

Pass 1 (general issues). Check logical consistency across sections: the same named choice,
dataset, sample size or quantity must be described identically everywhere; claims in the
abstract and conclusions must match the results; every reference to a figure, table, appendix
or reported result must correspond to an object that exists in the paper (phantom evidence);
flag sweeping generalisations, reversed directions ("increases" vs "decreases") and typos that
change meaning.

Pass 2 (mathematics). Read every displayed and inline equation. For each derivation, verify each
step follows from the previous one: signs, coefficients, exponents, prefactors and
normalisations, summation and integration bounds, operators. For standard results quoted from
the literature, compare with the canonical form. Check that every term in a sum has the same
dimensions and that limiting cases reduce as claimed.

Pass 3 (numerics). Recompute whatever can be recomputed: table row and column totals,
percentages that should sum to 100, percentages of stated quantities, ratios and differences
stated in the text, integers that must agree, constants repeated across the paper, rounded
values, and every number in the abstract against the body.

Pass 4 (citations). For each factual statement relying on a cited work, check that the statement
is plausible for that work, that quoted values, methods and conclusions are attributed
correctly, and that citation keys point to the intended references.

Report only issues you can anchor to a verbatim quote from the paper. Do not report matters of
taste or presentation unless they impede understanding.""" + _FLAG_FORMAT

PROMPTS: dict[str, str] = {"free_form": FREE_FORM, "concise_structured": CONCISE_STRUCTURED, "structured": STRUCTURED}

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\(\d+\))\s+(.+)$")
_QUOTE = re.compile(r"[\"“`']{1,2}([^\"”'`]{8,}?)[\"”']{1,2}")
_TYPE_WORDS: dict[str, tuple[str, ...]] = {
    "citations": ("citation", "cited", "cite", "reference", "attribut"),
    "mathematics": ("equation", "eq.", "sign", "derivation", "formula", "coefficient", "exponent", "integral"),
    "numerics": ("number", "percent", "%", "total", "sum", "table", "value", "digit"),
}


def reading(payload: dict[str, Any]) -> ReadingText:
    """The copy in reading order (`corpora.papers.latex_paper.reading_order_text`): the main file with its
    inputs in place, each file marked by a `% ==== file: <path> ====` line, without comments,
    `\\iffalse` blocks or `.bib` files (issue 15: alphabetical order put a 21 kB bibliography
    first and hid every injection behind a 12,000-character cut)."""
    return reading_order_text(payload.get("files") or {}, payload.get("main_file") or "main.tex")


def paper_text(payload: dict[str, Any]) -> str:
    """The copy's text as a reviewer model reads it (see `reading`)."""
    return reading(payload).text


def guess_type(text: str) -> str | None:
    """A flag's error type from its wording when the review did not state one (None if unclear)."""
    lowered = text.lower()
    for kind, words in _TYPE_WORDS.items():
        if any(w in lowered for w in words):
            return kind
    return None


def flags_from_text(item_id: str, text: str) -> list[dict[str, Any]]:
    """One flag per bulleted or numbered point of a prose review (continuation lines joined);
    quote = first quoted passage of eight characters or more; type guessed from the wording."""
    points: list[str] = []
    open_point = False
    for line in text.splitlines():
        bullet = _BULLET.match(line)
        if bullet:
            points.append(bullet.group(1).strip())
            open_point = True
        elif open_point and line.strip() and not line.lstrip().startswith("#"):
            points[-1] += " " + line.strip()
        else:
            open_point = False
    flags = []
    for n, point in enumerate((p.strip() for p in points if p.strip()), start=1):
        quote = _QUOTE.search(point)
        flags.append({"flag_id": f"{item_id}/f{n}", "quote": quote.group(1).strip() if quote else None,
                      "location": None, "type": guess_type(point), "description": point, "check": None})  # fmt: skip
    return flags


def normalize_flags(item_id: str, raw: list[Any]) -> list[dict[str, Any]]:
    """Contract-shaped flags from a model's or a file's issue list (unknown types become None)."""
    flags = []
    for entry in raw:
        if isinstance(entry, str):
            entry = {"description": entry}
        if not isinstance(entry, dict):
            continue
        kind = str(entry.get("type") or "").strip().lower() or None
        kind = {"math": "mathematics", "numeric": "numerics", "citation": "citations"}.get(kind, kind)
        flags.append({
            "flag_id": f"{item_id}/f{len(flags) + 1}",
            "quote": (str(entry["quote"]).strip() or None) if entry.get("quote") else None,
            "location": str(entry["location"]) if entry.get("location") else None,
            "type": kind if kind in ERROR_TYPES else None,
            "description": str(entry.get("description") or entry.get("issue") or ""),
            "check": entry.get("check") if isinstance(entry.get("check"), dict) else None,
        })  # fmt: skip
    return flags


def read_review(item_id: str, text: str, style: str) -> tuple[str, list[dict[str, Any]], str]:
    """(review text, flags, how the flags were read: json | text)."""
    if style != "free_form":
        try:
            parsed = parse_json_answer(text, required=("issues",))
            if isinstance(parsed.data["issues"], list):
                return text, normalize_flags(item_id, parsed.data["issues"]), f"json:{parsed.method}"
        except ParseError:
            pass
    return text, flags_from_text(item_id, text), "text"


class PaperReviewerLLM:
    """One model, one prompt style; one gateway per worker built from the run context."""

    def __init__(self, model: str, *, prompt_style: str = "free_form", api_base: str | None = None,
                 api_key_env: str | None = None, temperature: float | None = 0.0, seed: int | None = 42,
                 max_tokens: int = 8192, max_paper_chars: int | None = None,
                 name: str = "paper_reviewer_llm") -> None:  # fmt: skip
        if prompt_style not in PROMPTS:
            raise ValueError(f"prompt_style must be one of {sorted(PROMPTS)}")
        self.name, self.model, self.prompt_style = name, model, prompt_style
        self.api_base, self.api_key_env = api_base, api_key_env
        params = {"temperature": temperature, "seed": seed, "max_tokens": max_tokens}
        self.params = {k: v for k, v in params.items() if v is not None}
        self.template_hash = prompt_hash(PROMPTS[prompt_style])
        self.max_paper_chars = max_paper_chars
        self._gateway: LLMGateway | None = None

    def gateway(self, ctx: RunContext) -> LLMGateway:
        if self._gateway is None:
            self._gateway = gateway_from_context(ctx, self.model, api_base=self.api_base, api_key_env=self.api_key_env)
        return self._gateway

    def paper(self, item: Item) -> tuple[str, bool]:
        """The paper as the model sees it; cut to `max_paper_chars` for small-context models."""
        text = paper_text(item.payload)
        if self.max_paper_chars is None or len(text) <= self.max_paper_chars:
            return text, False
        return text[: self.max_paper_chars] + "\n[... paper truncated to fit the model's context ...]", True

    def shown_spans(self, item: Item) -> list[dict[str, Any]]:
        """The source ranges the model was shown: adjudication records per injection whether it was visible."""
        return reading(item.payload).shown_spans(self.max_paper_chars)

    def messages(self, item: Item) -> list[dict[str, Any]]:
        return [{"role": "user", "content": f"{PROMPTS[self.prompt_style]}\n\n--- PAPER (LaTeX source) ---\n"
                                            f"{self.paper(item)[0]}"}]  # fmt: skip

    async def run(self, items: list[Item], ctx: RunContext) -> list[Output]:
        gateway = self.gateway(ctx)
        return await run_batch(items, gateway, lambda item: self.review(item, gateway))

    async def review(self, item: Item, gateway: LLMGateway) -> Output:
        if item.load_error or not item.payload.get("files"):
            return Output.failed(item.item_id, item.load_error or "paper copy has no files", "input")
        try:
            response = await gateway.complete(self.messages(item), self.params)
        except ClientError as exc:  # an outage is UNCERTAIN-by-outage (retried on resubmission), never final
            return provider_failure(item.item_id, exc, self.model)
        if not (response.text or "").strip():
            return Output(item.item_id, error="empty review", error_kind="parse", model_id=response.model_id)
        text, flags, method = read_review(item.item_id, response.text or "", self.prompt_style)
        review = PaperReview(review_text=text, prompt_style=self.prompt_style, flags=flags, flags_from=method,
                             finish_reason=response.finish_reason, paper_truncated=self.paper(item)[1],
                             shown_spans=self.shown_spans(item), **self.params)  # fmt: skip
        return Output(item.item_id, detail=review.to_detail(), api_sources_queried=[self.model], api_calls=1,
                      model_id=response.model_id, prompt_hash=self.template_hash, tokens_in=response.tokens_in,
                      tokens_out=response.tokens_out, cost_usd=response.cost_usd, latency_s=response.latency_s,
                      cache_hits=int(response.cached))  # fmt: skip


@system("paper_reviewer_llm", accepts=("paper_copy",), requires=[package("litellm")],
        description="single-model paper reviewer (free_form | concise_structured | structured prompt)",
        runtime_args=("api_key_env",))  # fmt: skip
def build_paper_reviewer_llm(model: str, prompt_style: str = "free_form", api_base: str | None = None,
                             api_key_env: str | None = None, temperature: float | None = 0.0,
                             seed: int | None = 42, max_tokens: int = 8192,
                             max_paper_chars: int | None = None) -> PaperReviewerLLM:  # fmt: skip
    return PaperReviewerLLM(model, prompt_style=prompt_style, api_base=api_base, api_key_env=api_key_env,
                            temperature=temperature, seed=seed, max_tokens=max_tokens,
                            max_paper_chars=max_paper_chars)  # fmt: skip
