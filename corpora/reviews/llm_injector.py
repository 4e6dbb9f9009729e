"""The LLM injector (HalluPeer §4.3, Inject_M, fig. 14) for anchors without a rule edit.

One prompt per anchor: the paper's injection prompt, the anchor's definition (table 5), a short
anchor-specific edit guide, and the leaf's operational instruction delta_v. The answer must be one
JSON object `{"sentence": "<the modified sentence>"}`; anything else is a parse failure, counted
(`InjectorStats.parse_failures`), never a silent keep. A rewrite that keeps less than half of the
original (rapidfuzz ratio) breaks the paper's "do not alter other parts unnecessarily" and is
rejected and counted too.
"""

from __future__ import annotations

from dataclasses import dataclass

from rapidfuzz import fuzz

from corpora.reviews.gateway import CompletionGateway, first_json_object

MIN_SIMILARITY = 50.0

ANCHOR_GUIDES = {
    "Number": "Change one numeric value (a count, score, percentage, year or parameter) to a different, plausible value.",
    "Entity": "Replace one named entity (method, model, dataset, metric, component) with a different, plausible one.",
    "False Concatenation": "Merge facts about two different entities, settings or events so that a property of one is attached to the other.",
    "Attribution Failure": "Credit a statement to the wrong source (the paper vs. prior work, a different table, figure or section), or state an unsupported fact as the paper's result.",
    "Overgeneralization": "Widen the scope of the claim (to all tasks, datasets, domains or settings) beyond what the sentence supports.",
    "Reasoning Error": "Introduce a faulty inference or unsupported conclusion (reverse a cause, invert a comparison, or draw a conclusion that does not follow).",
    "Hyperbole": "Exaggerate or overstate the claim (its strength, certainty, or size of an effect) without changing the facts it is about.",
    "Temporal": "Change the tense, modality (might vs. will) or time reference of the claim.",
    "Context-based Meaning Error": "Use a technical term, acronym or ambiguous word with a meaning different from the one the context intends.",
}  # fmt: skip

INJECTION_PROMPT = """You are an expert hallucination generator for review sentences.
## TASK
Your task is to introduce the specific hallucination described in the instruction into the given sentence. Follow the instruction precisely and produce a natural, coherent sentence that reflects the hallucination. Do not alter other parts of the sentence unnecessarily.
## HALLUCINATION TYPE
{path}
Definition: {definition}
How: {guide}
Hallucination_Instruction: {instruction}
## INPUT
Injection_Sentence: {sentence}
## OUTPUT_FORMAT
Return ONLY one JSON object: {{"sentence": "<the modified sentence>"}}. No explanations, no other text."""


class InjectionParseError(ValueError):
    """The model's answer does not follow the JSON contract."""


class InjectionRejected(ValueError):
    """The model's sentence is usable JSON but not an acceptable edit (empty, or a rewrite)."""


@dataclass
class InjectorStats:
    calls: int = 0
    parse_failures: int = 0
    rejected: int = 0


def build_injection_messages(sentence: str, path: tuple[str, ...], definition: str, instruction: str) -> list[dict]:
    prompt = INJECTION_PROMPT.format(path=" > ".join(path), definition=definition, guide=ANCHOR_GUIDES[path[0]],
                                     instruction=instruction, sentence=sentence)  # fmt: skip
    return [{"role": "user", "content": prompt}]


def parse_injection(text: str | None, original: str) -> str:
    data = first_json_object(text)
    if data is None:
        raise InjectionParseError("no JSON object in the answer")
    sentence = data.get("sentence")
    if not isinstance(sentence, str):
        raise InjectionParseError("field 'sentence' missing or not a string")
    sentence = " ".join(sentence.split())
    if not sentence:
        raise InjectionRejected("empty sentence")
    if fuzz.ratio(original, sentence) < MIN_SIMILARITY:
        raise InjectionRejected(f"rewrite too large (similarity {fuzz.ratio(original, sentence):.0f} < {MIN_SIMILARITY:.0f})")
    return sentence


class LLMInjector:
    """Inject_M through the gateway (temperature 0, as the paper)."""

    def __init__(self, gateway: CompletionGateway, params: dict | None = None) -> None:
        self.gateway = gateway
        self.params = {"temperature": 0.0, "max_tokens": 400, **(params or {})}
        self.stats = InjectorStats()

    async def inject(self, sentence: str, path: tuple[str, ...], definition: str, instruction: str) -> str:
        """The hallucinated sentence; raises InjectionParseError / InjectionRejected (and counts them)."""
        self.stats.calls += 1
        response = await self.gateway.complete(build_injection_messages(sentence, path, definition, instruction), self.params)
        try:
            return parse_injection(response.text, sentence)
        except InjectionParseError:
            self.stats.parse_failures += 1
            raise
        except InjectionRejected:
            self.stats.rejected += 1
            raise


__all__ = [
    "ANCHOR_GUIDES",
    "INJECTION_PROMPT",
    "InjectionParseError",
    "InjectionRejected",
    "InjectorStats",
    "LLMInjector",
    "build_injection_messages",
    "parse_injection",
]
