"""Grounding: an injection is a hallucination about the paper only where it changes a claim the paper can refute.

Rule after rule closed numbers and names that are no claims about the paper (theorem numbers, the
reviewer's rating, counts of the review's own points, hypotheticals, citation years of works the
paper never cites, ...); each fresh batch of held-out reviews brought new cases. Grounding replaces
the chase with one structural test: the edited thing must be in the paper, and the sentence must be
about the paper.

- `value_grounded`: the original value is found in the paper's text. A number as a quantity (same
  value: "1,000" = "1000", "85.4%" = "85.4", "two" = "2"; the paper's own section, table and
  equation numbers, and a number opening a line (a heading's), are no quantities), and where the sentence names what it
  counts or measures (the word after it, "5 layers", or before it, "accuracy of 85.4") that noun
  near one of the paper's mentions of the value (rapidfuzz ratio, so "layer"/"layers" agree); an
  entity by name (whole word); a year or month by itself. A recency word or a modal has no value of
  its own: it is grounded when the sentence shares a content-word bigram with the paper.
- `about_paper`: the sentence talks about the paper: it names it ("the authors", "the paper",
  "they", "this work", "Table 3", "the results", ...) or shares a content-word bigram with it.

Without the paper's text nothing is grounded (an empty `paper_text` grounds no place).
Pure functions; the paper's numbers and bigrams are indexed once per paper (cached).
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache

from rapidfuzz import fuzz

from corpora.reviews.rule_injectors import is_identifier_context

_STOP = frozenset("""a an the and or but nor of in on at to for from by with without into onto over under than then
that this these those there their they them it its is are was were be been being has have had do does did not no
as so such very more most less least also only just even which who whom whose what when where why how all any some
each both either neither other another same own can could may might will would shall should must we our you your
he she his her i me my us one two three four five six seven eight nine ten paper authors author work results
figure table section see use used using show shows shown well much many""".split())  # noqa: SIM905  # fmt: skip
_WORD = re.compile(r"[A-Za-z][A-Za-z\-]+")
_ABOUT = re.compile(r"(?<![\w-])(?:the\s+authors?|authors'?|the\s+(?:paper|manuscript|submission|work|study|"
                    r"approach|method|model|framework|proposed\s+\w+|experiments?|results?|evaluation|analysis)|"
                    r"this\s+(?:paper|work|study|submission|manuscript|approach|method)|they|their|"
                    r"(?:table|tab\.|figure|fig\.|section|sec\.|eq\.|equation|appendix)\s*\(?\d+|results?|"
                    r"experiments?|proposed|propose[sd]?|reports?|reported|shows?|showed|shown|demonstrat\w*)"
                    r"(?![\w-])", re.I)  # fmt: skip
_COUNT_WORDS = {"two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
                "ten": 10, "eleven": 11, "twelve": 12}  # fmt: skip
_PAPER_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\d])")
_PAPER_COUNT_WORD = re.compile(r"\b(" + "|".join(_COUNT_WORDS) + r")\b", re.I)
_HEADING_NUMBER = re.compile(r"(?:^|\n)[ \t]*$")
"""What precedes a number that opens a line: a heading's or a list's number ("4.1 TRAINING ...")."""
_NEAR = 40
"""Characters either side of a paper's mention of a value in which the sentence's context noun must appear."""


def _content_words(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if len(w) > 2 and w not in _STOP]


def _bigrams(words: list[str]) -> set[frozenset[str]]:
    """Adjacent content-word pairs, in either order ("baselines were compared" ~ "compared five
    baselines"), plural s dropped."""
    return {frozenset((a.rstrip("s"), b.rstrip("s"))) for a, b in zip(words, words[1:], strict=False)}


@cache
def _paper_bigrams(paper_text: str) -> frozenset[frozenset[str]]:
    return frozenset(_bigrams(_content_words(paper_text)))


def shares_bigram(sentence: str, paper_text: str) -> bool:
    """A pair of adjacent content words of the sentence that the paper also writes ("spatial transformer")."""
    return bool(paper_text) and bool(_bigrams(_content_words(sentence)) & _paper_bigrams(paper_text))


def about_paper(sentence: str, paper_text: str) -> bool:
    """The sentence talks about the paper: it names it, its authors, results or parts, or shares a
    content-word bigram with it. False without the paper's text."""
    return bool(paper_text) and (bool(_ABOUT.search(sentence)) or shares_bigram(sentence, paper_text))


def _value(token: str) -> float | None:
    token = token.strip().lower()
    if token in _COUNT_WORDS:
        return float(_COUNT_WORDS[token])
    try:
        return float(token.replace(",", ""))
    except ValueError:
        return None


@cache
def _paper_values(paper_text: str) -> dict[float, tuple[int, ...]]:
    """Every quantity of the paper (digits or a count word) by value, with the offsets of its mentions.
    A number that names a part of the paper ("Section 4.1", "Table 2", "Eq. 3") is no quantity: a
    review's "4.1" is grounded only by a 4.1 the paper reports."""
    out: dict[float, list[int]] = defaultdict(list)
    for pattern in (_PAPER_NUMBER, _PAPER_COUNT_WORD):
        for m in pattern.finditer(paper_text):
            before = paper_text[max(0, m.start() - 40) : m.start()]
            if is_identifier_context(before) or _HEADING_NUMBER.search(before):
                continue
            v = _value(m.group(1))
            if v is not None:
                out[v].append(m.start())
    return {v: tuple(offsets) for v, offsets in out.items()}


def _context_noun(sentence: str, start: int, end: int) -> str | None:
    """The word the sentence attaches to a number: the content word right after it ("5 layers",
    "85.4% accuracy"), else the one right before ("accuracy of 85.4"); None when there is none."""
    after = _content_words(re.sub(r"^[\s%x×\-]+", " ", sentence[end : end + 40]))
    if after and sentence[end : end + 40].lstrip(" %x×-")[:1].isalpha():
        return after[0]
    before = _content_words(sentence[max(0, start - 40) : start])
    return before[-1] if before else None


def _noun_near(noun: str, paper_text: str, offset: int) -> bool:
    window = _content_words(paper_text[max(0, offset - _NEAR) : offset + _NEAR])
    return any(fuzz.ratio(noun, w) >= 80 for w in window)


def number_grounded(sentence: str, start: int, end: int, paper_text: str) -> bool:
    """The number `sentence[start:end]` is a quantity the paper states: the same value in the paper's
    text and, where the sentence says what it counts or measures, that word near one of its mentions."""
    value = _value(sentence[start:end])
    if value is None or not paper_text:
        return False
    offsets = _paper_values(paper_text).get(value, ())
    if not offsets:
        return False
    noun = _context_noun(sentence, start, end)
    return noun is None or any(_noun_near(noun, paper_text, o) for o in offsets)


def name_grounded(name: str, paper_text: str) -> bool:
    """A name (entity, year, month) the paper writes as a whole word."""
    return bool(paper_text) and re.search(r"(?<![\w\-])" + re.escape(name) + r"(?![\w\-])", paper_text) is not None


def place_grounded(kind: str, sentence: str, start: int, end: int, paper_text: str) -> bool:
    """Whether the thing a rule injector would change at `sentence[start:end]` (a candidate of `kind`)
    is grounded in the paper. `kind` is the candidate's: number/count_word, year/month, recency/modal,
    or an entity class."""
    token = sentence[start:end]
    if kind in ("number", "count_word"):
        return number_grounded(sentence, start, end, paper_text)
    if kind in ("recency", "modal"):
        return shares_bigram(sentence, paper_text)
    return name_grounded(token, paper_text)  # year, month, entity classes


__all__ = ["about_paper", "name_grounded", "number_grounded", "place_grounded", "shares_bigram"]
