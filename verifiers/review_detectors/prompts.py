"""The RA-LLM judge prompts of HalluPeer appendix J (figures 16-21), and their answer contracts.

KR (figure 16), CoT (figure 17) and Contrast (figure 18) are the paper's templates, verbatim but
for two gaps the paper leaves: KR's few-shot demonstrations are elided in the paper ("Few-shot
examples including: misunderstanding context, factual contradiction, specificity level, and
logical inference…"), so four short demonstrations of those four kinds are written here; and the
type-classification prompt (figure 20) needs a label space, given as the nine anchors with the
descriptions of the paper's table 5. `general` is the general-purpose LLM's Task 1 prompt (figure
19: the Contrast/CoT header with no reasoning steps); `localise_prompt` is figure 21 (Task 3,
label-conditioned: given the review's sentences and one target type, return the one sentence that
shows it, or none).

Contracts: KR answers in prose whose last line must be `#Your Judgement#: Yes|No` (the paper's
format: "Yes" = hallucinated); CoT and Contrast answer a JSON object with a boolean
`hallucination` (general too); the type prompt answers `{"label": "<anchor>"}`; the localisation
prompt answers `{"result": []}` or `{"result": ["<the exact sentence>"]}`. Review mode (one call per
review, numbered sentences) keeps the style's instructions and asks for a JSON object listing the
hallucinated sentences with their type and the exact hallucinated phrase. Anything that does not
meet its contract raises `ParseError`: a parse failure is counted, never a verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from clients.errors import ParseError
from clients.llm_json import parse_json_answer
from corpora.reviews.records import ANCHORS

PROMPT_STYLES: tuple[str, ...] = ("kr", "cot", "contrast", "general")

ANCHOR_DEFINITIONS: dict[str, str] = {
    "Number": "A claim has a different number than the original context (e.g. 20% vs. 0.7%). Any number, including year, dimensions, ages, etc.",
    "Entity": "A claim includes swapped, incorrectly specified, or inserted noun phrases (e.g. one named entity used in a context where another word is expected).",
    "False Concatenation": "A claim incorrectly combines information about multiple entities or events.",
    "Attribution Failure": "A claim lacks proper attribution, either crediting the wrong source or presenting information as fact without citation.",
    "Overgeneralization": "A claim is based on accurate contextual information but is too broad or too general to be supported by the context.",
    "Reasoning Error": "A claim is based on accurate contextual information but contains a reasoning error or makes an unsupported conclusion.",
    "Hyperbole": "A claim is based on accurate information but exaggerated or overstated.",
    "Temporal": "A claim does not accurately incorporate tense, modality (e.g. might vs. will), or time reference in relation to the context.",
    "Context-based Meaning Error": "A claim includes incorrect interpretation of idiomatic language, homonyms, or words with multiple meanings, therefore failing to capture the intended meaning.",
}  # fmt: skip
assert tuple(ANCHOR_DEFINITIONS) == ANCHORS

KR_DEMOS = """#Question#: Use the following evidence as knowledge when judging.
[3] We evaluate on CIFAR-10 and report 91.2% top-1 accuracy.
Review statement: The model reaches 97.5% accuracy on CIFAR-10.
#Answer#: The model reaches 97.5% accuracy on CIFAR-10.
#Your Judgement#: Yes

#Question#: Use the following evidence as knowledge when judging.
[7] Our encoder is a 6-layer Transformer initialised from BERT-base.
Review statement: The authors build their encoder on BERT.
#Answer#: The authors build their encoder on BERT.
#Your Judgement#: No

#Question#: Use the following evidence as knowledge when judging.
[2] The method improves F1 on two of the five benchmarks.
Review statement: The method improves results on every benchmark considered.
#Answer#: The method improves results on every benchmark considered.
#Your Judgement#: Yes

#Question#: Use the following evidence as knowledge when judging.
[5] Removing the memory module lowers accuracy by 4 points.
Review statement: Since the memory module is removed in the ablation, the authors conclude it is unnecessary.
#Answer#: Since the memory module is removed in the ablation, the authors conclude it is unnecessary.
#Your Judgement#: Yes"""

KR_TEMPLATE = """You are a careful hallucination detector. Answer MUST be Yes or No.
### Instruction
I want you act as an answer judge. Given a question and an answer, your objective is to determine if the provided answer contains non-factual or hallucinated information. You SHOULD give your judgement based on the following hallucination types and the world knowledge.
{demos}
The answer you give MUST be "Yes" or "No".
—
### Output Format Requirement
1) You may provide brief reasoning.
2) The last line must be exactly: #Your Judgement#: Yes or #Your Judgement#: No
3) Do not output both labels in the final line.
—
### Input
#Question#: Use the following evidence as knowledge when judging.
{knowledge}
Review statement: {statement}
#Answer#: {statement}
#Your Judgement#:"""

_HEADER = """You are a scientific peer-review hallucination detector.
## Task
Determine whether the review sentence is hallucinated based strictly on the paper evidence.
## Definitions & Constraints
- A review claim is hallucinated if it is factually unsupported by, or incorrect relative to, the paper content.
- EXCLUSIONS: Do not evaluate tone (e.g., harshness). Do NOT treat subjective judgments, critiques, or opinions (e.g., whether novelty is high) as hallucinations. Focus strictly on factual grounding.
"""

_FOOTER = """## Instructions
- "true" = the sentence contains a factual claim that is hallucinated (unsupported or incorrect relative to the evidence).
- "false" = the sentence is factually supported by and consistent with the evidence, OR the sentence is purely a subjective judgment/critique.
- Output ONLY the JSON object. Do NOT include markdown tags like ```json."""

COT_STEPS = """Reasoning steps:
1) Briefly verify key facts from #Paper Evidence# against the #Review Sentence#.
2) Check consistency between the paper's intent/context and the #Review Sentence#.
3) Conclude with the final JSON judgement."""

CONTRAST_STEPS = """Contrastive reasoning:
1) List the strongest evidence from #Paper Evidence# that supports the #Review Sentence#.
2) List the strongest evidence from #Paper Evidence# that contradicts the #Review Sentence# or shows missing facts.
3) Decide which side is stronger and output the final JSON judgement."""

COT_FORMAT = '{ "reasoning": "<Step-by-step analysis following the three reasoning steps above.>", "hallucination": <true or false> }'
CONTRAST_FORMAT = ('{ "supporting_evidence": "<Strongest evidence from the paper that supports the review sentence.>", '
                   '"contradicting_evidence": "<Strongest evidence from the paper that contradicts the review sentence or '
                   'shows missing facts.>", "hallucination": <true or false> }')  # fmt: skip

SENTENCE_TEMPLATE = _HEADER + """{steps}
—
## Inputs
### PAPER EVIDENCE
\"\"\"{evidence}\"\"\"
### REVIEW SENTENCE
\"\"\"{sentence}\"\"\"
—
## Output Format
Return a valid JSON object ONLY, using EXACTLY the following template:
{format}
""" + _FOOTER

REVIEW_TEMPLATE = _HEADER.replace("the review sentence is", "any sentence of the review is") + """{steps}
Apply them to every numbered sentence of the review.
—
## Inputs
### HALLUCINATION LABELS
\"\"\"{labels}\"\"\"
### PAPER EVIDENCE
\"\"\"{evidence}\"\"\"
### REVIEW SENTENCES
\"\"\"{sentences}\"\"\"
—
## Output Format
Return a valid JSON object ONLY, using EXACTLY the following template:
{{ "hallucination": <true or false>, "hallucinated_sentences": [{{"index": <sentence number>, "type": "<one label>", "span": "<the exact hallucinated words, copied from the sentence>"}}] }}
## Instructions
- "hallucination" is true exactly when "hallucinated_sentences" is not empty.
- List only sentences with a factual claim that is unsupported by or incorrect relative to the evidence; subjective judgments are not hallucinations.
- Output ONLY the JSON object. Do NOT include markdown tags like ```json."""

TYPE_TEMPLATE = """You are a scientific peer-review hallucination detector.
## Task
Given a review sentence that has ALREADY been judged as hallucinated, classify the hallucination TYPE using the provided taxonomy labels.
## Definitions & Constraints
- The categories are mutually exclusive (MECE).
- You must rely strictly on the provided operational definitions in the HALLUCINATION LABELS, not just the label names.
## Inputs
### HALLUCINATION LABELS
\"\"\"{labels}\"\"\"
### PAPER EVIDENCE
\"\"\"{evidence}\"\"\"
### REVIEW SENTENCE
\"\"\"{sentence}\"\"\"
## Output Format
Return a valid JSON object ONLY, using EXACTLY the following template:
{{"label": "<concept>" }}
## Instructions
- The sentence is confirmed to be hallucinated. You MUST choose exactly ONE label corresponding to the "concept" field in the HALLUCINATION LABELS.
- Do NOT return "None" or invent new labels.
- If multiple labels seem plausible, choose the most specific one that aligns with the observable textual errors in the review sentence.
- Output ONLY the JSON object. Do NOT include markdown tags like ```json."""

NLI_TEMPLATE = """Premise (passages of a scientific paper):
{evidence}

Hypothesis (a sentence of a peer review of that paper):
{sentence}

Does the premise entail the hypothesis? Opinions and requests that state no fact about the paper count as entailed.
Answer with a JSON object only: {{"entailed": true}} or {{"entailed": false}}"""


GENERAL_FORMAT = '{"hallucination": <true or false> }'

LOCALISE_TEMPLATE = """You are a scientific peer-review hallucination detector.
## Task
Given a list of review sentences, return exactly one sentence that exhibits the specific hallucination described in the target label.
## Definitions & Constraints
- A claim is hallucinated if it is factually unsupported by, or incorrect relative to, the paper content.
- EXCLUSIONS: Do NOT treat subjective judgments, critiques, or opinions as hallucinations.
- You must strictly match the error in the sentence to the definition of the target label.
## Inputs
### TARGET HALLUCINATION LABEL
\"\"\"{label_with_definition}\"\"\"
### PAPER EVIDENCE
\"\"\"{evidence}\"\"\"
### REVIEW SENTENCES
\"\"\"{sentences}\"\"\"
## Output Format
Return a valid JSON object ONLY, using EXACTLY the following template:
{{"result": [] }}
## Instructions
- Base your judgment ONLY on the PAPER EVIDENCE and the definition of the TARGET HALLUCINATION LABEL.
- If NO sentence matches the target label, output an empty array for the result field: []
- If a sentence matches, output an array containing EXACTLY ONE string: ["<The exact hallucinated sentence>"]
- If multiple sentences are hallucinated for this label, pick the single most definitive one. If uncertain, pick your best guess.
- Output ONLY the JSON object. Do NOT include markdown tags like ```json."""


# The NLI baseline, batched: the sentences of one call share one premise (the union of their
# evidence), and the answer is one boolean per sentence, in the order listed. A list, not an object
# keyed by sentence number: a small model on CPU pays most of a call per output token (llama.cpp's
# grammar-constrained sampling), and `true, ` is two tokens where `"12": true, ` is six.
NLI_BATCH_TEMPLATE = """Premise (passages of a scientific paper):
{evidence}

Hypotheses (numbered sentences of a peer review of that paper):
{sentences}

For each hypothesis, does the premise entail it? Opinions and requests that state no fact about the paper count as entailed.
Answer with a JSON object only: {{"entailed": [...]}} with {count} values, one per hypothesis in the order listed ({order}), true when entailed and false when not."""

_NLI_LIST = re.compile(r'"entailed"\s*:\s*\[([^\]]*)', re.IGNORECASE)


def label_space() -> str:
    return "\n".join(f'- concept: "{name}" — {text}' for name, text in ANCHOR_DEFINITIONS.items())


def sentence_prompt(style: str, evidence: str, sentence: str) -> str:
    if style == "kr":
        return KR_TEMPLATE.format(demos=KR_DEMOS, knowledge=evidence, statement=sentence)
    if style == "nli":
        return NLI_TEMPLATE.format(evidence=evidence, sentence=sentence)
    steps, fmt = {"cot": (COT_STEPS, COT_FORMAT), "contrast": (CONTRAST_STEPS, CONTRAST_FORMAT),
                  "general": ("", GENERAL_FORMAT)}[style]  # fmt: skip
    return SENTENCE_TEMPLATE.format(steps=steps, evidence=evidence, sentence=sentence, format=fmt)


def review_prompt(style: str, evidence: str, numbered_sentences: str) -> str:
    steps = {"contrast": CONTRAST_STEPS, "general": ""}.get(style, COT_STEPS)
    if style == "kr":  # KR's demonstrations, then the review-level JSON contract
        steps = "Judge as in these demonstrations (\"Yes\" = hallucinated):\n" + KR_DEMOS
    return REVIEW_TEMPLATE.format(steps=steps, labels=label_space(), evidence=evidence, sentences=numbered_sentences)


def nli_batch_prompt(evidence: str, sentences: list[tuple[int, str]]) -> str:
    numbered = "\n".join(f"{index}. {text}" for index, text in sentences)
    order = ", ".join(str(index) for index, _ in sentences)
    return NLI_BATCH_TEMPLATE.format(evidence=evidence, sentences=numbered, count=len(sentences), order=order)


def nli_batch_format(count: int) -> dict:
    """The OpenAI `response_format` of a batched NLI answer: exactly `count` booleans. Without it a
    small model under a bare JSON grammar writes the sentences back as values."""
    answers = {"type": "array", "items": {"type": "boolean"}, "minItems": count, "maxItems": count}
    schema = {"type": "object", "properties": {"entailed": answers}, "required": ["entailed"], "additionalProperties": False}
    return {"type": "json_schema", "json_schema": {"name": "nli_batch", "schema": schema}}


def type_prompt(evidence: str, sentence: str) -> str:
    return TYPE_TEMPLATE.format(labels=label_space(), evidence=evidence, sentence=sentence)


def localise_prompt(anchor: str, evidence: str, sentences: list[str]) -> str:
    return LOCALISE_TEMPLATE.format(label_with_definition=f'concept: "{anchor}" — {ANCHOR_DEFINITIONS[anchor]}',
                                    evidence=evidence, sentences="\n".join(sentences))  # fmt: skip


_KR_VERDICT = re.compile(r"#\s*Your Judgement\s*#\s*:?\s*\**\s*(Yes|No)\b", re.IGNORECASE)


@dataclass(frozen=True)
class Judgement:
    hallucinated: bool
    method: str


def _boolean(value: object, field: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false"):
        return value.strip().lower() == "true"
    raise ParseError(f"{field} {value!r} is not true or false")


def read_sentence_answer(style: str, text: str | None) -> Judgement:
    """The verdict on one sentence; `ParseError` when the answer breaks its contract."""
    if style == "kr":
        found = _KR_VERDICT.findall(text or "")
        if not found:
            raise ParseError(f"no '#Your Judgement#: Yes|No' line in answer: {(text or '')[:120]!r}")
        return Judgement(found[-1].lower() == "yes", "kr_line")
    if style == "nli":
        parsed = parse_json_answer(text, required=("entailed",))
        return Judgement(not _boolean(parsed.data["entailed"], "entailed"), parsed.method)
    parsed = parse_json_answer(text, required=("hallucination",))
    return Judgement(_boolean(parsed.data["hallucination"], "hallucination"), parsed.method)


@dataclass(frozen=True)
class BatchJudgement:
    """One batched NLI answer read sentence by sentence: `hallucinated` for the sentences it
    answers, `problems` (sentence index -> why) for the others."""

    hallucinated: dict[int, bool]
    problems: dict[int, str]
    method: str | None


def read_nli_batch_answer(text: str | None, indices: list[int]) -> BatchJudgement:
    """Each asked sentence's value in a batched NLI answer (`{"entailed": [...]}`, in order). A
    missing or non-boolean value leaves that sentence unanswered (a problem), never the others; an
    answer cut short (max_tokens) keeps the values before the cut."""
    try:
        parsed = parse_json_answer(text, required=("entailed",))
        values, method = parsed.data["entailed"], parsed.method
    except ParseError as exc:
        cut = _NLI_LIST.search(text or "")
        values = [v.strip() for v in cut.group(1).split(",")][:-1] if cut else []  # the last value may be cut
        values = [v.lower() == "true" for v in values if v.lower() in ("true", "false")]
        method = "salvaged" if values else None
        if not values:
            return BatchJudgement({}, {i: exc.message for i in indices}, None)
    if not isinstance(values, list):
        return BatchJudgement({}, {i: f"entailed {values!r} is not a list" for i in indices}, None)
    hallucinated: dict[int, bool] = {}
    problems: dict[int, str] = {}
    for position, index in enumerate(indices):
        if position >= len(values):
            problems[index] = f"no value for sentence {index} ({len(values)} values for {len(indices)} sentences)"
            continue
        try:
            hallucinated[index] = not _boolean(values[position], f"value for sentence {index}")
        except ParseError as exc:
            problems[index] = exc.message
    return BatchJudgement(hallucinated, problems, method)


def read_type_answer(text: str | None) -> str:
    parsed = parse_json_answer(text, required=("label",))
    label = str(parsed.data["label"]).strip()
    match = next((a for a in ANCHORS if a.lower() == label.lower()), None)
    if match is None:
        raise ParseError(f"label {label!r} is not one of the nine anchors")
    return match


def _normalised(text: str) -> str:
    return " ".join(text.split()).strip().strip('"').lower()


def read_localise_answer(text: str | None, sentences: list[str]) -> int | None:
    """Index (into `sentences`) of the sentence the figure-21 answer returns, None for `[]`;
    `ParseError` when the answer is not that contract or names no sentence of the review (the
    returned string is matched whitespace- and case-insensitively, or as part of one sentence)."""
    parsed = parse_json_answer(text, required=("result",))
    result = parsed.data["result"]
    if not isinstance(result, list) or len(result) > 1 or not all(isinstance(r, str) for r in result):
        raise ParseError(f"result {result!r} is not an empty list or a list of one sentence")
    if not result:
        return None
    said = _normalised(result[0])
    if not said:
        raise ParseError("result holds an empty sentence")
    normal = [_normalised(s) for s in sentences]
    for match in ((i for i, s in enumerate(normal) if s == said), (i for i, s in enumerate(normal) if said in s)):
        found = next(match, None)
        if found is not None:
            return found
    raise ParseError(f"result {result[0][:80]!r} is not a sentence of the review")
