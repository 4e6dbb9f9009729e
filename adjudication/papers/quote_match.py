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

Only positive matches are decided here; everything else goes to the judge panel.
"""

from __future__ import annotations

import re
from typing import Any

from rapidfuzz import fuzz

__all__ = ["changed_span", "flag_quotes", "normalize", "quote_matches"]

_MIN_FUZZY = 8
_FUZZY_THRESHOLD = 90.0


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
