"""The semantic-equivalence verifier (HalluPeer §4.3, Verify_M): discards no-op injections.

Rule-based first: two sentences are equivalent when their normalised texts are equal (Unicode
NFKC, case, quotes and dashes, whitespace, final punctuation) after every number is replaced by
its value (decimal, thousands-separated and count-word forms: "0.50" = "0.5", "five" = "5",
"1,000" = "1000"). An optional LLM judge with the paper's strict prompt (fig. 15)
then decides the rest; an answer that is not 0 or 1 is counted and the rule decision stands.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from corpora.reviews.gateway import CompletionGateway

_WORD_NUMBERS = {"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "hundred": 100}  # fmt: skip
_NUMBER = re.compile(r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?|\b(?:" + "|".join(_WORD_NUMBERS) + r")\b", re.I)
_TRANSLATE = str.maketrans({"‘": "'", "’": "'", "“": '"', "”": '"', "–": "-", "—": "-", "−": "-", "\u00a0": " "})


def _value(token: str) -> str:
    low = token.lower()
    if low in _WORD_NUMBERS:
        return f"<{_WORD_NUMBERS[low]:g}>"
    return f"<{float(token.replace(',', '')):g}>"


def normalise(text: str) -> str:
    """The comparison form of a sentence: numbers by value, case, punctuation and spacing folded."""
    text = unicodedata.normalize("NFKC", text).translate(_TRANSLATE).casefold()
    text = _NUMBER.sub(lambda m: _value(m.group(0)), text)
    text = re.sub(r"\s*%", "%", text)
    text = re.sub(r"\s+([,.;:!?)])", r"\1", text)
    text = re.sub(r"\s+", " ", text).strip()
    return text.rstrip(".!;: ")


def rule_equivalent(original: str, injected: str) -> bool:
    """True when the injected sentence says the same as the original by the rules above."""
    return normalise(original) == normalise(injected)


EQUIVALENCE_PROMPT = """## TASK:
You are an expert reviewer specializing in fine-grained semantic comparison of review statements. Your task is to determine whether two review sentences are strictly semantically equivalent. Equivalence (score = 1) should be rare and assigned only in near-identical paraphrase cases. In ambiguous cases, choose 0.
## INPUT:
Review Sentence A: {a}
Review Sentence B: {b}
## CRITERIA:
The two sentences are semantically equivalent ONLY IF ALL of the following are true:
- Each sentence fully entails the other.
- No opinions, facts, or sentiments are added or omitted.
- No difference in emphasis, scope, certainty, or evaluative strength.
- No additional qualifiers or implications are introduced.
- The sentences are fully interchangeable in the same review context.
If ANY difference exists, the equivalence score MUST be 0.
## OUTPUT:
Return the equivalence score as a single digit:
- 1: Strict semantic equivalence
- 0: Not strictly semantically equivalent
Return only: 0 or 1"""


@dataclass
class EquivalenceStats:
    rule_equivalent: int = 0
    judge_equivalent: int = 0
    judge_parse_failures: int = 0


class EquivalenceVerifier:
    """Verify_M: rules, then (when a gateway is given) the LLM judge."""

    def __init__(self, gateway: CompletionGateway | None = None, params: dict | None = None) -> None:
        self.gateway = gateway
        self.params = {"temperature": 0.0, "max_tokens": 4, **(params or {})}
        self.stats = EquivalenceStats()

    async def equivalent(self, original: str, injected: str) -> bool:
        if rule_equivalent(original, injected):
            self.stats.rule_equivalent += 1
            return True
        if self.gateway is None:
            return False
        prompt = EQUIVALENCE_PROMPT.format(a=original, b=injected)
        response = await self.gateway.complete([{"role": "user", "content": prompt}], self.params)
        answer = (response.text or "").strip()
        m = re.match(r"^\W*([01])\W*$", answer)
        if not m:
            self.stats.judge_parse_failures += 1
            return False
        if m.group(1) == "1":
            self.stats.judge_equivalent += 1
            return True
        return False


__all__ = ["EQUIVALENCE_PROMPT", "EquivalenceStats", "EquivalenceVerifier", "normalise", "rule_equivalent"]
