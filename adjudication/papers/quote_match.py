"""Mechanical detection matching: does a flag quote the injected span? (reference 002, §2.4)

A flag matches an injection when one of its quotes (the flag's `quote`, plus the source passages
a mechanical check rests on) either

1. is found in the injection's file (exactly, else with whitespace collapsed) at a place that
   overlaps the changed characters `[changed_start, changed_end)` (issue 15: not merely the
   context window used to place the edit: quoting "has more" does not detect "than -> then";
   truth without a changed span falls back to `[start, end)`), or
2. is aligned (rapidfuzz partial_ratio_alignment, score >= 90) with the injected window of 8
   characters or more, the aligned part covers the changed characters, and it is closer to the
   injected window than to the original one (the reviewer quoted the changed wording).

Issue 21, quote specificity: only a quote short enough to locate counts. A quote longer than
`MAX_QUOTE_CHARS` characters (a whole file, a whole section: "over_long") or with fewer than
`MIN_QUOTE_CHARS` non-space characters (a bare token such as "0", "+", "in", "}": "token_only")
never matches, however it overlaps; `quote_specificity` classifies a quote and the scoring counts
both kinds per reviewer. A located quote detects only when the flag's description names the error
(`names_the_error`: it mentions the changed value or the kind of error); otherwise the judges are
asked (with a panel) or the injection is missed (without one).

Only positive matches are decided here; everything else goes to the judge panel.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from rapidfuzz import fuzz

from storage.records import QUOTE_MAX_CHARS, QUOTE_MIN_CHARS

__all__ = ["KIND_WORDS", "MAX_QUOTE_CHARS", "MIN_QUOTE_CHARS", "QuoteKind", "changed_span", "flag_quotes",
           "names_the_error", "normalize", "quote_matches", "quote_specificity"]

_MIN_FUZZY = 8
_FUZZY_THRESHOLD = 90.0
MAX_QUOTE_CHARS = QUOTE_MAX_CHARS
MIN_QUOTE_CHARS = QUOTE_MIN_CHARS
QuoteKind = Literal["specific", "over_long", "token_only"]

KIND_WORDS: dict[str, tuple[str, ...]] = {
    "mathematics": ("sign", "coefficient", "exponent", "power", "equation", "formula", "term", "factor", "prefactor",
                    "bound", "index", "indices", "limit", "integral", "sum", "product", "operator", "dimension",
                    "unit", "shape", "identity", "equality", "derivation", "expression", "does not hold", "step",
                    "normalis", "normaliz", "inconsisten", "symbol", "notation"),
    "numerics": ("number", "value", "total", "sum", "digit", "percent", "%", "ratio", "count", "decimal",
                 "magnitude", "table", "row", "column", "constant", "sample size", "arithmetic", "add up", "adds up",
                 "disagree", "mismatch", "inconsisten", "differ", "abstract", "figure", "share"),
    "citations": ("cite", "citation", "reference", "attribut", "misquot", "misrepresent", "misstat", "claim",
                  "bound", "qualifier", "revers", "condition", "methodolog", "the cited"),
    "general": ("reference", "\\ref", "label", "??", "contradict", "inconsisten", "typo", "word", "spelling",
                "grammar", "claim", "unsupported", "evidence", "overclaim", "overstat", "generali", "notation",
                "symbol", "procedure", "method"),
}
"""Words that name the kind of an error of each type (matched at a word start, case-insensitive)."""
_KIND_RE = {t: re.compile("|".join(r"\b" + re.escape(w) if w[0].isalnum() else re.escape(w) for w in words),
                          re.IGNORECASE) for t, words in KIND_WORDS.items()}  # fmt: skip


def quote_specificity(quote: str) -> QuoteKind:
    """"over_long" (more than MAX_QUOTE_CHARS), "token_only" (fewer than MIN_QUOTE_CHARS non-space
    characters) or "specific" (a quote that can locate one error)."""
    text = (quote or "").strip()
    if len(text) > MAX_QUOTE_CHARS:
        return "over_long"
    if len(re.sub(r"\s", "", text)) < MIN_QUOTE_CHARS:
        return "token_only"
    return "specific"


def names_the_error(description: str | None, injection: dict[str, Any]) -> bool:
    """Does a flag's description name the injected error: mention the changed value (either side,
    as a whole token) or a word for the error's kind (`KIND_WORDS` of its type)? The rule used in
    place of judges for a located quote."""
    text = description or ""
    if not text.strip():
        return False
    for side in ("changed_injected", "changed_original"):
        value = str(injection.get(side) or "").strip()
        # a one-character change ("+" -> "-") is too common to count as named; its kind word must say it
        if len(value) >= 2 or value.isalnum():
            pattern = (r"(?<![\w.])" if value[:1].isalnum() else "") + re.escape(value) + (
                r"(?![\w])" if value[-1:].isalnum() else "")
            if value and re.search(pattern, text):
                return True
    kinds = [injection.get("error_type")] if injection.get("error_type") in KIND_WORDS else list(KIND_WORDS)
    return any(_KIND_RE[k].search(text) for k in kinds)


def normalize(text: str) -> str:
    text = re.sub(r"\\[A-Za-z]+", " ", text or "")
    text = re.sub(r"[{}$\\~]", " ", text)
    return re.sub(r"\s+", " ", text).strip().lower()


def flag_quotes(flag: dict[str, Any]) -> list[str]:
    quotes = [flag["quote"]] if flag.get("quote") else []
    check = flag.get("check") or {}
    quotes += [q["text"] for q in check.get("quotes", []) if isinstance(q, dict) and q.get("text")]
    return [q for q in quotes if q.strip()]


def _find_spans(haystack: str, needle: str) -> list[tuple[int, int]]:
    spans = [(m.start(), m.start() + len(needle)) for m in re.finditer(re.escape(needle), haystack)]
    if spans:
        return spans
    words = needle.split()
    if not words:
        return []
    pattern = r"\s+".join(re.escape(w) for w in words)
    return [(m.start(), m.end()) for m in re.finditer(pattern, haystack)]


def changed_span(injection: dict[str, Any]) -> tuple[int, int]:
    """[start, end) of the changed characters in the copy's file (the context window for old truth)."""
    cs, ce = int(injection.get("changed_start", -1)), int(injection.get("changed_end", -1))
    if cs >= 0 and ce >= cs:
        return cs, ce
    return int(injection.get("start", -1)), int(injection.get("end", -1))


def _overlaps(s: int, e: int, cs: int, ce: int) -> bool:
    # A pure deletion has an empty changed span: a quote around its position covers it.
    return s < max(ce, cs + 1) and e > cs if ce > cs else s <= cs < e or (s < cs <= e)


def _normalized_window(window: str, rel_s: int, rel_e: int) -> tuple[str, int, int]:
    """The normalised window and where the changed characters land in it (pieces normalised apart)."""
    pre, mid, post = (normalize(window[:rel_s]), normalize(window[rel_s:rel_e]), normalize(window[rel_e:]))
    a = len(pre) + (1 if pre else 0)
    text = " ".join(x for x in (pre, mid, post) if x)
    return text, a, a + len(mid)


def quote_matches(flag: dict[str, Any], injection: dict[str, Any], files: dict[str, str]) -> str | None:
    """The evidence string when the flag quotes the injection's changed characters, else None."""
    source = files.get(injection.get("file", ""), "")
    start = int(injection.get("start", -1))
    cs, ce = changed_span(injection)
    window, original = injection.get("injected", "") or "", injection.get("original", "") or ""
    has_changed = int(injection.get("changed_start", -1)) >= 0 and start >= 0
    rel_s, rel_e = (cs - start, ce - start) if has_changed else (0, len(window))
    w, ws, we = _normalized_window(window, rel_s, rel_e)
    for quote in flag_quotes(flag):
        if quote_specificity(quote) != "specific":  # a whole file or a bare token locates nothing
            continue
        if source and cs >= 0:
            for s, e in _find_spans(source, quote.strip()):
                if _overlaps(s, e, cs, ce):
                    return f"quote overlaps the changed span at {injection.get('file')}:{cs}-{ce}"
        q = normalize(quote)
        if len(w) < _MIN_FUZZY or not q:
            continue
        al = fuzz.partial_ratio_alignment(q, w)
        if al is None or al.score < _FUZZY_THRESHOLD:
            continue
        # partial_ratio_alignment places the shorter text inside the longer one.
        a, b = (al.dest_start, al.dest_end) if len(q) <= len(w) else (0, len(w))
        to_original = fuzz.partial_ratio(q, normalize(original)) if original else 0.0
        if _overlaps(a, b, ws, we) and al.score > to_original:
            return f"quote contains the changed text (partial ratio {al.score:.0f} vs original {to_original:.0f})"
    return None
