"""Does an injection's type label fit what the edit actually changed? (issue 21, item 4)

The meaning check (`validator.meaning_check`) asks whether an edit changes printed meaning at all;
this asks whether it is the error its sub-type says, and whether a reader of the paper alone could
find it. An edit is refused here (and re-drawn, counted with the invalid draws) when:

- a citation sub-type changes maths (inline or displayed): that is a formula change, not a misquote;
- a citation sub-type edits a sentence the authors speak in ("we", "our"): their own work, not the cited one;
- a changed number names a thing (catalogue id, grant or arXiv number, model or data-set name, an
  acknowledgement's numbers): `latex_paper.IDENTIFIER_NUMBER_RE`;
- a changed number sits in a sentence that cites a work and is stated nowhere else in the paper
  (or has under two significant digits, so a match elsewhere is chance): only the cited work could
  show it wrong;
- `table_row_total_mismatch` changes a cell of a table with no total row or column whose value
  (three significant digits or more) the paper never repeats: nothing in the paper fails to add up;
- `sample_size_disagreement` changes a factor ("a factor of 20"), not a count;
- a word swap of "above"/"below" where the word points at the text ("discussed above"), not at a value.

Checks run on the clean paper (rule candidates are taken from it); an edit whose original text is
not found once in the clean file (an LLM proposal on an already edited copy) gets only the checks
that need no index.
"""

from __future__ import annotations

import difflib
import re

from corpora.papers.injectors_core import Proposal
from corpora.papers.latex_paper import _ACKNOWLEDGEMENT_RE, CITE_RE, IDENTIFIER_NUMBER_RE, LatexPaper, Span
from corpora.papers.subtypes import SubType

_SELF_RE = re.compile(r"(?i)\b(?:we|our|us|this (?:work|paper|study))\b")
_QUANTITY_AFTER_RE = re.compile(r"\s*(?:~|roughly|about|approximately|around|\\approx|\\sim)?\s*[\d$\\]")
# A cell that starts with "Total", "Sum" or "Overall" (a total row or column), not "the total number of" in a note.
_TOTAL_CELL_RE = re.compile(r"(?im)(?:^|\\\\|&)\s*(?:\\[A-Za-z]+\s*\{)*\s*(?:total|sum|overall)\b")


def _changed(proposal: Proposal) -> tuple[int, int, int, int]:
    ops = [o for o in difflib.SequenceMatcher(None, proposal.original, proposal.injected, autojunk=False).get_opcodes()
           if o[0] != "equal"]
    return (ops[0][1], ops[-1][2], ops[0][3], ops[-1][4]) if ops else (0, 0, 0, 0)


def _overlaps(spans: list[Span], file: str, a: int, b: int) -> bool:
    return any(s.file == file and s.start < max(b, a + 1) and a < s.end for s in spans)


def _number_token(text: str, a: int, b: int) -> tuple[int, int] | None:
    """The printed number the changed characters text[a:b] belong to, or None when they are no number edit."""
    if not re.fullmatch(r"[\d.,]*", text[a:b]):
        return None
    lo, hi = a, b
    while lo > 0 and (text[lo - 1].isdigit() or text[lo - 1] in ".,"):
        lo -= 1
    while hi < len(text) and (text[hi].isdigit() or text[hi] in ".,"):
        hi += 1
    while hi > lo and text[hi - 1] in ".,":
        hi -= 1
    while lo < hi and text[lo] in ".,":
        lo += 1
    return (lo, hi) if any(c.isdigit() for c in text[lo:hi]) else None


def _significant(number: str) -> int:
    """Significant digits of a printed number: a round "1000" or a "0" recurs by chance, "1.27" does not."""
    return len(re.sub(r"\D", "", number).strip("0"))


def _sentence(paper: LatexPaper, file: str, a: int, b: int) -> tuple[int, int]:
    from corpora.papers.latex_paper import sentence_around

    return sentence_around(paper.files[file], a, b)


def _stated_elsewhere(paper: LatexPaper, token: str, file: str, s: int, e: int) -> bool:
    """Whether the number `token` is printed anywhere in the paper's prose or maths outside file[s:e]."""
    pattern = re.compile(r"(?<![\d.,])" + re.escape(token) + r"(?![\d]|[.,]\d)")
    for rel in paper.compiled:
        masked = paper.index.masked.get(rel, "")
        text = paper.files[rel]
        for m in pattern.finditer(text):
            if rel == file and s <= m.start() < e:
                continue
            in_maths = _overlaps(paper.index.inline_math + paper.index.display_math, rel, m.start(), m.end())
            if in_maths or masked[m.start() : m.end()] == token:
                return True
    return False


def label_mismatch(paper: LatexPaper, proposal: Proposal, subtype: SubType) -> str | None:
    """Why `proposal` is not the error `subtype` names (or not checkable from the paper), else None."""
    o1, o2, n1, n2 = _changed(proposal)
    old, new = proposal.original[o1:o2], proposal.injected[n1:n2]
    text = paper.files.get(proposal.file, "")
    if text.count(proposal.original) != 1:
        return None  # an edit of an already edited copy: no index for it
    base = text.index(proposal.original)
    a, b = base + o1, base + o2
    idx = paper.index
    maths = idx.inline_math + idx.display_math
    s, e = _sentence(paper, proposal.file, a, b)
    sentence = text[s:e]
    cited = CITE_RE.search(sentence) is not None
    if subtype.error_type == "citations":
        if _overlaps(maths, proposal.file, a, b):
            return "a citation sub-type that changes maths: a formula change, not a misquote"
        if _SELF_RE.search(sentence):
            return "a citation sub-type in a sentence about the authors' own work ('we', 'our')"
    w0, w1 = a, b
    while w0 > 0 and text[w0 - 1].isalpha():
        w0 -= 1
    while w1 < len(text) and text[w1].isalpha():
        w1 += 1
    word = text[w0:w1]
    if word.lower() in ("above", "below") and not _QUANTITY_AFTER_RE.match(text, w1):
        return f"'{word}' points at the text, not at a value: swapping it reverses no claim"
    token = _number_token(text, a, b)
    if token is None or old == new:
        return None
    t0, t1 = token
    number = text[t0:t1]
    around = text[max(0, t0 - 40) : min(len(text), t1 + 20)]
    for m in IDENTIFIER_NUMBER_RE.finditer(around):
        lo = max(0, t0 - 40) + m.start()
        if lo < t1 and t0 < lo + len(m.group(0)):
            return f"changed number {number!r} names a thing ({m.group(0).strip()!r}), it is no quantity"
    if _ACKNOWLEDGEMENT_RE.search(sentence):
        return f"changed number {number!r} is in an acknowledgement (grant or award), not a result"
    if cited and (_significant(number) < 2 or not _stated_elsewhere(paper, number, proposal.file, s, e)):
        return (f"changed number {number!r} is attributed to a cited work and stated nowhere else: "
                "only the cited work could show it wrong")
    if subtype.name == "table_row_total_mismatch":
        table = next((t for t in idx.tables if t.file == proposal.file and t.start <= t0 < t.end), None)
        has_total = table is not None and _TOTAL_CELL_RE.search(text[table.start : table.end])
        repeated = _significant(number) >= 3 and _stated_elsewhere(
            paper, number, proposal.file, *((table.start, table.end) if table else (s, e)))
        if not has_total and not repeated:
            return f"table cell {number!r} changed in a table with no total, its value stated nowhere else"
    if subtype.name == "sample_size_disagreement" and re.search(r"(?i)factor\s+(?:of\s+)?(?:~|about\s+)?$", text[max(0, t0 - 30) : t0]):
        return f"changed number {number!r} is a factor, not a count"
    return None
