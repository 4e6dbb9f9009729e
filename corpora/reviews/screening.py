"""Per-sentence screening and the feasibility check (HalluPeer §4.2, algorithm 2, figs. 10-11).

Screening (`IsApplicable(s, c)`) asks which anchors have their raw material in a sentence, by the
prerequisites of fig. 10 written as rules: Number needs an explicit numeric value, Entity a named
entity, Temporal a tense/modality/time marker, Reasoning Error an inferential or causal step, and
so on. A heading has none; an anchor that avoids the sentence's aspect is dropped (§4.1).
What says nothing about the paper is no place for a hallucination (`clauses.py`): a question has
no anchor at all; the reviewer's own hedged or speculative clause is open only to the anchors whose
taxonomy entry says `edits_hedges` (Hyperbole, Overgeneralization); a list marker is never edited.
`rule_places` is where a rule anchor may edit, the same for screening and for the builder.

The feasibility check (`Check_M(T, s)`) then decides per template (sentence, anchor, leaf): a rule
template is feasible when its rule injector finds a place to edit; an LLM template needs a gateway
and, when an `LLMFeasibilityCheck` is given, the model's strict true/false (fig. 11 prompt).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass

from corpora.reviews.aspects import is_heading
from corpora.reviews.clauses import absence_spans, hedged_spans, in_spans, is_question
from corpora.reviews.gateway import CompletionGateway
from corpora.reviews.grounding import about_paper, field_spans, place_grounded
from corpora.reviews.rule_injectors import Candidate, entity_candidates, rule_candidates
from corpora.reviews.taxonomy import AnchorSpec, ReviewTaxonomy


def _words(*words: str) -> re.Pattern:
    return re.compile(r"(?<![\w-])(?:" + "|".join(words) + r")(?![\w-])", re.I)


_NAME = re.compile(r"(?<![\w-])(?:[A-Z][a-z]+[A-Z]\w*|[A-Z]{2,}[\w-]*|[A-Z][\w]*-\d[\w.]*)(?![\w-])")
_PLURAL_SUBJECTS = _words(r"and", r"both", r"while", r"whereas", r"compared (?:to|with)", r"than", r"versus", r"vs\.?")
_ATTRIBUTION = _words(r"the authors?", r"the paper", r"this paper", r"this work", r"the study", r"they",
                      r"(?:show|shows|showed|shown|demonstrat\w*|report\w*|claim\w*|propos\w*|find|found|state\w*)",
                      r"et al\.?", r"table", r"figure", r"fig\.", r"section", r"\[\d+\]")  # fmt: skip
_CLAIM = _words(r"outperform\w*", r"improv\w*", r"achiev\w*", r"results?", r"show\w*", r"demonstrat\w*",
                r"effective\w*", r"works?", r"generaliz\w*", r"perform\w*", r"better", r"all", r"some", r"on")  # fmt: skip
_REASONING = _words(r"because", r"therefore", r"thus", r"hence", r"since", r"due to", r"leads? to", r"so that",
                    r"as a result", r"which means", r"suggest\w*", r"indicat\w*", r"impl(?:y|ies)", r"consequently",
                    r"in order to", r"thereby", r"if", r"given that", r"resulting in")  # fmt: skip
_EVALUATIVE = _words(r"outperform\w*", r"better", r"improv\w*", r"significant\w*", r"good", r"strong\w*",
                     r"effective\w*", r"competitive", r"novel", r"interesting", r"promising", r"impressive",
                     r"superior", r"state-of-the-art", r"sota", r"substantial\w*", r"well", r"robust\w*",
                     r"efficient\w*", r"comprehensive", r"clear\w*", r"valuable", r"useful", r"important")  # fmt: skip
_AMBIGUOUS = _words(r"attention", r"kernel", r"bias", r"precision", r"recall", r"regulari[sz]\w*", r"sparse",
                    r"bound", r"upper bound", r"lower bound", r"maximi[sz]\w*", r"minimi[sz]\w*", r"alignment",
                    r"capacity", r"confidence", r"entropy", r"gradient", r"prior", r"posterior", r"token\w*",
                    r"embedding\w*", r"layer\w*", r"head\w*", r"memory", r"agent\w*", r"policy", r"reward",
                    r"grounding", r"transfer", r"distillation", r"calibrat\w*", r"supervis\w*", r"context")  # fmt: skip


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """The text with `spans` blanked (same length, so offsets hold)."""
    for a, b in spans:
        text = text[:a] + " " * (b - a) + text[b:]
    return text


def rule_places(spec: AnchorSpec, text: str, paper_text: str = "",
                hedged: list[tuple[int, int]] | None = None, require_grounding: bool = False) -> list[Candidate]:  # fmt: skip
    """Where the anchor's rule injector may edit the sentence: none in a question, none in a claim
    that the paper lacks something (a swap there may leave it true), none in the reviewer's hedged
    clauses unless the anchor edits hedges. With `require_grounding`, only places whose original
    value the paper states, in a sentence about the paper (`grounding.py`)."""
    if not spec.rule_injector or is_question(text):
        return []
    if require_grounding and not about_paper(text, paper_text):
        return []
    places = rule_candidates(spec.rule_injector, text, paper_text)
    if spec.edits_hedges:
        hedged = []
    elif hedged is None:
        hedged = hedged_spans(text)
    closed = absence_spans(text) + hedged + (field_spans(text) if require_grounding else [])
    places = [c for c in places if not in_spans(c.start, c.end, closed)]
    if require_grounding:
        places = [c for c in places if place_grounded(c.kind, text, c.start, c.end, paper_text)]
    return places


def screen_sentence(text: str, aspect: str | None, taxonomy: ReviewTaxonomy, paper_text: str = "",
                    anchors: Collection[str] | None = None, require_grounding: bool = False) -> tuple[str, ...]:  # fmt: skip
    """The anchors (of `anchors`, default all) whose prerequisites the sentence meets, in taxonomy order.
    `require_grounding` applies to the rule anchors (`rule_places`)."""
    if is_heading(text) or len(text.split()) < 4 or is_question(text):
        return ()
    hedged = hedged_spans(text)
    claim = _masked(text, hedged)  # what the reviewer asserts, not speculates
    cues: dict[bool, dict[str, bool]] = {}

    def llm_cues(edits_hedges: bool) -> dict[str, bool]:
        """The cue checks of the anchors without a rule injector, on the text they may edit (once per text)."""
        if edits_hedges not in cues:
            t = text if edits_hedges else claim
            names = _NAME.findall(t)
            n_entities = len(entity_candidates(t, paper_text))
            entity = bool(names) or n_entities > 0
            cues[edits_hedges] = {
                "False Concatenation": (len(names) + n_entities >= 2) or (entity and bool(_PLURAL_SUBJECTS.search(t))),
                "Attribution Failure": bool(_ATTRIBUTION.search(t)),
                "Overgeneralization": bool(_CLAIM.search(t)),
                "Reasoning Error": bool(_REASONING.search(t)),
                "Hyperbole": bool(_EVALUATIVE.search(t)),
                "Context-based Meaning Error": bool(_AMBIGUOUS.search(t)) or bool(re.search(r"\b[A-Z]{2,}\b", t)),
                # an anchor a user file gives no rule injector: the entity/number cues stand in
                "Number": bool(re.search(r"\d", t)),
                "Entity": entity,
                "Temporal": bool(re.search(r"\b(?:19|20)\d{2}\b|\b(?:recent\w*|prior|earlier|later|will|might|may)\b", t, re.I)),
            }  # fmt: skip
        return cues[edits_hedges]

    def ok(spec: AnchorSpec) -> bool:
        if spec.rule_injector:
            return bool(rule_places(spec, text, paper_text, hedged, require_grounding))
        return llm_cues(spec.edits_hedges)[spec.name]

    return tuple(a.name for a in taxonomy.anchors
                 if (anchors is None or a.name in anchors) and (aspect or "") not in a.avoid_aspects and ok(a))  # fmt: skip


FEASIBILITY_PROMPT = """You are a compatibility checker for hallucination injection templates in scientific paper reviews.
## TASK
Given a template with four fields, decide whether the hallucination defined by Hallucination_Instruction and Hallucination_Labels can be coherently injected into Injection_Sentence while remaining grounded in Injection_Aspect. Output true only if ALL conditions below hold. Be strict and conservative.
## COMPATIBILITY CONDITIONS
1. Operational applicability: the operation described in Hallucination_Instruction can be concretely performed on Injection_Sentence; there must exist a target in the sentence to modify, replace, exaggerate, or fabricate.
2. Semantic prerequisites of the leaf type: Hallucination_Labels is a taxonomy path (root > ... > leaf). The LEAF node defines the specific hallucination type. Its semantic prerequisites must be present in Injection_Sentence (Number leaf: numeric value present; Entity leaf: named entity that can be swapped; Temporal leaf: tense / modality / time marker; Reasoning leaf: inferential or causal step). If the prerequisite is absent, output false.
3. Aspect grounding: every tag in Injection_Aspect must be substantively supported by Injection_Sentence.
4. Realistic edit: applying the hallucination must yield a plausible review sentence, not a nonsensical or category-error edit. If the only way to inject the hallucination is to invent unrelated content, output false.
## INPUT
Hallucination_Instruction:
{instruction}
Injection_Sentence:
{sentence}
Hallucination_Labels:
{labels}
Injection_Aspect:
{aspect}
## OUTPUT (STRICT)
Output exactly one word: true or false. No explanation, no punctuation, no extra text."""


@dataclass
class FeasibilityStats:
    asked: int = 0
    infeasible: int = 0
    parse_failures: int = 0


class LLMFeasibilityCheck:
    """Check_M through the gateway; an answer that is neither true nor false counts as infeasible
    (the paper's checker is 'strict and conservative') and as a parse failure."""

    def __init__(self, gateway: CompletionGateway, params: dict | None = None) -> None:
        self.gateway = gateway
        self.params = {"temperature": 0.0, "max_tokens": 4, **(params or {})}
        self.stats = FeasibilityStats()

    async def feasible(self, sentence: str, aspect: str | None, path: tuple[str, ...], instruction: str) -> bool:
        self.stats.asked += 1
        prompt = FEASIBILITY_PROMPT.format(instruction=instruction, sentence=sentence,
                                           labels=" > ".join(path), aspect=aspect or "-")  # fmt: skip
        response = await self.gateway.complete([{"role": "user", "content": prompt}], self.params)
        answer = (response.text or "").strip().strip(".").lower()
        if answer not in ("true", "false"):
            self.stats.parse_failures += 1
            self.stats.infeasible += 1
            return False
        if answer == "false":
            self.stats.infeasible += 1
        return answer == "true"


__all__ = ["FEASIBILITY_PROMPT", "FeasibilityStats", "LLMFeasibilityCheck", "rule_places", "screen_sentence"]
