"""Rule injectors for numerics errors in prose and tables (appendix C.2.2), plus the cited-number nudge.

Numbers come from the paper index (prose only: maths, comments, labels and keys are masked out);
years are never touched. Injectors that prefer the abstract give abstract candidates priority 0.
"""

from __future__ import annotations

import re
from collections import Counter

from corpora.papers.injectors_core import (
    Proposal,
    as_float,
    format_like,
    is_year,
    nudge_last_digit,
    proposal,
    times_ten,
)
from corpora.papers.latex_paper import LatexPaper, Number, sentence_around


def _numbers(paper: LatexPaper, tables: bool = False) -> list[Number]:
    idx = paper.index
    return [n for n in idx.numbers if not is_year(n.text) and (tables or not idx.in_table(n.span))]


def _edit(paper: LatexPaper, n: Number, new: str, why: str, priority: int = 1) -> Proposal | None:
    return proposal(paper, n.span.file, n.span.start, n.span.end, new, why, priority)


def _collect(items) -> list[Proposal]:
    return [p for p in items if p is not None]


def cited_number_nudge(paper: LatexPaper) -> list[Proposal]:
    cited = [c.sentence for c in paper.index.citations]
    out = []
    for n in _numbers(paper):
        if any(s.file == n.span.file and s.start <= n.span.start < s.end for s in cited):
            new = nudge_last_digit(n.text, 2) if "." in n.text else format_like(round(as_float(n.text) * 1.08 + 1), n.text)
            out.append(_edit(paper, n, new, f"value attributed to a cited work changed ({n.text} -> {new})"))
    return _collect(out)


def abstract_decimal_drift(paper: LatexPaper) -> list[Proposal]:
    body = Counter(n.text for n in _numbers(paper) if not n.in_abstract)
    out = []
    for n in _numbers(paper):
        if n.in_abstract and "." in n.text:
            new = nudge_last_digit(n.text)
            prio = 0 if body[n.text] else 1
            out.append(_edit(paper, n, new, f"abstract value drifts in the last decimal ({n.text} -> {new}); "
                             "the body keeps the original", prio))  # fmt: skip
    return _collect(out)


def table_cell_nudge(paper: LatexPaper) -> list[Proposal]:
    out = []
    for n in paper.index.numbers:
        if paper.index.in_table(n.span) and not is_year(n.text):
            digits = n.text.replace(",", "").replace(".", "")
            if len(digits) < 2:
                continue
            new = format_like(as_float(n.text) - 10, n.text) if "." not in n.text and as_float(n.text) >= 100 else nudge_last_digit(n.text)
            out.append(_edit(paper, n, new, f"table cell changed slightly ({n.text} -> {new})"))
    return _collect(out)


def repeated_constant_drift(paper: LatexPaper) -> list[Proposal]:
    nums = _numbers(paper)
    counts = Counter(n.text for n in nums)
    out = []
    for n in nums:
        if counts[n.text] < 2 or n.in_abstract or n.text in ("0", "1", "2") or len(n.text.replace(".", "")) < 2:
            continue
        if "." in n.text:
            new = nudge_last_digit(n.text)
        else:
            value = int(n.text.replace(",", ""))
            new = format_like(value + 10 ** max(0, len(str(value)) - 2), n.text)
        out.append(_edit(paper, n, new, f"one occurrence of the repeated constant {n.text} drifts to {new}"))
    return _collect(out)


def _swap_digits(s: str) -> str | None:
    pos = [i for i, c in enumerate(s) if c.isdigit()]
    for a, b in zip(pos, pos[1:], strict=False):
        if s[a] != s[b] and not (a == 0 and s[b] == "0"):
            chars = list(s)
            chars[a], chars[b] = chars[b], chars[a]
            return "".join(chars)
    return None


def digit_swap(paper: LatexPaper) -> list[Proposal]:
    out = []
    for n in _numbers(paper):
        new = _swap_digits(n.text)
        if new is not None:
            out.append(_edit(paper, n, new, f"digits transposed ({n.text} -> {new})", 0 if n.in_abstract else 1))
    return _collect(out)


# Whole words only (issue 15: "separation" was read as a "ratio" statement).
_RATIO_RE = re.compile(r"\\%|\b(?:percent|times|(?:\w+-)?fold|(?:two|three|four|five|six|seven|eight|nine|ten|hundred|thousand|many|several)fold|fractions?|ratios?|speed-?ups?|factors?)\b", re.I)


# What makes a sentence relate its numbers (issue 21, second round): a share "of" something, a
# multiple, a ratio. A bare "an error below 3%" relates the 3 to nothing else in the sentence.
_RELATION_RE = re.compile(r"(?:\\%|percent)\s*(?:of|out of)\b|\bout of\b|\b(?:times|(?:\w+-)?fold|fractions?|ratios?|"
                          r"speed-?ups?|factors?)\b", re.I)
_RATIO_VALUE_BEFORE_RE = re.compile(r"(?i)\b(?:ratios?|factors?|fractions?|speed-?ups?)\s+(?:of\s+)?(?:about\s+|~)?\$?\s*$")
_NAMED_RATIO_RE = re.compile(r"(?i)\b(?:aspect|signal-to-noise|mass|axis|odds|likelihood|compression)[\s-]+ratios?\b")


def percent_of_break(paper: LatexPaper) -> list[Proposal]:
    nums = _numbers(paper)
    by_sentence: dict[tuple[str, int, int], list[Number]] = {}
    for n in nums:
        # the sentence as a reader splits it: the index's sentence can run across a caption into a table
        s, e = sentence_around(paper.files[n.span.file], n.span.start, n.span.end)
        by_sentence.setdefault((n.span.file, s, e), []).append(n)
    out = []
    for (file, s, e), group in by_sentence.items():
        text = paper.files[file]
        sentence = _NAMED_RATIO_RE.sub(" ", text[s:e])
        if len(group) < 2 or not _RATIO_RE.search(sentence) or not _RELATION_RE.search(sentence):
            continue
        for n in group:
            after = text[n.span.end : n.span.end + 8]
            if re.match(r"\s*(\\%|%|percent|times|-?fold|\\times)", after) or as_float(n.text) == 0:
                continue
            if _RATIO_VALUE_BEFORE_RE.search(text[max(0, n.span.start - 30) : n.span.start]):
                continue  # "a constant ratio of 1.2" is the ratio itself, no quantity it relates
            new = format_like(as_float(n.text) * 1.5, n.text)
            if new == n.text:
                continue
            out.append(_edit(paper, n, new, f"a quantity of a ratio statement changed ({n.text} -> {new}); "
                             "the stated ratio no longer follows"))  # fmt: skip
    return _collect(out)


def _is_percent(paper: LatexPaper, n: Number) -> bool:
    return re.match(r"\s*(\\%|%|\s?percent)", paper.files[n.span.file][n.span.end : n.span.end + 9]) is not None


def repeated_integer_tenfold(paper: LatexPaper) -> list[Proposal]:
    nums = [n for n in _numbers(paper) if "." not in n.text and as_float(n.text) >= 10 and not _is_percent(paper, n)]
    counts = Counter(n.text for n in nums)
    out = []
    for n in nums:
        if counts[n.text] < 2:
            continue
        plain = n.text.replace(",", "")
        new = format_like(int(plain) // 10, n.text) if plain.endswith("0") else times_ten(n.text)
        out.append(_edit(paper, n, new, f"one occurrence of the count {n.text} changed by a factor of ten ({new})",
                         1 if n.in_abstract else 0))  # fmt: skip
    return _collect(out)


_PERCENT_RE = re.compile(r"(?<![\d.,])(\d{1,2}(?:\.\d+)?)\s*(\\%|\s?percent)")


def percent_over_100(paper: LatexPaper) -> list[Proposal]:
    out = []
    for rel, masked in paper.index.masked.items():
        for m in _PERCENT_RE.finditer(masked):
            p = as_float(m.group(1))
            if not 5 <= p < 100:
                continue
            rest = format_like(130 - p, m.group(1))
            new = f"{m.group(0)} (with the remaining {rest}{m.group(2)} in the complementary case)"
            out.append(proposal(paper, rel, m.start(), m.end(), new,
                                f"shares {m.group(1)}% and {rest}% of one whole sum to 130%"))  # fmt: skip
    return _collect(out)


def order_of_magnitude(paper: LatexPaper) -> list[Proposal]:
    out = []
    for n in _numbers(paper):
        if as_float(n.text) == 0:
            continue
        if _is_percent(paper, n) and as_float(n.text) >= 10:
            continue
        new = times_ten(n.text)
        small = len(n.text) == 1
        out.append(_edit(paper, n, new, f"number off by an order of magnitude ({n.text} -> {new})",
                         (0 if n.in_abstract else 1) + (2 if small else 0)))  # fmt: skip
    return _collect(out)


RULES_NUMERICS = {
    "cited_number_nudge": cited_number_nudge,
    "abstract_decimal_drift": abstract_decimal_drift,
    "table_cell_nudge": table_cell_nudge,
    "repeated_constant_drift": repeated_constant_drift,
    "digit_swap": digit_swap,
    "percent_of_break": percent_of_break,
    "repeated_integer_tenfold": repeated_integer_tenfold,
    "percent_over_100": percent_over_100,
    "order_of_magnitude": order_of_magnitude,
}
