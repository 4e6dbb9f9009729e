"""Grounding: an injection is a hallucination about the paper only where it changes a claim the paper can refute.

Rule after rule closed numbers and names that are no claims about the paper (theorem numbers, the
reviewer's rating, counts of the review's own points, hypotheticals, citation years of works the
paper never cites, ...); each fresh batch of held-out reviews brought new cases. Grounding adds
structural tests: the edited thing must be in the paper, the sentence must be about the paper, and
the edit must be one the paper refutes.

- `place_grounded`: the original value is found in the paper's text. A number as a quantity (same
  value: "1,000" = "1000", "85.4%" = "85.4"; the paper's own section, table and equation numbers,
  and a number opening a line (a heading's), are no quantities), and where the sentence names what
  it counts or measures (the word after it, "5 layers", or before it, "accuracy of 85.4") that noun
  near one of the paper's mentions of the value (rapidfuzz ratio, so "layer"/"layers" agree); no
  small count ("two datasets", "3 layers": up to twelve, `SMALL_COUNT`); an entity by name (whole
  word); a year the paper cites with a name the sentence gives (`year_grounded`), else as a value; a
  month by itself. A recency word, a modal and the paper's own names are never grounded.
- `about_paper`: the sentence names the paper ("the authors", "the paper", "they", "this work",
  "Table 3", "the results", ...) and, unless it names the authors or the paper, says nothing of the
  field at large; `field_spans` closes a clause about the field in any sentence.
- `edit_refutable`: the edited sentence is one the paper refutes: the new value is not one the paper
  also states for the same thing (a number with its noun, a year with the cited name, a swapped-in
  name the paper mentions: "accuracy" -> "recall" in a paper that reports recall may still be true),
  and the review does not write it elsewhere (a reviewer's own term or figure) nor state the
  original again ("the two domains" in the next sentence).
- `REPORTING_ASPECTS`: the aspects of sentences a rule edit may touch (the builder applies it).

Without the paper's text nothing is grounded (an empty `paper_text` grounds no place).
Pure functions; the paper's numbers and citations are indexed once per paper (cached).
"""

from __future__ import annotations

import re
from collections import defaultdict
from functools import cache

from rapidfuzz import fuzz

from corpora.reviews.clauses import clause_spans
from corpora.reviews.rule_injectors import COUNT_WORD_VALUES, is_identifier_context, venue_names

_STOP = frozenset("""a an the and or but nor of in on at to for from by with without into onto over under than then
that this these those there their they them it its is are was were be been being has have had do does did not no
as so such very more most less least also only just even which who whom whose what when where why how all any some
each both either neither other another same own can could may might will would shall should must we our you your
he she his her i me my us one two three four five six seven eight nine ten paper authors author work results
figure table section see use used using show shows shown well much many""".split())  # noqa: SIM905  # fmt: skip
_WORD = re.compile(r"[A-Za-z][A-Za-z\-]+")
_COUNT_WORDS = COUNT_WORD_VALUES
_PAPER_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\d])")
_PAPER_COUNT_WORD = re.compile(r"\b(" + "|".join(_COUNT_WORDS) + r")\b", re.I)
_HEADING_NUMBER = re.compile(r"(?:^|\n)[ \t]*$")
"""What precedes a number that opens a line: a heading's or a list's number ("4.1 TRAINING ...")."""
_NEAR = 40
"""Characters either side of a paper's mention of a value in which the sentence's context noun must appear."""


def _content_words(text: str) -> list[str]:
    return [w for w in (m.group(0).lower() for m in _WORD.finditer(text)) if len(w) > 2 and w not in _STOP]


# What the field does, not the paper ("One of the most widely used methods to represent documents now
# is a bidirectional LSTM"; "n-step returns have been shown to work better than 1-step returns both in
# the classical RL literature and ..."): such a sentence shares the paper's words without saying
# anything of it. Unless it names the paper itself (`_NAMES_PAPER`), it is not about the paper.
_FIELD = re.compile(r"(?<![\w-])(?:widely|commonly|most\s+popular|in\s+general|generally|literature|"
                    r"the\s+(?:field|community)|standard\s+practice|nowadays|these\s+days|typically|usually|"
                    r"one\s+of\s+the\s+most|(?:many|most|other|prior|previous|earlier)\s+(?:recent\s+)?"
                    r"(?:works?|papers|methods|approaches|studies)|(?:has|have)\s+been\s+shown|it\s+is\s+(?:well\s+)?known|"
                    r"well[\s-]known|everyone\s+knows|as\s+we\s+know|many\s+(?:people|researchers|authors)|"
                    r"there\s+(?:are|is|exist)\s+(?:more|many|other|several|some|plenty\s+of)\s+(?:\w+\s+)?"
                    r"(?:results?|works?|papers|methods|approaches|studies|baselines))"
                    r"(?![\w-])", re.I)  # fmt: skip
_AUTHORS = (r"the\s+authors?|authors'?|the\s+(?:paper|manuscript|submission)|"
            r"this\s+(?:paper|work|study|submission|manuscript)|they|their")
_NAMES_AUTHORS = re.compile(r"(?<![\w-])(?:" + _AUTHORS + r")(?![\w-])", re.I)
# the authors or the paper, or its method, model, experiments, results, a numbered part
_NAMES_PAPER = re.compile(r"(?<![\w-])(?:" + _AUTHORS + r"|the\s+proposed\s+\w+|this\s+(?:approach|method)|"
                          r"the\s+(?:method|model|approach|framework|experiments?|results?|evaluation)|"
                          r"(?<=^)(?:experiments?|results?)|"
                          r"(?:table|tab\.|figure|fig\.|section|sec\.|eq\.|equation|appendix)\s*\(?\d+)(?![\w-])", re.I)  # fmt: skip


def field_spans(sentence: str) -> list[tuple[int, int]]:
    """The clauses about the field at large (`_FIELD`): "I didn't learn a lot from this paper: many
    people have thrown LSTM at sequence problems"; "there are more results on binary MNIST with which
    the authors can compare". A sentence may name the paper in one clause and the field in another."""
    return clause_spans(sentence, _FIELD)


def about_paper(sentence: str, paper_text: str) -> bool:
    """The sentence says something of the paper by naming it: the authors, the paper, this work, they,
    the proposed method, its model, experiments or results, a table or figure (`_NAMES_PAPER`), and says
    nothing of the field at large (`_FIELD`) unless it names the authors or the paper. A sentence that
    only shares the paper's words ("On the WikiMovies dataset, the extracted pattern matching method
    achieves ...") may be about it, but the held-out labels of rules 7-10 found such sentences valid
    two times in three (the reviewer's suggestions, reference lists, opinions of the field, own
    numbering), against nine in ten where the paper is named. False without the paper's text."""
    if not paper_text or not _NAMES_PAPER.search(sentence):
        return False
    return not _FIELD.search(sentence) or bool(_NAMES_AUTHORS.search(sentence))


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


SMALL_COUNT = 12
"""Counts up to this are no place for a rule edit: reviewers count loosely ("the two experiments" of a paper
with four), count their own points ("the two approaches" they suggest) and list the items after the count
("four MCMC methods: SGLD and SGHMC"); held-out batches 7-12 found 50 of 96 such edits valid, even when the
paper wrote the same count of the same noun (rules 7-12 required that)."""
REPORTING_ASPECTS = frozenset({"summary", "novelty", "significance", "experiments", "results"})
"""The aspects of sentences that report what the paper did or found. A rule edit is made only there (or in
an untagged sentence): in the reviewer's critique of soundness and reproducibility, related work and other
remarks the held-out batches 7-12 found 113 of 151 edits valid, against 181 of 204 here."""
_COUNTED_WORDS = 3
"""Words after a number in which the counted noun stands ("two new benchmark datasets"), for `_states_again`."""
_NOT_COUNTED = frozenset("""new different main other additional large small simple separate distinct key major
important interesting novel similar standard several further extra main popular common first last next previous
following above below total overall specific various respective individual""".split())  # noqa: SIM905  # fmt: skip


def _is_small_count(sentence: str, start: int, end: int) -> bool:
    token = sentence[start:end].lower()
    if token in _COUNT_WORDS:
        return True
    return token.isdigit() and int(token) <= SMALL_COUNT and not sentence[end : end + 2].lstrip().startswith(("%", "x", "×"))


def _counted(text: str, end: int) -> list[str]:
    """The content words right after a count (what it counts), adjectives of no kind left out."""
    words = _content_words(text[end : end + 60])[:_COUNTED_WORDS]
    return [w for w in words if w not in _NOT_COUNTED]


def number_grounded(sentence: str, start: int, end: int, paper_text: str) -> bool:
    """The number `sentence[start:end]` is a quantity the paper states: the same value in the paper's
    text and, where the sentence says what it counts or measures, that word near one of its mentions;
    a small count is never grounded (`SMALL_COUNT`)."""
    value = _value(sentence[start:end])
    if value is None or not paper_text:
        return False
    offsets = _paper_values(paper_text).get(value, ())
    if not offsets:
        return False
    if _is_small_count(sentence, start, end):
        return False  # the reviewer's own count as often as the paper's (see `SMALL_COUNT`)
    noun = _context_noun(sentence, start, end)
    return noun is None or any(_noun_near(noun, paper_text, o) for o in offsets)


def name_grounded(name: str, paper_text: str) -> bool:
    """A name (entity, year, month) the paper writes as a whole word."""
    return bool(paper_text) and re.search(r"(?<![\w\-])" + re.escape(name) + r"(?![\w\-])", paper_text) is not None


_YEAR = re.compile(r"(?<![\w.])((?:19|20)\d{2})[a-z]?(?!\w)")
_CAPITALISED = re.compile(r"(?<![\w-])([A-Z][A-Za-z'\-]{2,})(?![\w-])")
_NOT_NAMES = frozenset("""The This That These Those There Their They Our We In On For From With And But Table Figure
Section Appendix Proceedings Conference International Journal Advances Workshop Transactions Annual Meeting Association
Computational Linguistics Neural Information Processing Systems Learning Representations Machine Vision Pattern
Recognition Computer Science University Press Springer IEEE ACM Volume Ref See Also However While Although""".split())  # noqa: SIM905  # fmt: skip
_CITATION_WINDOW = 40
"""Characters before a year in the paper in which the cited names stand ("Reed & de Freitas, 2016")."""


def _names(text: str) -> set[str]:
    """Capitalised words that may name an author or a work; venues ("ICLR") are none."""
    venues = venue_names()
    return {m.group(1) for m in _CAPITALISED.finditer(text) if m.group(1) not in _NOT_NAMES and m.group(1) not in venues}


@cache
def _paper_citations(paper_text: str) -> frozenset[tuple[str, str]]:
    """(name, year) of each of the paper's mentions of a year with the capitalised names before it:
    its citations ("Mnih et al. (2016)", "(Reed & de Freitas, 2016)")."""
    out: set[tuple[str, str]] = set()
    for m in _YEAR.finditer(paper_text):
        for name in _names(paper_text[max(0, m.start() - _CITATION_WINDOW) : m.start()]):
            out.add((name, m.group(1)))
    return frozenset(out)


def year_grounded(sentence: str, start: int, end: int, paper_text: str) -> bool:
    """The year `sentence[start:end]` is one the paper states for the same thing. Where the sentence
    names a work (capitalised names: authors, a title), the paper must cite one of those names with
    that year: the year of a work the paper never cites ("Peters et al. ... ASONAM 2010", the reviewer's
    own reference list: "[1] 'Asynchronous Methods for Deep RL', ICML 2016") is no claim the paper can
    check (held-out batch 8). Where it names none ("3 datasets released in 2021"), the year as a value:
    in the paper with the sentence's word beside it near one of its mentions (`number_grounded`)."""
    if not paper_text:
        return False
    names = _names(sentence)
    if names:
        year = sentence[start:end]
        citations = _paper_citations(paper_text)
        return any((name, year) in citations for name in names)
    return number_grounded(sentence, start, end, paper_text)


def place_grounded(kind: str, sentence: str, start: int, end: int, paper_text: str) -> bool:
    """Whether the thing a rule injector would change at `sentence[start:end]` (a candidate of `kind`)
    is grounded in the paper. `kind` is the candidate's: number/count_word, year/month, recency/modal,
    or an entity class. Never grounded: a modal, whose certainty the paper seldom states in the
    reviewer's words ("could be exploited" -> "will be exploited" of a paper whose future work says it
    will, held-out batch 11); a recency word, which dates other work ("other recent papers",
    "earlier experiments on Atari": the paper seldom says how old they are, so "early" is not refuted),
    and one of the paper's own names (`paper_*`), whose swap puts in another name the paper writes,
    which may be as true there ("CCCP" -> "LW-SVM", the method CCCP is part of; "why ACER outperforms
    A3C" -> "why DQN ...") (held-out batch 7)."""
    token = sentence[start:end]
    if kind in ("number", "count_word"):
        return number_grounded(sentence, start, end, paper_text)
    if kind in ("modal", "recency") or kind.startswith("paper_"):
        return False
    if kind == "year":
        return year_grounded(sentence, start, end, paper_text)
    return name_grounded(token, paper_text)  # month, vocabulary entity classes


def _written_in(token: str, text: str) -> bool:
    """`token` as a whole word (a number not inside a longer one), case-blind."""
    return bool(text) and re.search(r"(?<![\w.\-])" + re.escape(token) + r"(?![\w\-]|\.\d)", text, re.I) is not None


def _states_again(original: str, after: str, rest_of_review: str) -> bool:
    """The review writes the original value of the same thing elsewhere ("two very different domains"
    here, "the two domains" in the next sentence): an edit in one place leaves the review contradicting
    itself, which shows it."""
    counted = _counted(after, 0)
    if not counted or not rest_of_review:
        return False
    noun = counted[0].rstrip("s")
    pattern = r"(?<![\w.\-])" + re.escape(original) + r"(?:[\s%x×-]+[\w-]+){0,3}?[\s%x×-]+" + re.escape(noun) + r"s?\b"
    return re.search(pattern, rest_of_review, re.I) is not None


def edit_refutable(kind: str, edited: str, start: int, end: int, paper_text: str, rest_of_review: str = "",
                   original: str = "") -> bool:  # fmt: skip
    """Whether the paper refutes the edited sentence at `edited[start:end]` (the new value of a
    candidate of `kind`): the new value is not also what the paper states there (`number_grounded` on
    the edited sentence; a year, month or swapped-in vocabulary name the paper writes), and the
    review does not write it elsewhere (`rest_of_review`: the review without this sentence), nor, for
    a number, the `original` value of the same thing (`_states_again`). A recency word or a modal
    never gets here: `place_grounded` opens no place for it."""
    token = edited[start:end]
    if _written_in(token, rest_of_review):
        return False
    if kind in ("number", "count_word") and original and _states_again(original, edited[end:], rest_of_review):
        return False
    if kind in ("number", "count_word"):
        return not number_grounded(edited, start, end, paper_text)
    if kind == "year":
        return not year_grounded(edited, start, end, paper_text)
    return not name_grounded(token, paper_text)  # month, a swapped-in name


__all__ = ["REPORTING_ASPECTS", "SMALL_COUNT", "about_paper", "edit_refutable", "name_grounded", "number_grounded", "place_grounded",
           "field_spans", "year_grounded"]
