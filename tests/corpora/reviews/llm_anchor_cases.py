"""The review sentences the LLM injection path is exercised on, one anchor at a time, and the
recorded answers for them (`data/llm_injection_recording.jsonl`, the replay server's format).

Each case is a one-sentence review of a bundled sample paper (`corpora/samples/reviews_sample.jsonl`),
built with `--anchors <anchor>`: the builder's seeded draws then send exactly one injection prompt
per case (the anchor is given, the sentence is the only one, the leaf is drawn from the review id),
so the recording answers a known set of prompts. Sentences are the sample's own, except the two
Reasoning Error sentences (`written=True`): the sample has no sentence with an inferential step.

The recording's lines carry readable fields beside `messages_hash` and `response` (kind, anchor,
path, sentence, ...). `python -m tests.corpora.reviews.llm_anchor_cases` re-keys them (recomputes
each `messages_hash` from those fields) after a prompt changes; the answers then need a reread, as
they answer the old prompt.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from clients.llm_request import messages_hash
from corpora.reviews.equivalence import EQUIVALENCE_PROMPT
from corpora.reviews.ingest import review_source
from corpora.reviews.llm_injector import build_injection_messages
from corpora.reviews.screening import FEASIBILITY_PROMPT
from corpora.reviews.taxonomy import review_taxonomy

ROOT = Path(__file__).resolve().parents[3]
SAMPLE = ROOT / "corpora" / "samples" / "reviews_sample.jsonl"
RECORDING = Path(__file__).resolve().parent / "data" / "llm_injection_recording.jsonl"


@dataclass(frozen=True)
class Case:
    anchor: str
    review_id: str
    paper_id: str
    sentence: str
    written: bool = False
    """Written by the session in the sample's style (not a sentence of the sample)."""


CASES: tuple[Case, ...] = (
    Case("Number", "c-num-1", "paper-lumen", "The model has 4.2 million parameters and reaches 78.4 mIoU on OrbitSeg."),
    Case("Number", "c-num-2", "paper-sparrow", "Experiments use the 35-word Speech Commands set."),
    Case("Entity", "c-ent-1", "paper-tidal", "Their fine-tuned T5 answers 64.5% of the questions correctly."),
    Case("Entity", "c-ent-2", "paper-sparrow", "The paper prunes LSTM keyword spotters."),
    Case("False Concatenation", "c-fc-1", "paper-lumen", "The model has 4.2 million parameters and reaches 78.4 mIoU on OrbitSeg."),
    Case("False Concatenation", "c-fc-2", "paper-mosaic", "It improves BLEU by 1.7 on average across 24 language pairs."),
    Case("Attribution Failure", "c-af-1", "paper-tidal", "The authors build a dataset of tide-table questions from 40 harbours."),
    Case("Attribution Failure", "c-af-2", "paper-tidal", "Annotation took 6 months in 2022 according to the paper."),
    Case("Overgeneralization", "c-og-1", "paper-mosaic", "It improves BLEU by 1.7 on average across 24 language pairs."),
    Case("Overgeneralization", "c-og-2", "paper-sparrow", "Inference takes 2.5 ms per utterance on a phone CPU."),
    Case("Overgeneralization", "c-og-malformed", "paper-mosaic", "The gain on Nepali-English reaches 4.0."),
    Case("Overgeneralization", "c-og-equiv", "paper-mosaic", "The training budget of 300,000 steps is the same for all models, which is fair."),
    Case("Reasoning Error", "c-re-1", "paper-mosaic", "Because Mosaic reorders training batches by language difficulty, the largest gain appears on Nepali-English.", written=True),
    Case("Reasoning Error", "c-re-2", "paper-tidal", "Since the fine-tuned T5 answers 64.5% of the questions and prompting only 51.0%, fine-tuning helps on TidalQA.", written=True),
    Case("Hyperbole", "c-hy-1", "paper-mosaic", "It improves BLEU by 1.7 on average across 24 language pairs."),
    Case("Hyperbole", "c-hy-2", "paper-lumen", "This submission studies efficient attention for remote sensing."),
    Case("Temporal", "c-tmp-1", "paper-lumen", "The evaluation covers 3 datasets released in 2021."),
    Case("Temporal", "c-tmp-2", "paper-tidal", "Annotation took 6 months in 2022 according to the paper."),
    Case("Context-based Meaning Error", "c-cme-1", "paper-sparrow", "Inference takes 2.5 ms per utterance on a phone CPU."),
    Case("Context-based Meaning Error", "c-cme-2", "paper-lumen", "This submission studies efficient attention for remote sensing."),
)  # fmt: skip


def paper_texts() -> dict[str, str]:
    return {row["paper_id"]: row["paper_text"] for row in map(json.loads, SAMPLE.read_text().splitlines())}


def review_rows(anchor: str) -> list[dict[str, str]]:
    """The input lines (generic review JSONL) of one anchor's build."""
    papers = paper_texts()
    return [{"review_id": c.review_id, "paper_id": c.paper_id, "paper_text": papers[c.paper_id], "review_text": c.sentence}
            for c in CASES if c.anchor == anchor]  # fmt: skip


def aspect_of(case: Case) -> str | None:
    """The sentence's aspect tag as the ingest gives it (the feasibility prompt shows it)."""
    source = review_source(case.review_id, case.paper_id, case.sentence, paper_texts()[case.paper_id], "cases", 1)
    (sentence,) = source.copy.sentences
    return sentence.aspect


def inject_messages(sentence: str, path: list[str]) -> list[dict]:
    taxonomy = review_taxonomy()
    return build_injection_messages(sentence, tuple(path), taxonomy.anchor(path[0]).description,
                                    taxonomy.instruction(path[0], path[-1] if len(path) > 1 else None))  # fmt: skip


def feasible_messages(sentence: str, aspect: str | None, path: list[str]) -> list[dict]:
    taxonomy = review_taxonomy()
    instruction = taxonomy.instruction(path[0], path[-1] if len(path) > 1 else None)
    prompt = FEASIBILITY_PROMPT.format(instruction=instruction, sentence=sentence, labels=" > ".join(path), aspect=aspect or "-")
    return [{"role": "user", "content": prompt}]


def equivalent_messages(a: str, b: str) -> list[dict]:
    return [{"role": "user", "content": EQUIVALENCE_PROMPT.format(a=a, b=b)}]


def messages_of(line: dict) -> list[dict]:
    """The exact messages a recording line answers, from its readable fields."""
    kind = line["kind"]
    if kind == "inject":
        return inject_messages(line["sentence"], line["path"])
    if kind == "feasible":
        return feasible_messages(line["sentence"], line["aspect"], line["path"])
    if kind == "equivalent":
        return equivalent_messages(line["a"], line["b"])
    raise ValueError(f"unknown recording kind {kind!r}")


def read_recording(path: Path = RECORDING) -> list[dict]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def rekey(path: Path = RECORDING) -> int:
    lines = read_recording(path)
    for line in lines:
        if "kind" in line:
            line["messages_hash"] = messages_hash(messages_of(line))
    path.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return sum("kind" in x for x in lines)


if __name__ == "__main__":
    print(f"re-keyed {rekey(Path(sys.argv[1]) if len(sys.argv) > 1 else RECORDING)} lines")
