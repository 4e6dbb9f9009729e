"""Aspect tags for review sentences (HalluPeer §4.1, appendix B.2): rule-based, or an LLM option.

A tag says what a sentence is about, and it constrains injection: an anchor may list aspects it
avoids (taxonomy.toml `avoid_aspects`, e.g. no Number edit in a Clarity sentence). The rule tagger
counts cue words per aspect; a sentence under a "Summary" heading is `summary` unless nothing else
is plausible, and a sentence with no cue is `other`. The LLM tagger asks the model through the
injected gateway with the paper's single-label prompt (fig. 12) and falls back to the rule tag when
the answer is not `{"Aspects": [...]}` with a known label, counting the failure.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass

from corpora.reviews.gateway import CompletionGateway, first_json_object

ASPECTS: tuple[str, ...] = (
    "summary",
    "novelty",
    "significance",
    "soundness",
    "experiments",
    "results",
    "clarity",
    "related_work",
    "reproducibility",
    "limitations",
    "ethics",
    "other",
)

# Cue words per aspect (stems are matched at word starts, case-insensitively).
_CUES: dict[str, tuple[str, ...]] = {
    "novelty": ("novel", "novelty", "original", "new idea", "incremental", "first to", "innovative", "contribution"),
    "significance": ("significan", "impact", "important", "useful", "interest", "practical value", "relevan"),
    "soundness": ("sound", "theor", "proof", "assumption", "justif", "rigor", "correct", "derivation", "lemma",
                  "theorem", "valid", "flaw", "bound"),
    "experiments": ("experiment", "evaluat", "baseline", "ablation", "dataset", "benchmark", "setup", "trained",
                    "training", "fine-tun", "hyperparameter", "test set", "empirical"),
    "results": ("result", "outperform", "accuracy", "score", "improve", "performance", "achiev", "gain", "f1",
                "bleu", "state-of-the-art", "sota", "table", "%"),
    "clarity": ("clear", "clarity", "unclear", "writing", "written", "typo", "confus", "readab", "presentation",
                "explain", "notation", "organiz", "grammar", "figure", "hard to follow", "easy to follow"),
    "related_work": ("related work", "prior work", "previous work", "literature", "et al", "cite", "citation",
                     "compared to existing", "existing work", "existing method", "concurrent"),
    "reproducibility": ("reproduc", "code", "implementation detail", "release", "open source", "open-source",
                        "replicat", "hyperparameters are not"),
    "limitations": ("limitation", "limited", "weakness", "drawback", "fail", "shortcoming", "does not address",
                    "generaliz", "scalab"),
    "ethics": ("ethic", "bias", "fairness", "privacy", "harm", "societal", "misuse", "consent"),
}
_SUMMARY_HEADING = re.compile(r"\bsummar", re.I)
_PATTERNS = {a: re.compile(r"(?<![\w-])(?:" + "|".join(re.escape(c) for c in cues) + r")", re.I)
             for a, cues in _CUES.items()}  # fmt: skip


def is_heading(text: str) -> bool:
    """A section heading segment ("Strengths:", "Summary Of The Paper:")."""
    stripped = text.strip()
    return stripped.endswith(":") and len(stripped.split()) <= 8


def rule_aspect(text: str, in_summary: bool = False) -> str:
    """The aspect of one sentence by cue words (ties go to the earlier aspect of ASPECTS)."""
    if is_heading(text):
        return "summary" if _SUMMARY_HEADING.search(text) else "other"
    counts = {a: len(p.findall(text)) for a, p in _PATTERNS.items()}
    best = max(counts.values())
    if in_summary:
        return "summary"
    if best == 0:
        return "other"
    return next(a for a in ASPECTS if counts.get(a) == best)


def rule_aspects(texts: Sequence[str]) -> list[str]:
    """Aspects of a review's sentences in order, following its section headings."""
    out, in_summary = [], False
    for t in texts:
        if is_heading(t):
            in_summary = bool(_SUMMARY_HEADING.search(t))
        out.append(rule_aspect(t, in_summary))
    return out


ASPECT_PROMPT = """You are an expert at aspect-based text classification.
TASK: Given a review sentence and a list of candidate aspect labels, identify the SINGLE aspect label that best matches the main focus of the review.
REVIEW SENTENCE: "{sentence}"
ASPECT LABEL SET (fixed and closed): {labels}
INSTRUCTIONS: - Choose exactly ONE aspect from the candidate list. - Do NOT create new aspects. - Do NOT explain your reasoning.
OUTPUT FORMAT (STRICT): Return a valid JSON dictionary exactly in the following structure: {{"Aspects": ["Aspect"]}}"""


@dataclass
class AspectStats:
    asked: int = 0
    parse_failures: int = 0


class LLMAspectTagger:
    """Aspect tags from a model through the gateway; the rule tag where its answer is unusable."""

    def __init__(self, gateway: CompletionGateway, params: dict | None = None) -> None:
        self.gateway = gateway
        self.params = {"temperature": 0.0, "max_tokens": 64, **(params or {})}
        self.stats = AspectStats()

    async def tag(self, texts: Sequence[str]) -> list[str]:
        fallback = rule_aspects(texts)
        out = []
        for text, rule in zip(texts, fallback, strict=True):
            if is_heading(text):
                out.append(rule)
                continue
            self.stats.asked += 1
            prompt = ASPECT_PROMPT.format(sentence=text, labels=json.dumps(list(ASPECTS)))
            response = await self.gateway.complete([{"role": "user", "content": prompt}], self.params)
            data = first_json_object(response.text)
            labels = data.get("Aspects") if data else None
            label = labels[0] if isinstance(labels, list) and labels else None
            if isinstance(label, str) and label.strip().lower().replace(" ", "_") in ASPECTS:
                out.append(label.strip().lower().replace(" ", "_"))
            else:
                self.stats.parse_failures += 1
                out.append(rule)
        return out


__all__ = ["ASPECTS", "ASPECT_PROMPT", "AspectStats", "LLMAspectTagger", "is_heading", "rule_aspect", "rule_aspects"]
