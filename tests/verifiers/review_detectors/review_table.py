"""A small hand-made table of reviews, their truth, and the answers a CoT judge gave (recorded as
replay-server rules), with the metric values those answers must produce (computed by hand)."""

from __future__ import annotations

import json

from corpora.reviews.records import ReviewCopy
from storage.records import Item
from tests.scoring.reviews.review_fixtures import copy_of, injection, truth_of

PAPERS = {
    "P1": "We propose GraphNet for node classification. It reaches 81.2% accuracy on Cora. "
          "Training takes 3 hours on one GPU.",
    "P2": "We fine-tune BERT on SQuAD. Results improve by 2 points on SQuAD and on NewsQA.",
    "P3": "We study adoption of retrieval models. Experiments cover five datasets.",
}  # fmt: skip


def table():
    r1 = copy_of("R1", "P1", ["The paper proposes GraphNet for node classification.", "It reaches 95.0% accuracy on Cora."], PAPERS["P1"])
    r2 = copy_of("R2", "P1", ["Training takes 3 hours on one GPU.", "The writing could be clearer."], PAPERS["P1"])
    r3 = copy_of("R3", "P2", ["The authors fine-tune RoBERTa on SQuAD.", "Results improve by 2 points."], PAPERS["P2"])
    r4 = copy_of("R4", "P2", ["Results improve on every benchmark.", "The method is simple."], PAPERS["P2"])
    r5 = copy_of("R5", "P3", ["The model will surely be adopted by industry.", "Experiments are thorough."], PAPERS["P3"])
    truths = [truth_of(r1, injection(r1, 1, "95.0%", "Number")), truth_of(r2),
              truth_of(r3, injection(r3, 0, "RoBERTa", "Entity")),
              truth_of(r4, injection(r4, 0, "every benchmark", "Overgeneralization")), truth_of(r5)]  # fmt: skip
    return [r1, r2, r3, r4, r5], truths


def cot(hallucination: bool) -> str:
    return json.dumps({"reasoning": "checked against the evidence", "hallucination": hallucination})


# (sentence, what the judge answered, the type it gave when asked)
ANSWERS = [
    ("The paper proposes GraphNet for node classification.", cot(False), None),
    ("It reaches 95.0% accuracy on Cora.", cot(True), "Number"),
    ("Training takes 3 hours on one GPU.", cot(False), None),
    ("The writing could be clearer.", cot(True), "Hyperbole"),
    ("The authors fine-tune RoBERTa on SQuAD.", cot(False), None),
    ("Results improve by 2 points.", cot(False), None),
    ("Results improve on every benchmark.", "```json\n" + cot(True) + "\n```", "Overgeneralization"),
    ("The method is simple.", cot(False), None),
    ("The model will surely be adopted by industry.", "I think this sentence is fine.", None),  # breaks the contract
    ("Experiments are thorough.", cot(False), None),
]

# Overgeneralization recorded as Hyperbole to make Task 2 imperfect: the type answer for R4 s0.
TYPE_GIVEN = {"Results improve on every benchmark.": "Hyperbole"}


def recording_rules() -> list[dict]:
    """Replay-server rule lines: a sentence prompt ends its sentence block with '—', a type prompt
    with '## Output Format'; each sentence text is unique in the table, so the match is exact."""
    rules = []
    for sentence, answer, given in ANSWERS:
        usage = {"model_id": "recorded-judge", "tokens_in": 300, "tokens_out": 20, "finish_reason": "stop"}
        rules.append({"match": {"contains": f'"""{sentence}"""\n—', "last_role": "user"}, "response": {"text": answer, **usage}})
        if given:
            label = TYPE_GIVEN.get(sentence, given)
            rules.append({"match": {"contains": f'"""{sentence}"""\n## Output Format', "last_role": "user"},
                          "response": {"text": json.dumps({"label": label}), **usage}})  # fmt: skip
    return rules


def items_of(copies: list[ReviewCopy]) -> list[Item]:
    return [Item(c.review_id, "review", "hand-table", None, c.to_payload()) for c in copies]


# Hand-computed from ANSWERS (R5 is a parse failure, left out of every denominator):
# review level TP R1, R4; FP R2; FN R3 — sentence level TP 2, FP 1, FN 1, TN 4.
# Task 2: R1 Number right; R3 Entity untyped (FN); R4 Overgeneralization given as Hyperbole.
# Task 3 (spans = flagged sentences): tokens TP 6, FP 16, FN 1; overlap matches R1, R4 of 3 and 3.
EXPECTED = {
    "review_accuracy": 0.5, "review_precision": 2 / 3, "review_recall": 2 / 3, "review_f1": 2 / 3,
    "review_mcc": -1 / 3,
    "sentence_accuracy": 0.75, "sentence_precision": 2 / 3, "sentence_recall": 2 / 3, "sentence_f1": 2 / 3,
    "sentence_mcc": 7 / 15,
    "type_macro_f1": 0.25, "type_micro_f1": 0.4,
    "token_f1": 12 / 29, "exact_span_f1": 0.0, "overlap_span_f1": 2 / 3,
}  # fmt: skip
