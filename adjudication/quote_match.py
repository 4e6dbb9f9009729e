"""Mechanical detection matching: does a flag quote the injected span? (reference 002, §2.4)

A flag matches an injection when one of its quotes (the flag's `quote`, plus the source passages
a mechanical check rests on) either

1. is found in the injection's file (exactly, else with whitespace collapsed) at a place that
   overlaps the injected character span `[start, end)`, or
2. after normalisation (lower case, LaTeX commands and braces dropped, whitespace collapsed)
   contains the injected text almost verbatim (rapidfuzz partial ratio >= 90, injected text of 8
   characters or more) and is closer to the injected text than to the original — the reviewer
   quoted the changed wording, not the clean one.

Only positive matches are decided here; everything else goes to the judge panel.
"""

from __future__ import annotations

import re
from typing import Any

from rapidfuzz import fuzz

__all__ = ["flag_quotes", "normalize", "quote_matches"]

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


def quote_matches(flag: dict[str, Any], injection: dict[str, Any], files: dict[str, str]) -> str | None:
    """The evidence string when the flag quotes the injected span, else None."""
    source = files.get(injection.get("file", ""), "")
    start, end = int(injection.get("start", -1)), int(injection.get("end", -1))
    injected, original = normalize(injection.get("injected", "")), normalize(injection.get("original", ""))
    for quote in flag_quotes(flag):
        if source and start >= 0:
            for s, e in _find_spans(source, quote.strip()):
                if s < max(end, start + 1) and e > start:
                    return f"quote overlaps the injected span at {injection.get('file')}:{start}-{end}"
        q = normalize(quote)
        if len(injected) >= _MIN_FUZZY and q:
            to_injected = fuzz.partial_ratio(injected, q)
            to_original = fuzz.partial_ratio(original, q) if original else 0.0
            if to_injected >= _FUZZY_THRESHOLD and to_injected > to_original:
                return f"quote contains the injected text (partial ratio {to_injected:.0f} vs original {to_original:.0f})"
    return None
