"""The parts of a review sentence that say nothing checkable about the paper (injection validity).

An injected hallucination must make the review say something false about the paper. Three kinds of
text say nothing about the paper, so an edit there is no hallucination (issue 22: about half of
the rule injections were of these kinds):

- a question ("Could the authors ...?", "How does X scale?", "I wonder whether ..."): the whole
  sentence is no claim (`is_question`);
- the reviewer's own hedge, speculation or suggestion ("X could strengthen the paper", "it would be
  interesting to see Y", "I suspect", "perhaps"): the clause holding it (`hedged_spans`), unless the
  hedge is reported from the paper ("the authors acknowledge that X may require ..."), where the
  clause is a claim about what the paper says;
- a list marker ("1.", "2)", "(a)", a bullet): formatting, not content (`list_marker_end`).

Offsets are character offsets into the sentence. Pure functions over one sentence (no paper needed).
"""

from __future__ import annotations

import re

# A leading bullet or enumeration marker, optionally followed by a short "Label:" prefix
# ("- Clarity: ...", "2.Comparison with Baselines: ..."). "1.The" (no space) is a marker too.
_MARKER = re.compile(r"^\s*(?:[-*•·–]\s*|\(?(?:\d{1,2}|[a-zA-Z]|[ivx]{1,4})[.)](?!\d)\s*|\[\d{1,2}\]\s*)+")
_LABEL = re.compile(r"^[A-Z][\w/&'-]*(?:\s+[\w/&'-]+){0,6}\s*:\s*")

_INTERROGATIVES = re.compile(
    r"^(?:what|why|how|which|where|when|who|whom|whose|is|are|was|were|do|does|did|can|could|would|will|should|"
    r"shall|has|have|had|may|might|isn't|aren't|doesn't|don't|didn't|can't|wouldn't|shouldn't)\b"
    r"|^i\s+(?:wonder|am\s+curious|'m\s+curious|would\s+like\s+to\s+know|am\s+not\s+sure\s+(?:whether|if|how|why))\b",
    re.I,
)

# The reviewer's hedges, speculation and suggestions. Modal verbs first; then adverbs and first-person
# stances; "it would be" and "I suggest" are covered by "would" and "suggest"; a need the reviewer states
# ("a more principled approach to improve the accuracy ... is needed") is a suggestion. A hypothetical ("we can
# imagine a problem where ...") and the reviewer's own rating ("I will increase my rating to 8",
# "Edited the score 6->7") say nothing about the paper either.
_HEDGE = re.compile(
    r"(?<![\w-])(?:could|might|may|would|should|perhaps|maybe|possibly|potentially|presumably|likely|unlikely|"
    r"probably|conceivably|wonder|curious|suspect|speculate|recommend|suggest|encourage|consider|imagin(?:e|es|ed|ing)|"
    r"my\s+(?:rating|score|recommendation|assessment|evaluation)|"
    r"(?:edit|updat|chang|rais|lower|increas|decreas|revis)\w*\s+(?:my\s+|the\s+|our\s+)?(?:score|rating)|"
    r"(?:i|we)\s+(?:think|believe|feel|guess|hope)|in\s+my\s+(?:opinion|view)|it\s+(?:seems|appears)|"
    r"unclear\s+(?:whether|if|how|why)|not\s+(?:sure|clear)\s+(?:whether|if|how|why)|future\s+work|"
    r"would\s+be\s+(?:interesting|nice|helpful|useful|good|valuable|beneficial|great)|"
    r"(?:is|are)\s+(?:(?:still|also|clearly)\s+)?(?:needed|required|necessary|warranted|missing)|"
    r"important\s+to|needs?\s+to|looks?\s+like|seems?|appears?\s+to)(?![\w-])",
    re.I,
)
# "suggest" as the paper's or its results' verb ("the results suggest that") is a reported claim.
# A hedge after one of these is the paper's own hedge, not the reviewer's.
_REPORTED = re.compile(
    r"(?<![\w-])(?:the\s+authors?|the\s+paper|this\s+paper|this\s+work|the\s+work|the\s+study|they|their\s+\w+|"
    r"the\s+(?:results?|experiments?|findings?|analys[ie]s|evaluation|ablations?|manuscript|submission))"
    r"(?:\s+\w+){0,3}?\s+(?:acknowledg\w*|admit\w*|argu\w*|assert\w*|claim\w*|conclud\w*|concede\w*|demonstrat\w*|"
    r"find|finds|found|hypothesi[sz]\w*|indicat\w*|mention\w*|not(?:e|es|ed)|observ\w*|posit\w*|predict\w*|"
    r"report\w*|say|says|said|show\w*|stat(?:e|es|ed)|suggest\w*|warn\w*|write|writes|wrote|point\w*\s+out)"
    r"\s+(?:that\s+)?",
    re.I,
)
# Where a hedge's scope ends (or starts): a semicolon, a colon, a dash between spaces, a new bullet,
# or a contrast that opens another clause. Plain commas do not end it ("could be improved, such as X"),
# nor an abbreviation's period before a lower-case word ("..., e.g. a 1-layer LSTM").
_SCOPE_BREAK = re.compile(
    r";|:\s|\s[-–—]\s|,\s+(?=(?:but|while|whereas|although|though|however|overall|yet|still|nevertheless|which)\b)"
    r"|(?<=[.!])\s+(?=(?-i:[-A-Z]))|\s(?=(?:but|whereas|although|though|however|overall|nevertheless)\b)",
    re.I,
)


def list_marker_end(sentence: str) -> int:
    """Where a leading bullet/enumeration marker (and a short "Label:" after it) ends; 0 if none."""
    m = _MARKER.match(sentence)
    return m.end() if m else 0


def _body(sentence: str) -> str:
    """The sentence without its list marker and a leading "Label:" ("Clarity: ...")."""
    rest = sentence[list_marker_end(sentence) :]
    label = _LABEL.match(rest)
    if label and len(rest) - label.end() > 10:
        rest = rest[label.end() :]
    return rest.strip()


def is_question(sentence: str) -> bool:
    """A question or an open wondering: it holds a "?", or opens with an interrogative or "I wonder"."""
    return "?" in sentence or bool(_INTERROGATIVES.match(_body(sentence)))


def reported_starts(sentence: str) -> list[int]:
    """Where a clause reported from the paper begins ("the authors acknowledge that |...")."""
    return [m.end() for m in _REPORTED.finditer(sentence)]


def _reported_at(sentence: str, pos: int, breaks: list[tuple[int, int]]) -> bool:
    """Whether `pos` lies in a clause reported from the paper: a reporting verb before it in the same
    clause, with no comma between ("while the paper mentions X, details could ..." is the reviewer's)."""
    clause_start = max((e for s, e in breaks if e <= pos), default=0)
    return any(clause_start <= r <= pos and "," not in sentence[r:pos] for r in reported_starts(sentence))


# A sentence that opens with a condition is the reviewer's hypothetical ("3. If the authors were able to
# report that their 3-way chunk-based ensemble comes close to ..."), whatever follows the condition.
_HYPOTHETICAL_OPENING = re.compile(r"(?:if|had|were|unless|suppose|supposing|assuming)\b", re.I)


def hedged_spans(sentence: str) -> list[tuple[int, int]]:
    """The character ranges under the reviewer's own hedge, speculation or suggestion: from the start
    of the clause holding a hedge word to the clause's end; all of a sentence that opens with a
    condition. A hedge in a clause reported from the paper is the paper's, and leaves that clause a
    claim about the paper."""
    if _HYPOTHETICAL_OPENING.match(_body(sentence)):
        return [(0, len(sentence))]
    breaks = [(m.start(), m.end()) for m in _SCOPE_BREAK.finditer(sentence)]
    spans: list[tuple[int, int]] = []
    for m in _HEDGE.finditer(sentence):
        if _reported_at(sentence, m.start(), breaks):
            continue
        start = max((e for s, e in breaks if e <= m.start()), default=0)
        end = min((s for s, e in breaks if s >= m.end()), default=len(sentence))
        if spans and start <= spans[-1][1]:
            spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
        else:
            spans.append((start, end))
    return spans


# An example given for the sentence before ("I would like to see results on state-of-the-art nets. For
# instance a network with 0.5% - 0.8% in MNIST."): it belongs to that sentence's hedge or suggestion.
_EXAMPLE_OPENING = re.compile(r"(?:for\s+(?:instance|example)|e\.g\.|such\s+as|say|like)\b", re.I)


def continues_hedge(previous: str, sentence: str) -> bool:
    """`sentence` gives an example for `previous`, whose last clause is the reviewer's hedge or suggestion."""
    if not _EXAMPLE_OPENING.match(_body(sentence)):
        return False
    spans = hedged_spans(previous)
    return bool(spans) and spans[-1][1] >= len(previous.rstrip(" .!")) - 1


# A claim that the paper lacks something: swapping the thing for another the paper also lacks leaves
# the claim true ("evaluation on GLUE is missing" -> "on MMLU"), so it is no place for a rule edit.
_ABSENCE = re.compile(
    r"(?<![\w-])(?:lacks?|lacking|missing|absent|absence|omit\w*|fails?\s+to|without|"
    r"(?:does|do|did|is|are|was|were|has|have)n't|not(?!\s+(?:only|just|merely))|no\s+(?!doubt|longer))(?![\w-])",
    re.I,
)


def clause_spans(sentence: str, pattern: re.Pattern) -> list[tuple[int, int]]:
    """The clauses (same scope rules as `hedged_spans`) that hold a match of `pattern`."""
    breaks = [(m.start(), m.end()) for m in _SCOPE_BREAK.finditer(sentence)]
    spans: list[tuple[int, int]] = []
    for m in pattern.finditer(sentence):
        start = max((e for s, e in breaks if e <= m.start()), default=0)
        end = min((s for s, e in breaks if s >= m.end()), default=len(sentence))
        spans.append((start, end))
    return spans


def absence_spans(sentence: str) -> list[tuple[int, int]]:
    """The clauses that claim the paper lacks something."""
    return clause_spans(sentence, _ABSENCE)


def in_spans(start: int, end: int, spans: list[tuple[int, int]]) -> bool:
    return any(a < end and start < b for a, b in spans)


def is_reported_modal(sentence: str, start: int) -> bool:
    """A modal verb at `start` that the review reports from the paper ("the paper states that X may ...")."""
    breaks = [(m.start(), m.end()) for m in _SCOPE_BREAK.finditer(sentence)]
    return _reported_at(sentence, start, breaks)


__all__ = ["absence_spans", "clause_spans", "continues_hedge", "hedged_spans", "in_spans", "is_question", "is_reported_modal", "list_marker_end", "reported_starts"]
