"""Rule injectors for the anchors whose edit is mechanical: Number, Temporal, Entity (HalluPeer §4).

Each injector lists the places in a sentence it can edit (`candidates`), each with the leaf of the
taxonomy that the edit instantiates, and makes one edit from a seeded `random.Random`. An edit is
a character range of the sentence and its replacement, so the changed span is known exactly.

- Number: a numeric value (integer, decimal, percentage, multiplier, count word) that is not part
  of a name (GPT-4, T5), a reference (Table 3, Sec. 4.2) or a list marker. The leaf follows the
  context: a year (Citation Year Substitution after "et al." or in brackets, else Event Year
  Fabrication), a p-value, a parameter (threshold, learning rate, ... =), a score (%, accuracy,
  F1, ...) or a count. The new value keeps the format (decimals, thousands separators, range).
- Temporal: a recency word ("recent" <-> "early", "prior" <-> "concurrent", ...), a modal verb
  ("might" -> "will", "will" -> "might", ...), or a year or month (Date Shift).
- Entity: a model, dataset or metric name (data/entities.toml), swapped for another of its class that
  the paper never writes, or an acronym the paper uses often, swapped for another of the paper's
  names of its category.
"""

from __future__ import annotations

import math
import random
import re
import tomllib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from corpora.reviews.clauses import is_reported_modal, list_marker_end
from storage.registry import Registry

ENTITIES_PATH = Path(__file__).resolve().parent / "data" / "entities.toml"


@dataclass(frozen=True)
class RuleEdit:
    """Replace `sentence[start:end]` by `replacement`; `leaf` is the type the edit instantiates.
    `value_offset`: where the new value starts in `replacement` (after an article the edit also
    changed: "a Transformer" for "an LSTM")."""

    start: int
    end: int
    replacement: str
    leaf: str
    value_offset: int = 0

    def apply(self, sentence: str) -> str:
        return sentence[: self.start] + self.replacement + sentence[self.end :]

    def value_span(self) -> tuple[int, int]:
        """The new value's `[start, end)` in the edited sentence."""
        return self.start + self.value_offset, self.start + len(self.replacement)


@dataclass(frozen=True)
class Candidate:
    start: int
    end: int
    leaf: str
    kind: str


# ---------------------------------------------------------------- Number
_NUMBER = re.compile(r"(?<![\w.\-/])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?=\s?%|x\b|×|\b)(?!\.\d)")
_REFERENCE = re.compile(r"(?:\b(?:fig|figure|figs|table|tab|sec|section|eq|equation|appendix|app|line|lines|l|"
                        r"chapter|step|algorithm|alg|theorem|lemma|definition|ref|page|p{2})\.?\s*\(?)$", re.I)  # fmt: skip
# A number after a label names a numbered thing of the paper ("Theorems 2.4-2.6", "Corollary 2.1",
# "tasks 1-5", "Rule 30", "scenario 2"): an identifier, not a value; a changed id points elsewhere or
# keeps a true subset ("tasks 2-5 are deterministic"), it reports nothing false.
_LABEL_BEFORE = re.compile(r"\b(?:figures|tables|sections|equations|eqs|chapters|appendi(?:x|ces)|theorems|lemmas|"
                           r"corollar(?:y|ies)|cor|propositions?|prop|claims?|definitions|defs?|assumptions?|"
                           r"conditions?|remarks?|examples?|exercises?|problems?|cases?|tasks?|subtasks?|rules?|"
                           r"options?|levels?|stages?|phases?|versions?|rounds?|scenarios?|settings?|experiments?|"
                           r"steps|items?|questions?|comments?|points?|parts?|rows?|columns?|cols?|id|no|nr|reviewers?|"
                           r"number|#)\.?\s*\(?$"
                           # a numbered formula: "a bound in 2.21", "equality in 2.20", "the constraint 2.80"
                           r"|\b(?:bounds?|constraints?|equalit(?:y|ies)|inequalit(?:y|ies)|identit(?:y|ies)|"
                           r"formulas?|expressions?)\s+(?:in\s+|of\s+)?\(?$", re.I)  # fmt: skip
# A section number opening a remark ("In 4.2: ...", "4.1.2, ...") is a pointer, as "Sec. 4.2" is.
_SECTION_POINTER = re.compile(r"(?:^|[\s(])(?:in|see|of)\s+$", re.I)
# A number in math notation: a subscript ("y_{t+1}", "x_2") or an index offset ("t+1", "n-1"). An
# exponent is a value ("O(N^2)" -> "O(N^4)" misstates a complexity).
_MATH_INDEX = re.compile(r"(?:_\{?[^\s{}]*|\b[a-zA-Z]\s?[+\-])$")
# A parenthesis holding only section-like numbers ("(5.4)", "(5.2/5.3)"): one digit, a dot, one digit.
# A score in parentheses has another shape ("T3 (0.0)", "(19.7)", "(0.85)").
_SECTION_PARENS = re.compile(r"\(\s*[1-9]\.[1-9](?:\s*[/,]\s*[1-9]\.[1-9])*\s*\)")


def is_identifier_context(before: str) -> bool:
    """A number after these words names a numbered thing ("Section 4.1", "Table 2", "Theorems 2.4"),
    it is no quantity."""
    return bool(_REFERENCE.search(before) or _LABEL_BEFORE.search(before))


def _is_section_pointer(sentence: str, start: int, end: int) -> bool:
    return any(p.start() < start and end < p.end() for p in _SECTION_PARENS.finditer(sentence))


# A count that points back at the review's own sentences ("These are two interesting hypotheses").
_ANAPHORA_BEFORE = re.compile(r"\b(?:these|those)\s+(?:are\s+|were\s+)?$", re.I)
# Venues: the year after one is the event's ("ICLR 2016"); after any other acronym a year-like number
# is part of a name ("JPEG 2000", "ISO 9001", "COCO 2017"), not a date.
_ACRONYM_BEFORE = re.compile(r"\b([A-Z][A-Z0-9]+)[\s-]$")
# A surname before a citation year ("Singh et al. 2004", "(Vinyals, 2016)", "Cloutier. 1994"), or a
# few words before a year in parentheses ("Samy Bengio PhD thesis (1989)").
_CITED_NAME = re.compile(r"\b([A-Z][a-z][A-Za-z'\-]*)(?:\.?(?:\s+et\s+al\.?)?,?\s*\(?|(?:\s+[\w'-]+){1,3}\s*\()$")
_CITATION_CONTEXT = re.compile(r"(et al\.?,?\s*\(?|\(|\[|,\s)$")
_PVALUE_CONTEXT = re.compile(r"\bp\s*(?:-?value)?\s*[<>=≤≥]\s*$|\bp-values?\s+(?:of\s+)?$", re.I)
_PARAM_CONTEXT = re.compile(r"(threshold|learning rate|\blr\b|alpha|beta|gamma|lambda|temperature|weight decay|"
                            r"dropout|margin|momentum|coefficient|rate of|\bk\b|[=≈])\W{0,3}(?:\w+\W{1,3}){0,3}$", re.I)  # fmt: skip
_SCORE_CONTEXT = re.compile(r"(accuracy|f1|bleu|rouge|auc|score|precision|recall|error|improvement|gain|"
                            r"perplexity|success|win rate|by|of|to|from|vs\.?|versus|achiev\w*|reach\w*)\W{0,3}"
                            r"(?:\w+\W{1,3}){0,2}$", re.I)  # fmt: skip
_COUNT_NOUN = re.compile(r"^\s*(?:[\w-]+\s+)?(?:samples?|examples?|instances?|layers?|datasets?|tasks?|languages?|"
                         r"parameters?|epochs?|runs?|seeds?|images?|tokens?|steps?|gpus?|heads?|users?|annotators?|"
                         r"papers?|models?|baselines?|benchmarks?|classes|categories|experiments?|sentences?|"
                         r"documents?|questions?|pairs?|points?)\b", re.I)  # fmt: skip
_COUNT_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve")
COUNT_WORD_VALUES = {w: i + 2 for i, w in enumerate(_COUNT_WORDS)}
"""The count words a rule edits, by value ("two" = 2)."""
_COUNT_WORD = re.compile(r"\b(" + "|".join(_COUNT_WORDS) + r")\b", re.I)


def _is_year(token: str) -> bool:
    return token.isdigit() and len(token) == 4 and 1900 <= int(token) <= 2099


def venue_names() -> frozenset[str]:
    """The venues of entities.toml ("ICLR", "NeurIPS", ...)."""
    return frozenset(_entities_file().get("venues", ()))


def year_is_name_part(before: str) -> bool:
    """A year-like number right after an acronym that is no venue: part of a name ("JPEG 2000")."""
    m = _ACRONYM_BEFORE.search(before)
    return bool(m) and m.group(1) not in venue_names()


def cited_elsewhere(before: str, paper_text: str) -> bool:
    """A citation year whose cited author the paper never names: a reference the reviewer brings
    ("Singh et al. 2004" as background, a missing related work), not a claim about the paper. Unknown
    (False) without the paper's text."""
    m = _CITED_NAME.search(before[-80:])
    return bool(paper_text) and bool(m) and m.group(1) not in paper_text


# After a count, its items listed ("two directions, both from the parent and from siblings", "two
# improvements: (1) ... (2) ..."): a new count disagrees with the list in the same sentence.
_ITEMS_LISTED = re.compile(r"(?<![\w-])both(?![\w-])|\(\s*(?:1|i|a)\s*\)|(?:^|[\s:;,—–-])1[.)]\s", re.I)


_LIST_AFTER = re.compile(r"\(([^()]*)\)|:\s*([^.;]*)")
"""A parenthesis or a colon after a count, holding its items ("six knowledge types (entity, dictionary,
commonsense, event, script, causality)")."""


def _count_items_listed(sentence: str, end: int, value: float) -> bool:
    if not (value.is_integer() and 2 <= value <= 12):
        return False
    if _ITEMS_LISTED.search(sentence, end):
        return True
    lists = [m.group(1) or m.group(2) or "" for m in _LIST_AFTER.finditer(sentence, end)]
    # "two tasks, slot-car racing and navigation"; "two approximations - one which ..., and one which ..."
    apposition = re.match(r"[^,;:()]{0,60}?(?:,|\s[-–—]|—)\s*([^;.]*)", sentence[end:])
    if apposition:
        lists.append(apposition.group(1))
    for text in lists:
        items = [i for i in re.split(r",|;|\band\b|\bor\b|/", text) if i.strip()]
        if len(items) == int(value):
            return True
    return False


# A bound or an approximation ("over 40 tasks", "more than 2x", "about 6000"): the paper's "40+" does not
# refute "over 46", nor "roughly 6000" a "roughly 5000" of the reviewer's.
_APPROXIMATE_BEFORE = re.compile(r"(?:\b(?:over|more\s+than|fewer\s+than|less\s+than|at\s+least|at\s+most|about|around|"
                                 r"approximately|approx\.?|roughly|nearly|almost|some|circa|ca\.)|[~≈<>≥≤]|>=|<=)\s*$", re.I)  # fmt: skip


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-6)


def arithmetic_tied(value: float, others: list[float]) -> bool:
    """`value` is tied to the sentence's other values by arithmetic: the sum or difference of two of
    them, or with one gives another ("from 70% to 80%, a 10% gain"), or the number of values some bits
    hold ("4 bits represent the 16 values"). A new value alone breaks the arithmetic of the sentence,
    which shows the edit without the paper. `others`: the values of the sentence's other candidates
    (identifiers, markers and years are none)."""
    # both powers only where they stay finite: 2 ** 1.7e6 overflows a float ("1.7M parameters")
    if any(_close(value, 2**w) or (value <= 64 and _close(w, 2**value)) for w in others if 1 < w <= 64 and 1 < value <= 2**64):
        return True
    for i, a in enumerate(others):
        for j, b in enumerate(others):
            if i != j and (_close(value, a + b) or _close(value, a - b) or _close(b, value + a) or _close(b, a - value)):
                return True
    return False


# Further numbers after a label's first ("Equation 1 and 2", "Tables 3, 4 and 5", "Sec. 2-3") name parts too.
_LABEL_CONTINUED = re.compile(r"\b(?:fig|figure|figs|figures|table|tables|tab|sec|section|sections|eq|eqs|equation|equations|"
                              r"appendix|appendices|theorem|theorems|lemma|lemmas|step|steps|line|lines|chapter|chapters)"
                              r"\.?\s*\(?\d+(?:\.\d+)?\)?(?:\s*(?:,|and|or|&|-|–|to)\s*\(?\d+(?:\.\d+)?\)?)*\s*(?:,|and|or|&|-|–|to)\s*\(?$", re.I)  # fmt: skip


# A number that belongs to a name: after a capitalised word inside the sentence ("Atari 2600", "Windows
# 95", "Xbox 360"), or opening a quoted name ("\"7 Cover the problem space\"": the paper's pattern 7).
_NAME_BEFORE_NUMBER = re.compile(r"(?<=[a-z,;:)] )[A-Z][a-z]+[\s-]$")
_QUOTE_BEFORE = re.compile(r"[\"“‘']$")


def _number_in_name(sentence: str, start: int, end: int) -> bool:
    token = sentence[start:end]
    if not token.isdigit() or _is_year(token):
        return False  # a year after a name is the name's ("Defferrard 2016"): the citation rules judge it
    before = sentence[:start]
    if _NAME_BEFORE_NUMBER.search(before) and not is_identifier_context(before):
        return True
    return bool(_QUOTE_BEFORE.search(before)) and bool(re.match(r"\s+[A-Za-z]", sentence[end:]))


def number_candidates(sentence: str, paper_text: str = "") -> list[Candidate]:
    marker_end = list_marker_end(sentence)  # "1.", "2)", "(a)", bullets: formatting, never an edit target
    out = []
    for m in _NUMBER.finditer(sentence):
        if m.start() < marker_end:
            continue
        before = sentence[: m.start()]
        if is_identifier_context(before):
            continue
        token = m.group(1)
        after = sentence[m.end() : m.end() + 2]
        if "." in token and after[:1] in (":", ",") and _SECTION_POINTER.search(before):
            continue  # "In 4.2: ..." points to a section
        if re.match(r"-norms?\b", sentence[m.end() : m.end() + 7]) or re.match(r"/[01]\b", after) and token in "01":
            continue  # "2-norm" names a norm; "0/1" names binary values
        if _MATH_INDEX.search(before):
            continue  # an index in notation ("y_{t+1}", "Q_{t+1}", "x_2", "t-1"), not a reported value
        if _is_section_pointer(sentence, m.start(), m.end()):
            continue  # "(5.4)", "(5.2/5.3)": sections of the paper in parentheses
        if _ANAPHORA_BEFORE.search(before):
            continue  # "These are two interesting hypotheses": counts the review's own points
        if _is_year(token) and (year_is_name_part(before) or cited_elsewhere(before, paper_text)):
            continue
        if after.startswith(")") and token.isdigit() and int(token) <= 20 and re.search(r"(^|[\s(:;,])$", before):
            continue  # an enumeration marker inside the sentence: "1) ... 2) ...", "(1) ... (2)"
        if token.isdigit() and int(token) <= 20 and (after.startswith(":") or re.match(r"\.\s*[A-Z]", after)):
            continue  # a numbered point: "Weakness 1: ...", "... 2. The ..."
        if after.startswith("- ") and token.isdigit() and int(token) <= 20 and re.search(r"(^|[(,;:])\s*$", before):
            continue  # an enumeration "(1- quick acquisition ..., 2- slower ...)"; "on 1- and 5-shot" is a value
        if re.search(r"\[\s*(?:\d+\s*[,;-]\s*)*$", before) and re.match(r"\s*(?:[,;-]\s*\d+\s*)*\]", after + sentence[m.end() + 2 :]):
            continue  # a citation index of a reference list ("[2]", "[1, 3]")
        if _LABEL_CONTINUED.search(before):
            continue  # "Equation 1 and 2", "Sections 3, 4": the label's further numbers
        if _number_in_name(sentence, m.start(), m.end()):
            continue  # "Atari 2600", a pattern's number in a quoted name ("7 Cover the problem space")
        if re.match(r"/\d", after):
            continue  # a fraction's numerator ("1/48" is one value; "4/48" shows the edit)
        if not _is_year(token) and _APPROXIMATE_BEFORE.search(before) and not _PVALUE_CONTEXT.search(before):
            continue  # a bound or an approximation, not a value the paper refutes when moved
        if _is_year(token):
            leaf = "Citation Year Substitution" if _CITATION_CONTEXT.search(before) else "Event Year Fabrication"
            out.append(Candidate(m.start(), m.end(), leaf, "year"))
            continue
        if _PVALUE_CONTEXT.search(before):
            leaf = "P-Value Mismatch"
        elif after.lstrip().startswith("%"):
            leaf = "Reported Score Mismatch"
        elif "." not in token and _COUNT_NOUN.match(sentence[m.end() : m.end() + 30]):
            leaf = "Count Mismatch"
        elif _PARAM_CONTEXT.search(before):
            leaf = "Scale Parameter Error"
        elif "." in token or _SCORE_CONTEXT.search(before):
            leaf = "Reported Score Mismatch"
        else:
            leaf = "Count Mismatch"
        out.append(Candidate(m.start(), m.end(), leaf, "number"))
    for m in _COUNT_WORD.finditer(sentence):
        if not _ANAPHORA_BEFORE.search(sentence[: m.start()]) and not _APPROXIMATE_BEFORE.search(sentence[: m.start()]):
            out.append(Candidate(m.start(), m.end(), "Count Mismatch", "count_word"))
    values = [_candidate_value(sentence, c) for c in out]
    kept = [c for i, c in enumerate(out) if c.kind == "year"
            or not (arithmetic_tied(values[i], [v for j, v in enumerate(values) if j != i and out[j].kind != "year"])
                    or _count_items_listed(sentence, c.end, values[i]))]  # fmt: skip
    return sorted(kept, key=lambda c: c.start)


def _candidate_value(sentence: str, cand: Candidate) -> float:
    token = sentence[cand.start : cand.end]
    if cand.kind == "count_word":
        return float(COUNT_WORD_VALUES[token.lower()])
    return float(token.replace(",", ""))


def _format_like(value: float, token: str) -> str:
    decimals = len(token.split(".")[1]) if "." in token else 0
    text = f"{value:.{decimals}f}"
    if "," in token:
        text = f"{int(round(value)):,}"
    return text


def new_number(token: str, rng: random.Random, percent: bool = False) -> str:
    """A different value of the same format: small counts move by 1-3, other values by 15-60%."""
    value = float(token.replace(",", ""))
    decimals = len(token.split(".")[1]) if "." in token else 0
    for _ in range(20):
        if decimals == 0 and value <= 12:
            new = value + rng.choice([-2, -1, 1, 2, 3])
            if new < 1 or (new == 1 and value > 1):  # "2 agents" never becomes "1 agents"
                continue
        else:
            factor = rng.choice([rng.uniform(0.4, 0.85), rng.uniform(1.15, 1.6)])
            new = value * factor
            if value < 1 and decimals > 0:  # a proportion stays a proportion
                new = min(new, 1 - 10**-decimals)
            if percent and new >= 100:  # a percentage near 100 can only go down
                new = value * rng.uniform(0.6, 0.9)
            if "," in token and new < 1000:  # keep the thousands separator meaningful
                continue
        text = _format_like(new, token)
        if float(text.replace(",", "")) != value and float(text.replace(",", "")) > 0:
            return text
    return _format_like(value + 1, token)


def _case_like(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word[0].upper() + word[1:] if like[:1].isupper() else word


def number_edit(sentence: str, cand: Candidate, rng: random.Random) -> RuleEdit:
    token = sentence[cand.start : cand.end]
    if cand.kind == "year":
        shift = rng.choice([-4, -3, -2, -1, 1, 2])
        return RuleEdit(cand.start, cand.end, str(int(token) + shift), cand.leaf)
    if cand.kind == "count_word":
        i = _COUNT_WORDS.index(token.lower())
        choices = [j for j in (i - 1, i + 1, i + 2) if 0 <= j < len(_COUNT_WORDS)]
        return RuleEdit(cand.start, cand.end, _case_like(_COUNT_WORDS[rng.choice(choices)], token), cand.leaf)
    percent = sentence[cand.end : cand.end + 2].lstrip().startswith("%")
    return _with_article(sentence, RuleEdit(cand.start, cand.end, new_number(token, rng, percent), cand.leaf))


# ---------------------------------------------------------------- Temporal
# "currently", "nowadays" and "previously" are not edited: in a review they mostly sit in the present
# tense ("RoT currently requires ...", "problems that were previously intractable"), where the
# swapped word makes the sentence ungrammatical rather than false.
_RECENCY = {
    "recent": "early", "recently": "previously", "early": "recent",
    "earlier": "later", "later": "earlier", "prior": "concurrent", "concurrent": "prior", "latest": "earliest",
    "earliest": "latest", "modern": "classical", "classical": "modern",
    "outdated": "recent", "emerging": "established", "established": "emerging",
}  # fmt: skip
# Hedged <-> certain claims about the paper. "would"/"should"/"can" are left alone: in a review they
# mostly carry the reviewer's own suggestions, where a change says nothing false about the paper.
_MODALS = {"might": "will", "may": "will", "could": "will", "will": "might", "must": "may", "cannot": "might not"}
_MONTHS = ("January", "February", "March", "April", "June", "July", "August", "September", "October",
           "November", "December")  # fmt: skip
_RECENCY_RE = re.compile(r"\b(" + "|".join(_RECENCY) + r")\b", re.I)
# "prior work", "recent methods", ...: a time reference to other work says something about the paper
# only where the paper is set against that work ("improves over prior work", "compares with recent
# methods"); "grounds the work in prior literature" is the reviewer's view of the literature.
_RELATIVE_TIME = {"recent", "recently", "early", "earlier", "later", "prior", "concurrent", "latest", "earliest",
                  "outdated", "emerging", "established"}  # fmt: skip
_COMPARISON = re.compile(r"\b(?:than|over|compar\w*\s+(?:[\w-]+\s+){0,3}?(?:with|to|against)|outperform\w*|improv\w*|beyond|limitations?\s+of|unlike|"
                         r"against|versus|vs\.?|surpass\w*|exceed\w*|better|worse|bigger|larger|smaller|faster)\b", re.I)  # fmt: skip
# "a hugely improved later version": the submission's own revision history, not a claim about the paper.
_MANUSCRIPT_AFTER = re.compile(r"\s+(?:versions?|revisions?|drafts?|submissions?|manuscripts?|copy)\b", re.I)
_MODAL_RE = re.compile(r"\b(" + "|".join(_MODALS) + r")\b(?!\s+\d{4})", re.I)
_YEAR_RE = re.compile(r"(?<![\w.\-])((?:19|20)\d{2})(?![\w.]\d)")
_MONTH_RE = re.compile(r"\b(" + "|".join(_MONTHS) + r")\b")


def temporal_candidates(sentence: str, paper_text: str = "") -> list[Candidate]:
    """Time references first: a modal verb is a candidate only in a sentence without one."""
    compared = bool(_COMPARISON.search(sentence))
    out = [Candidate(m.start(), m.end(), "Recency Misstatement", "recency") for m in _RECENCY_RE.finditer(sentence)
           if (compared or m.group(1).lower() not in _RELATIVE_TIME) and not _MANUSCRIPT_AFTER.match(sentence, m.end())]
    out += [Candidate(m.start(), m.end(), "Date Shift", "year") for m in _YEAR_RE.finditer(sentence)
            if not year_is_name_part(sentence[: m.start()]) and not cited_elsewhere(sentence[: m.start()], paper_text)]
    out += [Candidate(m.start(), m.end(), "Date Shift", "month") for m in _MONTH_RE.finditer(sentence)]
    if not out:  # a modal of the reviewer's own ("X could strengthen the paper") says nothing about the paper
        out = [Candidate(m.start(), m.end(), "Modality Shift", "modal") for m in _MODAL_RE.finditer(sentence)
               if is_reported_modal(sentence, m.start())]
    return sorted(out, key=lambda c: c.start)


def temporal_edit(sentence: str, cand: Candidate, rng: random.Random) -> RuleEdit:
    token = sentence[cand.start : cand.end]
    if cand.kind == "recency":  # "a recent approach" -> "an early approach"
        return _with_article(sentence, RuleEdit(cand.start, cand.end, _case_like(_RECENCY[token.lower()], token), cand.leaf))
    if cand.kind == "modal":
        return RuleEdit(cand.start, cand.end, _case_like(_MODALS[token.lower()], token), cand.leaf)
    if cand.kind == "year":
        return RuleEdit(cand.start, cand.end, str(int(token) + rng.choice([-3, -2, -1, 1, 2])), cand.leaf)
    others = [m for m in _MONTHS if m != token]
    return RuleEdit(cand.start, cand.end, rng.choice(others), cand.leaf)


# ---------------------------------------------------------------- Entity
@cache
def _entities_file() -> dict[str, tuple[str, ...]]:
    with open(ENTITIES_PATH, "rb") as f:
        return {k: tuple(v) for k, v in tomllib.load(f).items()}


def entity_vocabulary() -> dict[str, tuple[str, ...]]:
    """Swappable names by class (kinds of model, architecture, dataset, metric)."""
    return {k: v for k, v in _entities_file().items() if k not in _NOT_CLASSES}


_NOT_CLASSES = ("not_paper_terms", "loose_synonyms", "hypernyms", "venues")


def _forms(term: str, capitalised_too: bool) -> set[str]:
    return {term, term[0].upper() + term[1:]} if capitalised_too and term.islower() else {term}


@cache
def _term_re(term: str, capitalised_too: bool) -> re.Pattern:
    """A whole-word pattern; a lower-case term ("accuracy") also matches capitalised ("Accuracy"),
    never other casings ("mAP" is not "map")."""
    forms = _forms(term, capitalised_too)
    return re.compile(r"(?<![\w\-])(?:" + "|".join(re.escape(f) for f in sorted(forms)) + r")(?![\w\-])")


_ACRONYM = re.compile(r"(?<![\w\-])([A-Z][A-Za-z]*[A-Z][A-Za-z0-9]*(?:-[A-Za-z0-9]+)?)(?![\w\-])")

# What a paper calls one of its names, read from the words around each mention. A name is swapped
# only for another name of the same category (a method for a method, a dataset for a dataset, a
# metric for a metric): an acronym the paper never calls a method, dataset or metric ("HTML", "IRB",
# "FPS", a small-caps heading fragment) is no entity to swap.
_CUE_AFTER = {
    "dataset": re.compile(r"^[\s-]*(?:datasets?|benchmarks?|corpus|corpora|data\s+sets?|suite|splits?|test\s+sets?|"
                          r"leaderboard|collection)\b", re.I),
    "metric": re.compile(r"^[\s-]*(?:scores?|metrics?|measures?)\b", re.I),
    "method": re.compile(r"^[\s-]*(?:methods?|models?|approach(?:es)?|framework|architectures?|algorithms?|networks?|"
                         r"modules?|baselines?|encoders?|decoders?|variants?|pipelines?|techniques?|strateg(?:y|ies)|"
                         r"schemes?|systems?|agents?|\(ours\)|outperforms?|achieves?)\b", re.I),
}  # fmt: skip
_CUE_BEFORE = {
    "dataset": re.compile(r"(?:\b(?:trained|evaluated|tested|experiments?|results|finetuned|fine-tuned|pre-?trained)\s+"
                          r"on\s+(?:the\s+)?|\b(?:datasets?|benchmarks?)\s*(?:such\s+as|like|including|:)\s*)$", re.I),
    "metric": re.compile(r"(?:\bin\s+terms\s+of\s+(?:the\s+)?|\bmeasured\s+by\s+|"
                         r"\bmetrics?\s*(?:such\s+as|like|including|:)\s*)$", re.I),
    "method": re.compile(r"(?:\b(?:we|they)\s+(?:propose|introduce|present|develop|call|name|dub|term)\w*\s+(?:\w+\s+){0,4}?|"
                         r"\b(?:called|named|dubbed|termed|our)\s+|\bcompared?\s+(?:with|to|against)\s+|"
                         r"\bbaselines?\s*(?:such\s+as|like|including|:)\s*)$", re.I),
}  # fmt: skip
PAPER_ENTITY_CATEGORIES = ("method", "dataset", "metric")


def _not_entities() -> frozenset[str]:
    return frozenset(_entities_file()["not_paper_terms"])


@cache
def paper_acronyms(paper_text: str, min_count: int = 3) -> tuple[str, ...]:
    """Acronym-like names (two capitals or more) the paper uses at least `min_count` times, most used
    first, other than the vocabulary's names and the listed non-entities (units, fields, venues)."""
    known = {t for terms in entity_vocabulary().values() for t in terms}  # those swap within their class
    counts = Counter(m.group(1) for m in _ACRONYM.finditer(paper_text)
                     if m.group(1) not in known and m.group(1) not in _not_entities())  # fmt: skip
    words = Counter(re.findall(r"(?<![\w-])[a-z]{3,}(?![\w-])", paper_text))
    return tuple(sorted((t for t, n in counts.items() if n >= min_count and _entity_shaped(t, words)),
                        key=lambda t: (-counts[t], t)))  # fmt: skip


def _entity_shaped(term: str, words: Counter) -> bool:
    """A name: not a plural class noun ("DNNs", "LLMs"), a derived form ("DNN-based"), a two-letter
    abbreviation ("CL", "IR"), nor a small-caps heading fragment ("NDERSTANDING", "BASED": an
    all-caps word the paper also writes in lower case)."""
    if len(term) > 20 or len(term) < 3 or re.search(r"-[a-z]+$", term):
        return False
    if term.isalpha() and term.isupper() and (len(term) > 8 or words[term.lower()] >= 2):
        return False
    return not (term.endswith("s") and term[:-1].isupper())


@cache
def paper_entities(paper_text: str) -> dict[str, str]:
    """The paper's own names with the category the paper gives them (`method`, `dataset` or `metric`),
    by cue words around their mentions ("the X dataset", "we propose X", "78.4 X"). A name needs at
    least two cues of its category and more than of any other; names without a category are left out."""
    out: dict[str, str] = {}
    for term in paper_acronyms(paper_text):
        votes: Counter = Counter()
        for m in _term_re(term, False).finditer(paper_text):
            before, after = paper_text[max(0, m.start() - 60) : m.start()], paper_text[m.end() : m.end() + 30]
            for cat in PAPER_ENTITY_CATEGORIES:
                if _CUE_AFTER[cat].search(after) or _CUE_BEFORE[cat].search(before):
                    votes[cat] += 1
        ranked = votes.most_common(2)
        if ranked and ranked[0][1] >= 2 and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
            out[term] = ranked[0][0]
    return out


def _stem(name: str) -> str:
    s = re.sub(r"[^a-z0-9]", "", name.lower())
    return s.removesuffix("based").removesuffix("s")


def _variants(a: str, b: str) -> bool:
    """One name is a form of the other ("CPDAG"/"CPDAG-based", "MoE"/"SaMoE"): a swap between them is
    an inflection or a component, not another entity."""
    x, y = _stem(a), _stem(b)
    return x in y or y in x


@cache
def _class_patterns() -> tuple[tuple[str, re.Pattern], ...]:
    """One alternation per class, longest names first ("GPT-3.5" before "GPT-3")."""
    out = []
    for cls, terms in entity_vocabulary().items():
        forms = sorted({f for t in terms for f in _forms(t, _is_metric(cls))}, key=lambda f: (-len(f), f))
        out.append((cls, re.compile(r"(?<![\w\-])(?:" + "|".join(re.escape(f) for f in forms) + r")(?![\w\-])")))
    return tuple(out)


# A lower-case metric word ("accuracy", "recall") names the metric only where the sentence measures
# something; elsewhere it is a common noun ("the trade-off between interpretability and accuracy").
_MEASURED = re.compile(r"\d|\b(?:in\s+terms\s+of|metrics?|scores?|measured|evaluat\w*\s+(?:by|with|using))\b", re.I)


def _loose_synonyms(term: str) -> frozenset[str]:
    """Names reviewers use interchangeably (entities.toml `loose_synonyms`): never swapped for each other."""
    return frozenset(t for group in _entities_file().get("loose_synonyms", ()) if term in group for t in group)


def _hypernym_related(a: str, b: str) -> bool:
    """One name is a kind of the other (entities.toml `hypernyms`: "LSTM" is an "RNN")."""
    return any((a == g[0] and b in g[1:]) or (b == g[0] and a in g[1:]) for g in _entities_file().get("hypernyms", ()))


# A name that is one of a lettered series in the sentence ("T3 ... T5": tasks, not the T5 model).
_SERIES_ID = re.compile(r"^([A-Z])\d+$")


def _in_id_series(sentence: str, term: str) -> bool:
    m = _SERIES_ID.match(term)
    return bool(m) and any(t != term for t in re.findall(rf"(?<![\w\-]){m.group(1)}\d+(?![\w\-])", sentence))


def _inside_title_case_name(sentence: str, start: int, end: int) -> bool:
    """A vocabulary word between two capitalised words ("Spatial Transformer Networks"): a piece of
    another name. The word before must not open the sentence, where every word is capitalised."""
    before = re.search(r"(?:^|[\s(])([A-Z][a-z]+)\s+$", sentence[:start])
    after = re.match(r"\s+[A-Z][a-z]+", sentence[end:])
    return bool(before and after and before.start(1) > 0)


def _an(word: str) -> str:
    """The indefinite article a word takes ("an LSTM", "a Transformer", "an RNN", "an ablation",
    "an 18-page paper", "a 13-page paper")."""
    if word[:1].isdigit():  # said aloud: "an eight", "an eleven", "an eighteen", "an eighty"
        digits = word.split(".")[0].replace(",", "")
        groups = (len(digits) - 1) % 3 + 1  # the leading group read as one number ("18,000": "eighteen")
        lead = digits[:groups]
        return "an" if lead.startswith("8") or lead in ("11", "18") else "a"
    if len(word) > 1 and word[:2].isupper():  # an acronym is read letter by letter
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    return "an" if word[:1].lower() in "aeiou" else "a"


_ARTICLE_BEFORE = re.compile(r"(?<![\w-])(an?)(\s+)$", re.I)


def _is_metric(cls: str) -> bool:
    return cls.endswith("metric")


def _defined_here(sentence: str, start: int, end: int) -> bool:
    """An acronym in the parentheses that define it ("Word Movers Distance (WMD)"): swapping it leaves
    the spelled-out name beside a wrong acronym, an inconsistency any reader sees without the paper."""
    if sentence[start - 1 : start] != "(" or sentence[end : end + 1] != ")":
        return False
    letters = [ch for ch in sentence[start:end] if ch.isupper()]
    words = re.findall(r"[A-Za-z][\w-]*", sentence[: start - 1])[-len(letters) :] if letters else []
    return len(words) == len(letters) and all(w[0].upper() == ch for w, ch in zip(words, letters, strict=True))


# A model named with its size ("GPT-3 with 175B parameters", "T5 (11B)"): another model beside that
# size is often known not to have it ("Phi-2 with 175B parameters"), which shows the edit.
_SIZE_AFTER = re.compile(r"[^.;]{0,25}?\b\d+(?:\.\d+)?\s?(?:[BMK]\b|billion|million)", re.I)


def _named_again(sentence: str, term: str) -> bool:
    """The sentence names `term` more than once, also inside another token ("what a trained LSTM has
    learnt ... performs similarly to the LSTM"; "the clockwork RNN (CW-RNN)"; "the RNN is trained as a
    RNNLM"): one swapped mention beside the other shows the edit without the paper."""
    return len(re.findall(re.escape(term), sentence, re.I)) > 1


def entity_candidates(sentence: str, paper_text: str = "") -> list[Candidate]:
    out: list[Candidate] = []
    taken: list[tuple[int, int]] = []
    measured = bool(_MEASURED.search(sentence))
    for cls, pattern in _class_patterns():
        for m in pattern.finditer(sentence):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            taken.append((m.start(), m.end()))
            if _is_metric(cls) and m.group(0)[1:].islower() and not measured:
                continue
            if _defined_here(sentence, m.start(), m.end()) or _in_id_series(sentence, m.group(0)):
                continue
            if _inside_title_case_name(sentence, m.start(), m.end()):
                continue  # "Spatial Transformer Networks" is a name, not the Transformer
            if _named_again(sentence, m.group(0)) or (cls.endswith("model") and _SIZE_AFTER.match(sentence, m.end())):
                continue
            if not vocabulary_swaps(sentence, m.group(0), cls, paper_text):
                continue  # nothing of its kind to put in its place
            leaf = "Benchmark Entity Swap" if cls.endswith("dataset") or _is_metric(cls) else "Attribute Substitution"
            out.append(Candidate(m.start(), m.end(), leaf, cls))
    entities = paper_entities(paper_text) if paper_text else {}
    for m in _ACRONYM.finditer(sentence):
        term = m.group(1)
        if term not in entities or any(a < m.end() and m.start() < b for a, b in taken) or _named_again(sentence, term):
            continue
        if not _paper_swaps(term, entities, sentence) or _defined_here(sentence, m.start(), m.end()):
            continue
        leaf = "Attribute Substitution" if entities[term] == "method" else "Benchmark Entity Swap"
        out.append(Candidate(m.start(), m.end(), leaf, f"paper_{entities[term]}"))
    return sorted(out, key=lambda c: c.start)


def _paper_swaps(term: str, entities: dict[str, str], sentence: str) -> list[str]:
    """The paper's other names of the category of `term` that may replace it in `sentence`."""
    return [t for t, cat in entities.items() if cat == entities[term] and not _variants(t, term)
            and not _term_re(t, False).search(sentence)]  # fmt: skip


@cache
def _mentioned_in(paper_text: str, cls: str) -> frozenset[str]:
    """The names of a class that a paper mentions (cached: one scan per paper and class)."""
    return frozenset(t for t in entity_vocabulary()[cls] if _term_re(t, _is_metric(cls)).search(paper_text))


def entity_edit(sentence: str, cand: Candidate, rng: random.Random, paper_text: str = "") -> RuleEdit:
    token = sentence[cand.start : cand.end]
    if cand.kind.startswith("paper_"):  # another of the paper's names of the same category and shape
        terms = _paper_swaps(token, paper_entities(paper_text), sentence)
        pool = [t for t in terms if t.isupper() == token.isupper()] or terms
        return _with_article(sentence, RuleEdit(cand.start, cand.end, rng.choice(pool[:10]), cand.leaf))
    metric = _is_metric(cand.kind)
    new = rng.choice(vocabulary_swaps(sentence, token, cand.kind, paper_text))
    return _with_article(sentence, RuleEdit(cand.start, cand.end, _case_like(new, token) if metric else new, cand.leaf))


def vocabulary_swaps(sentence: str, token: str, cls: str, paper_text: str = "") -> list[str]:
    """The names that may replace `token` (of class `cls`) in `sentence`: the class's names the paper
    never writes (a name it does write may be as true there: "fine-tuned BERT" -> "fine-tuned RoBERTa"
    in a paper that fine-tunes both; "an accuracy of 38%" -> "a recall of 38%" in a paper reporting
    recall). Never the name itself, a loose synonym, a hypernym or hyponym of it, nor a name the
    sentence already holds ("ALBERT, BERT, GPT2, RoBERTa" must not get a second BERT)."""
    metric = _is_metric(cls)
    held = sentence.lower()  # case-blind: "XLNET" in the sentence rules out "XLNet"
    loose = _loose_synonyms(token.lower())

    # also blind to punctuation: "Cifar10" in the sentence rules out "CIFAR-10"
    held_tokens = {re.sub(r"[^a-z0-9]", "", w) for w in re.split(r"[\s,;:()\[\]]+", held)}

    mentioned = _mentioned_in(paper_text, cls) if paper_text else frozenset()
    out = [t for t in entity_vocabulary()[cls] if t.lower() != token.lower() and t.lower() not in loose
           and not _term_re(t.lower(), False).search(held) and not _hypernym_related(t, token)
           and re.sub(r"[^a-z0-9]", "", t.lower()) not in held_tokens and t not in mentioned]  # fmt: skip
    if metric:  # a word for a word, an acronym for an acronym ("BLEU" never -> "PRECISION")
        out = [t for t in out if t[1:].islower() == token[1:].islower()] or out
    return out


def _with_article(sentence: str, edit: RuleEdit) -> RuleEdit:
    """The edit, widened to the article before it when the new name takes the other one ("an LSTM"
    -> "a Transformer", never "an Transformer", which would show the edit without the paper)."""
    m = _ARTICLE_BEFORE.search(sentence[: edit.start])
    if not m or m.group(1).lower() == _an(edit.replacement):
        return edit
    prefix = _case_like(_an(edit.replacement), m.group(1)) + m.group(2)
    return RuleEdit(m.start(), edit.end, prefix + edit.replacement, edit.leaf, value_offset=len(prefix))


# ---------------------------------------------------------------- registry
@dataclass(frozen=True)
class ReviewRuleInjector:
    """A rule injector the taxonomy names (`rule_injector = "..."`): where it can edit a sentence,
    and the edit it makes at one of those places."""

    candidates: Callable[[str, str], list[Candidate]]  # (sentence, paper_text)
    edit: Callable[[str, Candidate, random.Random, str], RuleEdit]  # (sentence, candidate, rng, paper_text)


RULE_INJECTORS: Registry[ReviewRuleInjector] = Registry("rule injector")
RULE_INJECTORS.add("number", ReviewRuleInjector(number_candidates, lambda s, c, rng, _p: number_edit(s, c, rng)))
RULE_INJECTORS.add("temporal", ReviewRuleInjector(temporal_candidates,
                                                  lambda s, c, rng, _p: temporal_edit(s, c, rng)))
RULE_INJECTORS.add("entity", ReviewRuleInjector(entity_candidates, entity_edit))


def rule_candidates(name: str, sentence: str, paper_text: str = "") -> list[Candidate]:
    """Where the rule injector `name` can edit the sentence (empty: the rule does not apply)."""
    return RULE_INJECTORS.get(name).candidates(sentence, paper_text)


def rule_edit(name: str, sentence: str, cand: Candidate, rng: random.Random, paper_text: str = "") -> RuleEdit:
    return RULE_INJECTORS.get(name).edit(sentence, cand, rng, paper_text)


__all__ = [
    "ENTITIES_PATH",
    "Candidate",
    "RULE_INJECTORS",
    "ReviewRuleInjector",
    "RuleEdit",
    "entity_candidates",
    "entity_vocabulary",
    "is_identifier_context",
    "new_number",
    "number_candidates",
    "paper_acronyms",
    "paper_entities",
    "rule_candidates",
    "rule_edit",
    "temporal_candidates",
]
