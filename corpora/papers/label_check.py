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
- a word swap of "above"/"below" where the word points at the text ("discussed above"), not at a value;
- (second round) a citation sub-type outside the clause a citation supports: the sentence (as a reader
  splits it, not the index's wider citation span, which can run across a display equation) must hold
  the citation, the edit must sit in the citation's clause (a `;`, `:` or a comma that opens a new
  clause, ", which", ", producing", ", also", ", a time known as", bounds it), never in a table, and
  the whole sentence may not be about the authors' own work;
- a number stated with a sentence that cites (or that continues one: "They apply their model to 150
  compounds") whose value the paper repeats only for other things ("11 events" vs "11 components");
- `sample_size_disagreement` or `repeated_constant_drift` on a number whose other occurrences count
  other things: a round number ("10 CPU minutes", "10-fold", "100 windows", "200 epochs of another
  model") recurs by chance; with under three significant digits the repeat must share the counted
  word or the symbol it is assigned to ("$K=16$" / "$K \approx 16$"), else nothing disagrees;
- a factor ("a factor of 10") multiplied by ten or divided: any factor is plausible, nothing disagrees.

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
# A sentence that continues a cited one with the cited work as its subject.
_ANAPHORA_RE = re.compile(r"(?:They|Their|These authors|The authors|Those authors)\b")
# Where a sentence's clause ends: ';' or ':', or a comma that opens a new clause (a relative or
# participle or "as" clause): ", producing a catalog ... \citep{}" cites the catalog, not the
# observations before the comma; ", as measured in \citep{}" cites the measurement, not the model.
_CLAUSE_BREAK_RE = re.compile(r"[;:](?=\s)|,\s+(?=(?:which|while|whilst|whereas|also|but|as|[a-z]+ing)\b)")
# A citation that is the sentence's subject ("\citet{X} used ...", "\cite{X} used ..." opening it).
_TEXTUAL_CITE_RE = re.compile(r"\\(?:[cC]itet|[cC]iteauthor|citealt|[tT]extcite)\b")
_FACTOR_BEFORE_RE = re.compile(r"(?i)factors?\s+(?:of\s+)?(?:~|about\s+|roughly\s+|approximately\s+)?$")
# Words that say nothing about what a number counts ("of 11", "has 11"), and formatting commands.
_FILLER = (
    "a an the of and or with for to in by at on from than is are was were be been has have had as each every "
    "only all about approximately roughly around over under nearly almost up down per our we this that these "
    "those it its which where when both after before between then also there \\approx \\sim \\simeq \\le "
    "\\leq \\ge \\geq \\lesssim \\gtrsim \\mathrm \\text \\textrm \\rm \\mathit \\left \\right "
    "\\qty \\num \\SI \\times \\cdot \\quad \\qquad"
)
_NOT_CONTEXT = frozenset(_FILLER.split())


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


def _word_key(word: str) -> str:
    w = word.lower()
    return w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w


def _number_context(text: str, start: int, end: int) -> tuple[str | None, frozenset[str]]:
    """What a printed number is said of: the word or symbol it is assigned to ("$K=16$": K) and the
    first two words after it, which name what it counts ("24 simulated runs": simulated, run)."""
    before = [t for t in re.findall(r"\\?[A-Za-z]+", text[max(0, start - 30) : start]) if t.lower() not in _NOT_CONTEXT]
    after = [t for t in re.findall(r"\\?[A-Za-z]+", text[end : end + 40]) if t.lower() not in _NOT_CONTEXT]
    return (_word_key(before[-1]) if before else None, frozenset(_word_key(w) for w in after[:2]))


def _same_quantity(a: tuple[str | None, frozenset[str]], b: tuple[str | None, frozenset[str]]) -> bool:
    return (a[0] is not None and a[0] == b[0]) or bool(a[1] & b[1])


def _stated_elsewhere(paper: LatexPaper, token: str, file: str, s: int, e: int,
                      said_of: tuple[str | None, frozenset[str]] | None = None) -> bool:  # fmt: skip
    """Whether the number `token` is printed anywhere in the paper's prose or maths outside file[s:e]
    (with `said_of`: only an occurrence said of the same thing, see `_number_context`, counts)."""
    pattern = re.compile(r"(?<![\d.,])" + re.escape(token) + r"(?![\d]|[.,]\d)")
    for rel in paper.compiled:
        masked = paper.index.masked.get(rel, "")
        text = paper.files[rel]
        for m in pattern.finditer(text):
            if rel == file and s <= m.start() < e:
                continue
            in_maths = _overlaps(paper.index.inline_math + paper.index.display_math, rel, m.start(), m.end())
            if not (in_maths or masked[m.start() : m.end()] == token):
                continue
            if said_of is None or _same_quantity(said_of, _number_context(text, m.start(), m.end())):
                return True
    return False


def _repeated_in(text: str, number: str, s: int, e: int, at: int) -> bool:
    """Whether the sentence text[s:e] prints `number` again besides at `at` ("the square replicated
    10 times, so that its length is sqrt(10)"): the sentence itself relates the two."""
    pattern = re.compile(r"(?<![\d.,])" + re.escape(number) + r"(?![\d]|[.,]\d)")
    return any(m.start() != at for m in pattern.finditer(text, s, e))


def _full_sentence(text: str, a: int, b: int) -> tuple[int, int]:
    """The sentence around text[a:b] up to '. ', a blank line, a list item or an environment either
    side, across inline maths and braces (`sentence_around` stops at a brace 200 characters out,
    which can cut off the sentence's subject)."""
    stop = r"[.?!]\s|\n\s*\n|\\item\b|\\(?:begin|end)\s*\{[^}]*\}|\\\\"
    window = max(0, a - 3000)
    ends = [m.end() for m in re.finditer(stop, text[window:a])]
    left = window + ends[-1] if ends else window
    m = re.search(stop + r"|[.?!]$", text[b : b + 3000])
    return left, b + m.end() if m else min(len(text), b + 3000)


def _cites(paper: LatexPaper, file: str, s: int, e: int) -> bool:
    """Whether sentence file[s:e] cites a work, or continues a citing sentence ("They ..."): what it
    states may then be the cited work's."""
    text = paper.files[file]
    if CITE_RE.search(text, s, e):
        return True
    if _ANAPHORA_RE.match(text, s) and s > 1:
        ps, pe = _full_sentence(text, s - 2, s - 1)
        return CITE_RE.search(text, ps, s) is not None
    return False


def _sentence_of(paper: LatexPaper, file: str, a: int, b: int) -> tuple[int, int]:
    from corpora.papers.latex_paper import sentence_around

    return sentence_around(paper.files[file], a, b)


def _in_cited_clause(paper: LatexPaper, file: str, s: int, e: int, a: int) -> bool:
    """Whether position `a` lies in the clause of sentence file[s:e] that one of its citations
    supports: from the clause break before the citation to the one after it; a clause that opens
    right after the citation (", which ...") describes the cited work and belongs to it, and a
    citation that is the sentence's subject ("\\citet{X} found ...") supports the rest of the sentence."""
    text, masked = paper.files[file], paper.index.masked.get(file, "")
    breaks = [(m.start(), m.end()) for m in _CLAUSE_BREAK_RE.finditer(masked, s, e)]
    for c in CITE_RE.finditer(text, s, e):
        left = max((be for bs, be in breaks if be <= c.start()), default=s)
        after = [bs for bs, be in breaks if bs >= c.end() and text[c.end() : bs].strip()]
        subject = _TEXTUAL_CITE_RE.match(text, c.start()) or not text[left : c.start()].strip()
        right = e if subject else min(after, default=e)
        if left <= a < right:
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
    cited = _cites(paper, proposal.file, s, e)
    if subtype.error_type == "citations":
        if _overlaps(maths, proposal.file, a, b):
            return "a citation sub-type that changes maths: a formula change, not a misquote"
        if any(t.file == proposal.file and t.start <= a < t.end for t in idx.tables):
            return "a citation sub-type inside a table: a cell or row name is the authors' own, not a cited claim"
        fs, fe = _full_sentence(text, a, b)
        if _SELF_RE.search(sentence) or _SELF_RE.search(text, fs, fe):
            return "a citation sub-type in a sentence about the authors' own work ('we', 'our')"
        if not CITE_RE.search(sentence):
            return "a citation sub-type in a sentence that cites nothing (the citation is in another sentence)"
        if not _in_cited_clause(paper, proposal.file, s, e, a):
            return "a citation sub-type outside the clause the citation supports"
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
    said_of = _number_context(text, t0, t1)
    if cited and (_significant(number) < 2 or not _stated_elsewhere(
            paper, number, proposal.file, s, e, said_of if _significant(number) < 3 else None)):
        return (f"changed number {number!r} is attributed to a cited work and stated nowhere else: "
                "only the cited work could show it wrong")
    if subtype.name == "table_row_total_mismatch":
        table = next((t for t in idx.tables if t.file == proposal.file and t.start <= t0 < t.end), None)
        has_total = table is not None and _TOTAL_CELL_RE.search(text[table.start : table.end])
        repeated = _significant(number) >= 3 and _stated_elsewhere(
            paper, number, proposal.file, *((table.start, table.end) if table else (s, e)))
        if not has_total and not repeated:
            return f"table cell {number!r} changed in a table with no total, its value stated nowhere else"
    if subtype.name == "sample_size_disagreement" and _FACTOR_BEFORE_RE.search(text[max(0, t0 - 30) : t0]):
        return f"changed number {number!r} is a factor, not a count"
    if subtype.name == "order_of_magnitude_mismatch" and _FACTOR_BEFORE_RE.search(text[max(0, t0 - 30) : t0]):
        return f"changed number {number!r} is a factor: ten times a factor is as plausible, nothing disagrees"
    if (subtype.name in ("sample_size_disagreement", "repeated_constant_drift") and _significant(number) < 3
            and not _stated_elsewhere(paper, number, proposal.file, t0, t1, said_of)
            and not _repeated_in(text, number, s, e, t0)):  # fmt: skip
        said = " ".join([said_of[0] or "", *sorted(said_of[1])]).strip() or "said of nothing"
        return f"changed number {number!r} ({said}) is repeated only for other things: nothing disagrees"
    return None
